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
use crate::http::{call_object, json_response};
use durable::workspace::pins::{self, PinError};
use serde_json::{json, Value};
use worker::{Env, Method, Response, Result};

/// `GET /api/agents/{id}/pins`.
pub async fn status(env: &Env, agent: &str) -> Result<Response> {
    let (status, body) =
        call_object(env, "AGENT", agent, Method::Get, &format!("/pins/status?agent={agent}"), None).await?;
    json_response(&body, status)
}

/// `POST /api/agents/{id}/pins/{file}/accept`.
pub async fn accept(env: &Env, agent: &str, file: &str) -> Result<Response> {
    let body = json!({"agent": agent, "file": file});
    let (status, body) = call_object(env, "AGENT", agent, Method::Post, "/pins/accept", Some(&body)).await?;
    json_response(&body, status)
}

/// The configured agents whose template is `template`, in `AGENTS` order.
fn agents_on(env: &Env, template: &str) -> Vec<String> {
    let vars = EnvVars(env);
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
        let body = json!({"agent": agent, "file": accepted.file, "sha256": accepted.sha256});
        match call_object(env, "AGENT", &agent, Method::Post, "/pins/accept", Some(&body)).await {
            Ok((200, _)) => Ok(()),
            Ok((status, body)) => {
                Err(format!("{status}: {}", body.get("error").and_then(Value::as_str).unwrap_or("failed")))
            }
            Err(e) => Err(e.to_string()),
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
    let vars = EnvVars(env);
    let mut waiting = Vec::new();
    let mut errors = Vec::new();
    for agent in durable::settings::agent_ids(&vars) {
        let Ok(Some(template)) = durable::settings::overlay::template(&vars, &agent) else { continue };
        match call_object(env, "AGENT", &agent, Method::Get, &format!("/pins/status?agent={agent}"), None).await {
            Ok((200, body)) => {
                let files: Vec<&str> = body["files"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|f| f["updateAvailable"].as_bool() == Some(true))
                    .filter_map(|f| f["file"].as_str())
                    .collect();
                if !files.is_empty() {
                    waiting.push(json!({"agent": agent, "template": template, "files": files}));
                }
            }
            Ok((status, body)) => errors.push(json!({"agent": agent, "status": status, "error": body.get("error")})),
            Err(e) => errors.push(json!({"agent": agent, "error": e.to_string()})),
        }
    }
    json_response(&json!({"agents": waiting, "errors": errors}), 200)
}
