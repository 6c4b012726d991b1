//! Heartbeats and `cron.json` jobs, as the Agent object runs them.
//!
//! The pure rules (is HEARTBEAT.md worth a call, which slot is due, which job
//! is due, is a reply `HEARTBEAT_OK`, is a notification a repeat) live in the
//! `hearth-schedule` crate. This module drives them: one [`tick`] per cron
//! trigger, with the time of the trigger as "now", and turns decisions into
//! messages queued in Session objects. The Agent object never calls the LLM:
//! it claims a slot and enqueues; the Session object runs the turn through the
//! ordinary turn loop, whose reply goes to the `notify` channel (see
//! [`notify`]), which drops `HEARTBEAT_OK` and repeats and forwards the rest
//! to the owner.
//!
//! Decisions:
//! * **Exactly once.** Every run has a slot id (`heartbeat:{ms}`,
//!   `job:{name}:{ms}`). [`ScheduleStore::claim`] inserts it into the
//!   `sched_claims` table (primary key) before the message is queued; a second
//!   trigger for the slot finds it taken. The queued message's `dedupe_key` is
//!   the same id, so even a claim lost between the two steps cannot make the
//!   Session run the slot twice.
//! * **Small context.** Heartbeat and job messages are queued with `fresh`:
//!   an idle heartbeat/job session drops the previous run's history before
//!   the new run, so each run sees the workspace (system prompt) and its one
//!   message, not a growing transcript. Usage rows are kept (cost).
//! * **Mid-turn.** The heartbeat is queued with `if_idle`: a heartbeat session
//!   that still has an open message answers "busy" and the slot is released
//!   (a later tick of the same slot may run it). Jobs queue behind a running
//!   turn instead (a job's run is never dropped).
//! * **No tokens while idle.** HEARTBEAT.md is read on each due slot (one R2
//!   get); absent, empty, or all ticked means no message and no LLM call.
//!   Outside active hours nothing is read at all.
//! * **Cost apart.** Heartbeat and job turns run in their own Session objects
//!   (`agent:{id}:heartbeat`, `agent:{id}:job:{name}`), so their usage rows
//!   are never mixed with conversations; the admin route sums them per kind.

pub mod notify;
pub mod store;

#[cfg(test)]
mod tests;

use crate::config::{agent_ids, setting, ConfigError, Vars};
use crate::ports::{LogLevel, ObjectStore, ReplyTarget, Sql, StorageError};
use crate::routing::{ChatKind, Inbound, SessionKey};
use hearth_schedule::cron_jobs::{due_jobs, parse_cron_json, CronFile};
use hearth_schedule::heartbeat::{should_run, HeartbeatDecision};
use hearth_schedule::timing::{heartbeat_due, HeartbeatConfig};
use r2_layout::{keys, AgentId};
use serde::Serialize;
pub use store::ScheduleStore;

/// The `channel` of heartbeat and job messages (not a chat platform).
pub const SYSTEM_CHANNEL: &str = "system";
/// The reply-target channel that sends to the owner (see [`notify`]).
pub const NOTIFY_CHANNEL: &str = "notify";
/// On the first tick ever, jobs due in this many ms before it still run (the
/// cron trigger's period), so a job is not missed because Hearth just started.
pub const FIRST_TICK_LOOKBACK_MS: i64 = 5 * 60_000;
/// `cron.json` in the agent's workspace.
pub const CRON_FILE: &str = "cron.json";

/// The agent's scheduling settings, from vars (`{NAME}__{AGENT}` or `{NAME}`).
#[derive(Debug, Clone)]
pub struct ScheduleConfig {
    pub agent: AgentId,
    /// `HEARTBEAT_ENABLED` (default true).
    pub heartbeat_enabled: bool,
    /// `HEARTBEAT_INTERVAL_MINUTES` (30), `HEARTBEAT_ACTIVE_HOURS`
    /// (`HH:MM-HH:MM`, none = always), `TIMEZONE` (UTC). An invalid value
    /// disables the heartbeat with this error (jobs still run).
    pub heartbeat: Result<HeartbeatConfig, String>,
    /// `TIMEZONE`: the default zone of jobs without one.
    pub timezone: String,
}

impl ScheduleConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let ids = agent_ids(vars);
        if !ids.iter().any(|a| a == agent) {
            return Err(ConfigError::UnknownAgent(agent.to_owned(), ids.join(",")));
        }
        let agent_id = AgentId::parse(agent)
            .map_err(|e| ConfigError::Invalid { name: "AGENTS".into(), why: e.to_string() })?;
        let get = |name: &str| setting(vars, agent, name);
        let heartbeat_enabled = !matches!(
            get("HEARTBEAT_ENABLED").map(|v| v.to_ascii_lowercase()).as_deref(),
            Some("false" | "0" | "no" | "off")
        );
        let timezone = get("TIMEZONE").unwrap_or_else(|| "UTC".into());
        let heartbeat = (|| {
            let interval = match get("HEARTBEAT_INTERVAL_MINUTES") {
                None => hearth_schedule::timing::DEFAULT_INTERVAL_MINUTES,
                Some(v) => v
                    .parse::<u32>()
                    .map_err(|_| format!("HEARTBEAT_INTERVAL_MINUTES is invalid: {v:?} is not a number"))?,
            };
            let hours = get("HEARTBEAT_ACTIVE_HOURS");
            HeartbeatConfig::new(interval, hours.as_deref(), Some(&timezone))
                .map_err(|e| format!("heartbeat settings are invalid: {e}"))
        })();
        Ok(ScheduleConfig { agent: agent_id, heartbeat_enabled, heartbeat, timezone })
    }
}

/// Options of an enqueue into a Session object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnqueueOptions {
    /// Refuse (answer busy) when the session has an open message.
    pub if_idle: bool,
    /// When the session is idle, drop the previous run's history first.
    pub fresh: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    Queued,
    /// The same dedupe key was queued before.
    Repeat,
    /// `if_idle` and the session is mid-turn.
    Busy,
}

/// Queues a message in a Session object (the Worker's adapter does a DO fetch).
#[allow(async_fn_in_trait)]
pub trait SessionQueue {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        opts: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError>;
}

/// What happened to the heartbeat at one tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome", content = "detail")]
pub enum HeartbeatOutcome {
    Disabled,
    Misconfigured(String),
    /// Outside the active hours.
    Inactive,
    /// This slot already ran (or was claimed).
    NotDue,
    /// Due, but no LLM call: `absent`, `empty` or `all_done`.
    Skipped(String),
    /// The heartbeat session is mid-turn.
    Busy,
    /// Queued in the heartbeat session.
    Queued,
}

impl HeartbeatOutcome {
    pub fn label(&self) -> String {
        match self {
            HeartbeatOutcome::Disabled => "disabled".into(),
            HeartbeatOutcome::Misconfigured(e) => format!("misconfigured: {e}"),
            HeartbeatOutcome::Inactive => "inactive".into(),
            HeartbeatOutcome::NotDue => "not_due".into(),
            HeartbeatOutcome::Skipped(r) => format!("skipped: {r}"),
            HeartbeatOutcome::Busy => "busy".into(),
            HeartbeatOutcome::Queued => "queued".into(),
        }
    }
}

/// What one tick did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickReport {
    pub now_ms: i64,
    pub heartbeat: HeartbeatOutcome,
    /// Slot ids of the jobs queued.
    pub jobs_queued: Vec<String>,
    /// Problems with `cron.json` (one line each).
    pub job_errors: Vec<String>,
}

/// The prompt of a heartbeat run. The workspace (with HEARTBEAT.md) is in the
/// system prompt; this message only says what to do with it.
pub fn heartbeat_prompt(local_time: &str) -> String {
    format!(
        "[Heartbeat {local_time}] This is a scheduled check-in, not a message from your owner. \
         Go through the open items of the Heartbeats section (HEARTBEAT.md) and act on them. \
         If nothing needs your owner's attention, reply with exactly HEARTBEAT_OK and nothing else. \
         Otherwise reply with a short message for your owner: it is sent to them as is."
    )
}

fn system_inbound(dedupe_key: String, chat: &str, text: String, extra: String, now_ms: i64) -> Inbound {
    Inbound {
        dedupe_key,
        channel: SYSTEM_CHANNEL.into(),
        kind: ChatKind::Direct,
        chat_id: chat.into(),
        sender_id: "scheduler".into(),
        sender_name: "Hearth scheduler".into(),
        text,
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: NOTIFY_CHANNEL.into(),
            chat_id: "owner".into(),
            extra: Some(extra),
            ..Default::default()
        },
        received_at: now_ms,
        media: vec![],
    }
}

/// The message of one heartbeat run.
pub fn heartbeat_inbound(slot_id: String, local_time: &str, now_ms: i64) -> Inbound {
    system_inbound(slot_id, "heartbeat", heartbeat_prompt(local_time), "heartbeat".into(), now_ms)
}

/// The message of one job run.
pub fn job_inbound(slot_id: String, job: &hearth_schedule::CronJob, now_ms: i64) -> Inbound {
    let text = format!(
        "[Scheduled job \"{}\" ({} in {})] {}\nYour reply is sent to your owner.",
        job.name, job.cron, job.timezone, job.message
    );
    system_inbound(slot_id, "job", text, format!("job:{}", job.name), now_ms)
}

/// Reads a workspace file as text; `None` when absent.
async fn read_text<O: ObjectStore>(store: &O, key: &str) -> Result<Option<String>, StorageError> {
    Ok(store.get(key).await?.map(|o| String::from_utf8_lossy(&o.body).into_owned()))
}

/// One tick at `now_ms` (the cron trigger's scheduled time): decides the
/// heartbeat and the jobs, claims their slots, queues their messages.
/// Storage errors stop the tick (the alarm retries; claims make that safe).
pub async fn tick<O: ObjectStore, S: Sql, Q: SessionQueue>(
    store: &O,
    sql: &S,
    queue: &Q,
    cfg: &ScheduleConfig,
    now_ms: i64,
    log: &dyn Fn(LogLevel, &str),
) -> Result<TickReport, StorageError> {
    let state = ScheduleStore::new(sql);
    state.init()?;
    let heartbeat = run_heartbeat(store, &state, queue, cfg, now_ms, log).await?;
    state.set_heartbeat_outcome(now_ms, &heartbeat)?;

    // Jobs: the latest slot of each job in (last tick, now].
    let last = state.last_tick()?;
    let after = match last {
        Some(t) => t,
        None => now_ms - FIRST_TICK_LOOKBACK_MS,
    };
    let (file, file_error) = read_cron(store, cfg).await?;
    let mut job_errors: Vec<String> = file.errors.iter().map(|e| e.to_string()).collect();
    if let Some(e) = file_error {
        job_errors.insert(0, e);
    }
    if state.job_errors()? != job_errors {
        for e in &job_errors {
            log(LogLevel::Warn, &format!("agent {}: {e} (skipped)", cfg.agent));
        }
        state.set_job_errors(&job_errors)?;
    }
    let mut jobs_queued = Vec::new();
    for due in due_jobs(&file.jobs, after, now_ms) {
        let id = due.slot_id();
        if !state.claim(&id, "job", &due.job.name, due.slot_ms, now_ms)? {
            continue;
        }
        let key = SessionKey::Job { agent: cfg.agent.clone(), job: due.job.name.clone() };
        let inbound = job_inbound(id.clone(), due.job, now_ms);
        match queue.enqueue(&key, &inbound, EnqueueOptions { if_idle: false, fresh: true }).await {
            Ok(_) => jobs_queued.push(id),
            Err(e) => {
                state.release(&id)?;
                log(LogLevel::Error, &format!("agent {}: could not queue {id}: {e}", cfg.agent));
            }
        }
    }
    state.advance_tick(now_ms)?;
    state.prune(now_ms)?;
    Ok(TickReport { now_ms, heartbeat, jobs_queued, job_errors })
}

/// `cron.json`, parsed, and a file-level error if it is not a JSON array.
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
    let file = read_text(store, &keys::workspace_key(&cfg.agent, "HEARTBEAT.md")).await?;
    if let HeartbeatDecision::Skip(reason) = should_run(file.as_deref()) {
        return Ok(HeartbeatOutcome::Skipped(reason.as_str().into()));
    }
    let id = slot.id();
    if !state.claim(&id, "heartbeat", "heartbeat", slot.start_ms, now_ms)? {
        return Ok(HeartbeatOutcome::NotDue);
    }
    let key = SessionKey::Heartbeat(cfg.agent.clone());
    let inbound = heartbeat_inbound(id.clone(), &crate::clock::datetime_string(now_ms, &cfg.timezone), now_ms);
    match queue.enqueue(&key, &inbound, EnqueueOptions { if_idle: true, fresh: true }).await {
        Ok(EnqueueOutcome::Queued) | Ok(EnqueueOutcome::Repeat) => Ok(HeartbeatOutcome::Queued),
        Ok(EnqueueOutcome::Busy) => {
            state.release(&id)?;
            log(LogLevel::Info, &format!("agent {}: heartbeat session is mid-turn; {id} skipped", cfg.agent));
            Ok(HeartbeatOutcome::Busy)
        }
        Err(e) => {
            state.release(&id)?;
            log(LogLevel::Error, &format!("agent {}: could not queue {id}: {e}", cfg.agent));
            Err(e)
        }
    }
}

/// The next heartbeat slot start after `now_ms` inside the active hours
/// (searching one week ahead), for the admin API.
pub fn next_heartbeat(now_ms: i64, cfg: &HeartbeatConfig) -> Option<i64> {
    let interval = cfg.interval_ms();
    let mut t = cfg.slot_at(now_ms)?.start_ms.checked_add(interval)?;
    let limit = now_ms.checked_add(7 * 24 * 3_600_000)?;
    while t <= limit {
        if cfg.is_active_at(t) {
            return Some(t);
        }
        t = t.checked_add(interval)?;
    }
    None
}
