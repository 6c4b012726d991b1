//! The HTTP API and admin routes under `/api/...`. Authentication happens
//! once, here: `Authorization: Bearer` with `ADMIN_TOKEN` (the owner: every
//! route) or a key of `API_TOKENS` (`durable::settings::api`: the agents it
//! names, and only the conversation routes: generate, stream, threads and,
//! for an owner key, notifications): the table and the credentials matrix
//! are `durable::api::routes`; each feature adds its handler here.

mod history;
mod people;
mod pins;
mod reminders;
mod threads;
mod turns;
mod usage;
mod workspace;

use crate::adapters::EnvVars;
use crate::objects::{call, relay};
use durable::api::routes::Route;
use durable::api::ApiError;
use durable::protocol::agent::{ScheduleStatusRequest, SessionEntry, SessionsRequest};
use durable::protocol::session::{ResetSession, StatusRequest};
use durable::protocol::tasks::TaskCall;
use durable::protocol::BUCKET_BINDING;
use worker::{Env, Request, Response, Result};

/// A JSON error: `{"error": "..."}` with `status`.
pub fn json_error(status: u16, message: &str) -> Result<Response> {
    Ok(Response::from_json(&serde_json::json!({"error": message}))?.with_status(status))
}

fn api_error(e: ApiError) -> Result<Response> {
    json_error(e.status, &e.message)
}

/// `/api/...` (the segments after `api`): the route and whether the caller
/// may use it are `durable::api::routes`'s; this runs it.
pub async fn route(req: Request, env: &Env, segments: &[&str]) -> Result<Response> {
    let caller = match crate::auth::authenticate(&req, env) {
        Ok(c) => c,
        Err(refused) => return refused.response(),
    };
    let agents = durable::settings::agent_ids(&EnvVars::of(env));
    let method = durable::protocol::call::Method::parse(req.method().as_ref());
    let route = match durable::api::routes::route(method, segments, &caller, &agents) {
        Ok(r) => r,
        Err(e) => return api_error(e),
    };
    match route {
        Route::Turn { agent, stream } => turns::turn(req, env, agent, &caller, stream).await,
        Route::Stop { agent, thread } => turns::stop(req, env, agent, &caller, thread).await,
        Route::Threads { agent } => threads::list(env, agent, &caller).await,
        Route::CreateThread { agent } => threads::create(req, env, agent, &caller).await,
        Route::Notifications { agent } => threads::notifications(&req, env, agent, &caller).await,
        Route::Agents => Response::from_json(&agents.iter().filter(|a| caller.allows(a)).collect::<Vec<_>>()),
        Route::Sessions { agent } => list_sessions(env, agent).await,
        Route::Session { agent, key } => match session_of(agent, key) {
            Ok(session_key) => relay(env, &StatusRequest { session_key, brief: false }).await,
            Err(refused) => refused,
        },
        Route::ResetSession { agent, key } => match session_of(agent, key) {
            Ok(session_key) => relay(env, &ResetSession { session_key }).await,
            Err(refused) => refused,
        },
        Route::Archive { agent, id } => read_archive(env, agent, id).await,
        Route::Schedule { agent } => relay(env, &ScheduleStatusRequest { agent: agent.to_owned() }).await,
        Route::Tasks { agent } => tasks(env, agent, TaskCall::List { origin: None }).await,
        Route::CancelTask { agent, id } => {
            tasks(env, agent, TaskCall::Cancel { id: crate::http::percent_decode(id), origin: None }).await
        }
        Route::Reminders { agent, id } => reminders::list(&req, env, agent, id).await,
        Route::CancelReminders { agent, id } => reminders::cancel(&req, env, agent, id).await,
        Route::Usage { agent, thread } => usage::report(&req, env, agent, thread).await,
        Route::Mcp { agent } => relay(env, &durable::protocol::mcp::McpStatusRequest { agent: agent.to_owned() }).await,
        Route::People { agent } => people::list(env, agent).await,
        Route::ActOnPeople { agent } => people::act(req, env, agent).await,
        Route::Approvals { agent } => people::approvals(env, agent).await,
        Route::Decide { agent, id } => people::decide(req, env, agent, id).await,
        Route::Gateway { agent } => crate::gateway_ensure::status(env, agent).await,
        Route::ConnectGateway { agent } => crate::gateway_ensure::connect(env, agent).await,
        Route::Pins { agent } => pins::status(env, agent).await,
        Route::AcceptPin { agent, file } => pins::accept(env, agent, file).await,
        Route::AcceptTemplatePin { template, file } => pins::accept_bulk(env, template, file).await,
        Route::PendingPins => pins::pending(env).await,
        Route::AgentWorkspace { agent, rest } => workspace::agent(req, env, agent, rest).await,
        Route::TemplateWorkspace { template, rest } => {
            let layer = durable::workspace::admin::LayerRef::template(&crate::http::percent_decode(template));
            workspace::shared(req, env, layer, rest).await
        }
        Route::DefaultsWorkspace { rest } => {
            workspace::shared(req, env, Ok(durable::workspace::admin::LayerRef::Defaults), rest).await
        }
        Route::MemoryStores { agent } => memory_stores(env, agent).await,
        Route::MemoryCall { agent } => memory_call(req, env, agent).await,
        Route::MemoryNotes { agent } => memory_notes(&req, env, agent).await,
        Route::History { agent, rest } => history::route(req, env, agent, rest).await,
    }
}

/// `GET /api/agents/{id}/tasks` (running, waiting, recent background tasks
/// of every chat) and `DELETE .../tasks/{taskId}` (cancels one).
async fn tasks(env: &Env, agent: &str, call: TaskCall) -> Result<Response> {
    let req = durable::protocol::tasks::TaskRequest { agent: agent.to_owned(), call };
    match crate::objects::call(env, &req).await {
        Ok(reply) if reply.ok => Response::from_json(&reply),
        Ok(reply) => json_error(404, reply.error.as_deref().unwrap_or("no such task")),
        Err(e) => json_error(503, &e.to_string()),
    }
}

/// Live sessions (from the Agent object's registry) and archives (from R2).
async fn list_sessions(env: &Env, agent: &str) -> Result<Response> {
    let live = call(env, &SessionsRequest { agent: agent.to_owned() }).await.map_err(rust_error)?;
    let agent_id = r2_layout::AgentId::parse(agent).map_err(|e| worker::Error::RustError(e.to_string()))?;
    let bucket = env.bucket(BUCKET_BINDING)?;
    let mut archives = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut b = bucket
            .list()
            .prefix(r2_layout::keys::sessions_prefix(&agent_id))
            .include(vec![worker::Include::CustomMetadata]);
        if let Some(c) = &cursor {
            b = b.cursor(c);
        }
        let page = b.execute().await?;
        for o in page.objects() {
            archives.push(serde_json::json!({
                "key": o.key(), "size": o.size(), "uploaded": o.uploaded().as_millis(),
                "metadata": o.custom_metadata().unwrap_or_default(),
            }));
        }
        match (page.truncated(), page.cursor()) {
            (true, Some(c)) => cursor = Some(c),
            _ => break,
        }
    }
    Response::from_json(&serde_json::json!({"live": live, "archives": archives}))
}

/// Largest archive the API decodes (uncompressed), well inside the isolate's memory.
const MAX_ARCHIVE_BYTES: usize = 32 * 1024 * 1024;

/// One archived session, decoded: `{sessionId}` (the reset archive) or
/// `{sessionId}-part{ts}` (a compaction part), with its metadata and messages
/// in order (the lines of the `.jsonl.gz`).
async fn read_archive(env: &Env, agent: &str, id: &str) -> Result<Response> {
    let agent_id = r2_layout::AgentId::parse(agent).map_err(|e| worker::Error::RustError(e.to_string()))?;
    let id = crate::http::percent_decode(id);
    let id = id.strip_suffix(".jsonl.gz").unwrap_or(&id);
    let key = match r2_layout::keys::session_archive(&agent_id, id) {
        Ok(k) => k,
        Err(e) => return Response::error(e.to_string(), 400),
    };
    let Some(obj) = env.bucket(BUCKET_BINDING)?.get(&key).execute().await? else {
        return Response::error(format!("no archive {id:?} (see GET /api/agents/{agent}/sessions)"), 404);
    };
    let metadata = obj.custom_metadata().unwrap_or_default();
    let bytes = match obj.body() {
        Some(body) => body.bytes().await?,
        None => Vec::new(),
    };
    let lines = match crate::js::gunzip(&bytes, MAX_ARCHIVE_BYTES).await {
        Ok(lines) => lines,
        Err(e @ durable::ports::GunzipError::TooLarge(_)) => {
            return Response::error(format!("{key}: archive {e}; download it from R2"), 413)
        }
        Err(e) => return Response::error(format!("{key} is not a readable archive: {e}"), 422),
    };
    match r2_layout::archive::decode_lines(&lines) {
        Ok(messages) => Response::from_json(&serde_json::json!({
            "sessionId": id, "key": key, "metadata": metadata, "messages": messages,
        })),
        Err(e) => Response::error(format!("{key} is not a readable archive: {e}"), 422),
    }
}

fn rust_error(e: impl std::fmt::Display) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

/// The session key in a route, checked to belong to `agent`.
fn session_of(agent: &str, key: &str) -> std::result::Result<durable::inbound::SessionKey, Result<Response>> {
    let key = crate::http::percent_decode(key);
    match durable::inbound::SessionKey::parse(&key) {
        Some(k) if k.agent().as_str() == agent => Ok(k),
        _ => Err(json_error(400, &format!("{key:?} is not a session key of agent {agent:?}"))),
    }
}

/// `GET /api/agents/{id}/memory/stores`: the owner's store (`main`) and the
/// store of every session in the registry (groups, other people's DMs, jobs,
/// API threads), so the console can browse each.
async fn memory_stores(env: &Env, agent: &str) -> Result<Response> {
    let live = call(env, &SessionsRequest { agent: agent.to_owned() }).await.map_err(rust_error)?;
    let mut stores = vec![durable::protocol::memory::MAIN_STORE.to_owned()];
    for key in live.iter().filter_map(SessionEntry::key) {
        let store = durable::protocol::memory::store_for(&key);
        if !stores.contains(&store) {
            stores.push(store);
        }
    }
    Response::from_json(&serde_json::json!({"stores": stores}))
}

/// `GET /api/agents/{id}/memory/notes?store=main&offset=0&limit=50`: a page
/// of a store's entries, newest first (name, kind, createdAt, summary,
/// length; `total`), for the console to browse. Admin only, like
/// `/memory/call`: the owner's store never reaches anyone else.
async fn memory_notes(req: &Request, env: &Env, agent: &str) -> Result<Response> {
    use durable::protocol::memory::{valid_store_name, MemoryCall, MemoryRequest};
    let number = |name: &str, default: usize| match crate::http::query(req, name) {
        None => Ok(default),
        Some(v) => v.parse::<usize>().map_err(|_| format!("{name} must be a whole number, not {v:?}")),
    };
    let store = crate::http::query(req, "store").unwrap_or_else(|| durable::protocol::memory::MAIN_STORE.to_owned());
    let (offset, limit) = match (number("offset", 0), number("limit", 50)) {
        (Ok(o), Ok(l)) => (o, l),
        (Err(e), _) | (_, Err(e)) => return json_error(400, &e),
    };
    if !valid_store_name(&store) {
        return json_error(400, "store must be 1-300 characters without control characters");
    }
    let call = MemoryCall::List { store, offset, limit };
    relay(env, &MemoryRequest { agent: agent.to_owned(), call }).await
}

/// `POST /api/agents/{id}/memory/call`: a memory call for any store, as the
/// owner (`{"call": "search", "store", "query", "k"}`, `get`, `stats`, `list`, or
/// `op` with an add / write / rename / alias / remove); the Agent object's
/// own answer is passed on. Recall and archive calls are the sessions' own.
async fn memory_call(mut req: Request, env: &Env, agent: &str) -> Result<Response> {
    use durable::protocol::memory::{valid_store_name, MemoryCall, MemoryRequest};
    let body = match crate::http::read_body_limited(&mut req, durable::api::MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let call: MemoryCall = match hearth_json::from_slice(&body) {
        Ok(c) => c,
        Err(e) => {
            return json_error(
                400,
                &format!(
                "not a memory call ({{\"call\": \"search\"|\"search_conversations\"|\"get\"|\"stats\"|\"list\"|\"op\", \"store\", ...}}): {e}"
            ),
            )
        }
    };
    if matches!(call, MemoryCall::Recall { .. } | MemoryCall::AddArchive { .. } | MemoryCall::AddConversation { .. }) {
        return json_error(
            400,
            "recall, add_archive and add_conversation are the sessions' calls: use search, search_conversations, get, stats, list or op",
        );
    }
    if !valid_store_name(call.store()) {
        return json_error(400, "store must be 1-300 characters without control characters");
    }
    relay(env, &MemoryRequest { agent: agent.to_owned(), call }).await
}
