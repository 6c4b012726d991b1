//! # hearth-schedule: when an agent acts on its own, and when it stays quiet
//!
//! Pure rules for heartbeats and `cron.json` jobs (seed 004 §8, seed 003's HEARTBEAT.md empty
//! rule, issue 6). No Cloudflare types, no clock, no storage, no I/O: the Agent Durable Object
//! passes in file contents, the time and what it has stored, and gets back decisions and ids.
//! That keeps every rule testable natively, including daylight-saving maths, and leaves the
//! side effects (alarms, claiming a slot, calling the model, sending) to one place.
//!
//! Why these rules:
//! * **No tokens while idle.** [`heartbeat::should_run`] skips the LLM call when HEARTBEAT.md is
//!   absent, has no meaningful content ([`heartbeat::is_meaningful`], also used by the prompt
//!   loader), or has no unchecked item (prose-only files run only when opted in, see
//!   [`heartbeat::ProseRule`]).
//! * **Silence when nothing is new.** [`heartbeat::is_heartbeat_ok`] recognises the
//!   `HEARTBEAT_OK` reply; [`notify::is_duplicate`] stops the same text going out twice within
//!   a window.
//! * **Exactly once.** Every run has a stable slot id ([`timing::HeartbeatSlot::id`]:
//!   `heartbeat:{start_ms}`, [`cron_jobs::job_slot_id`]: `job:{name}:{slot_ms}`). Two triggers
//!   for the same slot (overlapping cron events, retries, redelivered alarms) compute the same
//!   id; the caller records it before running and refuses a second claim.
//! * **Missed time is not replayed.** A heartbeat runs the current slot only; a cron job runs
//!   its latest slot since the last tick, once, however many were missed
//!   ([`cron_jobs::due_jobs`]).
//! * **Local time is right.** Active hours, reminder times and cron expressions are read in IANA
//!   time zones from the zone table ([`time_zone`]; the same data natively and in WASM),
//!   evaluated by our own [`civil`] and [`tz`] (checked against jiff in `tests/tz.rs`); croner
//!   still decides cron's daylight-saving edge cases (see [`cron_jobs`]).
//! * **Bad input is reported, not fatal.** Nothing here panics on any input; configuration
//!   errors are [`error::ScheduleError`], and a bad job in `cron.json` is a
//!   [`cron_jobs::JobError`] while the other jobs still run.
//!
//! Typical use on each tick (`now_ms` from the scheduled event or alarm):
//!
//! ```
//! use hearth_schedule::{cron_jobs, heartbeat, timing};
//!
//! let now_ms = 1_780_000_000_000;
//! let config = timing::HeartbeatSettings::default().resolve().unwrap();
//! if let Some(slot) = timing::heartbeat_due(now_ms, None, &config) {
//!     let decision = heartbeat::should_run(Some("- [ ] check the inbox"), heartbeat::ProseRule::Skip);
//!     if decision == heartbeat::HeartbeatDecision::Run {
//!         let _claim = slot.id(); // claim it, then run the heartbeat session
//!     }
//! }
//! let file = cron_jobs::parse_cron_json(r#"[{"name":"brief","message":"Brief me",
//!     "cron":"0 8 * * *","timezone":"Europe/Paris"}]"#, None).unwrap();
//! for due in cron_jobs::due_jobs(&file.jobs, now_ms - 60_000, now_ms) {
//!     let _claim = due.slot_id(); // claim it, then run the job's isolated session
//! }
//! ```
//!
//! Modules, one job each: [`heartbeat`] (HEARTBEAT.md and reply rules), [`timing`]
//! (heartbeat interval and slots), [`active_hours`] (the daily window), [`cron_jobs`]
//! (`cron.json`), [`moments`] (one-off times and durations, for reminders), [`notify`] (dedupe),
//! [`time_zone`] (zone lookup), [`civil`] (dates), [`tz`] (zone rules), [`error`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod active_hours;
pub mod civil;
pub mod cron_expr;
pub mod cron_jobs;
pub mod error;
pub mod heartbeat;
pub mod moments;
pub mod notify;
pub mod time_zone;
pub mod timing;
pub mod tz;
mod zones;

pub use active_hours::ActiveHours;
pub use cron_jobs::{due_jobs, parse_cron_json, CronFile, CronJob, DueJob, JobError, JobErrorKind};
pub use error::ScheduleError;
pub use heartbeat::{
    decide, has_open_items, is_heartbeat_ok, is_meaningful, should_run, Checklist, HeartbeatDecision, ProseRule,
    SkipReason,
};
pub use notify::{is_duplicate, notification_hash, SentNotification};
pub use timing::{heartbeat_due, HeartbeatConfig, HeartbeatSettings, HeartbeatSlot};
