//! `POST /api/templates/{template}/pins/{file}/accept`: every configured
//! agent whose `TEMPLATE` is `template` advances its pin of `file`, one
//! template read, per-agent results. (The other pins routes only ask the
//! Agent objects: `durable::http_api`.)

use crate::adapters::{EnvVars, R2};
use crate::http::json_response;
use crate::objects::call;
use durable::protocol::agent::{PinsAccept, PinsRequest};
use durable::workspace::pins::{self, PinError};
use serde_json::json;
use worker::{Env, Response, Result};

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
