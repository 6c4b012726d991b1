//! `GET|POST /api/agents/{id}/memory/threads` (the caller's threads) and
//! `GET /api/agents/{id}/notifications/stream` (the owner's notifications).

use super::{api_error, json_error};
use crate::adapters;
use crate::http::read_body_limited;
use crate::objects::call;
use durable::api::{check_thread, client_thread, new_thread_id, thread_session};
use durable::protocol::agent::{FeedRequest, ThreadCreate, ThreadRow, ThreadsRequest};
use durable::settings::api::Caller;
use serde_json::{json, Value};
use worker::{Env, Request, Response, Result};

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
    let rows = match call(env, &ThreadsRequest { agent: agent.to_owned() }).await {
        Ok(rows) => rows,
        Err(e) => return json_error(503, &format!("the agent's threads could not be read: {e}")),
    };
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
    match call(env, &create).await {
        Ok(row) => {
            let thread = shown(caller, &row).unwrap_or(json!({"id": thread}));
            Ok(Response::from_json(&thread)?.with_status(201))
        }
        Err(e) if e.status == 409 => json_error(409, &format!("the thread {thread:?} exists")),
        Err(e) => json_error(503, &format!("the thread could not be created: {e}")),
    }
}

/// `GET`: the owner's notifications as server-sent events, from after the
/// client's `Last-Event-ID` (or `?after=`; neither: only new ones).
pub async fn notifications(req: &Request, env: &Env, agent: &str, caller: &Caller) -> Result<Response> {
    if !caller.is_owner() {
        return json_error(403, "notifications are the owner's: use ADMIN_TOKEN or an API_TOKENS key marked owner");
    }
    let after = req.headers().get("last-event-id").ok().flatten().or_else(|| crate::http::query(req, "after"));
    let after = match after {
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) if n >= 0 => Some(n),
            _ => return json_error(400, &format!("Last-Event-ID / after {a:?} must be a notification id (a number)")),
        },
        None => None,
    };
    let resp = crate::objects::open(env, &FeedRequest { agent: agent.to_owned(), after }).await?;
    Ok(Response::from(resp))
}
