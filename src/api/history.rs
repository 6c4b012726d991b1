//! Admin routes for the workspace history and dreaming:
//! - `GET /api/agents/{id}/history`: the latest changes, any file (`?limit=`);
//! - `GET /api/agents/{id}/history/{path}`: a file's versions, newest first;
//!   `?version={rev|sha256:…|current}`: one version's content;
//!   `?diff={version}&to={version}` (default `current`): a unified diff;
//! - `POST /api/agents/{id}/history/{path}` `{"restore": version, "why"?}`:
//!   the file becomes that version again (a new version, by `owner`);
//! - `PUT /api/agents/{id}/files/{path}` (body: the content, `?why=`) and
//!   `DELETE …/files/{path}`: the owner's own writes, kept like any other;
//! - `GET /api/agents/{id}/dreams`: dreaming's settings, figures, last sweep
//!   and proposals (from the Agent object);
//! - `GET /api/agents/{id}/memory/evidence?store=main`: recall evidence of a
//!   store's most used entries.
//!
//! The history lives in R2 (`durable::workspace::history`), so these routes
//! read and write it directly.

use crate::adapters::{now_ms, EnvVars, R2};
use crate::http::{json_response, percent_decode, query, read_body_limited};
use crate::objects::relay;
use durable::protocol::dreams::DreamsStatusRequest;
use durable::protocol::memory::{MemoryCall, MemoryRequest};
use durable::tools::check_path;
use durable::workspace::history::view::{self, Version};
use durable::workspace::history::{self, Actor, Edit, HistoryError};
use r2_layout::{AgentId, Scope};
use serde_json::json;
use worker::{Env, Method, Request, Response, Result};

/// Largest file the API writes (R2 takes more; a workspace file is text).
const MAX_FILE_BYTES: usize = 1024 * 1024;

fn refused(e: HistoryError) -> Result<Response> {
    let status = match &e {
        HistoryError::NotFound(_) => 404,
        HistoryError::Refused(_) | HistoryError::Key(_) => 400,
        HistoryError::Storage(_) => 503,
    };
    json_response(&json!({"ok": false, "error": e.to_string()}), status)
}

/// A workspace path from URL segments, checked like the agent's own paths.
fn workspace_path(agent: &AgentId, segments: &[&str]) -> std::result::Result<String, Result<Response>> {
    let raw = segments.iter().map(|s| percent_decode(s)).collect::<Vec<_>>().join("/");
    match check_path(&raw, agent, Scope::Main) {
        Ok(p) if p == "sessions" || p.starts_with("sessions/") => {
            Err(Response::error("session archives are not workspace files", 400))
        }
        Ok(p) if !p.is_empty() && !p.ends_with('/') => Ok(p),
        Ok(_) => Err(Response::error("name a file: /history/{path}", 400)),
        Err(e) => Err(Response::error(e.to_string(), 400)),
    }
}

fn keep(env: &Env, agent: &str) -> std::result::Result<usize, Result<Response>> {
    durable::settings::dreaming::history_keep(&EnvVars::of(env), agent).map_err(|e| crate::http::error_response(&e))
}

/// The `/api/agents/{id}/history…`, `/files/…`, `/dreams` and `/memory/evidence` routes.
pub async fn route(mut req: Request, env: &Env, agent: &str, rest: &[&str]) -> Result<Response> {
    let id = AgentId::parse(agent).map_err(|e| worker::Error::RustError(e.to_string()))?;
    match (req.method(), rest) {
        (Method::Get, ["dreams"]) => relay(env, &DreamsStatusRequest { agent: agent.to_owned() }).await,
        (Method::Get, ["memory", "evidence"]) => {
            let store = query(&req, "store").unwrap_or_else(|| "main".into());
            let limit: usize = query(&req, "limit").and_then(|l| l.parse().ok()).unwrap_or(50);
            let call = MemoryCall::Evidence { store, limit };
            relay(env, &MemoryRequest { agent: agent.to_owned(), call }).await
        }
        (Method::Get, ["history"]) => {
            let limit: usize = query(&req, "limit").and_then(|l| l.parse().ok()).unwrap_or(50);
            match view::recent(&R2::from_env(env)?, &id, limit).await {
                Ok(changes) => json_response(&json!({"agent": agent, "changes": changes}), 200),
                Err(e) => refused(e),
            }
        }
        (Method::Get, ["history", path @ ..]) => {
            let path = match workspace_path(&id, path) {
                Ok(p) => p,
                Err(r) => return r,
            };
            read(&req, env, &id, &path).await
        }
        (Method::Post, ["history", path @ ..]) => {
            let path = match workspace_path(&id, path) {
                Ok(p) => p,
                Err(r) => return r,
            };
            let body: serde_json::Value = match crate::adapters::request_json(&mut req).await {
                Ok(b) => b,
                Err(e) => return Response::error(format!("bad body: {e}"), 400),
            };
            let Some(version) = body["restore"].as_str() else {
                return Response::error("POST /history/{path} takes {\"restore\": version, \"why\"?: text}", 400);
            };
            let version = match Version::parse(version) {
                Ok(v) => v,
                Err(e) => return refused(e),
            };
            let keep = match keep(env, agent) {
                Ok(k) => k,
                Err(r) => return r,
            };
            let why = body["why"].as_str().unwrap_or("");
            let r2 = R2::from_env(env)?;
            match view::restore(&r2, &id, &path, &version, Actor::Owner, why, now_ms(), keep).await {
                Ok(change) => json_response(&json!({"ok": true, "changed": change.is_some(), "change": change}), 200),
                Err(e) => refused(e),
            }
        }
        (Method::Put | Method::Delete, ["files", path @ ..]) => {
            let path = match workspace_path(&id, path) {
                Ok(p) => p,
                Err(r) => return r,
            };
            let keep = match keep(env, agent) {
                Ok(k) => k,
                Err(r) => return r,
            };
            let why = query(&req, "why").unwrap_or_else(|| "admin API".into());
            let edit = if req.method() == Method::Put {
                let body = match read_body_limited(&mut req, MAX_FILE_BYTES).await {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                Edit::write(&path, body, Actor::Owner, why)
            } else {
                Edit::delete(&path, Actor::Owner, why)
            };
            match history::apply(&R2::from_env(env)?, &id, edit, now_ms(), keep).await {
                Ok(change) => json_response(&json!({"ok": true, "changed": change.is_some(), "change": change}), 200),
                Err(e) => refused(e),
            }
        }
        _ => Response::error("not found", 404),
    }
}

/// A file's versions, one version, or a diff.
async fn read(req: &Request, env: &Env, id: &AgentId, path: &str) -> Result<Response> {
    let r2 = R2::from_env(env)?;
    if let Some(from) = query(req, "diff") {
        let to = query(req, "to").unwrap_or_else(|| "current".into());
        let (from, to) = match (Version::parse(&from), Version::parse(&to)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return refused(e),
        };
        return match view::diff(&r2, id, path, &from, &to).await {
            Ok(diff) => {
                let headers = worker::Headers::new();
                headers.set("content-type", "text/x-diff; charset=utf-8")?;
                Ok(Response::ok(diff)?.with_headers(headers))
            }
            Err(e) => refused(e),
        };
    }
    if let Some(version) = query(req, "version") {
        let version = match Version::parse(&version) {
            Ok(v) => v,
            Err(e) => return refused(e),
        };
        return match view::content(&r2, id, path, &version).await {
            Ok(Some(bytes)) => {
                let headers = worker::Headers::new();
                headers.set("content-type", &history::content_type_for(path))?;
                Ok(Response::from_bytes(bytes)?.with_headers(headers))
            }
            Ok(None) => Response::error(format!("{path} did not exist in that version"), 404),
            Err(e) => refused(e),
        };
    }
    let limit: usize = query(req, "limit").and_then(|l| l.parse().ok()).unwrap_or(50);
    match view::versions(&r2, id, path, limit).await {
        Ok(versions) => json_response(&json!({"agent": id.as_str(), "path": path, "versions": versions}), 200),
        Err(e) => refused(e),
    }
}
