//! The conversation routes a key of the agent may use, but for the two
//! streams (the Worker's): `GET|POST …/memory/threads` (the caller's
//! threads) and `POST …/threads/{threadId}/stop`.

use super::front::{error, json, refused, ApiFront};
use crate::api::{check_thread, client_thread, new_thread_id, parse_stop, thread_session};
use crate::channels::webhook::WebRequest;
use crate::protocol::agent::{ThreadCreate, ThreadRow, ThreadsRequest};
use crate::protocol::api::StopSession;
use crate::serving::decode_component as percent_decode;
use crate::serving::Answer as WebReply;
use crate::settings::api::Caller;
use r2_layout::AgentId;
use serde_json::{json, Value};

/// Past `limit` bytes a body is a 413.
fn too_large(req: &WebRequest, limit: usize) -> Option<WebReply> {
    (req.body.len() > limit).then(|| error(413, format!("body too large: the limit is {} KiB", limit.div_ceil(1024))))
}

/// A thread as the caller knows it.
fn shown(caller: &Caller, row: &ThreadRow) -> Option<Value> {
    let id = client_thread(caller, &row.session_key)?;
    Some(json!({
        "id": id, "title": row.title, "resourceId": row.resource_id,
        "createdAt": row.created_at, "updatedAt": row.updated_at,
    }))
}

/// `GET`: the caller's threads, most recently active first.
pub async fn list<F: ApiFront>(front: &F, agent: &str, caller: &Caller) -> WebReply {
    match front.call(&ThreadsRequest { agent: agent.to_owned() }).await {
        Ok(rows) => json(&rows.iter().filter_map(|r| shown(caller, r)).collect::<Vec<_>>()),
        Err(e) => error(503, format!("the agent's threads could not be read: {e}")),
    }
}

/// `POST` `{threadId?, title?, resourceId?}`: a thread ahead of its first
/// message (201), or 409 when the id is taken.
pub async fn create<F: ApiFront>(front: &F, req: &WebRequest, agent: &str, caller: &Caller) -> WebReply {
    if let Some(r) = too_large(req, 16 * 1024) {
        return r;
    }
    let v: Value = if req.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match hearth_json::from_slice(&req.body) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return error(400, "the body must be a JSON object"),
            Err(e) => return error(400, format!("the body is not JSON: {e}")),
        }
    };
    let text = |name: &str| -> Result<Option<String>, String> {
        match &v[name] {
            Value::Null => Ok(None),
            Value::String(s) if s.len() <= 256 => Ok(Some(s.clone())),
            _ => Err(format!("{name} must be a string of at most 256 characters")),
        }
    };
    let (thread, title, resource_id) = match (text("threadId"), text("title"), text("resourceId")) {
        (Ok(t), Ok(title), Ok(r)) => (t, title, r),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return error(400, e),
    };
    let thread = thread.unwrap_or_else(|| new_thread_id(&front.new_uuid()));
    if let Err(e) = check_thread(&thread) {
        return refused(&e);
    }
    let agent_id = match AgentId::parse(agent) {
        Ok(a) => a,
        Err(e) => return error(404, e.to_string()),
    };
    let key = match thread_session(&agent_id, caller, &thread) {
        Ok(k) => k,
        Err(e) => return refused(&e),
    };
    let create = ThreadCreate { session_key: key, title, resource_id, created_at: front.now_ms() };
    match front.call(&create).await {
        Ok(row) => WebReply::json(201, &shown(caller, &row).unwrap_or(json!({"id": thread}))),
        Err(e) if e.status == 409 => error(409, format!("the thread {thread:?} exists")),
        Err(e) => error(503, format!("the thread could not be created: {e}")),
    }
}

/// `POST …/threads/{threadId}/stop` (`{"idempotencyKey"}` optional): stops
/// the answer the thread's session is writing. 200 `{"stopped": true}`, or
/// `{"stopped": false, "reason"}` when none was.
pub async fn stop<F: ApiFront>(front: &F, req: &WebRequest, agent: &str, caller: &Caller, thread: &str) -> WebReply {
    if let Some(r) = too_large(req, 4096) {
        return r;
    }
    let stop = match parse_stop(&req.body, caller) {
        Ok(s) => s,
        Err(e) => return refused(&e),
    };
    let agent_id = match AgentId::parse(agent) {
        Ok(a) => a,
        Err(e) => return error(404, e.to_string()),
    };
    let key = match thread_session(&agent_id, caller, &percent_decode(thread)) {
        Ok(k) => k,
        Err(e) => return refused(&e),
    };
    match front.call(&StopSession { session_key: key, stop }).await {
        Ok(reply) => json(&reply),
        Err(e) => error(503, format!("the thread's session could not be reached: {e}")),
    }
}
