//! Calls about tool calls that wait for the owner's yes (see
//! `crate::approvals`): a Session object asks its Agent object to ask the
//! owner and, when woken, how it went; the console and the HTTP API list
//! them and decide.

use super::call::impl_call;
use crate::inbound::{ChannelKind, SessionKey};
use serde::Serialize;

/// `POST` [`ApprovalCall`] → [`ApprovalState`] (a list: `Vec<`[`ApprovalRow`]`>`).
pub const APPROVALS_PATH: &str = "/approvals/call";

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Waiting,
    Approved,
    Denied,
    /// No answer in time: counts as no.
    Expired,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Waiting => "waiting",
            Decision::Approved => "approved",
            Decision::Denied => "denied",
            Decision::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Decision> {
        Some(match s {
            "waiting" => Decision::Waiting,
            "approved" => Decision::Approved,
            "denied" => Decision::Denied,
            "expired" => Decision::Expired,
            _ => return None,
        })
    }
}

/// The chat a tool call came from, as the owner is shown it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    pub channel: ChannelKind,
    pub chat: String,
    pub group: bool,
    /// Who wrote the message the turn answers.
    #[serde(default)]
    pub sender: String,
}

/// Ask the owner about one tool call (idempotent per session, message and call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAsk {
    pub agent: String,
    pub session_key: SessionKey,
    /// The queued message whose turn waits.
    pub seq: i64,
    pub call_id: String,
    pub tool: String,
    /// The call's arguments as JSON, shortened.
    pub args: String,
    pub origin: Origin,
    /// `APPROVAL_TIMEOUT_MINUTES` in ms.
    pub timeout_ms: i64,
}

/// Externally tagged (`{"ask": {...}}`), for a small reader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalCall {
    Ask(ApprovalAsk),
    /// How request `id` stands; `expire`: its time is up, so a request
    /// still waiting becomes `expired` (and its buttons say so).
    Status {
        agent: String,
        id: i64,
        expire: bool,
    },
    /// The console's or the HTTP API's answer.
    Decide {
        agent: String,
        id: i64,
        approve: bool,
        by: String,
    },
    /// The requests, newest first.
    List {
        agent: String,
    },
}

/// A request as the session needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalState {
    pub id: i64,
    pub decision: Decision,
    pub expires_at: i64,
    /// Where the owner was asked (`None`: no chat could be reached; the
    /// console and the notification stream show it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_in: Option<AskedIn>,
}

/// The chat the owner was asked in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct AskedIn {
    pub channel: ChannelKind,
    pub chat: String,
}

/// A request as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRow {
    pub id: i64,
    pub session_key: String,
    pub tool: String,
    pub args: String,
    pub origin: Origin,
    pub asked_at: i64,
    pub expires_at: i64,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<i64>,
}

impl ApprovalCall {
    /// The agent it is for (the object's name).
    pub fn agent(&self) -> &str {
        match self {
            ApprovalCall::Ask(a) => &a.agent,
            ApprovalCall::Status { agent, .. } | ApprovalCall::Decide { agent, .. } | ApprovalCall::List { agent } => {
                agent
            }
        }
    }
}
impl_call!(ApprovalCall => Agent Post APPROVALS_PATH, ApprovalState, |r| r.agent().to_owned());
