//! The agent's pinned guardrail files (seed 001), kept in the Agent object's
//! SQLite through [`durable::workspace::pins`]. Routes (reached only through
//! the `AGENT` binding; `agent` names the agent, as the object does not know
//! its own name):
//! - `GET /pins/get?agent=`: the pins, `{template, files: {file: sha256}}`.
//!   Called by the Session object once per turn: after the first call it is
//!   two indexed SELECTs. The first call for a template takes the pins
//!   (hashes the template's guardrail files, fills the version store).
//! - `POST /pins/init {agent}`: takes the pins now (idempotent).
//! - `GET /pins/status?agent=`: per pinned file, pinned vs current template
//!   hash and content, `updateAvailable`.
//! - `POST /pins/accept {agent, file, sha256?}`: advances the pin to the
//!   template's current content (or to `sha256`, already in the version
//!   store: the bulk accept), deleting any agent override of the file.

use super::Agent;
use crate::adapters::{self, EnvVars, R2};
use durable::ports::LogLevel;
use durable::protocol::pins::Pins;
use durable::workspace::pins::{self, Accepted, PinError, PinStore};
use r2_layout::AgentId;
use serde::Deserialize;
use serde_json::json;
use worker::{Method, Request, Response, Result};

#[derive(Deserialize)]
struct Body {
    agent: String,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    sha256: Option<String>,
}

/// The pins of `agent`, from its Agent object (what a Session asks once per
/// turn when the agent has a template).
pub async fn fetch(env: &worker::Env, agent: &str) -> std::result::Result<Pins, durable::ports::StorageError> {
    let down = |e: worker::Error| durable::ports::StorageError(format!("pins: {e}"));
    let (status, body) =
        crate::http::call_object(env, "AGENT", agent, Method::Get, &format!("/pins/get?agent={agent}"), None)
            .await
            .map_err(down)?;
    if status != 200 {
        return Err(durable::ports::StorageError(format!("pins: Agent object answered {status}: {body}")));
    }
    serde_json::from_value(body).map_err(|e| durable::ports::StorageError(format!("pins: {e}")))
}

fn fail(status: u16, msg: impl std::fmt::Display) -> Result<Response> {
    Ok(Response::from_json(&json!({"ok": false, "error": msg.to_string()}))?.with_status(status))
}

fn pin_fail(e: PinError) -> Result<Response> {
    let status = match &e {
        PinError::Storage(_) => 503,
        PinError::NoTemplateFile { .. } | PinError::VersionMissing(_) => 404,
        PinError::Key(_) | PinError::NotPinnable(_) => 400,
    };
    if status == 503 {
        adapters::log(LogLevel::Error, &format!("pins: {e}"));
    }
    fail(status, e)
}

pub async fn handle(agent: &Agent, mut req: Request) -> Result<Response> {
    let path = req.path();
    let (agent_id, body) = match req.method() {
        Method::Get => {
            let url = req.url()?;
            let id = url.query_pairs().find(|(k, _)| k == "agent").map(|(_, v)| v.into_owned()).unwrap_or_default();
            (id, None)
        }
        Method::Post => match req.json::<Body>().await {
            Ok(b) => (b.agent.clone(), Some(b)),
            Err(e) => return fail(400, format!("bad body: {e}")),
        },
        _ => return fail(405, "use GET or POST"),
    };
    let vars = EnvVars(&agent.env);
    if !durable::settings::agent_ids(&vars).contains(&agent_id) {
        return fail(404, format!("unknown agent {agent_id:?}"));
    }
    let id = match AgentId::parse(&agent_id) {
        Ok(id) => id,
        Err(e) => return fail(400, e),
    };
    let template = match durable::settings::overlay::template(&vars, &agent_id) {
        Ok(t) => t,
        Err(e) => return fail(500, e),
    };
    let sql = agent.sql();
    let store = PinStore::new(&sql);
    if let Err(e) = store.init() {
        return pin_fail(e.into());
    }
    let Some(template) = template else {
        // No template: nothing is pinned, the overlay is agent → defaults.
        return match path.as_str() {
            "/pins/get" | "/pins/init" => Response::from_json(&Pins::default()),
            "/pins/status" => Response::from_json(&json!({"agent": agent_id, "template": null, "files": []})),
            "/pins/accept" => fail(409, format!("agent {agent_id:?} has no TEMPLATE")),
            _ => fail(404, "not found"),
        };
    };
    let r2 = R2::from_env(&agent.env)?;
    let now = adapters::now_ms();
    match (req.method(), path.as_str()) {
        (Method::Get, "/pins/get") | (Method::Post, "/pins/init") => {
            match pins::initialize_pins(&r2, &store, &template, now).await {
                Ok(p) => Response::from_json(&p),
                Err(e) => pin_fail(e),
            }
        }
        (Method::Get, "/pins/status") => {
            let p = match pins::initialize_pins(&r2, &store, &template, now).await {
                Ok(p) => p,
                Err(e) => return pin_fail(e),
            };
            match pins::pin_status(&r2, &p, &template).await {
                Ok(files) => Response::from_json(&json!({"agent": agent_id, "template": template, "files": files})),
                Err(e) => pin_fail(e),
            }
        }
        (Method::Post, "/pins/accept") => {
            let Some(Body { file: Some(file), sha256, .. }) = body else {
                return fail(400, "accept needs {agent, file}");
            };
            if let Err(e) = pins::initialize_pins(&r2, &store, &template, now).await {
                return pin_fail(e);
            }
            let result = match sha256 {
                Some(sha256) => {
                    let accepted = Accepted { file: file.clone(), sha256: sha256.clone() };
                    pins::apply_accept(&r2, &store, &id, &template, &accepted, now)
                        .await
                        .map(|previous| pins::AcceptOutcome { file, sha256, previous_sha256: previous })
                }
                None => pins::accept_update(&r2, &store, &id, &template, &file, now).await,
            };
            match result {
                Ok(outcome) => Response::from_json(
                    &json!({"ok": true, "agent": agent_id, "template": template, "accepted": outcome}),
                ),
                Err(e) => pin_fail(e),
            }
        }
        _ => fail(404, "not found"),
    }
}
