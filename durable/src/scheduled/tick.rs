//! One tick of the cron trigger for one agent: pending runs retried,
//! finished runs' usage recorded, the heartbeat and the jobs decided,
//! claimed and queued.

use super::queue::{EnqueueOptions, EnqueueOutcome, SessionQueue};
use super::runs::{
    heartbeat_inbound, heartbeat_next_run_in, job_inbound, job_next_run_in, HeartbeatOutcome, CRON_FILE,
    FIRST_TICK_LOOKBACK_MS, KIND_HEARTBEAT, KIND_JOB,
};
use super::store::{Claim, ScheduleStore, PENDING_GIVE_UP_MS};
use super::{heartbeat_file, ledger};
use crate::inbound::{Inbound, SessionKey};
use crate::ports::{LogLevel, ObjectStore, Sql, StorageError};
use crate::settings::schedule::ScheduleConfig;
use crate::storage::Counted;
use hearth_schedule::cron_jobs::{due_jobs, parse_cron_json, CronFile};
use hearth_schedule::heartbeat::{decide, HeartbeatDecision};
use hearth_schedule::timing::heartbeat_due;
use r2_layout::{keys, AgentId};

/// What one tick did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickReport {
    pub now_ms: i64,
    /// An old trigger delivered after a newer one: only pending runs were retried.
    pub stale: bool,
    pub heartbeat: HeartbeatOutcome,
    /// Slot ids of the jobs queued.
    pub jobs_queued: Vec<String>,
    /// Problems with `cron.json` (one line each).
    pub job_errors: Vec<String>,
    /// R2 operations the tick made.
    pub r2_ops: u32,
}

/// Reads a workspace file as text; `None` when absent.
async fn read_text<O: ObjectStore>(store: &O, key: &str) -> Result<Option<String>, StorageError> {
    Ok(store.get(key).await?.map(|o| String::from_utf8_lossy(&o.body).into_owned()))
}

/// Logs each of `notes` (with `suffix`) when they differ from what was
/// stored under `key`: once per change, not on every tick.
fn note_changes<S: Sql>(
    state: &ScheduleStore<'_, S>,
    key: &str,
    notes: &[String],
    suffix: &str,
    agent: &AgentId,
    log: &dyn Fn(LogLevel, &str),
) -> Result<(), StorageError> {
    if state.set_notes(key, notes)? {
        for n in notes {
            log(LogLevel::Warn, &format!("agent {agent}: {n}{suffix}"));
        }
    }
    Ok(())
}

/// One tick at `now_ms` (the cron trigger's scheduled time): retries runs
/// left pending, records finished runs' usage, decides the heartbeat and the
/// jobs, claims their slots, queues their messages.
///
/// A run that could not be queued stays claimed as pending and the tick
/// answers `Err` once everything else is done, so the alarm retries soon;
/// storage errors stop the tick at once (the alarm retries; claims make
/// that safe).
pub async fn tick<O: ObjectStore, S: Sql, Q: SessionQueue>(
    store: &O,
    sql: &S,
    queue: &Q,
    cfg: &ScheduleConfig,
    now_ms: i64,
    log: &dyn Fn(LogLevel, &str),
) -> Result<TickReport, StorageError> {
    let store = Counted::new(store);
    let state = ScheduleStore::new(sql);
    state.init()?;
    let mut unqueued = Vec::new();
    requeue_pending(&state, queue, cfg, now_ms, log, &mut unqueued).await?;
    let mut report = TickReport {
        now_ms,
        stale: false,
        heartbeat: HeartbeatOutcome::NotDue,
        jobs_queued: vec![],
        job_errors: vec![],
        r2_ops: 0,
    };
    if state.last_processed_tick()?.is_some_and(|t| now_ms < t) {
        // A newer trigger already covered this time: deciding again with an
        // older "now" could only move state backwards.
        log(
            LogLevel::Info,
            &format!("agent {}: trigger {now_ms} is older than the last one handled; ignored", cfg.agent),
        );
        report.stale = true;
        return finish(report, unqueued);
    }
    ledger::sync(&state, queue, &cfg.agent, now_ms, log).await?;
    note_changes(&state, "config_warnings", &cfg.warnings, "", &cfg.agent, log)?;

    report.heartbeat = run_heartbeat(&store, &state, queue, cfg, now_ms, log, &mut unqueued).await?;
    state.set_heartbeat_outcome(now_ms, &report.heartbeat)?;

    // Jobs: the latest slot of each job in (last tick, now].
    let after = match state.last_tick()? {
        Some(t) => t,
        None => now_ms - FIRST_TICK_LOOKBACK_MS,
    };
    let (file, file_error) = read_cron(&store, cfg).await?;
    report.job_errors = file.errors.iter().map(|e| e.to_string()).collect();
    if let Some(e) = file_error {
        report.job_errors.insert(0, e);
    }
    note_changes(&state, "job_errors", &report.job_errors, " (skipped)", &cfg.agent, log)?;
    for due in due_jobs(&file.jobs, after, now_ms) {
        let id = due.slot_id();
        let inbound = job_inbound(id.clone(), due.job, now_ms);
        if !state.claim(&Claim::of_run(KIND_JOB, &due.job.name, due.slot_ms, &inbound)?, now_ms)? {
            continue;
        }
        let key = SessionKey::Job { agent: cfg.agent.clone(), job: due.job.name.clone() };
        let opts = EnqueueOptions {
            if_idle: false,
            fresh: true,
            next_run_in_ms: job_next_run_in(due.job, due.slot_ms, now_ms),
        };
        match queue.enqueue(&key, &inbound, opts).await {
            Ok(_) => {
                state.mark_queued(&id)?;
                report.jobs_queued.push(id);
            }
            Err(e) => {
                log(LogLevel::Error, &format!("agent {}: could not queue {id} (kept, retried): {e}", cfg.agent));
                unqueued.push(id);
            }
        }
    }
    state.advance_tick(now_ms)?;
    state.prune(now_ms)?;
    report.r2_ops = store.ops();
    state.set("last_tick_r2_ops", &report.r2_ops.to_string())?;
    finish(report, unqueued)
}

fn finish(report: TickReport, unqueued: Vec<String>) -> Result<TickReport, StorageError> {
    if unqueued.is_empty() {
        Ok(report)
    } else {
        Err(StorageError(format!(
            "could not queue {} (claimed as pending, queued again on retry)",
            unqueued.join(", ")
        )))
    }
}

/// Queues again the runs claimed earlier whose Session never confirmed them
/// (the call failed, or the object stopped in between). Not `if_idle`: the
/// Session may be running this very message; its dedupe key (the slot id)
/// turns a repeat into a no-op, so nothing runs twice.
async fn requeue_pending<S: Sql, Q: SessionQueue>(
    state: &ScheduleStore<'_, S>,
    queue: &Q,
    cfg: &ScheduleConfig,
    now_ms: i64,
    log: &dyn Fn(LogLevel, &str),
    unqueued: &mut Vec<String>,
) -> Result<(), StorageError> {
    for run in state.pending()? {
        let key = ledger::session_of(&cfg.agent, &run);
        let inbound = run.payload.as_deref().and_then(|p| hearth_json::from_slice::<Inbound>(p.as_bytes()).ok());
        let (Some(key), Some(inbound)) = (key, inbound) else {
            state.mark_failed(&run.slot_id)?;
            log(LogLevel::Error, &format!("agent {}: {} has no message to queue; given up", cfg.agent, run.slot_id));
            continue;
        };
        if now_ms.saturating_sub(run.slot_ms) > PENDING_GIVE_UP_MS {
            state.mark_failed(&run.slot_id)?;
            log(
                LogLevel::Error,
                &format!("agent {}: {} could not be queued for a day; given up", cfg.agent, run.slot_id),
            );
            continue;
        }
        // Not worked out again here (a job's schedule is in cron.json): a run
        // queued late asks for the 5-minute cache.
        let opts = EnqueueOptions { if_idle: false, fresh: true, next_run_in_ms: None };
        match queue.enqueue(&key, &inbound, opts).await {
            Ok(_) => {
                state.mark_queued(&run.slot_id)?;
                log(LogLevel::Info, &format!("agent {}: {} queued on retry", cfg.agent, run.slot_id));
            }
            Err(e) => {
                log(
                    LogLevel::Error,
                    &format!("agent {}: could not queue {} (kept, retried): {e}", cfg.agent, run.slot_id),
                );
                unqueued.push(run.slot_id);
            }
        }
    }
    Ok(())
}

/// `cron.json`, parsed, and a file-level error if it is not a JSON array.
/// Only the agent's own file counts: jobs are not inherited from a template.
pub async fn read_cron<O: ObjectStore>(
    store: &O,
    cfg: &ScheduleConfig,
) -> Result<(CronFile, Option<String>), StorageError> {
    let key = keys::workspace_key(&cfg.agent, CRON_FILE);
    let Some(text) = read_text(store, &key).await? else {
        return Ok((CronFile::default(), None));
    };
    Ok(match parse_cron_json(&text, Some(&cfg.timezone)) {
        Ok(f) => (f, None),
        Err(e) => (CronFile::default(), Some(format!("cron.json: {e}"))),
    })
}

async fn run_heartbeat<O: ObjectStore, S: Sql, Q: SessionQueue>(
    store: &O,
    state: &ScheduleStore<'_, S>,
    queue: &Q,
    cfg: &ScheduleConfig,
    now_ms: i64,
    log: &dyn Fn(LogLevel, &str),
    unqueued: &mut Vec<String>,
) -> Result<HeartbeatOutcome, StorageError> {
    if !cfg.heartbeat_enabled {
        return Ok(HeartbeatOutcome::Disabled);
    }
    let hb = match &cfg.heartbeat {
        Ok(c) => c,
        Err(e) => return Ok(HeartbeatOutcome::Misconfigured(e.clone())),
    };
    if !hb.is_active_at(now_ms) {
        return Ok(HeartbeatOutcome::Inactive);
    }
    let Some(slot) = heartbeat_due(now_ms, state.last_heartbeat_slot()?, hb) else {
        return Ok(HeartbeatOutcome::NotDue);
    };
    let checklist = heartbeat_file::heartbeat_checklist(store, state, &cfg.agent, &cfg.overlay, now_ms).await?;
    if let HeartbeatDecision::Skip(reason) = decide(checklist, cfg.prose) {
        return Ok(HeartbeatOutcome::Skipped(reason.as_str().into()));
    }
    let id = slot.id();
    let inbound = heartbeat_inbound(id.clone(), &crate::clock::datetime_string(now_ms, &cfg.timezone), now_ms);
    if !state.claim(&Claim::of_run(KIND_HEARTBEAT, KIND_HEARTBEAT, slot.start_ms, &inbound)?, now_ms)? {
        return Ok(HeartbeatOutcome::NotDue);
    }
    let key = SessionKey::Heartbeat(cfg.agent.clone());
    let opts = EnqueueOptions { if_idle: true, fresh: true, next_run_in_ms: heartbeat_next_run_in(hb, slot, now_ms) };
    match queue.enqueue(&key, &inbound, opts).await {
        Ok(EnqueueOutcome::Queued) | Ok(EnqueueOutcome::Repeat) => {
            state.mark_queued(&id)?;
            Ok(HeartbeatOutcome::Queued)
        }
        Ok(EnqueueOutcome::Busy) => {
            state.release(&id)?;
            log(LogLevel::Info, &format!("agent {}: heartbeat session is mid-turn; {id} skipped", cfg.agent));
            Ok(HeartbeatOutcome::Busy)
        }
        Err(e) => {
            log(LogLevel::Error, &format!("agent {}: could not queue {id} (kept, retried): {e}", cfg.agent));
            unqueued.push(id);
            Ok(HeartbeatOutcome::Retrying(e.to_string()))
        }
    }
}
