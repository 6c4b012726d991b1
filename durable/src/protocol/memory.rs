//! The memory protocol between a Session object and its agent's Agent object:
//! which store a session may name, the calls, the replies, and how they
//! travel ([`MemoryRequest`]: the reply tagged by `reply`, or a 422/503 refusal).
//!
//! A session only ever names its own store ([`store_for`]), so a private note
//! cannot reach a group: not by a tool call and not by recall.

use super::call::{agent_query, impl_call, CallError};
use crate::inbound::SessionKey;
use hearth_memory::{Entry, Kind, MemoryError, Op};
use serde::{Deserialize, Serialize};

/// `POST ?agent=`: a [`MemoryCall`] → its [`MemoryReply`] ([`MemoryRequest`]).
pub const CALL_PATH: &str = "/memory/call";
/// `POST ?agent=` the fields of an `op`, `search` or `get` call without
/// `call` (the bench's and the tests' shorthand) → the same answers.
pub const OP_PATH: &str = "/memory/op";
pub const SEARCH_PATH: &str = "/memory/search";
pub const GET_PATH: &str = "/memory/get";
/// `GET ?agent=&store=` → the store's statistics; without `store`, the
/// stores loaded in the object's memory (`{"loaded": [...]}`).
pub const STATS_PATH: &str = "/memory/stats";

/// The owner's private store.
pub const MAIN_STORE: &str = "main";
/// The store a session uses.
pub fn store_for(key: &SessionKey) -> String {
    match key {
        SessionKey::Main(_) | SessionKey::Heartbeat(_) => MAIN_STORE.to_owned(),
        SessionKey::Group { channel, chat, .. } => format!("group:{channel}:{chat}"),
        SessionKey::Direct { channel, peer, .. } => format!("dm:{channel}:{peer}"),
        SessionKey::Job { job, .. } => format!("job:{job}"),
        SessionKey::Api { thread, .. } => format!("api:{thread}"),
        // A peer's notes about what one of an asker's chats delegated stay
        // with that chat's delegated session, never in the peer's own store.
        SessionKey::Delegated { from, thread, .. } => format!("from:{from}:{thread}"),
        // A sub-agent of the owner's main session works with the owner's
        // memory; one started in any other chat has a store of its own.
        SessionKey::Task { scope: r2_layout::Scope::Main, .. } => MAIN_STORE.to_owned(),
        SessionKey::Task { id, .. } => format!("task:{id}"),
    }
}

/// A well-formed store name (what the Agent object accepts).
pub fn valid_store_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 300 && !name.chars().any(char::is_control)
}

/// A request to the Agent object's memory. (Read tag-first through
/// [`MemoryCallDe`], without serde's content buffer: see `r2_layout::tagged`.)
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum MemoryCall {
    Op {
        store: String,
        op: Op,
    },
    Search {
        store: String,
        query: String,
        k: usize,
        /// Only entries of this kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<Kind>,
        /// The agent's own use (its `memory_search`): each hit counts as
        /// recall evidence. Searches by the owner (admin API, MCP, Discord
        /// `/memory`) leave it false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        record: bool,
    },
    /// The few entries worth recalling into a turn (see `crate::memory::recall`): like a search,
    /// without common words and with a relevance floor. Answered by `recalled`.
    Recall {
        store: String,
        query: String,
        k: usize,
        /// Exchanges of earlier conversations to consider too (their own floor).
        #[serde(default, skip_serializing_if = "is_zero")]
        conversations: usize,
    },
    Get {
        store: String,
        name: String,
        /// The agent's own read (`memory_get`): counts as recall evidence.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        record: bool,
    },
    Stats {
        store: String,
    },
    /// The recall evidence of the store's most used entries (admin view).
    Evidence {
        store: String,
        #[serde(default = "default_evidence_limit")]
        limit: usize,
    },
    AddArchive {
        store: String,
        name: String,
        summary: String,
        created_at: i64,
    },
    /// A page of the store's entries, newest first (the owner's browsing:
    /// the admin API only, like every call naming another store).
    List {
        store: String,
        #[serde(default)]
        offset: usize,
        /// At most [`MAX_LIST`]; 50 when not given.
        #[serde(default = "default_list_limit")]
        limit: usize,
    },
    /// Exchanges that left a session (a reset, a compaction, an archive found in
    /// R2) into the store's conversation index; once per source.
    AddConversation {
        store: String,
        from: ConversationSource,
        exchanges: Vec<Exchange>,
    },
    /// The exchanges of the store's conversations that best answer `query`.
    SearchConversations {
        store: String,
        query: String,
        /// More phrasings of the same question, fused with `query` by rank.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        more: Vec<String>,
        k: usize,
        /// Only what was said at or after this time (ms).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<i64>,
        /// Only what was said before this time (ms).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<i64>,
        /// Every store of the agent, not `store` alone: only the owner's
        /// `session_logs` asks this (it reads every transcript already).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        every_store: bool,
    },
}

/// Where a batch of exchanges comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSource {
    /// What makes the batch once-only: the archive's R2 key (a reset's, or a
    /// compaction part's).
    pub source: String,
    pub session_id: String,
    pub session_key: String,
    pub channel: String,
}

/// One exchange of a conversation: what someone said and the agent's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Exchange {
    /// When it was said (ms).
    pub at: i64,
    /// Who said it (a display name, or "user" when the channel gave none).
    pub speaker: String,
    /// The channel it came by (empty: the session's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub channel: String,
    pub text: String,
    /// What the agent answered (empty: nothing, or not addressed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reply: String,
}

/// A conversation search result: the exchange, its session, and up to two exchanges
/// of its session before and after it (the context a reader needs).
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationHitView {
    pub store: String,
    pub session_id: String,
    pub session_key: String,
    pub channel: String,
    /// A sum of shares (0–1 each) of what the query could score: comparable across
    /// stores for one query.
    pub score: f32,
    /// How clearly the exchange itself is about the query (0–1).
    pub match_share: f32,
    /// How clearly its ±1 window is (0–1): per-turn recall's floor.
    #[serde(default)]
    pub window_share: f32,
    pub exchange: Exchange,
    /// Oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<Exchange>,
    /// In order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<Exchange>,
}

/// The largest page a `list` call answers.
pub const MAX_LIST: usize = 200;

fn default_list_limit() -> usize {
    50
}

/// One entry as a listing shows it: enough to pick it, not its content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoteSummary {
    pub name: String,
    pub kind: Kind,
    pub created_at: i64,
    /// The content's first non-empty line, cut to 120 characters.
    pub summary: String,
    /// The content's length in characters.
    pub length: usize,
}

impl MemoryCall {
    pub fn store(&self) -> &str {
        match self {
            MemoryCall::Op { store, .. }
            | MemoryCall::Search { store, .. }
            | MemoryCall::Recall { store, .. }
            | MemoryCall::Get { store, .. }
            | MemoryCall::Stats { store }
            | MemoryCall::Evidence { store, .. }
            | MemoryCall::AddArchive { store, .. }
            | MemoryCall::List { store, .. }
            | MemoryCall::AddConversation { store, .. }
            | MemoryCall::SearchConversations { store, .. } => store,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn default_evidence_limit() -> usize {
    50
}

/// One entry's recall evidence, as the admin view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceView {
    pub entry_id: u64,
    /// None: the entry was removed since.
    pub name: Option<String>,
    pub hits: u32,
    pub distinct_queries: usize,
    pub distinct_days: usize,
    /// Share (0–1) of what the query could score, at the last scored use.
    pub last_score: Option<f32>,
    pub last_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
pub struct MemoryHit {
    pub entry: Entry,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
pub struct StoreStats {
    pub store: String,
    pub entries: usize,
    pub notes: usize,
    pub archives: usize,
    pub vocabulary: usize,
    pub avgdl: f32,
    pub pending_log_rows: usize,
    /// Recalls that brought notes of this store into a turn in the last 7 days
    /// (None: the host gave no clock, so none are counted).
    #[serde(default)]
    pub recall_events_7d: Option<u64>,
    /// Conversations the agent has (the Agent object's session registry), if known.
    #[serde(default)]
    pub sessions_total: Option<u64>,
    /// Facts dreaming wrote to MEMORY.md, all time (None: the host does not dream).
    #[serde(default)]
    pub memories_promoted: Option<u64>,
    /// When the last dreaming sweep ran (ms), if one has.
    #[serde(default)]
    pub last_dream_ts: Option<i64>,
    /// Exchanges of earlier conversations in the store's conversation memory.
    #[serde(default)]
    pub conversations: Option<usize>,
}

/// (Read tag-first through [`MemoryReplyDe`].)
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum MemoryReply {
    /// An operation succeeded on the entry `id`, now named `name` (None: removed).
    Applied {
        id: u64,
        name: Option<String>,
    },
    Hits {
        hits: Vec<MemoryHit>,
    },
    Entry {
        entry: Option<Entry>,
    },
    Stats {
        stats: StoreStats,
    },
    Evidence {
        entries: Vec<EvidenceView>,
    },
    /// A `list` page; `total` counts every entry of the store. Written
    /// only: the callers do not read it (see `MemoryReplyDe`).
    Notes {
        total: usize,
        offset: usize,
        notes: Vec<NoteSummary>,
    },
    /// Exchanges added by an `add_conversation` (0: the source was done before).
    Added {
        added: usize,
    },
    Conversations {
        hits: Vec<ConversationHitView>,
    },
    /// A `recall`'s notes and exchanges.
    Recalled {
        hits: Vec<MemoryHit>,
        #[serde(default)]
        conversations: Vec<ConversationHitView>,
        /// The `main` store holds no note and no conversation: no text
        /// recalls anything until something is stored, and then the Agent
        /// object tells the main session ([`crate::protocol::session::MemoryStored`]),
        /// which asks nothing meanwhile (`crate::memory::recall::RecallGate`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        empty: bool,
    },
}

/// [`MemoryCall`]'s externally tagged twin (`r2_layout::read_tagged`).
#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "MemoryCall", rename_all = "snake_case")]
enum MemoryCallDe {
    Op {
        store: String,
        #[serde(deserialize_with = "read_op")]
        op: Op,
    },
    Search {
        store: String,
        query: String,
        k: usize,
        #[serde(default)]
        kind: Option<Kind>,
        #[serde(default)]
        record: bool,
    },
    Recall {
        store: String,
        query: String,
        k: usize,
        #[serde(default)]
        conversations: usize,
    },
    Get {
        store: String,
        name: String,
        #[serde(default)]
        record: bool,
    },
    Stats {
        store: String,
    },
    Evidence {
        store: String,
        #[serde(default = "default_evidence_limit")]
        limit: usize,
    },
    AddArchive {
        store: String,
        name: String,
        summary: String,
        created_at: i64,
    },
    List {
        store: String,
        #[serde(default)]
        offset: usize,
        #[serde(default = "default_list_limit")]
        limit: usize,
    },
    AddConversation {
        store: String,
        from: ConversationSource,
        exchanges: Vec<Exchange>,
    },
    SearchConversations {
        store: String,
        query: String,
        #[serde(default)]
        more: Vec<String>,
        k: usize,
        #[serde(default)]
        since: Option<i64>,
        #[serde(default)]
        until: Option<i64>,
        #[serde(default)]
        every_store: bool,
    },
}
/// [`Op`]'s externally tagged twin: `Op` is read like the other tagged
/// enums, not by serde's derive, whose buffering reader (`Content`) would be
/// linked for it (and telegram's `other` fields) alone.
#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "Op", rename_all = "snake_case")]
enum OpDe {
    Add { name: String, content: String, kind: Kind, created_at: i64 },
    Rename { name: String, new_name: String },
    Alias { name: String, alias: String },
    Write { name: String, content: String },
    Remove { name: String },
}
// The expectation is the derive's, so a refusal reads as it did.
r2_layout::read_tagged!(fn read_op, Op, OpDe, "op", "internally tagged enum Op");

r2_layout::read_tagged!(MemoryCall, MemoryCallDe, "call", "a memory call (an object with a call)");

/// [`MemoryReply`]'s externally tagged twin.
#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "MemoryReply", rename_all = "snake_case")]
enum MemoryReplyDe {
    Applied {
        id: u64,
        name: Option<String>,
    },
    Hits {
        hits: Vec<MemoryHit>,
    },
    Entry {
        entry: Option<Entry>,
    },
    Stats {
        stats: StoreStats,
    },
    Evidence {
        entries: Vec<EvidenceView>,
    },
    Added {
        added: usize,
    },
    Conversations {
        hits: Vec<ConversationHitView>,
    },
    Recalled {
        hits: Vec<MemoryHit>,
        #[serde(default)]
        conversations: Vec<ConversationHitView>,
        #[serde(default)]
        empty: bool,
    },
    // No `notes`: only the admin API asks for a listing, and the Worker
    // passes the object's JSON on unread (a reader would be WASM for nothing).
}
r2_layout::read_tagged!(MemoryReply, MemoryReplyDe, "reply", "a memory reply (an object with a reply)");

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

impl MemoryCallError {
    /// The status a refusal travels with from the Agent object: 422 for a
    /// refused operation (tell the model), 503 when nothing could be done.
    pub fn status(&self) -> u16 {
        match self {
            MemoryCallError::Rejected(_) => 422,
            MemoryCallError::Unavailable(_) => 503,
        }
    }

    /// What happened, without the kind.
    pub fn message(&self) -> &str {
        match self {
            MemoryCallError::Rejected(m) | MemoryCallError::Unavailable(m) => m,
        }
    }
}

/// A refused or failed `/memory/call`, as the caller reads it back: a 422
/// is a refusal of the operation, anything else the memory being unavailable.
impl From<CallError> for MemoryCallError {
    fn from(e: CallError) -> Self {
        match e.status {
            422 => MemoryCallError::Rejected(e.message),
            _ => MemoryCallError::Unavailable(e.message),
        }
    }
}

/// A [`MemoryCall`] for `agent`'s Agent object: the body is the call, the
/// agent rides in the query (the object applies the agent's memory settings).
/// Answered by the [`MemoryReply`] (200), or 422/503 `{"error"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct MemoryRequest {
    #[serde(skip)]
    pub agent: String,
    pub call: MemoryCall,
}
impl_call!(MemoryRequest => Agent Post CALL_PATH, MemoryReply, |r| r.agent.clone(), query |r| agent_query(&r.agent));
