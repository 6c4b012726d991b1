//! Calls to the agent's reminders, kept by its Agent object
//! (`AGENT.idFromName(agentId)`): what a session's `remind` tool and
//! `/reminders` send, and what the admin API and the console read.
//!
//! Plain structs, no tagged enums: a call names its operation in `call`, a
//! reminder's repeat is two optional fields. (Serde reads an internally
//! tagged enum through a buffer of its own, several kilobytes of upload per
//! type for what two fields say as well.)

use super::call::impl_call;
use super::session::PostMode;
use crate::inbound::{ReplyTarget, SessionKey};
use serde::Serialize;

/// `POST`: [`ReminderCall`] → [`ReminderReply`].
pub const REMINDERS_PATH: &str = "/reminders";

/// A reminder's text is at most this many characters.
pub const MAX_TEXT_CHARS: usize = 4_000;
/// Pending reminders an agent may have unless `REMINDERS_MAX` says otherwise.
pub const DEFAULT_MAX: u32 = 200;
/// How far ahead a reminder may be set (5 years).
pub const MAX_AHEAD_MS: i64 = 5 * 366 * 24 * 3_600_000;

/// A reminder, as it is set and as it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Reminder {
    /// `r{n}`: what `cancel` takes (empty in a `set` call).
    pub id: String,
    /// The session it was set in: where it fires, with that session's scope.
    pub session_key: String,
    /// The chat it fires in (the target of the message that set it). Given
    /// when it is set; not listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<ReplyTarget>,
    /// The chat, as a listing names it (`Telegram group -100…`).
    pub chat: String,
    pub text: String,
    /// Say the text, or run it as a task.
    pub mode: PostMode,
    /// Recurring: every this many ms from its first time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<i64>,
    /// Recurring: at the times of this 5-field cron expression, in `timezone`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// When it fires next (its first time, when it is set; `None` once it
    /// is done or cancelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_at: Option<i64>,
    /// A recurring one ends after this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    /// The zone its times are read and shown in.
    pub timezone: String,
    pub created_at: i64,
    /// How many times it fired.
    pub fired: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_fired_at: Option<i64>,
    /// `pending`, `done` or `cancelled`.
    pub state: String,
}

/// What a [`ReminderCall`] does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReminderOp {
    /// Keep `reminder`.
    Set,
    /// The pending ones, soonest first.
    #[default]
    List,
    /// Cancel `id` (`r{n}`, or `all`).
    Cancel,
}

/// A call to the agent's reminders. `session_key: None` in `list` and
/// `cancel`: every chat's (the owner's main session, the admin API). `id`
/// in `list`: that one only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ReminderCall {
    pub call: ReminderOp,
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reminder: Option<Box<Reminder>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_key: Option<SessionKey>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ReminderCall {
    pub fn set(agent: &str, reminder: Reminder) -> Self {
        ReminderCall {
            call: ReminderOp::Set,
            agent: agent.into(),
            reminder: Some(Box::new(reminder)),
            ..Default::default()
        }
    }
    pub fn list(agent: &str, session_key: Option<SessionKey>) -> Self {
        ReminderCall { call: ReminderOp::List, agent: agent.into(), session_key, ..Default::default() }
    }
    pub fn cancel(agent: &str, id: &str, session_key: Option<SessionKey>) -> Self {
        ReminderCall {
            call: ReminderOp::Cancel,
            agent: agent.into(),
            session_key,
            id: Some(id.into()),
            ..Default::default()
        }
    }
}

/// What a [`ReminderCall`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ReminderReply {
    /// Why nothing changed (bad input, the limit): the caller is told so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The reminder set, the ones listed (soonest first), or the ones cancelled.
    pub reminders: Vec<Reminder>,
    /// `list`: how many pending reminders the scope has (more than are
    /// listed when there are many).
    pub matched: u32,
    /// Pending reminders of the whole agent, and the most it may have.
    pub pending: u32,
    pub limit: u32,
    /// The Agent object's database, in bytes (listings; `None` where unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_bytes: Option<u64>,
}

impl ReminderReply {
    pub fn refused(why: impl Into<String>) -> Self {
        ReminderReply { error: Some(why.into()), ..Default::default() }
    }
}

impl_call!(ReminderCall => Agent Post REMINDERS_PATH, ReminderReply, |r| r.agent.clone());
