//! Calls to an Agent object about dreaming: a tap on a proposal's button
//! (what the Worker read from a Telegram `callback_query`), and the admin
//! view.

use serde::{Deserialize, Serialize};

/// `POST` [`Tap`] → [`TapOutcome`].
pub const DREAMS_TAP_PATH: &str = "/dreams/tap";
/// `GET ?agent=` → the dreaming view (settings, the last sweep, proposals).
pub const DREAMS_STATUS_PATH: &str = "/dreams/status";

/// A tap on a proposal's button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tap {
    pub agent: String,
    /// The `callback_query` id (to answer it).
    pub callback_id: String,
    /// Who tapped (Telegram user id).
    pub from: String,
    /// The button's `callback_data` (`dream:{id}:{a|r|s}`).
    pub data: String,
    /// The proposal message's chat and id (to change its buttons).
    #[serde(default)]
    pub chat: Option<String>,
    #[serde(default)]
    pub message_id: Option<i64>,
}

/// What a tap did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TapOutcome {
    /// What Telegram shows the owner (answerCallbackQuery's text).
    pub note: String,
    /// The proposal's state now (`approved`, `rejected`, …), if it is one.
    #[serde(default)]
    pub state: Option<String>,
}
