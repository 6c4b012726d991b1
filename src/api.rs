//! The HTTP API and admin routes under `/api/...`. Authentication happens
//! once, here: `Authorization: Bearer` with `ADMIN_TOKEN` (the owner: every
//! route) or a key of `API_TOKENS` (`durable::settings::api`: the agents it
//! names, and only the conversation routes: generate, stream, threads and,
//! for an owner key, notifications): the table and the credentials matrix
//! are `durable::api::routes`; each feature adds its handler here.

mod pins;
mod threads;
mod turns;

use crate::adapters::EnvVars;
use crate::objects::call;
use durable::api::routes::Route;
use durable::api::ApiError;
use durable::protocol::agent::SessionsRequest;
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
    let front = crate::front::WorkerFront::new(env);
    let mut req = req;
    if let Some(reply) = objects_route(&front, &caller, &route, &mut req).await {
        return reply;
    }
    match route {
        Route::Turn { agent, stream } => turns::turn(req, env, agent, &caller, stream).await,
        Route::Notifications { agent } => threads::notifications(&req, env, agent, &caller).await,
        Route::Agents => Response::from_json(&agents.iter().filter(|a| caller.allows(a)).collect::<Vec<_>>()),
        Route::Sessions { agent } => list_sessions(env, agent).await,
        Route::Archive { agent, id } => read_archive(env, agent, id).await,
        Route::AcceptTemplatePin { template, file } => pins::accept_bulk(env, template, file).await,
        // The objects' routes, answered above.
        _ => api_error(ApiError::new(404, "not found")),
    }
}

/// The routes that only ask the objects, answered by `durable::http_api`.
async fn objects_route(
    front: &crate::front::WorkerFront,
    caller: &durable::settings::api::Caller,
    route: &Route<'_>,
    req: &mut Request,
) -> Option<Result<Response>> {
    if !durable::http_api::serves(route) {
        return None;
    }
    let request = match crate::channels::web_request(req, durable::http_api::body_limit(route)).await {
        Ok(r) => r,
        Err(refused) => return Some(refused),
    };
    let reply = durable::http_api::serve(front, caller, route, &request).await?;
    Some(crate::http::answer(reply))
}

/// Live sessions (from the Agent object's registry) and archives (from R2).
fn rust_error(e: impl std::fmt::Display) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

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
