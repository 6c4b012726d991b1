//! The HTTP API's routes under `/api/...`, decided once for every caller:
//! which route a method and path name, and whether these credentials may
//! use it ([`route`]). The Worker only runs the route it is handed. A
//! refusal is one [`ApiError`], answered as `{"error": …}` ([`ApiError::body`]).
//!
//! Keys of `API_TOKENS` reach only the conversation routes (generate,
//! stream, threads/{id}/stop, memory/threads, notifications) of the agents
//! they name; an agent a key may not use is an unknown agent to it (404),
//! so a key never learns which others exist. Everything else is
//! `ADMIN_TOKEN`'s (403 for a key).

use super::ApiError;
use crate::protocol::call::Method::{self, Delete, Get, Post};
use crate::settings::api::Caller;

/// A route, with the path's parts it needs (as they came: still encoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route<'a> {
    /// `GET /api/agents`: the agents the caller may use.
    Agents,
    /// `POST …/generate` (`stream: false`) and `…/stream`.
    Turn {
        agent: &'a str,
        stream: bool,
    },
    Stop {
        agent: &'a str,
        thread: &'a str,
    },
    Threads {
        agent: &'a str,
    },
    CreateThread {
        agent: &'a str,
    },
    Notifications {
        agent: &'a str,
    },
    // The owner's (ADMIN_TOKEN) from here.
    Sessions {
        agent: &'a str,
    },
    Session {
        agent: &'a str,
        key: &'a str,
    },
    ResetSession {
        agent: &'a str,
        key: &'a str,
    },
    Archive {
        agent: &'a str,
        id: &'a str,
    },
    Schedule {
        agent: &'a str,
    },
    Tasks {
        agent: &'a str,
    },
    CancelTask {
        agent: &'a str,
        id: &'a str,
    },
    Reminders {
        agent: &'a str,
        id: Option<&'a str>,
    },
    CancelReminders {
        agent: &'a str,
        id: Option<&'a str>,
    },
    Usage {
        agent: &'a str,
        thread: Option<&'a str>,
    },
    Mcp {
        agent: &'a str,
    },
    People {
        agent: &'a str,
    },
    ActOnPeople {
        agent: &'a str,
    },
    Approvals {
        agent: &'a str,
    },
    Decide {
        agent: &'a str,
        id: &'a str,
    },
    Gateway {
        agent: &'a str,
    },
    ConnectGateway {
        agent: &'a str,
    },
    Pins {
        agent: &'a str,
    },
    AcceptPin {
        agent: &'a str,
        file: &'a str,
    },
    AcceptTemplatePin {
        template: &'a str,
        file: &'a str,
    },
    PendingPins,
    AgentWorkspace {
        agent: &'a str,
        rest: &'a [&'a str],
    },
    TemplateWorkspace {
        template: &'a str,
        rest: &'a [&'a str],
    },
    DefaultsWorkspace {
        rest: &'a [&'a str],
    },
    MemoryStores {
        agent: &'a str,
    },
    MemoryCall {
        agent: &'a str,
    },
    MemoryNotes {
        agent: &'a str,
    },
    /// `…/history…`, `…/files/…`, `…/dreams`, `…/memory/evidence`: `rest` after the agent.
    History {
        agent: &'a str,
        rest: &'a [&'a str],
    },
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into() }
    }

    /// The one body of every refusal: `{"error": message}`.
    pub fn body(&self) -> Vec<u8> {
        crate::protocol::call::error_body(&self.message)
    }
}

const NOT_ALLOWED: &str =
    "method not allowed (generate, stream and threads/{id}/stop: POST; threads: GET or POST; notifications: GET)";
const ADMIN_ONLY: &str =
    "this key may use generate, stream, threads/{id}/stop, memory/threads and notifications; the rest needs ADMIN_TOKEN";

/// The route `method segments` names (the segments after `api`), if
/// `caller` may use it; `agents`: the configured agents.
pub fn route<'a>(
    method: Method,
    segments: &'a [&'a str],
    caller: &Caller,
    agents: &[String],
) -> Result<Route<'a>, ApiError> {
    if let ["agents", agent, ..] = segments {
        // A key's agents are the only ones it may learn exist.
        if !agents.iter().any(|a| a == agent) || !caller.allows(agent) {
            return Err(ApiError::new(404, format!("unknown agent {agent:?}")));
        }
    }
    let conversation = match (method, segments) {
        (Post, ["agents", agent, "generate"]) => Some(Route::Turn { agent, stream: false }),
        (Post, ["agents", agent, "stream"]) => Some(Route::Turn { agent, stream: true }),
        (Post, ["agents", agent, "threads", thread, "stop"]) => Some(Route::Stop { agent, thread }),
        (Get, ["agents", agent, "memory", "threads"]) => Some(Route::Threads { agent }),
        (Post, ["agents", agent, "memory", "threads"]) => Some(Route::CreateThread { agent }),
        (Get, ["agents", agent, "notifications", "stream"]) => Some(Route::Notifications { agent }),
        (_, ["agents", _, "generate" | "stream" | "notifications"])
        | (_, ["agents", _, "memory", "threads"])
        | (_, ["agents", _, "threads", _, "stop"]) => return Err(ApiError::new(405, NOT_ALLOWED)),
        (Get, ["agents"]) => Some(Route::Agents),
        _ => None,
    };
    if let Some(r) = conversation {
        return Ok(r);
    }
    if *caller != Caller::Admin {
        return Err(ApiError::new(403, ADMIN_ONLY));
    }
    admin_route(method, segments).ok_or_else(|| ApiError::new(404, "not found"))
}

fn admin_route<'a>(method: Method, segments: &'a [&'a str]) -> Option<Route<'a>> {
    Some(match (method, segments) {
        (Get, ["agents", agent, "sessions"]) => Route::Sessions { agent },
        (Get, ["agents", agent, "sessions", key]) => Route::Session { agent, key },
        (Post, ["agents", agent, "sessions", key, "reset"]) => Route::ResetSession { agent, key },
        (Get, ["agents", agent, "archives", id]) => Route::Archive { agent, id },
        (Get, ["agents", agent, "schedule"]) => Route::Schedule { agent },
        (Get, ["agents", agent, "tasks"]) => Route::Tasks { agent },
        (Delete, ["agents", agent, "tasks", id]) => Route::CancelTask { agent, id },
        (Get, ["agents", agent, "reminders"]) => Route::Reminders { agent, id: None },
        (Get, ["agents", agent, "reminders", id]) => Route::Reminders { agent, id: Some(id) },
        (Delete, ["agents", agent, "reminders"]) => Route::CancelReminders { agent, id: None },
        (Delete, ["agents", agent, "reminders", id]) => Route::CancelReminders { agent, id: Some(id) },
        (Get, ["agents", agent, "usage"]) => Route::Usage { agent, thread: None },
        (Get, ["agents", agent, "usage", "threads", thread]) => Route::Usage { agent, thread: Some(thread) },
        (Get, ["agents", agent, "mcp"]) => Route::Mcp { agent },
        (Get, ["agents", agent, "people"]) => Route::People { agent },
        (Post, ["agents", agent, "people"]) => Route::ActOnPeople { agent },
        (Get, ["agents", agent, "approvals"]) => Route::Approvals { agent },
        (Post, ["agents", agent, "approvals", id]) => Route::Decide { agent, id },
        (Get, ["agents", agent, "gateway"]) => Route::Gateway { agent },
        (Post, ["agents", agent, "gateway", "connect"]) => Route::ConnectGateway { agent },
        (Get, ["agents", agent, "pins"]) => Route::Pins { agent },
        (Post, ["agents", agent, "pins", file, "accept"]) => Route::AcceptPin { agent, file },
        (Post, ["templates", template, "pins", file, "accept"]) => Route::AcceptTemplatePin { template, file },
        (Get, ["pins", "pending"]) => Route::PendingPins,
        (_, ["agents", agent, "workspace", rest @ ..]) => Route::AgentWorkspace { agent, rest },
        (_, ["templates", template, "workspace", rest @ ..]) => Route::TemplateWorkspace { template, rest },
        (_, ["defaults", "workspace", rest @ ..]) => Route::DefaultsWorkspace { rest },
        (Get, ["agents", agent, "memory", "stores"]) => Route::MemoryStores { agent },
        (Post, ["agents", agent, "memory", "call"]) => Route::MemoryCall { agent },
        (Get, ["agents", agent, "memory", "notes"]) => Route::MemoryNotes { agent },
        (_, ["agents", agent, rest @ ..])
            if matches!(rest.first(), Some(&"history" | &"files" | &"dreams"))
                || rest.starts_with(&["memory", "evidence"]) =>
        {
            Route::History { agent, rest }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
