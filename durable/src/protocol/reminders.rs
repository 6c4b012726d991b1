//! Calls to the agent's reminders, kept by its Agent object
//! (`AGENT.idFromName(agentId)`): what a session's `remind` tool and
//! `/reminders` send, and what the admin API and the console read.

use super::session::PostMode;
use crate::inbound::{ReplyTarget, SessionKey};
use serde::{Deserialize, Serialize};

/// `POST`: [`ReminderCall`] → [`ReminderReply`].
pub const REMINDERS_PATH: &str = "/reminders";

/// A reminder's text is at most this many characters.
pub const MAX_TEXT_CHARS: usize = 4_000;
/// Pending reminders an agent may have unless `REMINDERS_MAX` says otherwise.
pub const DEFAULT_MAX: u32 = 200;
/// How far ahead a reminder may be set (5 years).
pub const MAX_AHEAD_MS: i64 = 5 * 366 * 24 * 3_600_000;

/// How a reminder repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Repeat {
    /// Once, at its time.
    #[default]
    Once,
    /// Every `every_ms` from its first time.
    #[serde(rename_all = "camelCase")]
    Every { every_ms: i64 },
    /// At the times of a 5-field cron expression, in `timezone`.
    Cron { cron: String, timezone: String },
}

/// A reminder to set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewReminder {
    /// The session it was set in: where it fires, with that session's scope.
    pub session_key: SessionKey,
    /// The chat it fires in (the target of the message that set it).
    pub target: ReplyTarget,
    /// The chat, as a listing names it (`Telegram group -100…`).
    pub chat: String,
    pub text: String,
    /// Say the text, or run it as a task.
    pub mode: PostMode,
    pub repeat: Repeat,
    /// Its first time (ms since the epoch).
    pub first_at: i64,
    /// A recurring one ends after this (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    /// The zone its times are shown in.
    pub timezone: String,
}

/// A reminder as it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Reminder {
    /// `r{n}`: what `cancel` takes.
    pub id: String,
    pub session_key: String,
    pub chat: String,
    pub text: String,
    pub mode: PostMode,
    pub repeat: Repeat,
    /// When it fires next (`None` once it is done or cancelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    pub timezone: String,
    pub created_at: i64,
    /// How many times it fired.
    pub fired: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_fired_at: Option<i64>,
    /// `pending`, `done` or `cancelled`.
    pub state: String,
}

/// A call to the agent's reminders. `session_key: None` in `List` and
/// `Cancel`: every chat's (the owner's main session, the admin API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum ReminderCall {
    Set {
        agent: String,
        reminder: Box<NewReminder>,
    },
    List {
        agent: String,
        #[serde(default, rename = "sessionKey", skip_serializing_if = "Option::is_none")]
        session_key: Option<SessionKey>,
    },
    /// `id`: one reminder, or `all` of the scope.
    Cancel {
        agent: String,
        id: String,
        #[serde(default, rename = "sessionKey", skip_serializing_if = "Option::is_none")]
        session_key: Option<SessionKey>,
    },
}

/// What a [`ReminderCall`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ReminderReply {
    /// Why nothing changed (bad input, the limit): the caller is told so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The reminder set, the ones listed (soonest first), or the ones cancelled.
    pub reminders: Vec<Reminder>,
    /// `List`: how many pending reminders the scope has (more than are
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
