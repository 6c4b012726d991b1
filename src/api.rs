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
use durable::api::routes::Route;
use durable::api::ApiError;
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
