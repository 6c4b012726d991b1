//! The Session object's logic, hosted by the Worker's thin `Session` class:
//! `struct Session(SessionHost<DoRuntime>)` delegates every request and the
//! alarm here, so all of it runs natively in tests.
//!
//! The host keeps what a warm object reuses between turns (the workspace
//! and media caches) and answers the object's three calls
//! ([`crate::protocol::session`]): enqueue, status and admin reset. Its
//! alarm drains the queue through [`super::drain`].

use super::deps::SessionDeps;
use super::drain::{drain, DrainReport};
use super::history::HistoryCache;
use super::store::SessionStore;
use super::watch::{Attach, Watch};
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::llm::wire::WireMemo;
use crate::mcp::toolset::McpState;
use crate::media::MediaCache;
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::protocol::api::{ApiOutcome, ApiTurnRequest, StopReply, StopRequest};
use crate::protocol::session::{
    AnswerReply, EnqueueReply, EnqueueRequest, MediaCacheStatus, PostReply, PostRequest, ResetReply, SessionStatus,
    SessionTouch,
};
use crate::settings::{AgentConfig, Vars};
use crate::workspace::WorkspaceCache;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Meta key: the owner took this chat out (`/revoke`).
const CLOSED_META: &str = "closed";

/// How stale the session registry's `updatedAt` may get before a drain
/// tells the Agent object again.
pub const REGISTRY_REFRESH_MS: i64 = 60_000;

/// What the object's runtime gives its host: storage, settings, a platform
/// for turns, the alarm, and the Agent object's session registry.
#[allow(async_fn_in_trait)]
pub trait SessionRuntime {
    type Sql: Sql;
    type Vars: Vars;
    type Platform: Platform;
    /// The object's SQLite.
    fn sql(&self) -> &Self::Sql;
    /// The Worker's vars and secrets.
    fn vars(&self) -> &Self::Vars;
    /// Everything a turn of `key` needs (R2, HTTP, the reply channels, memory).
    fn platform(&self, config: &AgentConfig, key: &SessionKey) -> Result<Self::Platform, StorageError>;
    /// Runs the alarm as soon as possible (a drain picks up what was queued).
    async fn wake(&self) -> Result<(), StorageError>;
    /// Runs the alarm at `at_ms` (ms since the epoch), unless it is already
    /// set to run earlier (the outbox's next retry, or usage waiting to be
    /// settled with the ledger).
    async fn wake_at(&self, at_ms: i64) -> Result<(), StorageError>;
    /// The agent's settings. An isolate's vars are fixed for its life, so a
    /// runtime may keep them for all its objects; by default they are read.
    fn agent_config(&self, agent: &str) -> Result<std::rc::Rc<AgentConfig>, crate::settings::ConfigError> {
        AgentConfig::load(self.vars(), agent).map(std::rc::Rc::new)
    }
    /// Tells the agent's Agent object this session exists (best effort).
    async fn register(&self, touch: &SessionTouch) -> Result<(), StorageError>;
    /// Hands what a heartbeat or job said to the agent's notification feed
    /// (`GET /api/agents/{id}/notifications/stream`).
    async fn publish(&self, key: &SessionKey, notices: &[String]) -> Result<(), StorageError> {
        let _ = (key, notices);
        Ok(())
    }
    fn now_ms(&self) -> i64;
    fn new_uuid(&self) -> String;
    fn log(&self, level: LogLevel, msg: &str);
}

/// Why the alarm did not drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmOutcome {
    Drained(DrainReport),
    /// The object never had a message.
    Empty,
    /// The stored key does not parse (logged).
    BadKey,
    /// The agent's settings are invalid (logged); the messages stay queued.
    Misconfigured,
}

/// How an API request for a message starts (see [`SessionHost::api_turn`]).
pub enum ApiStart {
    /// The answer goes to the stream's sink (already, for a repeat).
    Streaming,
    /// The answer comes through this receiver when the turn is done.
    Waiting(futures::channel::oneshot::Receiver<ApiOutcome>),
    /// A repeat of a message answered before: its answer.
    Answered(ApiOutcome),
    /// The key was used for a message whose answer is no longer kept.
    Forgotten,
}

/// The Session object's state and logic.
pub struct SessionHost<R: SessionRuntime> {
    runtime: R,
    workspace_cache: RefCell<WorkspaceCache>,
    /// R2 operations of the last workspace load (None while one runs).
    workspace_load_ops: Cell<Option<u32>>,
    media_cache: RefCell<MediaCache>,
    history: RefCell<HistoryCache>,
    /// The session's key once known (it never changes for an object).
    key: RefCell<Option<SessionKey>>,
    /// The agent's settings, read once: an object's vars are fixed for its
    /// life (changing one deploys new objects).
    config: RefCell<Option<std::rc::Rc<AgentConfig>>>,
    /// What the Agent object's registry was last told.
    registered: RefCell<Option<SessionTouch>>,
    wire_memo: RefCell<WireMemo>,
    /// Whether recall has to ask the Agent object (an empty memory is not asked).
    recall: crate::memory::recall::RecallGate,
    mcp: RefCell<McpState>,
    meter: RefCell<super::meter_state::MeterState>,
    /// Who follows the messages' turns (API clients, previews, notices).
    watch: Rc<Watch>,
    schema_ready: Cell<bool>,
    /// Whether the owner took this chat out (`None`: not read yet).
    closed: Cell<Option<bool>>,
    /// The chat target this object last kept for later posts ([`super::post::remember`]).
    post_target: RefCell<Option<String>>,
}

/// Why a post was not queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostError {
    /// The request cannot be posted as it is (said to the caller, `400`).
    Refused(String),
    Storage(StorageError),
}

impl From<StorageError> for PostError {
    fn from(e: StorageError) -> Self {
        PostError::Storage(e)
    }
}

impl<R: SessionRuntime> SessionHost<R> {
    pub fn new(runtime: R) -> Self {
        SessionHost {
            runtime,
            workspace_cache: RefCell::default(),
            workspace_load_ops: Cell::default(),
            media_cache: RefCell::default(),
            history: RefCell::default(),
            key: RefCell::new(None),
            config: RefCell::new(None),
            registered: RefCell::new(None),
            wire_memo: RefCell::default(),
            recall: Default::default(),
            mcp: RefCell::default(),
            meter: RefCell::default(),
            watch: Rc::default(),
            schema_ready: Cell::new(false),
            closed: Cell::new(None),
            post_target: RefCell::default(),
        }
    }

    pub fn runtime(&self) -> &R {
        &self.runtime
    }

    fn store(&self) -> Result<SessionStore<'_, R::Sql>, StorageError> {
        let store = SessionStore::new(self.runtime.sql());
        if !self.schema_ready.get() {
            store.init()?;
            self.schema_ready.set(true);
        }
        Ok(store)
    }

    /// Whether the owner took this chat out (its messages are refused).
    fn is_closed(&self, store: &SessionStore<'_, R::Sql>) -> Result<bool, StorageError> {
        if let Some(c) = self.closed.get() {
            return Ok(c);
        }
        let c = store.meta(CLOSED_META)?.is_some();
        self.closed.set(Some(c));
        Ok(c)
    }

    /// Opens the session to its chat's messages, or closes it: the Agent
    /// object's doing when the owner lets someone in or takes them out, so
    /// an isolate whose copy of the roster still lists them cannot bring
    /// their messages in (see `crate::people::memo`).
    pub fn admission(&self, open: bool) -> Result<(), StorageError> {
        let store = self.store()?;
        if open {
            if self.is_closed(&store)? {
                store.delete_meta(CLOSED_META)?;
            }
        } else {
            store.set_meta(CLOSED_META, "1")?;
        }
        self.closed.set(Some(!open));
        Ok(())
    }

    /// Queues a message and wakes the alarm when it is new. A repeat of a
    /// delivery already seen is acknowledged, not queued again; a chat the
    /// owner took out is refused (no turn, no LLM call).
    pub async fn enqueue(&self, req: &EnqueueRequest) -> Result<EnqueueReply, StorageError> {
        let store = self.store()?;
        if req.inbound.channel.is_platform() && self.is_closed(&store)? {
            self.runtime.log(
                LogLevel::Info,
                &format!(
                    "{}: a message from {} refused: taken out by the owner",
                    req.session_key, req.inbound.sender_id
                ),
            );
            return Ok(EnqueueReply { queued: false, busy: false });
        }
        if self.session_key(&store)?.is_none() {
            store.set_meta("session_key", &req.session_key.render())?;
            *self.key.borrow_mut() = Some(req.session_key.clone());
        }
        if req.if_idle || req.fresh {
            // Heartbeat/job runs: skip when mid-turn, start from an empty history.
            let open = store.open_count()?;
            if req.if_idle && open > 0 {
                return Ok(EnqueueReply { queued: false, busy: true });
            }
            if req.fresh && open == 0 {
                if let Some(id) = store.meta("session_id")? {
                    store.clear_history(&id)?;
                }
            }
        }
        let payload = serde_json::to_string(&req.inbound).map_err(|e| StorageError(e.to_string()))?;
        let queued = store.enqueue(&req.inbound.dedupe_key, &payload, self.runtime.now_ms())?;
        if queued {
            super::post::remember(&store, &req.inbound, &self.post_target)?;
        }
        if queued && req.fresh {
            // A scheduled run: when it comes again decides how long its
            // prompt is cached (`super::prefix::cache_ttl`).
            match req.next_run_in_ms {
                Some(ms) => store.set_meta(super::prefix::NEXT_RUN_META, &ms.to_string())?,
                None => store.delete_meta(super::prefix::NEXT_RUN_META)?,
            }
        }
        if queued {
            // The alarm runs the turn; a running alarm picks this up in its loop.
            self.runtime.wake().await?;
        }
        Ok(EnqueueReply { queued, busy: false })
    }

    /// Something the runtime posts into this session's chat (see
    /// [`super::post`]): queued like a message and run by the alarm. A
    /// repeat of an id already seen does nothing.
    pub async fn post(&self, req: &PostRequest) -> Result<PostReply, PostError> {
        super::post::check(req).map_err(PostError::Refused)?;
        let store = self.store()?;
        if self.session_key(&store)?.is_none() {
            store.set_meta("session_key", &req.session_key.render())?;
            *self.key.borrow_mut() = Some(req.session_key.clone());
        }
        if store.inbox_state(&super::post::dedupe_key(&req.id))?.is_some() {
            return Ok(PostReply { queued: false, target: None });
        }
        let config = self.runtime.agent_config(req.session_key.agent().as_str()).ok();
        let known = super::post::known(&store)?;
        let target = super::post::resolve(req, known.as_ref(), &req.session_key, config.as_deref())
            .map_err(PostError::Refused)?;
        let now = self.runtime.now_ms();
        let inbound = super::post::inbound(req, &target, now);
        let queued = super::post::queue(&store, req, &inbound, now)?;
        if queued {
            self.runtime.wake().await?;
        }
        Ok(PostReply { queued, target: queued.then_some(target) })
    }

    /// A message from the HTTP API: queued like any other (its idempotency
    /// key is its dedupe key), with a client following its turn. A repeat
    /// joins the turn already queued or running, or gets the answer kept
    /// for it ([`super::watch::RESULT_RETENTION_MS`]).
    pub async fn api_turn(&self, req: &ApiTurnRequest, how: Attach) -> Result<ApiStart, StorageError> {
        let store = self.store()?;
        let key = req.inbound.dedupe_key.as_str();
        if let Some(outcome) = self.watch.stored(self.runtime.sql(), key)? {
            return Ok(match how {
                Attach::Stream(sink, _) => {
                    sink.send(outcome.event(&req.thread_id).as_bytes());
                    sink.close();
                    ApiStart::Streaming
                }
                Attach::Wait => ApiStart::Answered(outcome),
            });
        }
        let seen = store.inbox_state(key)?;
        if seen.as_deref() == Some("done") {
            return Ok(ApiStart::Forgotten);
        }
        let rx = self.watch.attach(key, &req.thread_id, how);
        if seen.is_none() {
            let enqueue = EnqueueRequest {
                session_key: req.session_key.clone(),
                inbound: req.inbound.clone(),
                if_idle: false,
                fresh: false,
                next_run_in_ms: None,
            };
            self.enqueue(&enqueue).await?;
        }
        Ok(rx.map(ApiStart::Waiting).unwrap_or(ApiStart::Streaming))
    }

    /// The object's watchers, for a keep-alive loop of its stream clients
    /// ([`Watch::ping`]).
    pub fn watch(&self) -> Rc<Watch> {
        self.watch.clone()
    }

    /// Runs the queue soon (a message a budget held may go on now).
    pub async fn wake(&self) -> Result<(), StorageError> {
        self.runtime.wake().await
    }

    /// The Agent object says the memory store, empty when recall last
    /// asked, holds something now: the next turn asks again.
    pub fn memory_stored(&self) {
        self.recall.stored();
    }

    /// An admin reset goes through the queue like a `/reset` command, so it
    /// runs after any message already waiting and never during a turn.
    /// `None`: the object never had a message.
    pub async fn admin_reset(&self) -> Result<Option<ResetReply>, StorageError> {
        let store = self.store()?;
        let Some(key) = self.session_key(&store)? else { return Ok(None) };
        let now = self.runtime.now_ms();
        let inbound = Inbound {
            dedupe_key: format!("admin:reset:{}", self.runtime.new_uuid()),
            channel: ChannelKind::Admin,
            kind: ChatKind::Direct,
            chat_id: String::new(),
            sender_id: "admin".into(),
            sender_name: "admin".into(),
            text: "/reset".into(),
            addressed: true,
            thread_id: None,
            // No chat: the outcome is logged (and visible in the session's status).
            reply_target: ReplyTarget { channel: ChannelKind::Admin, ..Default::default() },
            received_at: now,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        };
        let payload = serde_json::to_string(&inbound).map_err(|e| StorageError(e.to_string()))?;
        store.enqueue(&inbound.dedupe_key, &payload, now)?;
        self.runtime.wake().await?;
        Ok(Some(ResetReply { queued: true, session_key: key }))
    }

    /// The stored session key (`None` before the first message; a key that
    /// no longer parses is logged and treated as none).
    fn session_key(&self, store: &SessionStore<'_, R::Sql>) -> Result<Option<SessionKey>, StorageError> {
        if let Some(key) = self.key.borrow().as_ref() {
            return Ok(Some(key.clone()));
        }
        let Some(raw) = store.meta("session_key")? else { return Ok(None) };
        let key = SessionKey::parse(&raw);
        match &key {
            Some(k) => *self.key.borrow_mut() = Some(k.clone()),
            None => self.runtime.log(LogLevel::Error, &format!("session has a bad key {raw:?}")),
        }
        Ok(key)
    }

    /// How far a message asked over HTTP (`request`, its dedupe key) got,
    /// and what the agent answered.
    pub fn answer(&self, request: &str) -> Result<AnswerReply, StorageError> {
        // The inbox table exists once the store is opened.
        self.store()?;
        super::answers::answer(self.runtime.sql(), request)
    }

    /// The session's state; `brief` leaves out the messages (counts only).
    pub fn status(&self, brief: bool) -> Result<SessionStatus, StorageError> {
        let store = self.store()?;
        let session_id = store.meta("session_id")?;
        let (message_count, compactions, usage) = match &session_id {
            Some(id) => (store.message_count(id)?, store.compaction_count(id)?, store.usage_totals(id)?),
            None => Default::default(),
        };
        let messages = match (brief, &session_id) {
            (true, _) => None,
            (false, Some(id)) => Some(store.history(id)?),
            (false, None) => Some(Vec::new()),
        };
        let notes = match (brief, &session_id) {
            (false, Some(id)) => super::notes::list(self.runtime.sql(), id)?,
            _ => Vec::new(),
        };
        let cache = self.media_cache.borrow();
        Ok(SessionStatus {
            session_key: self.session_key(&store)?,
            session_id,
            open: store.open_count()?,
            message_count,
            compactions,
            usage,
            // Null while a turn loads the workspace (the scheduler's usage
            // ledger asks during runs) and before the first load.
            workspace_r2_ops: self.workspace_load_ops.get(),
            media: MediaCacheStatus {
                r2_reads: cache.stats.r2_reads,
                cache_hits: cache.stats.hits,
                evictions: cache.stats.evictions,
                cached_bytes: cache.bytes() as u64,
                cached_items: cache.len() as u64,
            },
            usage_all: store.usage_totals_all()?,
            outbox: crate::delivery::status::status(self.runtime.sql())?,
            messages,
            notes,
        })
    }

    /// Stops the answer being written (to message `request`, when named).
    pub fn stop(&self, req: &StopRequest) -> StopReply {
        if self.watch.stop(req.request.as_deref()) {
            return StopReply { stopped: true, reason: None };
        }
        let why = match &req.request {
            Some(_) => "that message is not being answered (it is done, or still queued)",
            None => "no answer is being written in this thread",
        };
        StopReply { stopped: false, reason: Some(why.to_owned()) }
    }

    /// Whether the registry needs telling: a new session id, or activity more
    /// than [`REGISTRY_REFRESH_MS`] after what it holds. (A call to the Agent
    /// object on every turn would cost every turn; the listing's `updatedAt`
    /// is allowed to lag by that much.)
    fn worth_registering(&self, touch: &SessionTouch) -> bool {
        match self.registered.borrow().as_ref() {
            None => true,
            Some(last) => {
                last.session_id != touch.session_id
                    || (touch.title.is_some() && last.title != touch.title)
                    || touch.updated_at.unwrap_or(0) - last.updated_at.unwrap_or(0) > REGISTRY_REFRESH_MS
            }
        }
    }

    /// The alarm: drains the queue with the agent's current settings (and
    /// sends the replies whose retry is due), sets the alarm again for the
    /// outbox's next retry, then registers the session with its Agent
    /// object. Storage errors fail the alarm (the runtime retries it).
    pub async fn alarm(&self) -> Result<AlarmOutcome, StorageError> {
        let store = self.store()?;
        let Some(key) = self.session_key(&store)? else {
            return Ok(if store.meta("session_key")?.is_none() { AlarmOutcome::Empty } else { AlarmOutcome::BadKey });
        };
        let loaded = self.config.borrow().clone();
        let loaded = loaded.map(Ok).unwrap_or_else(|| match &key {
            SessionKey::Task { .. } => super::subagent::task_config(self.runtime.vars(), key.agent().as_str()),
            _ => self.runtime.agent_config(key.agent().as_str()),
        });
        let config = match loaded {
            Ok(c) => {
                *self.config.borrow_mut() = Some(c.clone());
                c
            }
            Err(e) => {
                // Messages stay queued; the next message or a fixed config drains them.
                self.runtime.log(LogLevel::Error, &format!("cannot run turns for {key}: {e}"));
                self.watch.fail_all(&format!("the agent cannot answer now: {e}. The message is kept."));
                return Ok(AlarmOutcome::Misconfigured);
            }
        };
        let platform = self.runtime.platform(&config, &key)?;
        let deps = SessionDeps {
            config: &config,
            key: &key,
            workspace_cache: &self.workspace_cache,
            workspace_load_ops: &self.workspace_load_ops,
            media_cache: &self.media_cache,
            history: &self.history,
            wire_memo: &self.wire_memo,
            recall: &self.recall,
            mcp: &self.mcp,
            meter: &self.meter,
            watch: &self.watch,
        };
        let report = drain(&platform, &deps).await;
        let notices = self.watch.take_notices();
        if !notices.is_empty() {
            if let Err(e) = self.runtime.publish(&key, &notices).await {
                self.runtime.log(LogLevel::Warn, &format!("notifications not published: {e}"));
            }
        }
        let report = report?;
        if let Some(at) = super::meter::next_settle(&deps) {
            // Finished calls wait for their batch: come back when it is due.
            if let Err(e) = self.runtime.wake_at(at).await {
                self.runtime.log(LogLevel::Warn, &format!("usage settlement not scheduled: {e}"));
            }
        }
        // A message a budget holds stays open: the Agent object wakes us when
        // the budget allows again (waking now would only hold it again).
        let held = super::meter::held(&deps);
        self.rearm(&store, held, report.wake_at).await?;
        let session_id = store.meta("session_id").ok().flatten();
        let mut touch = SessionTouch {
            session_key: key,
            session_id,
            updated_at: store.meta("updated_at").ok().flatten().and_then(|v| v.parse::<i64>().ok()),
            title: self.watch.speaker(),
            last: None,
        };
        if self.worth_registering(&touch) {
            // The listing's label, read only when the registry hears of it.
            touch.last = match &touch.session_id {
                Some(id) => super::label::last_message(&store, id).ok().flatten(),
                None => None,
            };
            match self.runtime.register(&touch).await {
                Ok(()) => *self.registered.borrow_mut() = Some(touch),
                Err(e) => self.runtime.log(LogLevel::Warn, &format!("session registry not updated: {e}")),
            }
        }
        Ok(AlarmOutcome::Drained(report))
    }

    /// Sets the alarm for what is left: at once when a message came in
    /// meanwhile, when the next message may start if it waits (for its
    /// batch, or for messages sent before it), else when the outbox's next
    /// retry is due.
    async fn rearm(
        &self,
        store: &SessionStore<'_, R::Sql>,
        held: bool,
        next_due: Option<i64>,
    ) -> Result<(), StorageError> {
        let outbox_due = crate::delivery::next_due(self.runtime.sql())?;
        if let Some(at) = next_due {
            return self.runtime.wake_at(outbox_due.map_or(at, |o| o.min(at))).await;
        }
        if !held && store.open_count()? > 0 {
            return self.runtime.wake().await;
        }
        match outbox_due {
            Some(at) => self.runtime.wake_at(at).await,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
