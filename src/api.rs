//! The HTTP API and admin routes under `/api/...`, behind
//! `Authorization: Bearer <ADMIN_TOKEN>`. Each feature adds its routes to
//! [`route`]; authentication happens once, here.

use crate::adapters::EnvVars;
use crate::telegram::secrets_match;
use durable::config::Vars;
use worker::{Env, Request, Response, Result};

/// Checks the bearer token. `Err` is the response to send (401/503).
fn authorize(req: &Request, env: &Env) -> std::result::Result<(), Result<Response>> {
    let Some(expected) = EnvVars(env).get("ADMIN_TOKEN").filter(|t| !t.is_empty()) else {
        return Err(Response::error("ADMIN_TOKEN is not set: the admin API is disabled", 503));
    };
    let given = req.headers().get("authorization").ok().flatten().unwrap_or_default();
    let token = given.strip_prefix("Bearer ").unwrap_or("");
    if secrets_match(token.as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err(Response::error("missing or wrong bearer token", 401))
    }
}

/// `/api/...` (the segments after `api`).
pub async fn route(req: Request, env: &Env, segments: &[&str]) -> Result<Response> {
    if let Err(resp) = authorize(&req, env) {
        return resp;
    }
    match segments {
        ["agents"] => Response::from_json(&durable::config::agent_ids(&EnvVars(env))),
        _ => Response::error("not found", 404),
    }
}
