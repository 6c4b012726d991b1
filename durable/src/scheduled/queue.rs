//! The Session objects, as the scheduler (and the Agent object's other
//! background work) reaches them: the port the Worker implements with a
//! Durable Object call.

use crate::inbound::{Inbound, SessionKey};
use crate::ports::StorageError;
use r2_layout::Usage;
use serde::Serialize;

/// Options of an enqueue into a Session object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnqueueOptions {
    /// Refuse (answer busy) when the session has an open message.
    pub if_idle: bool,
    /// When the session is idle, drop the previous run's history first.
    pub fresh: bool,
    /// When the same prompt runs again, ms after this run (`None`: not
    /// within the next hours, or not known): the session caches its prompt
    /// for an hour when that pays (`crate::llm::cache_ttl`).
    pub next_run_in_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    Queued,
    /// The same dedupe key was queued before.
    Repeat,
    /// `if_idle` and the session is mid-turn.
    Busy,
}

/// A Session object's usage counters (all its runs) and whether it is busy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionCounters {
    /// Messages queued or running.
    pub open: i64,
    /// Tokens of every turn the Session ever ran (these only grow).
    pub total: Usage,
}

/// The Session objects, as the scheduler reaches them (the Worker's adapter
/// does a DO fetch).
#[allow(async_fn_in_trait)]
pub trait SessionQueue {
    /// Queues a message.
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        opts: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError>;

    /// The Session's counters (for the usage ledger).
    async fn usage(&self, key: &SessionKey) -> Result<SessionCounters, StorageError>;

    /// Runs the Session's queue (a message a budget held may go on now).
    async fn wake(&self, key: &SessionKey) -> Result<(), StorageError> {
        Err(StorageError(format!("cannot wake {key} from here")))
    }

    /// Tells the (main) Session that its memory store holds something now
    /// (`crate::memory::recall::RecallGate`).
    async fn memory_stored(&self, key: &SessionKey) -> Result<(), StorageError> {
        Err(StorageError(format!("cannot reach {key} from here")))
    }

    /// Opens or closes the Session to its chat's messages (someone let in
    /// or out, see `crate::people`).
    async fn admit(&self, key: &SessionKey, open: bool) -> Result<(), StorageError> {
        let _ = open;
        Err(StorageError(format!("cannot reach {key} from here")))
    }

    /// Stops the answer the Session is writing (a cancelled background task).
    async fn stop(&self, key: &SessionKey, req: &crate::protocol::api::StopRequest) -> Result<(), StorageError> {
        let _ = req;
        Err(StorageError(format!("cannot stop {key} from here")))
    }

    /// Posts into the Session's chat (`crate::protocol::session::PostRequest`).
    async fn post(
        &self,
        req: &crate::protocol::session::PostRequest,
    ) -> Result<crate::protocol::session::PostReply, StorageError> {
        Err(StorageError(format!("cannot post to {} from here", req.session_key)))
    }
}
