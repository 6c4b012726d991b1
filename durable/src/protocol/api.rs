//! The HTTP API's turns (`/api/agents/{id}/generate` and `/stream`): what
//! the Worker asks a Session object, what it answers, and the server-sent
//! events a `/stream` client reads (seed 004 §9).
//!
//! Events: `delta` (`{"text"}`: more of the answer; with `"replace": true`
//! the text of this step so far is replaced, after the model was asked
//! again), `tool` (`{"name", "status"}`: `running`, then `done` or
//! `error`), `done` (a [`GenerateReply`]; `"stopped": true` when the answer
//! was stopped, see [`STOP_PATH`]), `error` (`{"message"}`). Each
//! `delta` and `tool` carries an id `{step}-{bytes}-{tools}` (how far into
//! the answer it is): a client that reconnects with `Last-Event-ID` is sent
//! only what comes after it.

use super::call::impl_call;
use crate::inbound::{Inbound, SessionKey};
use r2_layout::Usage;
use serde::Serialize;

/// `POST` [`ApiTurnRequest`] → `text/event-stream` (`stream`), or the
/// [`GenerateReply`] once the turn is done (200), or [`ApiFailure`] (502);
/// with `?as=outcome` (another session's `delegate` call) the [`ApiOutcome`]
/// itself (200).
pub const TURN_PATH: &str = "/api/turn";

/// `POST` [`StopRequest`] → [`StopReply`]: stops the answer the session is
/// writing (`POST /api/agents/{id}/threads/{threadId}/stop`). The model
/// call in flight is dropped (its stream aborted); what was written stays
/// in the history, marked `stopReason: "stopped"`, and is the answer's
/// text (`"stopped": true` in the `done` event and `/generate`'s reply).
pub const STOP_PATH: &str = "/api/stop";

/// Which answer to stop.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StopRequest {
    /// Only the answer to this message (its dedupe key, `api:{caller}:{Idempotency-Key}`),
    /// so a stop sent as the answer ends never stops the next message. `None`: whatever is
    /// being answered.
    pub request: Option<String>,
}

/// Whether an answer was being written and is now stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopReply {
    pub stopped: bool,
    /// Why nothing was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An API message for a session, and how its answer is wanted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiTurnRequest {
    pub session_key: SessionKey,
    /// Its `dedupe_key` is the request's idempotency key: a repeat joins the
    /// first request's turn (or gets its answer) instead of asking again.
    pub inbound: Inbound,
    /// The thread id as the client named it (`threadId` of the answer).
    pub thread_id: String,
    /// Server-sent events as the answer is written; else one JSON answer.
    #[serde(default)]
    pub stream: bool,
    /// The client's `Last-Event-ID`: what it has already seen.
    #[serde(default)]
    pub last_event_id: Option<String>,
}

/// Tokens of a turn (all its model calls), in seed 004's names plus the
/// cache figures. `promptTokens` counts every input token, cached or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl From<&Usage> for ApiUsage {
    fn from(u: &Usage) -> Self {
        ApiUsage {
            prompt_tokens: u.input.saturating_add(u.cache_read).saturating_add(u.cache_write),
            completion_tokens: u.output,
            cache_read_tokens: u.cache_read,
            cache_write_tokens: u.cache_write,
        }
    }
}

/// The answer of `/generate`, and the data of the `done` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateReply {
    pub text: String,
    pub thread_id: String,
    pub usage: ApiUsage,
    /// The answer was stopped while it was written (see [`STOP_PATH`]):
    /// `text` is what had been written by then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// A turn that could not answer (the model failed after its retries): the
/// message is kept in the thread. The data of the `error` event, and the
/// body of a 502 from `/generate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiFailure {
    pub message: String,
    pub thread_id: String,
}

/// How an API message ended. (Kept in the session's SQLite in serde's
/// default form: an internally tagged enum costs the upload a content buffer.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApiOutcome {
    Done {
        text: String,
        usage: ApiUsage,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        stopped: bool,
    },
    Failed {
        message: String,
    },
}

impl ApiOutcome {
    /// The HTTP status and JSON body of `/generate` for it.
    pub fn http(&self, thread_id: &str) -> (u16, String) {
        let thread_id = thread_id.to_owned();
        match self {
            ApiOutcome::Done { text, usage, stopped } => {
                let reply = GenerateReply { text: text.clone(), thread_id, usage: *usage, stopped: *stopped };
                (200, serde_json::to_string(&reply).unwrap_or_default())
            }
            ApiOutcome::Failed { message } => {
                (502, serde_json::to_string(&ApiFailure { message: message.clone(), thread_id }).unwrap_or_default())
            }
        }
    }

    /// The closing event of a `/stream` for it.
    pub fn event(&self, thread_id: &str) -> String {
        let (status, body) = self.http(thread_id);
        sse_event(if status == 200 { "done" } else { "error" }, None, &body)
    }
}

impl_call!(ApiTurnRequest => Session Post TURN_PATH, GenerateReply, |r| r.session_key.render());

/// Another session's `delegate` call: the [`ApiOutcome`] itself once the
/// turn is done (`?as=outcome`), not the HTTP API's reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct AskSession(pub ApiTurnRequest);
impl_call!(AskSession => Session Post TURN_PATH, ApiOutcome, |r| r.0.session_key.render(),
    query |_r| "as=outcome".to_owned());

/// `POST` a [`StopRequest`] to `session_key`'s object (the body is the stop).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct StopSession {
    #[serde(skip)]
    pub session_key: SessionKey,
    pub stop: StopRequest,
}
impl_call!(StopSession => Session Post STOP_PATH, StopReply, |r| r.session_key.render());

/// One server-sent event. `data` is one line of JSON (serde never writes a
/// raw newline into a JSON string).
pub fn sse_event(event: &str, id: Option<&str>, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + event.len() + 32);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    out.push_str("event: ");
    out.push_str(event);
    out.push_str("\ndata: ");
    out.push_str(data);
    out.push_str("\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_as_http_and_as_events() {
        let done = ApiOutcome::Done {
            text: "hi\nthere".into(),
            usage: ApiUsage::from(&Usage::new(10, 5, 40, 2)),
            stopped: false,
        };
        let (status, body) = done.http("t1");
        assert_eq!(status, 200);
        let v: serde_json::Value = hearth_json::from_str(&body).unwrap();
        assert_eq!(v["threadId"], "t1");
        assert_eq!(v["usage"]["promptTokens"], 52, "every input token, cached or not");
        assert_eq!(v["usage"]["cacheReadTokens"], 40);
        assert_eq!(v.get("stopped"), None, "said only of a stopped answer");
        let ev = done.event("t1");
        assert!(
            ev.starts_with("event: done\ndata: {") && ev.ends_with("}\n\n") && ev.matches('\n').count() == 3,
            "{ev}"
        );
        let failed = ApiOutcome::Failed { message: "down".into() };
        assert_eq!(failed.http("t").0, 502);
        assert!(failed.event("t").starts_with("event: error\n"));
    }
}
