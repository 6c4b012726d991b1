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
//!
//! The files go one way: the settings (`crate::settings::schedule`), the
//! port to the Session objects ([`queue`]) and the runs ([`runs`]: kinds,
//! messages, next times) at the bottom, the tables ([`store`], [`ledger`],
//! [`heartbeat_file`], [`notify`]) above them, [`tick`] above those, and the
//! admin [`view`] on top.

pub mod queue;
pub mod runs;

pub mod heartbeat_file;
pub mod ledger;
pub mod notify;
pub mod store;

pub mod tick;
pub mod view;

#[cfg(test)]
mod tests;

pub use crate::settings::schedule::{ScheduleConfig, CRON_TICK_MINUTES};
pub use hearth_schedule::heartbeat::ProseRule;
pub use queue::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
pub use runs::*;
pub use store::ScheduleStore;
pub use tick::{read_cron, tick, TickReport};
