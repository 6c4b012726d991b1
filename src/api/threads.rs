//! `GET|POST /api/agents/{id}/memory/threads` (the caller's threads) and
//! `GET /api/agents/{id}/notifications/stream` (the owner's notifications).

use super::{api_error, json_error};
use crate::adapters;
use crate::http::read_body_limited;
use crate::objects::call_raw;
use durable::api::{check_thread, client_thread, new_thread_id, thread_session};
use durable::protocol::agent::{ThreadCreate, ThreadRow, NOTIFY_STREAM_PATH, THREADS_CREATE_PATH, THREADS_LIST_PATH};
use durable::protocol::AGENT_BINDING;
use durable::settings::api::Caller;
use serde_json::{json, Value};
use worker::{Env, Method, Request, Response, Result};

/// A thread as the caller knows it.
fn shown(caller: &Caller, row: &ThreadRow) -> Option<Value> {
    let id = client_thread(caller, &row.session_key)?;
    Some(json!({
        "id": id, "title": row.title, "resourceId": row.resource_id,
        "createdAt": row.created_at, "updatedAt": row.updated_at,
    }))
}

/// `GET`: the caller's threads, most recently active first.
pub async fn list(env: &Env, agent: &str, caller: &Caller) -> Result<Response> {
    let (status, body) = call_raw(env, AGENT_BINDING, agent, Method::Get, THREADS_LIST_PATH, None).await?;
    if status != 200 {
        return json_error(503, &format!("the agent's threads could not be read: {body}"));
    }
    let rows: Vec<ThreadRow> = hearth_json::from_slice(body.as_bytes())?;
    let threads: Vec<Value> = rows.iter().filter_map(|r| shown(caller, r)).collect();
    Response::from_json(&threads)
}

/// `POST` `{threadId?, title?, resourceId?}`: a thread ahead of its first
/// message (201), or 409 when the id is taken.
pub async fn create(mut req: Request, env: &Env, agent: &str, caller: &Caller) -> Result<Response> {
    let body = match read_body_limited(&mut req, 16 * 1024).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match hearth_json::from_slice(&body) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return json_error(400, "the body must be a JSON object"),
            Err(e) => return json_error(400, &format!("the body is not JSON: {e}")),
        }
    };
    let text = |name: &str| -> std::result::Result<Option<String>, String> {
        match &v[name] {
            Value::Null => Ok(None),
            Value::String(s) if s.len() <= 256 => Ok(Some(s.clone())),
            _ => Err(format!("{name} must be a string of at most 256 characters")),
        }
    };
    let (thread, title, resource_id) = match (text("threadId"), text("title"), text("resourceId")) {
        (Ok(t), Ok(title), Ok(r)) => (t, title, r),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return json_error(400, &e),
    };
    let thread = thread.unwrap_or_else(|| new_thread_id(&adapters::new_uuid()));
    if let Err(e) = check_thread(&thread) {
        return api_error(e);
    }
    let agent_id = match r2_layout::AgentId::parse(agent) {
        Ok(a) => a,
        Err(e) => return json_error(404, &e.to_string()),
    };
    let key = match thread_session(&agent_id, caller, &thread) {
        Ok(k) => k,
        Err(e) => return api_error(e),
    };
    let create = ThreadCreate { session_key: key, title, resource_id, created_at: adapters::now_ms() };
    let body = serde_json::to_string(&create)?;
    let (status, reply) = call_raw(env, AGENT_BINDING, agent, Method::Post, THREADS_CREATE_PATH, Some(body)).await?;
    match status {
        201 => {
            let row: ThreadRow = hearth_json::from_slice(reply.as_bytes())?;
            let thread = shown(caller, &row).unwrap_or(json!({"id": thread}));
            Ok(Response::from_json(&thread)?.with_status(201))
        }
        409 => json_error(409, &format!("the thread {thread:?} exists")),
        _ => json_error(503, &format!("the thread could not be created: {reply}")),
    }
}

/// `GET`: the owner's notifications as server-sent events, from after the
/// client's `Last-Event-ID` (or `?after=`; neither: only new ones).
pub async fn notifications(req: &Request, env: &Env, agent: &str, caller: &Caller) -> Result<Response> {
    if !caller.is_owner() {
        return json_error(403, "notifications are the owner's: use ADMIN_TOKEN or an API_TOKENS key marked owner");
    }
    let after = req.headers().get("last-event-id").ok().flatten().or_else(|| crate::http::query(req, "after"));
    let path = match after {
        Some(a) if a.trim().parse::<i64>().is_ok_and(|n| n >= 0) => format!("{NOTIFY_STREAM_PATH}?after={}", a.trim()),
        Some(a) => {
            return json_error(400, &format!("Last-Event-ID / after {a:?} must be a notification id (a number)"))
        }
        None => NOTIFY_STREAM_PATH.to_owned(),
    };
    let object_req = crate::js::request("GET", &format!("https://object{path}"), &[], None, None)?;
    let resp = crate::js::stub_fetch(env, AGENT_BINDING, agent, &object_req).await?;
    Ok(Response::from(resp))
}
