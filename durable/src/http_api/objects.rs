//! The routes answered by asking the agent's objects:
//! - `GET …/people`, `POST …/people` (`{"approve"|"deny": CODE}`,
//!   `{"revoke": "channel:id"}`), `GET …/approvals`, `POST …/approvals/{n}`
//!   (`{"approve": bool}`): the Agent object's answers as they are;
//! - `GET|DELETE …/reminders[/{rid}][?session=KEY]`, `GET|DELETE …/tasks[/{id}]`;
//! - `GET …/usage[?period=]`, `GET …/usage/threads/{thread}`;
//! - `GET …/sessions/{key}`, `POST …/sessions/{key}/reset`;
//! - `GET …/memory/stores`, `POST …/memory/call`, `GET …/memory/notes?store=&offset=&limit=`;
//! - `GET …/schedule`, `GET …/mcp`, `GET …/pins`, `POST …/pins/{file}/accept`, `GET /api/pins/pending`.

use super::front::{error, json, relay, ApiFront};
use crate::api::routes::Route;
use crate::channels::webhook::WebRequest;
use crate::inbound::SessionKey;
use crate::protocol::agent::{
    PinsAccept, PinsRequest, PinsStatus, ScheduleStatusRequest, SessionEntry, SessionsRequest,
};
use crate::protocol::approvals::ApprovalCall;
use crate::protocol::gateway::{EnsureRequest, GatewayStatusRequest};
use crate::protocol::mcp::McpStatusRequest;
use crate::protocol::memory::{self as mem, valid_store_name, MemoryCall, MemoryRequest};
use crate::protocol::people::{PeopleAction, PeopleCall};
use crate::protocol::reminders::{ReminderCall, ReminderReply};
use crate::protocol::session::{ResetSession, StatusRequest};
use crate::protocol::tasks::{TaskCall, TaskRequest};
use crate::protocol::usage::ReportRequest;
use crate::serving::decode_component as percent_decode;
use crate::serving::Answer as WebReply;
use serde_json::json;

const BAD_STORE: &str = "store must be 1-300 characters without control characters";

pub fn serves(route: &Route<'_>) -> bool {
    use Route::*;
    matches!(
        route,
        People { .. }
            | ActOnPeople { .. }
            | Approvals { .. }
            | Decide { .. }
            | Reminders { .. }
            | CancelReminders { .. }
            | Tasks { .. }
            | CancelTask { .. }
            | Usage { .. }
            | Session { .. }
            | ResetSession { .. }
            | MemoryStores { .. }
            | MemoryCall { .. }
            | MemoryNotes { .. }
            | Schedule { .. }
            | Mcp { .. }
            | Pins { .. }
            | AcceptPin { .. }
            | PendingPins
            | Gateway { .. }
            | ConnectGateway { .. }
    )
}

pub async fn serve<F: ApiFront>(front: &F, route: &Route<'_>, req: &WebRequest) -> Option<WebReply> {
    let a = |agent: &str| agent.to_owned();
    Some(match *route {
        Route::People { agent } => relay(front, &PeopleCall::List { agent: a(agent) }).await,
        Route::ActOnPeople { agent } => match hearth_json::from_slice::<PeopleAction>(&req.body) {
            Err(e) => error(400, format!("not a people action: {e}")),
            Ok(action) => match action.call(agent, "console") {
                Ok(call) => relay(front, &call).await,
                Err(e) => error(400, e),
            },
        },
        Route::Approvals { agent } => relay(front, &ApprovalCall::List { agent: a(agent) }).await,
        Route::Decide { agent, id } => {
            let Ok(id) = id.parse::<i64>() else { return Some(error(400, format!("{id:?} is not a request number"))) };
            let approve =
                hearth_json::from_slice::<serde_json::Value>(&req.body).ok().and_then(|v| v["approve"].as_bool());
            match approve {
                Some(approve) => {
                    relay(front, &ApprovalCall::Decide { agent: a(agent), id, approve, by: "console".into() }).await
                }
                None => error(400, "send {\"approve\": true} or {\"approve\": false}"),
            }
        }
        Route::Reminders { agent, id } => reminders(front, req, agent, id, false).await,
        Route::CancelReminders { agent, id } => reminders(front, req, agent, id, true).await,
        Route::Tasks { agent } => tasks(front, agent, TaskCall::List { origin: None }).await,
        Route::CancelTask { agent, id } => {
            tasks(front, agent, TaskCall::Cancel { id: percent_decode(id), origin: None }).await
        }
        Route::Usage { agent, thread } => {
            let period = req.query("period").unwrap_or("all").to_owned();
            relay(front, &ReportRequest { agent: a(agent), period, thread: thread.map(percent_decode) }).await
        }
        Route::Session { agent, key } => match session_of(agent, key) {
            Ok(session_key) => relay(front, &StatusRequest { session_key, brief: false }).await,
            Err(refused) => refused,
        },
        Route::ResetSession { agent, key } => match session_of(agent, key) {
            Ok(session_key) => relay(front, &ResetSession { session_key }).await,
            Err(refused) => refused,
        },
        Route::MemoryStores { agent } => memory_stores(front, agent).await,
        Route::MemoryCall { agent } => memory_call(front, req, agent).await,
        Route::MemoryNotes { agent } => memory_notes(front, req, agent).await,
        Route::Schedule { agent } => relay(front, &ScheduleStatusRequest { agent: a(agent) }).await,
        Route::Mcp { agent } => relay(front, &McpStatusRequest { agent: a(agent) }).await,
        Route::Pins { agent } => relay(front, &PinsStatus { agent: a(agent) }).await,
        Route::AcceptPin { agent, file } => {
            let accept = PinsRequest { agent: a(agent), file: Some(file.to_owned()), sha256: None };
            relay(front, &PinsAccept(accept)).await
        }
        Route::PendingPins => pending_pins(front).await,
        Route::Gateway { agent } => match gateway_on(front, agent) {
            Ok(true) => relay(front, &EnsureRequest { agent: a(agent), force: false }).await,
            Ok(false) => relay(front, &GatewayStatusRequest { agent: a(agent) }).await,
            Err(e) => error(500, e),
        },
        Route::ConnectGateway { agent } => match gateway_on(front, agent) {
            Ok(true) => relay(front, &EnsureRequest { agent: a(agent), force: true }).await,
            Ok(false) => error(409, format!("DISCORD_GATEWAY is not on for agent {agent:?}")),
            Err(e) => error(500, e),
        },
        _ => return None,
    })
}

/// `DISCORD_GATEWAY` for `agent`; an invalid value is an answer naming it.
fn gateway_on<F: ApiFront>(front: &F, agent: &str) -> Result<bool, String> {
    crate::settings::discord_gateway(front.vars(), agent).map_err(|e| format!("agent {agent}: {e}"))
}

/// The session key in a route, checked to belong to `agent`.
fn session_of(agent: &str, key: &str) -> Result<SessionKey, WebReply> {
    let key = percent_decode(key);
    match SessionKey::parse(&key) {
        Some(k) if k.agent().as_str() == agent => Ok(k),
        _ => Err(error(400, format!("{key:?} is not a session key of agent {agent:?}"))),
    }
}

/// `GET|DELETE …/reminders[/{rid}][?session=KEY]`.
async fn reminders<F: ApiFront>(front: &F, req: &WebRequest, agent: &str, rid: Option<&str>, cancel: bool) -> WebReply {
    let session_key = match req.query("session") {
        None => None,
        Some(raw) => match SessionKey::parse(raw) {
            Some(k) if k.agent().as_str() == agent => Some(k),
            _ => return error(400, format!("{raw:?} is not a session key of agent {agent:?}")),
        },
    };
    let call = match cancel {
        true => ReminderCall::cancel(agent, rid.unwrap_or("all"), session_key),
        false => ReminderCall { id: rid.map(str::to_owned), ..ReminderCall::list(agent, session_key) },
    };
    let reply: ReminderReply = match front.call(&call).await {
        Ok(r) => r,
        Err(e) => return error(503, e.to_string()),
    };
    if let (Some(rid), true) = (rid, reply.reminders.is_empty()) {
        return error(404, format!("no pending reminder {rid:?}"));
    }
    match cancel {
        true => json(&json!({"cancelled": reply.reminders, "pending": reply.pending})),
        false => json(&reply),
    }
}

/// `GET …/tasks` (running, waiting, recent background tasks of every chat)
/// and `DELETE …/tasks/{taskId}` (cancels one).
async fn tasks<F: ApiFront>(front: &F, agent: &str, call: TaskCall) -> WebReply {
    match front.call(&TaskRequest { agent: agent.to_owned(), call }).await {
        Ok(reply) if reply.ok => json(&reply),
        Ok(reply) => error(404, reply.error.as_deref().unwrap_or("no such task")),
        Err(e) => error(503, e.to_string()),
    }
}

/// `GET …/memory/stores`: the owner's store (`main`) and the store of every
/// session in the registry (groups, other people's DMs, jobs, API threads),
/// so the console can browse each.
async fn memory_stores<F: ApiFront>(front: &F, agent: &str) -> WebReply {
    let live = match front.call(&SessionsRequest { agent: agent.to_owned() }).await {
        Ok(l) => l,
        Err(e) => return error(503, e.to_string()),
    };
    let mut stores = vec![mem::MAIN_STORE.to_owned()];
    for key in live.iter().filter_map(SessionEntry::key) {
        let store = mem::store_for(&key);
        if !stores.contains(&store) {
            stores.push(store);
        }
    }
    json(&json!({"stores": stores}))
}

/// `POST …/memory/call`: a memory call for any store, as the owner
/// (`search`, `search_conversations`, `get`, `stats`, `list`, or `op`); the
/// Agent object's own answer is passed on. Recall and archive calls are the
/// sessions' own.
async fn memory_call<F: ApiFront>(front: &F, req: &WebRequest, agent: &str) -> WebReply {
    let call: MemoryCall = match hearth_json::from_slice(&req.body) {
        Ok(c) => c,
        Err(e) => {
            return error(
                400,
                format!("not a memory call ({{\"call\": \"search\"|\"search_conversations\"|\"get\"|\"stats\"|\"list\"|\"op\", \"store\", ...}}): {e}"),
            )
        }
    };
    if matches!(call, MemoryCall::Recall { .. } | MemoryCall::AddArchive { .. } | MemoryCall::AddConversation { .. }) {
        return error(
            400,
            "recall, add_archive and add_conversation are the sessions' calls: use search, search_conversations, get, stats, list or op",
        );
    }
    if !valid_store_name(call.store()) {
        return error(400, BAD_STORE);
    }
    relay(front, &MemoryRequest { agent: agent.to_owned(), call }).await
}

/// `GET …/memory/notes?store=main&offset=0&limit=50`: a page of a store's
/// entries, newest first, for the console to browse. Admin only, like
/// `/memory/call`: the owner's store never reaches anyone else.
async fn memory_notes<F: ApiFront>(front: &F, req: &WebRequest, agent: &str) -> WebReply {
    let number = |name: &str, default: usize| match req.query(name) {
        None => Ok(default),
        Some(v) => v.parse::<usize>().map_err(|_| format!("{name} must be a whole number, not {v:?}")),
    };
    let store = req.query("store").unwrap_or(mem::MAIN_STORE).to_owned();
    let (offset, limit) = match (number("offset", 0), number("limit", 50)) {
        (Ok(o), Ok(l)) => (o, l),
        (Err(e), _) | (_, Err(e)) => return error(400, e),
    };
    if !valid_store_name(&store) {
        return error(400, BAD_STORE);
    }
    relay(front, &MemoryRequest { agent: agent.to_owned(), call: MemoryCall::List { store, offset, limit } }).await
}

/// `GET /api/pins/pending`: every agent with a template, and which of its
/// pinned files have an update waiting (agents without one are left out).
async fn pending_pins<F: ApiFront>(front: &F) -> WebReply {
    let vars = front.vars();
    let mut waiting = Vec::new();
    let mut errors = Vec::new();
    for agent in crate::settings::agent_ids(vars) {
        let Ok(Some(template)) = crate::settings::overlay::template(vars, &agent) else { continue };
        match front.call(&PinsStatus { agent: agent.clone() }).await {
            Ok(reply) => {
                let files: Vec<&str> =
                    reply.files.iter().filter(|f| f.update_available).map(|f| f.file.as_str()).collect();
                if !files.is_empty() {
                    waiting.push(json!({"agent": agent, "template": template, "files": files}));
                }
            }
            Err(e) => errors.push(json!({"agent": agent, "error": e.to_string()})),
        }
    }
    json(&json!({"agents": waiting, "errors": errors}))
}
