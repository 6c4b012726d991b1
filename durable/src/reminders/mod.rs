//! Reminders and follow-ups the agent sets itself: "remind me at 9", "I'll
//! check back tomorrow". Fired by the runtime at their time, once, in the
//! chat where they were set.
//!
//! Decisions:
//! * **Kept by the Agent object.** One list per agent, in its SQLite
//!   ([`store`]): the limit (`REMINDERS_MAX`, 200 pending) is per agent and
//!   the owner's main session lists and cancels every chat's, which one
//!   table answers in one query; the Agent object already wakes for the
//!   agent's scheduled work. A Session object would need its own alarm per
//!   chat and a registry to list them all.
//! * **Woken by the alarm, not the 5-minute tick.** The Agent object keeps
//!   one alarm: set for the soonest reminder (or retry) whenever a reminder
//!   is set and after each alarm, never later than an alarm already set
//!   (an earlier one stays: the tick's wake, a retry). Everything else is in
//!   SQLite, so nothing is lost when the object is evicted or the runtime
//!   restarts; the cron tick wakes the object every 5 minutes besides, so an
//!   alarm that was dropped costs at most that. No tokens while waiting.
//! * **Exactly once.** Each time a reminder fires has an id,
//!   `reminder:{id}:{slot_ms}` (like `cron.json`'s slot ids). It is claimed
//!   in the step that moves the reminder on, with its post; the post goes to
//!   the chat's Session object with that id ([`crate::protocol::session::PostRequest`]),
//!   which ignores an id it has seen. A post that fails is tried again
//!   (backing off, for a day), never a second fire.
//! * **Missed time fires once, late.** After downtime a one-off fires when
//!   the object wakes, saying when it was due; a recurring one fires once
//!   for what it missed and goes on from the next time after now.
//! * **Say, or run as a task.** "Send the text" is a post said as it is (no
//!   LLM call); a task is a post run as a turn in that chat's session, with
//!   its scope (a group's reminder never sees the owner's memory), booked as
//!   background work, recurring ones with a heartbeat's cache rule.
//! * **Bad input changes nothing.** The tool reads the times ([`when`],
//!   through the schedule crate's zone and cron rules); the Agent object
//!   checks the rest ([`set`]: past, too far ahead, too long, over the
//!   limit) before it stores anything.

pub mod command;
pub mod fire;
pub mod store;
pub mod tool;
pub mod when;

use crate::ports::{Sql, StorageError};
use crate::protocol::reminders::{
    Reminder, ReminderCall, ReminderOp, ReminderReply, DEFAULT_MAX, MAX_AHEAD_MS, MAX_TEXT_CHARS,
};
use store::ReminderStore;
use when::Repeat;

/// `REMINDERS_MAX` (or `REMINDERS_MAX__{AGENT}`): pending reminders an agent may have.
pub fn max_pending(vars: &impl crate::settings::Vars, agent: &str) -> Result<u32, String> {
    match crate::settings::setting(vars, agent, "REMINDERS_MAX") {
        None => Ok(DEFAULT_MAX),
        Some(v) => v
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("REMINDERS_MAX is invalid: {v:?} is not a whole number; no reminder was set")),
    }
}

/// Reminders a listing returns at most (the soonest).
pub const LIST_LIMIT: i64 = 500;

/// What the Agent object answers to a call, and when its alarm must run
/// (a reminder was set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub reply: ReminderReply,
    pub wake_at: Option<i64>,
}

/// Answers a call to the agent's reminders at `now`; `limit` reads an
/// agent's `REMINDERS_MAX`.
pub fn answer<S: Sql>(
    sql: &S,
    call: &ReminderCall,
    now: i64,
    limit: &dyn Fn(&str) -> Result<u32, String>,
) -> Result<Answered, StorageError> {
    let store = ReminderStore::open(sql)?;
    let scope = call.session_key.as_ref().map(|k| k.render());
    let mut reply = match (call.call, &call.reminder) {
        (ReminderOp::Set, Some(reminder)) => {
            let reply = match limit(&call.agent) {
                Ok(limit) => set(sql, reminder, now, limit)?,
                Err(why) => ReminderReply::refused(why),
            };
            let wake_at = reply.reminders.first().and_then(|r| r.next_at);
            return Ok(Answered { reply, wake_at });
        }
        (ReminderOp::Set, None) => {
            return Ok(Answered { reply: ReminderReply::refused("set needs a reminder"), wake_at: None })
        }
        (ReminderOp::List, _) => {
            let reminders = match &call.id {
                Some(id) => store.pending_one(id, scope.as_deref())?.into_iter().collect(),
                None => store.list(scope.as_deref(), LIST_LIMIT)?,
            };
            let matched = match &scope {
                Some(k) => store.pending_in(k)?,
                None => store.pending_count()?,
            };
            ReminderReply { reminders, matched, storage_bytes: sql.database_size(), ..Default::default() }
        }
        (ReminderOp::Cancel, _) => {
            let reminders = store.cancel(call.id.as_deref().unwrap_or_default(), scope.as_deref(), now)?;
            ReminderReply { matched: reminders.len() as u32, reminders, ..Default::default() }
        }
    };
    reply.pending = store.pending_count()?;
    reply.limit = limit(&call.agent).unwrap_or_default();
    Ok(Answered { reply, wake_at: None })
}

/// Sets a reminder unless something is wrong with it (then nothing
/// changes and the reply says what). `limit`: pending reminders allowed.
pub fn set<S: Sql>(sql: &S, new: &Reminder, now: i64, limit: u32) -> Result<ReminderReply, StorageError> {
    if let Err(why) = check(new, now) {
        return Ok(ReminderReply::refused(why));
    }
    let store = ReminderStore::open(sql)?;
    let pending = store.pending_count()?;
    if pending >= limit {
        return Ok(ReminderReply::refused(format!(
            "{pending} reminders are pending, the most this agent may have (REMINDERS_MAX={limit}): \
             cancel some first. Nothing was set."
        )));
    }
    let reminder = store.insert(new, now)?;
    Ok(ReminderReply { reminders: vec![reminder], pending: pending + 1, limit, ..Default::default() })
}

/// What is wrong with a reminder to set, if anything.
pub fn check(new: &Reminder, now: i64) -> Result<(), String> {
    let Some(first_at) = new.next_at else { return Err("a reminder needs a time".into()) };
    if new.target.is_none() || crate::inbound::SessionKey::parse(&new.session_key).is_none() {
        return Err("a reminder needs its chat: a session key and a target".into());
    }
    if new.text.trim().is_empty() {
        return Err("a reminder needs a `text` (what to say, or the task to run)".into());
    }
    let chars = new.text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(format!("a reminder's text is at most {MAX_TEXT_CHARS} characters (this one has {chars})"));
    }
    if hearth_schedule::time_zone::parse_time_zone(&new.timezone).is_err() {
        return Err(format!("unknown time zone {:?}: use an IANA name such as Europe/Paris", new.timezone));
    }
    if first_at <= now {
        return Err(format!(
            "that time has passed: {} was {} ago (it is now {}). Nothing was set.",
            crate::clock::datetime_string(first_at, &new.timezone),
            when::from_now(now, first_at).trim_start_matches("in "),
            crate::clock::datetime_string(now, &new.timezone),
        ));
    }
    if first_at > now.saturating_add(MAX_AHEAD_MS) {
        return Err("that is more than 5 years ahead: reminders go at most 5 years into the future".into());
    }
    match &Repeat::of(new) {
        Repeat::Once => {}
        Repeat::Every { every_ms } if *every_ms < when::MIN_EVERY_MS => {
            return Err("`every` is at least 1 minute".into());
        }
        Repeat::Every { .. } => {}
        Repeat::Cron { cron, timezone } => {
            hearth_schedule::CronJob::new("reminder", "reminder", cron, timezone).map_err(|e| e.to_string())?;
        }
    }
    if new.until.is_some_and(|u| u < first_at) {
        return Err("`until` is before the first time it would fire".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
