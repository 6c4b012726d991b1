//! What every memory tool runs with: the session's [`MemoryToolContext`], and how a
//! tool's answer is shaped (JSON cut to the result budget, or an error text).
//!
//! The memory tools ([`super::tools`]) and the self-report tools ([`super::self_report`])
//! both stand on this; neither imports the other for it.

use crate::protocol::memory::MemoryCallError;
use crate::text::truncate_chars;
use crate::toolkit::{ToolOutcome, MAX_RESULT_CHARS};
use crate::workspace::Workspace;
use r2_layout::{AgentId, Scope};
use serde_json::Value;

/// The session a memory tool runs for: its agent, its own store and scope, its clock and zone.
pub struct MemoryToolContext<'a> {
    pub agent: &'a AgentId,
    /// The session's store (from [`super::store_for`]).
    pub store: String,
    pub scope: Scope,
    pub model: &'a str,
    pub workspace: &'a Workspace,
    pub now_ms: i64,
    /// The agent's time zone (IANA): conversation hits say when, date ranges resolve in it.
    pub timezone: &'a str,
    /// Whether the session's `memory_search` / `memory_get` count as recall
    /// evidence: a conversation's do; a heartbeat's or a job's (the agent's
    /// own routine, in the owner's store for a heartbeat) do not, or every
    /// check-in would vote for what dreaming promotes.
    pub records_use: bool,
}

impl MemoryToolContext<'_> {
    /// Whether a session of `key` records its memory use (see [`Self::records_use`]).
    pub fn records_use_of(key: &crate::inbound::SessionKey) -> bool {
        !matches!(key, crate::inbound::SessionKey::Heartbeat(_) | crate::inbound::SessionKey::Job { .. })
    }
}

pub(super) fn ok(v: Value) -> ToolOutcome {
    let text = serde_json::to_string(&v).unwrap_or_default();
    ToolOutcome { text: truncate_chars(&text, MAX_RESULT_CHARS), is_error: false }
}

pub(super) fn err(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome { text: text.into(), is_error: true }
}

pub(super) fn call_error(e: MemoryCallError) -> ToolOutcome {
    err(e.to_string())
}
