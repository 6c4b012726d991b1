//! Calls to an Agent object (`AGENT.idFromName(agentId)`): the session
//! registry, pinned guardrail versions, and the schedule tick. (The memory
//! calls are in [`super::memory`].) Requests name the agent: an object does
//! not know its own name.

use super::call::{agent_query, impl_call};
use crate::inbound::SessionKey;
use crate::protocol::pins::{AcceptOutcome, PinStatusFile, Pins};
use serde::Serialize;

/// `GET` → `{"ok": true}`.
pub const HEALTH_PATH: &str = "/health";
/// `POST` [`super::session::SessionTouch`] → `{"ok": true}`.
pub const TOUCH_PATH: &str = "/sessions/touch";
/// `GET` → `Vec<`[`SessionEntry`]`>`, most recently active first.
pub const SESSIONS_PATH: &str = "/sessions/list";
/// `GET ?agent=` → [`Pins`] (what a Session asks once per turn when its
/// agent has a template).
pub const PINS_GET_PATH: &str = "/pins/get";
/// `POST` [`PinsRequest`] → [`Pins`]: takes the pins now (idempotent).
pub const PINS_INIT_PATH: &str = "/pins/init";
/// `GET ?agent=` → [`PinStatusReply`].
pub const PINS_STATUS_PATH: &str = "/pins/status";
/// `POST` [`PinsRequest`] with `file` (and `sha256` for a bulk accept) →
/// [`AcceptReply`].
pub const PINS_ACCEPT_PATH: &str = "/pins/accept";
/// `POST` [`TickRequest`] → [`TickReply`]: time passed (the cron trigger).
pub const TICK_PATH: &str = "/schedule/tick";
/// `GET` → the schedule view (`crate::scheduled::view::ScheduleStatus`).
pub const SCHEDULE_STATUS_PATH: &str = "/schedule/status";
/// `POST` [`StrangerNoticeRequest`] → [`StrangerNoticeReply`]: may this
/// stranger be told their id now? (At most once per cooldown, across isolates.)
pub const STRANGER_NOTICE_PATH: &str = "/strangers/notice";

/// `POST` [`PublishRequest`] → `{"added": n}`: what a heartbeat or job said.
pub const NOTIFY_PUBLISH_PATH: &str = "/notifications/publish";
/// `GET ?after={id}` → the notification feed as server-sent events
/// (`crate::agent::notifications`).
pub const NOTIFY_STREAM_PATH: &str = "/notifications/stream";

/// `POST` [`ThreadCreate`] → 201 [`ThreadRow`], or 409 when the thread exists.
pub const THREADS_CREATE_PATH: &str = "/threads/create";
/// `GET` → `Vec<`[`ThreadRow`]`>`: API threads and the main session, most
/// recently active first.
pub const THREADS_LIST_PATH: &str = "/threads/list";

/// A thread created ahead of its first message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCreate {
    pub session_key: SessionKey,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub resource_id: Option<String>,
    pub created_at: i64,
}

/// One thread as the Agent object knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRow {
    pub session_key: SessionKey,
    pub title: Option<String>,
    pub resource_id: Option<String>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
}

/// What a session tells its agent's notification feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishRequest {
    pub session_key: SessionKey,
    pub notices: Vec<String>,
}

/// One live session in the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_key: String,
    pub session_id: Option<String>,
    pub updated_at: Option<i64>,
    /// Who the session talks with, when its chat said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its last message as of `updated_at` (the registry may lag a minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<super::session::LastMessage>,
}

impl SessionEntry {
    /// The entry's key, when it is a well-formed session key.
    pub fn key(&self) -> Option<SessionKey> {
        SessionKey::parse(&self.session_key)
    }
}

/// A pins call: the agent, and for an accept the file (and the content's
/// hash, already in the version store, for a bulk accept).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct PinsRequest {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// Per pinned file: pinned vs current template hash and content.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
pub struct PinStatusReply {
    pub agent: String,
    pub template: Option<String>,
    pub files: Vec<PinStatusFile>,
}

/// An accepted pin.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
pub struct AcceptReply {
    pub ok: bool,
    pub agent: String,
    pub template: String,
    pub accepted: AcceptOutcome,
}

/// The cron trigger's time, for one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TickRequest {
    pub agent: String,
    pub scheduled_time: i64,
}

/// A tick was recorded and will run in the object's alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct TickReply {
    pub pending: i64,
}

/// A stranger wrote to the agent on `channel`: may they be told their id?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrangerNoticeRequest {
    pub channel: crate::inbound::ChannelKind,
    pub sender: String,
    /// The agent's `STRANGER_COOLDOWN_MINUTES`, in ms.
    pub cooldown_ms: i64,
}

/// Whether to tell the stranger now, and until when they are told nothing
/// (ms since the epoch; the Worker remembers it to spare a flood the calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrangerNoticeReply {
    pub notify: bool,
    pub quiet_until: i64,
}

/// Pins as a Session reads them.
pub type PinsReply = Pins;

/// A read that names only its agent (`GET`, `?agent=` where the object needs it).
macro_rules! agent_read {
    ($(#[$doc:meta])* $ty:ident => $path:expr, $reply:ty $(, $query:ident)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        pub struct $ty {
            pub agent: String,
        }
        impl_call!($ty => Agent Get $path, $reply, |r| r.agent.clone() $(, query |r| $query(&r.agent))?);
    };
}
pub(crate) use agent_read;

agent_read!(
    /// The session registry.
    SessionsRequest => SESSIONS_PATH, Vec<SessionEntry>);
agent_read!(
    /// The pins a Session reads once per turn.
    PinsGet => PINS_GET_PATH, Pins, agent_query);
agent_read!(
    /// Pinned vs current template content.
    PinsStatus => PINS_STATUS_PATH, PinStatusReply, agent_query);
agent_read!(
    /// The schedule view (`crate::scheduled::view::ScheduleStatus`, relayed unread).
    ScheduleStatusRequest => SCHEDULE_STATUS_PATH, serde_json::Value);
agent_read!(
    /// The API threads and the main session.
    ThreadsRequest => THREADS_LIST_PATH, Vec<ThreadRow>);

/// `POST` [`PinsRequest`]: take the pins now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PinsInit(pub PinsRequest);
impl_call!(PinsInit => Agent Post PINS_INIT_PATH, Pins, |r| r.0.agent.clone());

/// `POST` [`PinsRequest`] with `file`: advance a pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PinsAccept(pub PinsRequest);
impl_call!(PinsAccept => Agent Post PINS_ACCEPT_PATH, AcceptReply, |r| r.0.agent.clone());

impl_call!(super::session::SessionTouch => Agent Post TOUCH_PATH, super::call::Ack,
    |r| r.session_key.agent().as_str().to_owned());
impl_call!(TickRequest => Agent Post TICK_PATH, TickReply, |r| r.agent.clone());
impl_call!(PublishRequest => Agent Post NOTIFY_PUBLISH_PATH, Published, |r| r.session_key.agent().as_str().to_owned());
impl_call!(ThreadCreate => Agent Post THREADS_CREATE_PATH, ThreadRow, |r| r.session_key.agent().as_str().to_owned());

/// How many notices the feed kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Published {
    pub added: usize,
}

/// `GET` the notification feed as server-sent events, from after `after`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedRequest {
    pub agent: String,
    pub after: Option<i64>,
}
impl_call!(FeedRequest => Agent Get NOTIFY_STREAM_PATH, serde_json::Value, |r| r.agent.clone(),
    query |r| r.after.map(|a| format!("after={a}")).unwrap_or_default());
