//! Dreaming: the agent's memory improves itself, safely. Once a night, at
//! `DREAM_AT` in `TIMEZONE`, the Agent object looks at what kept coming up
//! in the owner's memory ([recall evidence](crate::memory::evidence)) and
//! promotes the lasting facts into MEMORY.md.
//!
//! One sweep ([`sweep::night`]), driven by the cron tick:
//! 1. **Once per night, exactly once.** The night's slot `dream:{local date}`
//!    is claimed in the schedule's claim table ([`crate::scheduled::store`]);
//!    a repeated tick, a second trigger or an alarm retry finds it taken.
//! 2. **Candidates** are entries of the owner's store (`main`: group stores
//!    are never promoted into the owner's MEMORY.md) whose evidence passes
//!    every gate (`DREAM_MIN_SCORE`, `DREAM_MIN_HITS`, `DREAM_MIN_QUERIES`,
//!    `DREAM_MIN_DAYS`), that were not settled before (promoted, rejected,
//!    refused by the owner, or waiting for an answer) and that MEMORY.md does
//!    not already say ([`hearth_memory::promote`]). Nothing new: the sweep
//!    ends there, with **no LLM call**. MEMORY.md full (its 12,000-character
//!    prompt budget): no call either.
//! 3. **One LLM call** ([`judge`]) turns the candidates into short facts or
//!    rejects them. Its tokens are recorded as their own kind (`dreaming` in
//!    the schedule's ledger, and in the usage ledger once issue 14's lands:
//!    [`DreamHost::reserve`] / [`DreamHost::settle`]); when the budget's
//!    background limit says no, the sweep is skipped before the call.
//! 4. **Promotions** are appended under `## Dreamed YYYY-MM-DD HH:MM UTC`
//!    ([`memory_file`]): never removing or rewriting a line (a write that
//!    would, because MEMORY.md changed during the sweep, is refused whole),
//!    never past the prompt budget. With `DREAM_APPROVAL=telegram` they are
//!    proposals instead ([`approval`]): only what the owner approves is
//!    written; unanswered ones expire; refusals are remembered.
//! 5. **DREAMS.md** gets a dated entry: what was considered, promoted,
//!    rejected, and why. Both files change through the workspace history
//!    (actor `dreaming`).

pub mod approval;
pub mod judge;
pub mod memory_file;
pub mod state;
pub mod sweep;

#[cfg(test)]
mod tests;

use crate::ports::{LogLevel, ObjectStore, Sql};
use hearth_memory::promote::Thresholds;
use r2_layout::Usage;
use std::collections::HashSet;

/// The owner's store: the only one dreaming promotes from.
pub const STORE: &str = crate::protocol::memory::MAIN_STORE;

/// A candidate, owned (read while the memory was borrowed).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub entry_id: u64,
    pub name: String,
    pub kind: &'static str,
    pub content: String,
    pub content_hash: u64,
    pub hits: u32,
    pub queries: u32,
    pub days: u32,
    pub score: f32,
}

/// What the selection found ([`DreamHost::select`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Picked {
    pub candidates: Vec<Candidate>,
    /// Entries whose evidence passed the gates.
    pub passed: usize,
    /// Of those, settled before, or said by MEMORY.md.
    pub settled: usize,
    pub already_said: usize,
}

/// The LLM's answer to the sweep's call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    pub model: String,
}

/// Whether the sweep's call may go (the budget's background limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permit {
    /// Go; give the reservation back when settling.
    Go(u64),
    /// Skip the sweep tonight, for this reason.
    Skip(String),
}

/// What the sweep needs from the Agent object.
#[allow(async_fn_in_trait)]
pub trait DreamHost {
    type Store: ObjectStore;
    type Sql: Sql;
    fn store(&self) -> &Self::Store;
    fn sql(&self) -> &Self::Sql;
    /// The candidates of [`STORE`] (the memory is borrowed only here).
    fn select(&self, memory_md: &str, gates: &Thresholds, settled: &HashSet<(u64, u64)>) -> Result<Picked, String>;
    /// The one LLM call.
    async fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<Completion, String>;
    /// Asks the budget for room before the call. The default says yes: an
    /// agent without a budget, or before the usage ledger exists.
    fn reserve(&self, prompt_tokens: u64, max_output_tokens: u64) -> Permit {
        let _ = (prompt_tokens, max_output_tokens);
        Permit::Go(0)
    }
    /// Records the call's usage (kind `dreaming`) and gives the reservation back.
    fn settle(&self, reservation: u64, completion: &Completion, at: i64) {
        let _ = (reservation, completion, at);
    }
    fn log(&self, level: LogLevel, msg: &str);
}

/// The candidates of [`STORE`] in `hub` (what [`DreamHost::select`] does in
/// the Agent object): evidence past the count gates from SQLite, then the
/// store's own rules ([`hearth_memory::promote::select`]). Evidence of
/// entries removed since is dropped on the way.
pub fn pick<S: Sql>(
    hub: &mut crate::memory::MemoryHub<S>,
    memory_md: &str,
    gates: &Thresholds,
    settled: &HashSet<(u64, u64)>,
) -> Result<Picked, String> {
    use hearth_memory::promote::{self, AlreadySaid};
    let sql = hub.sql().clone();
    let passing = crate::memory::evidence::passing(&*sql, STORE, gates).map_err(|e| e.to_string())?;
    let store = hub.store(STORE).map_err(|e| e.to_string())?;
    let said = AlreadySaid::new(store.index().tokenizer(), memory_md);
    let is_settled = |id: u64, hash: u64| settled.contains(&(id, hash));
    let sel = promote::select(store, passing.iter().map(|(id, e)| (*id, e)), gates, &said, &is_settled);
    let picked = Picked {
        candidates: sel
            .candidates
            .iter()
            .map(|c| Candidate {
                entry_id: c.entry.id,
                name: c.entry.name.clone(),
                kind: match c.entry.kind {
                    hearth_memory::Kind::Note => "note",
                    hearth_memory::Kind::Archive => "conversation summary",
                },
                content: c.entry.content.clone(),
                content_hash: c.content_hash,
                hits: c.evidence.hits,
                queries: c.evidence.distinct_queries() as u32,
                days: c.evidence.distinct_days() as u32,
                score: c.evidence.last_score.unwrap_or(0.0),
            })
            .collect(),
        passed: sel.passed,
        settled: sel.settled,
        already_said: sel.already_said,
    };
    let gone = sel.gone.clone();
    hub.forget_evidence(STORE, &gone);
    Ok(picked)
}
