//! The agent's BM25 memory as a service: which store a session may use, the
//! calls a session makes to the Agent object, and the host that answers them.
//!
//! - [`store_for`] maps a session key to its store: `main` for the owner's main
//!   and heartbeat sessions, `group:{channel}:{chat}` per group (all topics of a
//!   group share it), `dm:{channel}:{peer}` per other DM, `job:{id}` per isolated
//!   job. A session only ever names its own store, so a private note cannot reach
//!   a group: not by a tool call and not by recall (recall runs in `main` only).
//! - [`MemoryCall`] / [`MemoryReply`] are the wire format between the Session
//!   object (through [`crate::ports::MemoryService`]) and the Agent object.
//! - [`MemoryHub`] holds the loaded stores of one Agent object (lazily opened,
//!   kept across requests) over [`backend::SqlMemoryBackend`] and answers calls.
//! - [`tools`]: the memory and self-report tools; [`recall`]: per-turn recall,
//!   with a relevance floor.

pub mod backend;
pub mod recall;
pub mod tools;

pub use recall::{recall, RECALL_CHARS, RECALL_K};

#[cfg(test)]
mod tests;

use crate::ports::Sql;
use crate::routing::SessionKey;
use backend::SqlMemoryBackend;
use hearth_memory::{Entry, Kind, MemoryConfig, MemoryError, MemoryStore, Op};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::rc::Rc;

/// The owner's private store.
pub const MAIN_STORE: &str = "main";
/// Most hits a search returns.
pub const MAX_K: usize = 50;
/// Log rows after which a request checkpoints inline (the alarm's
/// [`MemoryHub::maintenance`] normally does it much earlier, off the request path).
pub const INLINE_CHECKPOINT_AFTER: usize = 1024;
/// Log rows after which [`MemoryHub::maintenance`] checkpoints a store.
pub const MAINTENANCE_CHECKPOINT_AFTER: usize = 32;

/// The store a session uses.
pub fn store_for(key: &SessionKey) -> String {
    match key {
        SessionKey::Main(_) | SessionKey::Heartbeat(_) => MAIN_STORE.to_owned(),
        SessionKey::Group { channel, chat, .. } => format!("group:{channel}:{chat}"),
        SessionKey::Direct { channel, peer, .. } => format!("dm:{channel}:{peer}"),
        SessionKey::Job { job, .. } => format!("job:{job}"),
    }
}

/// A well-formed store name (what the Agent object accepts).
pub fn valid_store_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 300 && !name.chars().any(char::is_control)
}

/// A request to the Agent object's memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum MemoryCall {
    Op { store: String, op: Op },
    Search {
        store: String,
        query: String,
        k: usize,
        /// Only entries of this kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<Kind>,
    },
    /// The few entries worth recalling into a turn (see [`recall`]): like a search,
    /// without common words and with a relevance floor.
    Recall { store: String, query: String, k: usize },
    Get { store: String, name: String },
    Stats { store: String },
    AddArchive { store: String, name: String, summary: String, created_at: i64 },
}

impl MemoryCall {
    pub fn store(&self) -> &str {
        match self {
            MemoryCall::Op { store, .. }
            | MemoryCall::Search { store, .. }
            | MemoryCall::Recall { store, .. }
            | MemoryCall::Get { store, .. }
            | MemoryCall::Stats { store }
            | MemoryCall::AddArchive { store, .. } => store,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    pub entry: Entry,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreStats {
    pub store: String,
    pub entries: usize,
    pub notes: usize,
    pub archives: usize,
    pub vocabulary: usize,
    pub avgdl: f32,
    pub pending_log_rows: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum MemoryReply {
    /// An operation succeeded on the entry `id`, now named `name` (None: removed).
    Applied { id: u64, name: Option<String> },
    Hits { hits: Vec<MemoryHit> },
    Entry { entry: Option<Entry> },
    Stats { stats: StoreStats },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "error", content = "message", rename_all = "snake_case")]
pub enum MemoryCallError {
    /// The operation was refused (duplicate name, unknown name, ...): tell the model.
    #[error("{0}")]
    Rejected(String),
    /// Storage or transport failed: nothing changed; try again later.
    #[error("memory unavailable: {0}")]
    Unavailable(String),
}

impl From<MemoryError> for MemoryCallError {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Backend(_) | MemoryError::Corrupt(_) | MemoryError::InvalidConfig(_) => {
                MemoryCallError::Unavailable(e.to_string())
            }
            other => MemoryCallError::Rejected(other.to_string()),
        }
    }
}

/// The stores of one Agent object, loaded on first use and kept in RAM.
pub struct MemoryHub<S: Sql> {
    sql: Rc<S>,
    config: MemoryConfig,
    schema_ready: bool,
    stores: HashMap<String, MemoryStore<SqlMemoryBackend<S>>>,
}

impl<S: Sql> MemoryHub<S> {
    pub fn new(sql: Rc<S>) -> Self {
        let config = MemoryConfig { checkpoint_after: Some(INLINE_CHECKPOINT_AFTER), ..MemoryConfig::default() };
        Self::with_config(sql, config)
    }

    pub fn with_config(sql: Rc<S>, config: MemoryConfig) -> Self {
        MemoryHub { sql, config, schema_ready: false, stores: HashMap::new() }
    }

    /// Scores later searches of every store with `params` (the agent's
    /// `MEMORY_BM25_K1` / `MEMORY_BM25_B`); invalid values change nothing.
    pub fn set_bm25(&mut self, params: hearth_memory::Bm25Params) -> Result<(), MemoryCallError> {
        if params == self.config.bm25 {
            return Ok(());
        }
        for store in self.stores.values_mut() {
            store.set_bm25(params)?;
        }
        self.config.bm25 = params;
        Ok(())
    }

    /// Names of the stores loaded in RAM.
    pub fn loaded(&self) -> Vec<String> {
        let mut names: Vec<String> = self.stores.keys().cloned().collect();
        names.sort();
        names
    }

    /// The store `name`, opened from SQLite on first use.
    pub fn store(&mut self, name: &str) -> Result<&mut MemoryStore<SqlMemoryBackend<S>>, MemoryCallError> {
        if !valid_store_name(name) {
            return Err(MemoryCallError::Rejected(format!("bad store name {name:?}")));
        }
        if !self.schema_ready {
            backend::init_schema(&*self.sql).map_err(|e| MemoryCallError::Unavailable(e.to_string()))?;
            self.schema_ready = true;
        }
        if !self.stores.contains_key(name) {
            let store = MemoryStore::open(SqlMemoryBackend::new(self.sql.clone(), name), self.config)?;
            self.stores.insert(name.to_owned(), store);
        }
        self.stores.get_mut(name).ok_or_else(|| MemoryCallError::Unavailable("store vanished".into()))
    }

    /// Answers one call.
    pub fn call(&mut self, call: MemoryCall) -> Result<MemoryReply, MemoryCallError> {
        match call {
            MemoryCall::Op { store, op } => {
                let removing = matches!(op, Op::Remove { .. });
                let s = self.store(&store)?;
                let id = s.apply(op)?;
                let name = if removing { None } else { s.get_by_id(id).map(|e| e.name.clone()) };
                Ok(MemoryReply::Applied { id, name })
            }
            MemoryCall::Search { store, query, k, kind } => {
                let s = self.store(&store)?;
                let k = k.min(MAX_K);
                let hits = match kind {
                    Some(kind) => s.search_kind(&query, k, kind),
                    None => s.search(&query, k),
                };
                Ok(MemoryReply::Hits {
                    hits: hits.into_iter().map(|h| MemoryHit { entry: h.entry.clone(), score: h.score }).collect(),
                })
            }
            MemoryCall::Recall { store, query, k } => {
                let s = self.store(&store)?;
                let hits = recall::relevant(s, &query, k.min(MAX_K));
                Ok(MemoryReply::Hits {
                    hits: hits.into_iter().map(|h| MemoryHit { entry: h.entry.clone(), score: h.score }).collect(),
                })
            }
            MemoryCall::Get { store, name } => {
                let s = self.store(&store)?;
                Ok(MemoryReply::Entry { entry: s.get(&name).cloned() })
            }
            MemoryCall::Stats { store } => {
                let s = self.store(&store)?;
                let st = s.stats();
                Ok(MemoryReply::Stats {
                    stats: StoreStats {
                        store,
                        entries: st.entries,
                        notes: st.notes,
                        archives: st.archives,
                        vocabulary: st.vocabulary,
                        avgdl: st.avgdl,
                        pending_log_rows: st.pending_log_rows,
                    },
                })
            }
            MemoryCall::AddArchive { store, name, summary, created_at } => {
                let s = self.store(&store)?;
                let base = name.trim().to_owned();
                let mut candidate = base.clone();
                let mut n = 2;
                while s.get(&candidate).is_some() {
                    candidate = format!("{base} ({n})");
                    n += 1;
                }
                let op = Op::Add { name: candidate, content: summary, kind: Kind::Archive, created_at };
                let id = s.apply(op)?;
                Ok(MemoryReply::Applied { id, name: s.get_by_id(id).map(|e| e.name.clone()) })
            }
        }
    }

    /// Answers a call given as JSON (the Agent object's `/memory/call`): the
    /// reply is `{"ok": true, ...reply}` or `{"ok": false, "error": ..., "message": ...}`.
    pub fn call_json(&mut self, body: &[u8]) -> (u16, serde_json::Value) {
        let call: MemoryCall = match serde_json::from_slice(body) {
            Ok(c) => c,
            Err(e) => return (400, error_json(&MemoryCallError::Rejected(format!("bad memory call: {e}")))),
        };
        match self.call(call) {
            Ok(reply) => {
                let mut v = serde_json::to_value(&reply).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("ok".into(), true.into());
                }
                (200, v)
            }
            Err(e @ MemoryCallError::Rejected(_)) => (422, error_json(&e)),
            Err(e @ MemoryCallError::Unavailable(_)) => (503, error_json(&e)),
        }
    }

    /// Off the request path (the Agent object's alarm): checkpoints every
    /// loaded store with more than a few log rows. Returns the stores written.
    pub fn maintenance(&mut self) -> Result<Vec<String>, MemoryCallError> {
        let mut done = Vec::new();
        let mut names: Vec<&String> = self.stores.keys().collect();
        names.sort();
        let names: Vec<String> = names.into_iter().cloned().collect();
        for name in names {
            if let Some(s) = self.stores.get_mut(&name) {
                if s.stats().pending_log_rows >= MAINTENANCE_CHECKPOINT_AFTER {
                    s.checkpoint()?;
                    done.push(name);
                }
            }
        }
        Ok(done)
    }

    /// Drops a store from RAM (tests: simulate eviction of one store).
    pub fn unload(&mut self, name: &str) {
        self.stores.remove(name);
    }
}

fn error_json(e: &MemoryCallError) -> serde_json::Value {
    let mut v = serde_json::to_value(e).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("ok".into(), false.into());
    }
    v
}

/// Reads a `/memory/call` answer (the client side of [`MemoryHub::call_json`]).
pub fn decode_reply(status: u16, body: &[u8]) -> Result<MemoryReply, MemoryCallError> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| MemoryCallError::Unavailable(format!("memory answered {status} with a non-JSON body")))?;
    if v.get("ok").and_then(serde_json::Value::as_bool) == Some(true) {
        serde_json::from_value(v).map_err(|e| MemoryCallError::Unavailable(format!("bad memory reply: {e}")))
    } else {
        Err(serde_json::from_value(v)
            .unwrap_or_else(|_| MemoryCallError::Unavailable(format!("memory answered {status}"))))
    }
}

