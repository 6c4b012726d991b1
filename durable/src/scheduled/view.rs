//! What the Agent object does with time: record a trigger, run the pending
//! ticks in its alarm, and the admin view of heartbeat and job state
//! (`GET /api/agents/{id}/schedule`).

use super::ledger::{self, LedgerReport};
use super::queue::SessionQueue;
use super::runs::next_heartbeat;
use super::store::ScheduleStore;
use super::tick::{read_cron, tick};
use crate::ports::{LogLevel, ObjectStore, Sql, StorageError};
use crate::settings::schedule::ScheduleConfig;
use crate::settings::Vars;
use hearth_schedule::heartbeat::ProseRule;
use serde::Serialize;

/// Ticks one alarm runs before it hands over to a new alarm (triggers that
/// arrive faster than ticks finish must not make one alarm run for ever).
pub const MAX_TICKS_PER_ALARM: u32 = 10;

/// One job as the view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    pub name: String,
    pub cron: String,
    pub timezone: String,
    pub message: String,
    pub next_run: Option<i64>,
    pub last_slot: Option<i64>,
}

/// The heartbeat's settings as they apply (or why they do not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_minutes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_hours: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_prose: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatView {
    pub settings: HeartbeatSettings,
    /// The last tick's outcome, as recorded.
    pub last: serde_json::Value,
    pub last_run_tick: Option<i64>,
    pub last_slot: Option<i64>,
    pub next_slot: Option<i64>,
}

/// Heartbeat and job state, errors and settings warnings, pending and failed
/// runs, R2 operations of the last tick, tokens per kind and job.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    pub agent: String,
    pub last_tick: Option<i64>,
    pub pending_tick: Option<i64>,
    pub last_processed_tick: Option<i64>,
    pub last_tick_r2_ops: Option<i64>,
    pub heartbeat: HeartbeatView,
    pub jobs: Vec<JobView>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    pub pending_runs: Vec<String>,
    pub failed_runs: Vec<String>,
    pub tokens: LedgerReport,
}

/// Records a trigger's time for `agent`; the alarm runs it.
pub fn record_trigger<S: Sql>(sql: &S, agent: &str, scheduled_time: i64) -> Result<(), StorageError> {
    let store = ScheduleStore::new(sql);
    store.init()?;
    store.set("agent", agent)?;
    store.add_pending_tick(scheduled_time)
}

/// What an alarm's ticks did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicksRun {
    /// No trigger ever reached this object.
    NothingScheduled,
    /// The agent's settings are invalid (logged).
    Misconfigured,
    /// Ran this many; `more`: pending ticks are left for a new alarm.
    Ran { ticks: u32, more: bool },
}

/// Runs the pending ticks, newest first (one tick covers the ones before
/// it), at most [`MAX_TICKS_PER_ALARM`]. A failed tick fails the call (the
/// runtime retries the alarm; claims keep each run exactly once).
pub async fn run_pending_ticks<O: ObjectStore, S: Sql, Q: SessionQueue>(
    store: &O,
    sql: &S,
    queue: &Q,
    vars: &impl Vars,
    log: &dyn Fn(LogLevel, &str),
) -> Result<TicksRun, StorageError> {
    let state = ScheduleStore::new(sql);
    state.init()?;
    let Some(name) = state.get("agent")? else { return Ok(TicksRun::NothingScheduled) };
    let cfg = match ScheduleConfig::load(vars, &name) {
        Ok(c) => c,
        Err(e) => {
            log(LogLevel::Error, &format!("schedule of agent {name}: {e}"));
            return Ok(TicksRun::Misconfigured);
        }
    };
    let mut ticks = 0;
    while let Some(now) = state.pending_tick()? {
        if ticks >= MAX_TICKS_PER_ALARM {
            return Ok(TicksRun::Ran { ticks, more: true });
        }
        let report =
            tick(store, sql, queue, &cfg, now, log).await.map_err(|e| StorageError(format!("tick failed: {e}")))?;
        log(
            LogLevel::Info,
            &format!("agent {name} tick {now}: heartbeat {}, jobs {:?}", report.heartbeat.label(), report.jobs_queued),
        );
        state.done_pending_tick(now)?;
        ticks += 1;
    }
    Ok(TicksRun::Ran { ticks, more: false })
}

/// The admin view. First records the usage of runs that finished since the
/// last tick (a Session that cannot be asked now is asked again next time).
/// `Ok(None)`: no cron trigger reached this agent yet.
pub async fn status<O: ObjectStore, S: Sql, Q: SessionQueue>(
    store: &O,
    sql: &S,
    queue: &Q,
    vars: &impl Vars,
    now_ms: i64,
    log: &dyn Fn(LogLevel, &str),
) -> Result<Option<ScheduleStatus>, String> {
    let state = ScheduleStore::new(sql);
    let err = |e: StorageError| e.to_string();
    state.init().map_err(err)?;
    let Some(name) = state.get("agent").map_err(err)? else { return Ok(None) };
    let cfg = ScheduleConfig::load(vars, &name).map_err(|e| e.to_string())?;
    let now = state.last_processed_tick().map_err(err)?.unwrap_or(now_ms);
    let (file, file_error) = read_cron(store, &cfg).await.map_err(err)?;
    let last_slots = state.last_job_slots().map_err(err)?;
    let last_of = |n: &str| last_slots.iter().find(|(j, _)| j == n).map(|(_, s)| *s);
    let jobs = file
        .jobs
        .iter()
        .map(|j| JobView {
            name: j.name.clone(),
            cron: j.cron.clone(),
            timezone: j.timezone.clone(),
            message: j.message.clone(),
            next_run: j.next_slot_after(now),
            last_slot: last_of(&j.name),
        })
        .collect();
    let mut errors: Vec<String> = file.errors.iter().map(|e| e.to_string()).collect();
    if let Some(e) = file_error {
        errors.insert(0, e);
    }
    let (settings, next_slot) = match &cfg.heartbeat {
        Ok(c) => (
            HeartbeatSettings {
                interval_minutes: Some(c.interval_minutes()),
                active_hours: Some(c.active_hours().map(|a| a.to_string())),
                timezone: Some(cfg.timezone.clone()),
                enabled: cfg.heartbeat_enabled,
                run_prose: Some(cfg.prose == ProseRule::Run),
                template: Some(cfg.overlay.template.clone()),
                error: None,
            },
            if cfg.heartbeat_enabled { next_heartbeat(now, c) } else { None },
        ),
        Err(e) => (
            HeartbeatSettings {
                interval_minutes: None,
                active_hours: None,
                timezone: None,
                enabled: false,
                run_prose: None,
                template: None,
                error: Some(e.clone()),
            },
            None,
        ),
    };
    ledger::sync(&state, queue, &cfg.agent, now_ms, log).await.map_err(err)?;
    Ok(Some(ScheduleStatus {
        agent: name,
        last_tick: state.last_tick().map_err(err)?,
        pending_tick: state.pending_tick().map_err(err)?,
        last_processed_tick: state.last_processed_tick().map_err(err)?,
        last_tick_r2_ops: state.get_i64("last_tick_r2_ops").map_err(err)?,
        heartbeat: HeartbeatView {
            settings,
            last: state
                .get("heartbeat_last")
                .map_err(err)?
                .and_then(|v| hearth_json::from_slice(v.as_bytes()).ok())
                .unwrap_or(serde_json::Value::Null),
            last_run_tick: state.get_i64("heartbeat_last_run").map_err(err)?,
            last_slot: state.last_heartbeat_slot().map_err(err)?,
            next_slot,
        },
        jobs,
        errors,
        warnings: cfg.warnings,
        pending_runs: state.pending().map_err(err)?.into_iter().map(|c| c.slot_id).collect(),
        failed_runs: state.failed().map_err(err)?,
        tokens: ledger::report(&state).map_err(err)?,
    }))
}
