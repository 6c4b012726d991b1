//! What a session's work needs besides the platform: its settings, its key,
//! and the caches its object keeps between turns.

use super::history::HistoryCache;
use super::watch::Watch;
use crate::inbound::SessionKey;
use crate::llm::wire::WireMemo;
use crate::mcp::toolset::McpState;
use crate::media::MediaCache;
use crate::settings::AgentConfig;
use crate::workspace::WorkspaceCache;
use std::cell::{Cell, RefCell};

/// What a session needs besides the platform.
pub struct SessionDeps<'a> {
    pub config: &'a AgentConfig,
    pub key: &'a SessionKey,
    pub workspace_cache: &'a RefCell<WorkspaceCache>,
    /// R2 operations of the last workspace load, for `/status`; `None` while
    /// a load runs (the cache is out for it) or before the first.
    pub workspace_load_ops: &'a Cell<Option<u32>>,
    /// Media bytes kept between LLM calls (byte-budgeted LRU).
    pub media_cache: &'a RefCell<MediaCache>,
    /// The history as last read (only new rows are read from SQLite).
    pub history: &'a RefCell<HistoryCache>,
    /// The encoded messages of the last request (only new ones are encoded).
    pub wire_memo: &'a RefCell<WireMemo>,
    /// Whether recall has to ask the Agent object ([`crate::memory::recall::RecallGate`]).
    pub recall: &'a crate::memory::recall::RecallGate,
    /// The session's MCP tools (frozen when it starts) and open connections.
    pub mcp: &'a RefCell<McpState>,
    /// Calls not yet in the usage ledger, the reservation in flight, the
    /// turn's footer, the cache watch.
    pub meter: &'a RefCell<super::meter_state::MeterState>,
    /// Who follows the message being answered (API clients, chat previews).
    pub watch: &'a Watch,
}

impl SessionDeps<'_> {
    /// Tokens a request may use: the context window less what is kept free
    /// for the answer.
    pub fn context_budget(&self) -> u64 {
        let lc = &self.config.lifecycle;
        lc.context_window.saturating_sub(lc.context_reserve).max(1)
    }
}
