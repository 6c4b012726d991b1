//! The agent's reminders over the admin API (kept by its Agent object,
//! `durable::reminders`):
//! - `GET /api/agents/{id}/reminders[?session=KEY]`: the pending ones,
//!   soonest first (of one session), with the counts and the limit;
//! - `GET /api/agents/{id}/reminders/{rid}`: one;
//! - `DELETE /api/agents/{id}/reminders/{rid}`: cancels it (404: no such
//!   pending reminder);
//! - `DELETE /api/agents/{id}/reminders[?session=KEY]`: cancels all (of one session).

use super::json_error;
use durable::inbound::SessionKey;
use durable::protocol::reminders::{ReminderCall, ReminderReply};
use worker::{Env, Request, Response, Result};

/// The `?session=` scope, checked to be one of the agent's sessions.
fn scope(req: &Request, agent: &str) -> std::result::Result<Option<SessionKey>, String> {
    match crate::http::query(req, "session") {
        None => Ok(None),
        Some(raw) => match SessionKey::parse(&raw) {
            Some(k) if k.agent().as_str() == agent => Ok(Some(k)),
            _ => Err(format!("{raw:?} is not a session key of agent {agent:?}")),
        },
    }
}

async fn ask(env: &Env, agent: &str, call: &ReminderCall) -> Result<std::result::Result<ReminderReply, Response>> {
    debug_assert_eq!(call.agent, agent);
    match crate::objects::call(env, call).await {
        Ok(reply) => Ok(Ok(reply)),
        Err(e) => Ok(Err(json_error(503, &e.to_string())?)),
    }
}

/// `GET /api/agents/{id}/reminders[/{rid}]`.
pub async fn list(req: &Request, env: &Env, agent: &str, rid: Option<&str>) -> Result<Response> {
    let session_key = match scope(req, agent) {
        Ok(s) => s,
        Err(e) => return json_error(400, &e),
    };
    let call = ReminderCall { id: rid.map(str::to_owned), ..ReminderCall::list(agent, session_key) };
    let reply = match ask(env, agent, &call).await? {
        Ok(r) => r,
        Err(resp) => return Ok(resp),
    };
    if let (Some(rid), true) = (rid, reply.reminders.is_empty()) {
        return json_error(404, &format!("no pending reminder {rid:?}"));
    }
    Response::from_json(&reply)
}

/// `DELETE /api/agents/{id}/reminders[/{rid}]`.
pub async fn cancel(req: &Request, env: &Env, agent: &str, rid: Option<&str>) -> Result<Response> {
    let session_key = match scope(req, agent) {
        Ok(s) => s,
        Err(e) => return json_error(400, &e),
    };
    let call = ReminderCall::cancel(agent, rid.unwrap_or("all"), session_key);
    let reply = match ask(env, agent, &call).await? {
        Ok(r) => r,
        Err(resp) => return Ok(resp),
    };
    if let (Some(rid), true) = (rid, reply.reminders.is_empty()) {
        return json_error(404, &format!("no pending reminder {rid:?}"));
    }
    Response::from_json(&serde_json::json!({"cancelled": reply.reminders, "pending": reply.pending}))
}
