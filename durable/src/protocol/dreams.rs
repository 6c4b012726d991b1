//! Calls to an Agent object about its buttons and dreaming: a tap on one of
//! the agent's buttons (what the Worker read from a Telegram
//! `callback_query`, a Discord component interaction or a Slack
//! `block_actions` payload: a dreaming proposal's, or a tool call's waiting
//! for approval), and dreaming's admin view.

use super::call::{agent_query, impl_call};
use crate::inbound::ChannelKind;
use serde::Serialize;

/// `POST` [`Tap`] → [`TapOutcome`] (any of the agent's buttons; the path
/// is dreaming's, whose buttons came first).
pub const DREAMS_TAP_PATH: &str = "/dreams/tap";
/// `GET ?agent=` → the dreaming view (settings, the last sweep, proposals).
pub const DREAMS_STATUS_PATH: &str = "/dreams/status";

fn telegram() -> ChannelKind {
    ChannelKind::Telegram
}

/// A tap on one of the agent's buttons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tap {
    pub agent: String,
    /// Where it was tapped (Telegram, the first platform with buttons, when absent).
    #[serde(default = "telegram")]
    pub channel: ChannelKind,
    /// The `callback_query` id (to answer it); Discord's interaction id.
    pub callback_id: String,
    /// Who tapped (their user id on `channel`).
    pub from: String,
    /// The button's data (`dream:{id}:{a|r|s}`, `ok:{id}:{a|d|s}`).
    pub data: String,
    /// Slack's `response_url`: where the message's new form is posted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond_to: Option<String>,
    /// The proposal message's chat and id (to change its buttons).
    #[serde(default)]
    pub chat: Option<String>,
    #[serde(default)]
    pub message_id: Option<i64>,
}

/// What a tap did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TapOutcome {
    /// What Telegram shows the owner (answerCallbackQuery's text).
    pub note: String,
    /// The proposal's state now (`approved`, `rejected`, …), if it is one.
    #[serde(default)]
    pub state: Option<String>,
    /// The message's text once settled (Discord and Slack replace the
    /// message, buttons and all, with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<String>,
}

impl_call!(Tap => Agent Post DREAMS_TAP_PATH, TapOutcome, |r| r.agent.clone());
super::agent::agent_read!(
    /// Dreaming's view (settings, the last sweep, proposals; relayed unread).
    DreamsStatusRequest => DREAMS_STATUS_PATH, serde_json::Value, agent_query);
