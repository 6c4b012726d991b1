//! Admin routes for pinned guardrail files (seed 001). Each agent's pins
//! live in its Agent object (`/pins/...` in `agent/pins.rs`); these routes
//! fan out to the objects:
//! - `GET /api/agents/{id}/pins`: per pinned file, pinned vs template hash,
//!   both contents, `updateAvailable`;
//! - `POST /api/agents/{id}/pins/{file}/accept`: advance one agent's pin;
//! - `POST /api/templates/{template}/pins/{file}/accept`: every configured
//!   agent whose `TEMPLATE` is `template`, one template read, per-agent results;
//! - `GET /api/pins/pending`: the agents with an update waiting.

use crate::adapters::{EnvVars, R2};
use crate::http::json_response;
use crate::objects::{call, relay};
use durable::protocol::agent::{PinsAccept, PinsRequest, PinsStatus};
use durable::workspace::pins::{self, PinError};
use serde_json::json;
use worker::{Env, Response, Result};

/// `GET /api/agents/{id}/pins`.
pub async fn status(env: &Env, agent: &str) -> Result<Response> {
    relay(env, &PinsStatus { agent: agent.to_owned() }).await
}

/// `POST /api/agents/{id}/pins/{file}/accept`.
pub async fn accept(env: &Env, agent: &str, file: &str) -> Result<Response> {
    let body = PinsRequest { agent: agent.to_owned(), file: Some(file.to_owned()), sha256: None };
    relay(env, &PinsAccept(body)).await
}

/// The configured agents whose template is `template`, in `AGENTS` order.
fn agents_on(env: &Env, template: &str) -> Vec<String> {
    let vars = EnvVars::of(env);
    durable::settings::agent_ids(&vars)
        .into_iter()
        .filter(|a| durable::settings::overlay::template(&vars, a).ok().flatten().as_deref() == Some(template))
        .collect()
}

/// `POST /api/templates/{template}/pins/{file}/accept`.
pub async fn accept_bulk(env: &Env, template: &str, file: &str) -> Result<Response> {
    let agents = agents_on(env, template);
    if agents.is_empty() {
        return json_response(
            &json!({"ok": false, "error": format!("no configured agent uses template {template:?}")}),
            404,
        );
    }
    let r2 = R2::from_env(env)?;
    let result = pins::accept_bulk(&r2, template, file, &agents, |agent, accepted| async move {
        let body = PinsRequest { agent: agent.clone(), file: Some(accepted.file), sha256: Some(accepted.sha256) };
        match call(env, &PinsAccept(body)).await {
            Ok(_) => Ok(()),
            Err(e) if e.status == 0 => Err(e.message),
            Err(e) => Err(format!("{}: {}", e.status, e.message)),
        }
    })
    .await;
    match result {
        Ok(r) => {
            let status = if r.failed == 0 { 200 } else { 207 };
            json_response(&json!({"ok": r.failed == 0, "result": r}), status)
        }
        Err(e) => {
            let status = match e {
                PinError::Storage(_) => 503,
                PinError::NoTemplateFile { .. } => 404,
                _ => 400,
            };
            json_response(&json!({"ok": false, "error": e.to_string()}), status)
        }
    }
}

/// `GET /api/pins/pending`: every agent with a template, and which of its
/// pinned files have an update waiting (agents without one are left out).
pub async fn pending(env: &Env) -> Result<Response> {
    let vars = EnvVars::of(env);
    let mut waiting = Vec::new();
    let mut errors = Vec::new();
    for agent in durable::settings::agent_ids(&vars) {
        let Ok(Some(template)) = durable::settings::overlay::template(&vars, &agent) else { continue };
        match call(env, &PinsStatus { agent: agent.clone() }).await {
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
    json_response(&json!({"agents": waiting, "errors": errors}), 200)
}
