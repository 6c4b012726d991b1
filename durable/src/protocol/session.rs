//! Calls to a Session object (`SESSION.idFromName(sessionKey)`): queue a
//! message, post into its chat later, read its status, queue an admin
//! reset, and what a session tells its Agent object after a drain.

use super::call::{encode_component, impl_call, Ack};
use crate::inbound::{Inbound, ReplyTarget, SessionKey};
use r2_layout::{Message, Usage};
use serde::Serialize;

/// `POST`: [`EnqueueRequest`] → [`EnqueueReply`].
pub const ENQUEUE_PATH: &str = "/enqueue";
/// `GET` (`?brief=1` leaves out the messages) → [`SessionStatus`].
pub const STATUS_PATH: &str = "/status";
/// `POST` → 202 [`ResetReply`], or 404 when the object never had a message.
pub const RESET_PATH: &str = "/reset";
/// `GET ?request=` → [`AnswerReply`]: how far a message asked over HTTP got,
/// and what the agent answered so far.
pub const ANSWER_PATH: &str = "/answer";

/// `POST`: [`PostRequest`] → [`PostReply`]; `400` with the reason as text
/// when it cannot be posted (an empty or too long text, a bad id, no chat
/// known to post in).
pub const POST_PATH: &str = "/post";

/// What a post does when its turn in the session's queue comes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PostMode {
    /// The text goes to the chat as it is (through the outbox) and joins the
    /// history as the agent's message. No LLM call.
    #[default]
    Say,
    /// A turn runs in the session with the text as its prompt (a user
    /// message from nobody); its answer goes to the chat like any answer.
    Turn,
}

/// Something the runtime posts into a session's chat: a reminder that is
/// due, a background task's result. It waits in the session's queue like a
/// message (one turn at a time, after what is queued before it), so its
/// place in the history is between turns, never inside one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostRequest {
    pub session_key: SessionKey,
    /// The caller's id for this post (1 to [`PostRequest::MAX_ID_LEN`]
    /// characters). A post with an id the session has seen does nothing:
    /// posting again after a failed or unanswered call is safe. Remembered
    /// as long as a delivered message's key (a week after it was done).
    pub id: String,
    #[serde(default)]
    pub mode: PostMode,
    /// What is said, or the prompt of the turn (1 to
    /// [`PostRequest::MAX_TEXT_CHARS`] characters).
    pub text: String,
    /// Where it goes: the target of the message it follows up (as the turn
    /// that asked saw it). `None`: the chat a person last wrote from in this
    /// session (the owner's first chat for the main session, before anyone
    /// wrote). Either way the session makes it fit for later: a Discord
    /// interaction's token is not used, a WhatsApp window is the latest the
    /// session knows, an HTTP thread's answer goes to the agent's
    /// notification feed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ReplyTarget>,
    /// [`PostMode::Turn`] for recurring work: when the same prompt is posted
    /// again (ms after this one). The turn then gets the prompt-cache
    /// lifetime a heartbeat's run gets (`crate::llm::cache_ttl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_in_ms: Option<i64>,
}

/// The queue keys of posts start with this (no channel's keys do): a post
/// with id `x` is the queued message `post:x`.
pub const POST_KEY_PREFIX: &str = "post:";

impl PostRequest {
    pub const MAX_ID_LEN: usize = 200;
    pub const MAX_TEXT_CHARS: usize = 32_000;
}

/// What became of a [`PostRequest`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostReply {
    /// Queued now; `false`: a post with this id came before (nothing done).
    pub queued: bool,
    /// Where it goes, as the session resolved it (`None` for a repeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ReplyTarget>,
}

/// Where a queued message stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerState {
    /// This session never queued it.
    #[default]
    Unknown,
    /// Waiting for the turns before it.
    Queued,
    /// Its turn is running.
    Running,
    /// Its turn is over: `texts` is the whole answer.
    Done,
}

/// The answer to one message asked over HTTP (its `dedupe_key`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct AnswerReply {
    pub state: AnswerState,
    /// What the agent said, in order (usually one reply).
    pub texts: Vec<String>,
}
/// `POST` → `{"ok": true}`: runs the queue now (the Agent object wakes a
/// session a budget held, once the budget allows again).
pub const WAKE_PATH: &str = "/wake";

/// `POST` → `{"ok": true}`: the `main` memory store, which a recall of
/// the main session found empty, holds something now (the Agent object
/// tells the main session, [`crate::memory::recall::RecallGate`]).
pub const MEMORY_STORED_PATH: &str = "/memory-stored";

/// `POST` [`Admission`] → `{"ok": true}`: the session is opened to its
/// chat's messages, or closed (someone let in or out, see `crate::people`).
pub const ADMISSION_PATH: &str = "/admission";

/// Whether the session takes its chat's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Admission {
    pub open: bool,
}

/// A message for a session's queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnqueueRequest {
    pub session_key: SessionKey,
    pub inbound: Inbound,
    /// Heartbeat runs: refuse (answer busy) when the session has an open message.
    #[serde(default)]
    pub if_idle: bool,
    /// Heartbeat and job runs: when idle, drop the previous run's history first.
    #[serde(default)]
    pub fresh: bool,
    /// Heartbeat and job runs: when the same prompt is sent again (ms after
    /// this run), if within reach; decides how long its prefix is cached
    /// (`crate::llm::cache_ttl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_in_ms: Option<i64>,
}

/// What became of an [`EnqueueRequest`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct EnqueueReply {
    /// Queued now; `false` for a repeat of a delivery already queued, or busy.
    pub queued: bool,
    /// `if_idle` and the session is mid-turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy: bool,
}

/// The counters of the media cache since the object started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaCacheStatus {
    pub r2_reads: u64,
    pub cache_hits: u64,
    pub evictions: u64,
    pub cached_bytes: u64,
    pub cached_items: u64,
}

/// A session's state, for the admin API, Discord `/status` and the scheduler.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionStatus {
    /// `None` until the object's first message.
    pub session_key: Option<SessionKey>,
    pub session_id: Option<String>,
    /// Messages queued or running.
    pub open: i64,
    pub message_count: i64,
    pub compactions: i64,
    /// Tokens of the current session id.
    pub usage: Usage,
    /// R2 operations of the last workspace load; `None` while a load runs
    /// and before the first.
    pub workspace_r2_ops: Option<u32>,
    pub media: MediaCacheStatus,
    /// Tokens of every session id this object has had (heartbeat and job
    /// sessions count across resets).
    pub usage_all: Usage,
    /// Replies waiting to be delivered, and those given up (see
    /// [`crate::delivery`]).
    pub outbox: OutboxStatus,
    /// The history, unless the brief status was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
    /// What the session told the user that is not in the history (a model
    /// that failed, an answer stopped before a word), with the history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<SessionNote>,
}

/// Something the session said beside the conversation (`crate::session::notes`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionNote {
    /// When (ms): the notes sit between the history's messages by time.
    pub at: i64,
    /// `error` (the model could not answer) or `stopped`.
    pub kind: String,
    pub text: String,
}

/// The session's outbox: what it still has to deliver, and what it gave up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OutboxStatus {
    /// Replies not (wholly) delivered yet, oldest first; they are retried.
    pub waiting: Vec<ReplyDelivery>,
    /// Replies (or pieces of them) given up in the last week, newest first;
    /// each was reported to the owner.
    pub undelivered: Vec<ReplyDelivery>,
}

/// One reply in the outbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplyDelivery {
    /// The reply's id in the outbox.
    pub id: String,
    /// `reply` (the conversation), `notice` (a note that a reply failed, in
    /// the same chat) or `report` (to the owner, about a reply given up).
    pub kind: String,
    pub channel: String,
    pub chat_id: String,
    /// Pieces the reply was cut into (the channel's length limit) and how
    /// many of them arrived.
    pub parts: u32,
    pub delivered: u32,
    /// When the reply was written (ms since the epoch).
    pub created_at: i64,
    /// Attempts at the piece it waits on (or failed on).
    pub attempts: u32,
    /// When the next attempt is due (waiting replies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Why it was given up: `expired` (still failing after
    /// `DELIVERY_GIVE_UP_MINUTES`), `rejected` (the platform refused the
    /// piece), `unreachable` (the chat cannot be reached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gave_up_at: Option<i64>,
    /// The start of the piece it waits on (or failed on).
    pub preview: String,
}

/// An admin reset was queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetReply {
    pub queued: bool,
    pub session_key: SessionKey,
}

/// What a Session tells its Agent object after a drain, so the admin API can
/// list live sessions (Durable Objects cannot be enumerated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTouch {
    pub session_key: SessionKey,
    pub session_id: Option<String>,
    pub updated_at: Option<i64>,
    /// Who the session talks with, when a chat says (a person's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its last message, shortened (for listings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastMessage>,
}

/// A session's last message as a listing shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LastMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its text, cut to [`LastMessage::MAX_CHARS`] characters.
    pub text: String,
    pub at: i64,
}

impl LastMessage {
    pub const MAX_CHARS: usize = 160;
}

impl EnqueueRequest {
    /// A message queued as it is (no heartbeat or job options).
    pub fn of(key: &SessionKey, inbound: &Inbound) -> Self {
        EnqueueRequest {
            session_key: key.clone(),
            inbound: inbound.clone(),
            if_idle: false,
            fresh: false,
            next_run_in_ms: None,
        }
    }
}

impl_call!(EnqueueRequest => Session Post ENQUEUE_PATH, EnqueueReply, |r| r.session_key.render());
impl_call!(PostRequest => Session Post POST_PATH, PostReply, |r| r.session_key.render());

/// `GET` a session's [`SessionStatus`]; `brief`: without the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusRequest {
    pub session_key: SessionKey,
    pub brief: bool,
}
impl_call!(StatusRequest => Session Get STATUS_PATH, SessionStatus, |r| r.session_key.render(),
    query |r| if r.brief { "brief=1".to_owned() } else { String::new() });

/// `GET` how far a message asked over HTTP got ([`AnswerReply`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerRequest {
    pub session_key: SessionKey,
    /// The message's dedupe key.
    pub request: String,
}
impl_call!(AnswerRequest => Session Get ANSWER_PATH, AnswerReply, |r| r.session_key.render(),
    query |r| format!("request={}", encode_component(&r.request)));

/// `POST` an [`Admission`] to `session_key`'s object (the body is the admission).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct AdmitSession {
    #[serde(skip)]
    pub session_key: SessionKey,
    pub admission: Admission,
}
impl_call!(AdmitSession => Session Post ADMISSION_PATH, Ack, |r| r.session_key.render());

/// `POST` (an empty body): runs `session_key`'s queue now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WakeSession {
    #[serde(skip)]
    pub session_key: SessionKey,
}
impl_call!(WakeSession => Session Post WAKE_PATH, Ack, |r| r.session_key.render());

/// `POST` (an empty body): tells `session_key` (the main session) that its
/// memory store holds something now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryStored {
    #[serde(skip)]
    pub session_key: SessionKey,
}
impl_call!(MemoryStored => Session Post MEMORY_STORED_PATH, Ack, |r| r.session_key.render());

/// `POST` (an empty body): queues an admin reset of `session_key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResetSession {
    #[serde(skip)]
    pub session_key: SessionKey,
}
impl_call!(ResetSession => Session Post RESET_PATH, ResetReply, |r| r.session_key.render());
