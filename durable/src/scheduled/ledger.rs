//! The usage ledger: one row per heartbeat or job run, in the Agent object.
//!
//! The Session object runs the turn and keeps its own usage rows; it does
//! not know which slot a turn belonged to, and a job's Session is not found
//! again once the job leaves `cron.json`. So the Agent object records each
//! run itself: once a run is queued, the next tick (or admin read) asks its
//! Session for its usage counters (`usageAll`, which only grow) and, when
//! the Session is idle, writes the growth since the last record as the run's
//! row. Heartbeat runs are queued only into an idle session, so a delta is
//! exactly one run; a job that overran its period has several runs in one
//! delta, recorded on the newest (the older rows carry zero tokens).

use super::store::{Claim, LedgerTotal, ScheduleStore};
use super::{SessionQueue, KIND_HEARTBEAT, KIND_JOB};
use crate::ports::{LogLevel, Sql, StorageError};
use crate::routing::SessionKey;
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
        return crate::llm::usage_of(now.input, now.output, now.cache_read, now.cache_write);
    }
    crate::llm::usage_of(
        now.input - before.input,
        now.output - before.output,
        now.cache_read - before.cache_read,
        now.cache_write - before.cache_write,
    )
}

/// Records the usage of queued runs whose Session is idle again. A Session
/// that cannot be asked is tried again next time (logged, not fatal).
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
        if counters.open > 0 {
            continue; // still running: its tokens are not all spent yet
        }
        let seen = state.usage_seen(&name)?.unwrap_or_default();
        state.record_usage(&runs, &growth(&counters.total, &seen), &name, &counters.total, now)?;
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
            _ => {}
        }
    }
    Ok(r)
}
