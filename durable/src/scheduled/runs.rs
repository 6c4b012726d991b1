//! The runs the scheduler makes: their kinds and slots' files, the message
//! each run queues, when each runs again, and what became of a heartbeat.

use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget};
use crate::settings::schedule::CRON_TICK_MINUTES;
use hearth_schedule::timing::{HeartbeatConfig, HeartbeatSlot};
use serde::Serialize;

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
