//! The usage ledger: one row per heartbeat or job run, in the Agent object.
//!
//! The Session object runs the turn and keeps its own usage rows; it does
//! not know which slot a turn belonged to, and a job's Session is not found
//! again once the job leaves `cron.json`. So the Agent object records each
//! run itself: once a run is queued, the next tick (or admin read) asks its
//! Session for its usage counters (`usageAll`, which only grow, and `open`,
//! the messages not yet finished) and writes the growth since the last
//! record as the row of the runs that are over.
//!
//! Which runs are over: a job's or the heartbeat's Session receives only
//! scheduled runs, one message each, and runs them one at a time in the
//! order queued. Of its `n` queued runs at most `open` are unfinished, so
//! the oldest `n - open` are over. A job that always overlaps itself (runs
//! longer than its period) never has an idle Session, yet each tick finds
//! the runs that ended since the last one and records them; its claims never
//! wait for a pruning that would lose their tokens.
//!
//! Attribution is per tick, not per turn: a delta holds every run that ended
//! since the last record, on the newest of them (the older rows carry zero
//! tokens), plus what a run still in progress has spent so far (the rest of
//! it goes to the next record). Runs are taken oldest slot first; a run
//! queued late (its first queue call failed) may have started after a newer
//! one, which moves tokens between rows, never out of them. Totals per job
//! and for the heartbeat are exact; nothing is counted twice or lost.

use super::queue::SessionQueue;
use super::runs::{KIND_DREAM, KIND_HEARTBEAT, KIND_JOB};
use super::store::{Claim, LedgerTotal, ScheduleStore};
use crate::inbound::SessionKey;
use crate::ports::{LogLevel, Sql, StorageError};
use r2_layout::{AgentId, Usage};
use serde::Serialize;
use std::collections::BTreeMap;

/// The Session a run was queued in.
pub fn session_of(agent: &AgentId, run: &Claim) -> Option<SessionKey> {
    match run.kind.as_str() {
        KIND_HEARTBEAT => Some(SessionKey::Heartbeat(agent.clone())),
        KIND_JOB => Some(SessionKey::Job { agent: agent.clone(), job: run.name.clone() }),
        _ => None,
    }
}

/// `now - before`, field by field. Counters that went back (the Session's
/// storage was wiped) start over: all of `now` is new.
fn growth(now: &Usage, before: &Usage) -> Usage {
    let went_back = now.input < before.input
        || now.output < before.output
        || now.cache_read < before.cache_read
        || now.cache_write < before.cache_write;
    if went_back {
        return r2_layout::Usage::new(now.input, now.output, now.cache_read, now.cache_write);
    }
    r2_layout::Usage::new(
        now.input - before.input,
        now.output - before.output,
        now.cache_read - before.cache_read,
        now.cache_write - before.cache_write,
    )
}

/// Records the usage of queued runs that are over (see the module docs). A
/// Session that cannot be asked is tried again next time (logged, not fatal).
pub async fn sync<S: Sql, Q: SessionQueue>(
    state: &ScheduleStore<'_, S>,
    queue: &Q,
    agent: &AgentId,
    now: i64,
    log: &dyn Fn(LogLevel, &str),
) -> Result<(), StorageError> {
    let mut by_session: BTreeMap<String, (SessionKey, Vec<Claim>)> = BTreeMap::new();
    for run in state.queued()? {
        if let Some(key) = session_of(agent, &run) {
            by_session.entry(key.render()).or_insert_with(|| (key, Vec::new())).1.push(run);
        }
    }
    for (name, (key, runs)) in by_session {
        let counters = match queue.usage(&key).await {
            Ok(c) => c,
            Err(e) => {
                log(LogLevel::Warn, &format!("usage of {name} not recorded yet: {e}"));
                continue;
            }
        };
        // `runs` is oldest first; the newest `open` of them may still run.
        let unfinished = usize::try_from(counters.open).unwrap_or(0);
        let over = runs.len().saturating_sub(unfinished);
        if over == 0 {
            continue; // every run may still be spending tokens
        }
        let seen = state.usage_seen(&name)?.unwrap_or_default();
        state.record_usage(&runs[..over], &growth(&counters.total, &seen), &name, &counters.total, now)?;
    }
    Ok(())
}

/// Token totals as the admin route shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub runs: i64,
    #[serde(flatten)]
    pub usage: Usage,
}

impl Tokens {
    fn add(&mut self, t: &LedgerTotal) {
        self.runs += t.runs;
        self.usage.add(&t.usage);
    }
}

/// Heartbeat, all jobs, and each job (including jobs no longer in `cron.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerReport {
    pub heartbeat: Tokens,
    pub jobs: Tokens,
    pub by_job: BTreeMap<String, Tokens>,
    /// The nightly memory sweeps (one LLM call each, when there was something new).
    pub dreaming: Tokens,
}

pub fn report<S: Sql>(state: &ScheduleStore<'_, S>) -> Result<LedgerReport, StorageError> {
    let mut r = LedgerReport::default();
    for t in state.ledger_totals()? {
        match t.kind.as_str() {
            KIND_HEARTBEAT => r.heartbeat.add(&t),
            KIND_JOB => {
                r.jobs.add(&t);
                r.by_job.entry(t.name.clone()).or_default().add(&t);
            }
            KIND_DREAM => r.dreaming.add(&t),
            _ => {}
        }
    }
    Ok(r)
}
