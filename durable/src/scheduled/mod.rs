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
//!   `sched_claims` table (primary key) as `pending`, with the message, before
//!   the message is queued; a second trigger for the slot finds it taken.
//!   Once the Session confirms, the claim is `queued`. A claim left `pending`
//!   (the queue call failed, or the object stopped between the two steps) is
//!   queued again on the next attempt: the alarm retry, or the next tick. The
//!   queued message's `dedupe_key` is the slot id, and the Session ignores a
//!   key it has seen, so queueing again never runs a slot twice. A failed
//!   queue call fails the tick (the alarm retries soon) after the rest of the
//!   tick's work is done; the job window still moves on, the pending claim
//!   holds the missed run. After [`store::PENDING_GIVE_UP_MS`] a run is given
//!   up (logged, listed by the admin route).
//! * **Small context.** Heartbeat and job messages are queued with `fresh`:
//!   an idle heartbeat/job session drops the previous run's history before
//!   the new run, so each run sees the workspace (system prompt) and its one
//!   message, not a growing transcript. Usage rows are kept (cost).
//! * **Mid-turn.** The heartbeat is queued with `if_idle`: a heartbeat session
//!   that still has an open message answers "busy" and the slot is released
//!   (a later tick of the same slot may run it). Jobs queue behind a running
//!   turn instead (a job's run is never dropped). A pending claim is queued
//!   again without `if_idle`: the open message may be this very run.
//! * **No tokens while idle.** HEARTBEAT.md is resolved through the overlay
//!   like the prompt and kept by etag ([`heartbeat_file`]): an unchanged file
//!   costs one `head` per due tick; absent, empty, no unchecked item means no
//!   message and no LLM call. Outside active hours nothing is read at all.
//!   `cron.json` is the agent's own file only (no template or defaults layer:
//!   a job runs on the agent's own say).
//! * **Cost apart.** Heartbeat and job turns run in their own Session objects
//!   (`agent:{id}:heartbeat`, `agent:{id}:job:{name}`), so their usage is
//!   never mixed with conversations; [`ledger`] records one row per run in
//!   the Agent object, kept after the job leaves `cron.json`.
//! * **Time only moves forward.** An old trigger delivered late (after a
//!   newer one was handled) only retries pending runs: it does not decide
//!   anything, and the last tick and heartbeat outcome never go back.

pub mod heartbeat_file;
pub mod ledger;
pub mod notify;
pub mod store;
pub mod view;

#[cfg(test)]
mod tests;

use crate::inbound::ReplyTarget;
use crate::inbound::{ChannelKind, ChatKind, Inbound, SessionKey};
use crate::ports::{LogLevel, ObjectStore, Sql, StorageError};
use crate::settings::overlay::OverlayConfig;
use crate::settings::{agent_ids, setting, ConfigError, Vars};
use crate::storage::Counted;
use hearth_schedule::cron_jobs::{due_jobs, parse_cron_json, CronFile};
pub use hearth_schedule::heartbeat::ProseRule;
use hearth_schedule::heartbeat::{decide, HeartbeatDecision};
use hearth_schedule::timing::{heartbeat_due, HeartbeatConfig, HeartbeatSlot, DEFAULT_INTERVAL_MINUTES};
use r2_layout::{keys, AgentId, Usage};
use serde::Serialize;
pub use store::ScheduleStore;
use store::{Claim, PENDING_GIVE_UP_MS};

/// The cron trigger's period (`crons` in wrangler.toml): no heartbeat can
/// run more often than this.
pub const CRON_TICK_MINUTES: u32 = 5;
/// On the first tick ever, jobs due in this many ms before it still run (the
/// cron trigger's period), so a job is not missed because Hearth just started.
pub const FIRST_TICK_LOOKBACK_MS: i64 = CRON_TICK_MINUTES as i64 * 60_000;
/// `cron.json` in the agent's workspace.
pub const CRON_FILE: &str = "cron.json";
/// Claim kinds.
pub const KIND_HEARTBEAT: &str = "heartbeat";
pub const KIND_JOB: &str = "job";
/// Dreaming's nightly sweep (`dream:{local date}`), run by the Agent object itself.
pub const KIND_DREAM: &str = "dream";
/// The workspace history's daily clean-up (`gc:{local date}`), run by the Agent object itself.
pub const KIND_HISTORY_GC: &str = "gc";

/// The agent's scheduling settings, from vars (`{NAME}__{AGENT}` or `{NAME}`).
#[derive(Debug, Clone)]
pub struct ScheduleConfig {
    pub agent: AgentId,
    /// `HEARTBEAT_ENABLED` (default true).
    pub heartbeat_enabled: bool,
    /// `HEARTBEAT_INTERVAL_MINUTES` (30; or seed 004's `HEARTBEAT_INTERVAL`
    /// in seconds), `HEARTBEAT_ACTIVE_HOURS` (`HH:MM-HH:MM`, none = always),
    /// `TIMEZONE` (UTC). An invalid value disables the heartbeat with this
    /// error (jobs still run).
    pub heartbeat: Result<HeartbeatConfig, String>,
    /// `HEARTBEAT_RUN_PROSE=true`: a HEARTBEAT.md of prose without any
    /// checkbox runs every interval (default: skipped, no tokens).
    pub prose: ProseRule,
    /// `TIMEZONE`: the default zone of jobs without one.
    pub timezone: String,
    /// `TEMPLATE` and placeholder values: HEARTBEAT.md resolves like the prompt's.
    pub overlay: OverlayConfig,
    /// Settings that work, but not as written (logged and shown by the admin route).
    pub warnings: Vec<String>,
}

fn flag(v: Option<&str>) -> Option<bool> {
    match v?.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// The heartbeat interval in minutes from `HEARTBEAT_INTERVAL_MINUTES`, or
/// else seed 004's `HEARTBEAT_INTERVAL` (seconds, rounded up to minutes).
/// Anything that does not run as written is added to `warnings`.
fn heartbeat_interval(get: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> Result<u32, String> {
    let minutes = match (get("HEARTBEAT_INTERVAL_MINUTES"), get("HEARTBEAT_INTERVAL")) {
        (Some(m), seconds) => {
            if seconds.is_some() {
                warnings.push("HEARTBEAT_INTERVAL is ignored: HEARTBEAT_INTERVAL_MINUTES is set".into());
            }
            m.trim()
                .parse::<u32>()
                .map_err(|_| format!("HEARTBEAT_INTERVAL_MINUTES is invalid: {m:?} is not a number"))?
        }
        (None, Some(s)) => {
            let secs = s
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("HEARTBEAT_INTERVAL is invalid: {s:?} is not a number of seconds"))?;
            let minutes = u32::try_from(secs.div_ceil(60)).unwrap_or(u32::MAX);
            if secs % 60 != 0 {
                warnings.push(format!(
                    "HEARTBEAT_INTERVAL={secs} seconds is not a whole number of minutes: rounded up to {minutes} minutes"
                ));
            }
            minutes
        }
        (None, None) => DEFAULT_INTERVAL_MINUTES,
    };
    if minutes > 0 && minutes < CRON_TICK_MINUTES {
        warnings.push(format!(
            "the heartbeat interval ({minutes} min) is shorter than the cron trigger ({CRON_TICK_MINUTES} min): \
             heartbeats run at most once per trigger, every {CRON_TICK_MINUTES} minutes"
        ));
    }
    Ok(minutes)
}

impl ScheduleConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let ids = agent_ids(vars);
        if !ids.iter().any(|a| a == agent) {
            return Err(ConfigError::UnknownAgent(agent.to_owned(), ids.join(",")));
        }
        let agent_id =
            AgentId::parse(agent).map_err(|e| ConfigError::Invalid { name: "AGENTS".into(), why: e.to_string() })?;
        let get = |name: &str| setting(vars, agent, name);
        let mut warnings = Vec::new();
        let heartbeat_enabled = flag(get("HEARTBEAT_ENABLED").as_deref()) != Some(false);
        let prose = match get("HEARTBEAT_RUN_PROSE") {
            None => ProseRule::Skip,
            Some(v) => match flag(Some(&v)) {
                Some(true) => ProseRule::Run,
                Some(false) => ProseRule::Skip,
                None => {
                    warnings.push(format!(
                        "HEARTBEAT_RUN_PROSE={v:?} is not true or false: prose-only HEARTBEAT.md is skipped"
                    ));
                    ProseRule::Skip
                }
            },
        };
        let timezone = get("TIMEZONE").unwrap_or_else(|| "UTC".into());
        let heartbeat = heartbeat_interval(&get, &mut warnings).and_then(|interval| {
            let hours = get("HEARTBEAT_ACTIVE_HOURS");
            HeartbeatConfig::new(interval, hours.as_deref(), Some(&timezone))
                .map_err(|e| format!("heartbeat settings are invalid: {e}"))
        });
        let overlay = OverlayConfig::load(vars, agent)?;
        Ok(ScheduleConfig { agent: agent_id, heartbeat_enabled, heartbeat, prose, timezone, overlay, warnings })
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
    /// When the same prompt runs again, ms after this run (`None`: not
    /// within the next hours, or not known): the session caches its prompt
    /// for an hour when that pays (`crate::llm::cache_ttl`).
    pub next_run_in_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    Queued,
    /// The same dedupe key was queued before.
    Repeat,
    /// `if_idle` and the session is mid-turn.
    Busy,
}

/// A Session object's usage counters (all its runs) and whether it is busy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionCounters {
    /// Messages queued or running.
    pub open: i64,
    /// Tokens of every turn the Session ever ran (these only grow).
    pub total: Usage,
}

/// The Session objects, as the scheduler reaches them (the Worker's adapter
/// does a DO fetch).
#[allow(async_fn_in_trait)]
pub trait SessionQueue {
    /// Queues a message.
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        opts: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError>;

    /// The Session's counters (for the usage ledger).
    async fn usage(&self, key: &SessionKey) -> Result<SessionCounters, StorageError>;

    /// Runs the Session's queue (a message a budget held may go on now).
    async fn wake(&self, key: &SessionKey) -> Result<(), StorageError> {
        Err(StorageError(format!("cannot wake {key} from here")))
    }

    /// Opens or closes the Session to its chat's messages (someone let in
    /// or out, see `crate::people`).
    async fn admit(&self, key: &SessionKey, open: bool) -> Result<(), StorageError> {
        let _ = open;
        Err(StorageError(format!("cannot reach {key} from here")))
    }

    /// Stops the answer the Session is writing (a cancelled background task).
    async fn stop(&self, key: &SessionKey, req: &crate::protocol::api::StopRequest) -> Result<(), StorageError> {
        let _ = req;
        Err(StorageError(format!("cannot stop {key} from here")))
    }

    /// Posts into the Session's chat (`crate::protocol::session::PostRequest`).
    async fn post(
        &self,
        req: &crate::protocol::session::PostRequest,
    ) -> Result<crate::protocol::session::PostReply, StorageError> {
        Err(StorageError(format!("cannot post to {} from here", req.session_key)))
    }
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
    /// Due, but no LLM call: `absent`, `empty`, `all_done` or `no_open_item`.
    Skipped(String),
    /// The heartbeat session is mid-turn.
    Busy,
    /// Queued in the heartbeat session.
    Queued,
    /// Claimed, but the heartbeat session could not be reached: queued again
    /// on the next attempt.
    Retrying(String),
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
            HeartbeatOutcome::Retrying(e) => format!("retrying: {e}"),
        }
    }
}

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

/// The prompt of a heartbeat run. The workspace (with HEARTBEAT.md) is in the
/// system prompt; this message only says what to do with it.
pub fn heartbeat_prompt(local_time: &str) -> String {
    format!(
        "[Heartbeat {local_time}] This is a scheduled check-in, not a message from your owner. \
         Go through the open items (or standing instructions) of the Heartbeats section (HEARTBEAT.md) and act on them. \
         If nothing needs your owner's attention, reply with exactly HEARTBEAT_OK and nothing else. \
         Otherwise reply with a short message for your owner: it is sent to them as is."
    )
}

fn system_inbound(dedupe_key: String, chat: &str, text: String, extra: String, now_ms: i64) -> Inbound {
    Inbound {
        dedupe_key,
        channel: ChannelKind::System,
        kind: ChatKind::Direct,
        chat_id: chat.into(),
        sender_id: "scheduler".into(),
        sender_name: "Hearth scheduler".into(),
        text,
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Notify,
            chat_id: "owner".into(),
            extra: Some(extra),
            ..Default::default()
        },
        received_at: now_ms,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
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

/// How long after `now_ms` the heartbeat runs again: the next slot, when it
/// is inside the active hours (`None`: the window closes first, the next run
/// is hours away).
pub fn heartbeat_next_run_in(hb: &HeartbeatConfig, slot: HeartbeatSlot, now_ms: i64) -> Option<i64> {
    let next = first_trigger_from(slot.start_ms.checked_add(hb.interval_ms())?);
    hb.is_active_at(next).then(|| next.saturating_sub(now_ms).max(0))
}

/// How long after `now_ms` the job of `slot_ms` runs again: at the first
/// trigger from its cron schedule's next instant.
pub fn job_next_run_in(job: &hearth_schedule::CronJob, slot_ms: i64, now_ms: i64) -> Option<i64> {
    job.next_slot_after(slot_ms).map(|next| first_trigger_from(next).saturating_sub(now_ms).max(0))
}

/// The first cron trigger (every [`CRON_TICK_MINUTES`]) at or after `ms`.
fn first_trigger_from(ms: i64) -> i64 {
    let tick = i64::from(CRON_TICK_MINUTES) * 60_000;
    ms.saturating_add(tick - 1).div_euclid(tick) * tick
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
