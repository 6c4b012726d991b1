//! The workspace history and dreaming over the admin API:
//! - `GET …/history`: the latest changes, any file (`?limit=`);
//! - `GET …/history/{path}`: a file's versions, newest first;
//!   `?version={rev|sha256:…|current}`: one version's content;
//!   `?diff={version}&to={version}` (default `current`): a unified diff;
//! - `POST …/history/{path}` `{"restore": version, "why"?}`: the file becomes
//!   that version again (a new version, by `owner`);
//! - `PUT …/files/{path}` (body: the content, `?why=`) and `DELETE …/files/{path}`:
//!   the owner's own writes, kept like any other;
//! - `GET …/dreams`: dreaming's settings, figures, last sweep and proposals;
//! - `GET …/memory/evidence?store=main`: recall evidence of a store's most used entries.
//!
//! The history lives in the bucket ([`crate::workspace::history`]).

use super::front::{error, relay, ApiFront, WebReply};
use crate::channels::webhook::WebRequest;
use crate::protocol::dreams::DreamsStatusRequest;
use crate::protocol::memory::{MemoryCall, MemoryRequest};
use crate::serving::decode_component as percent_decode;
use crate::settings::ConfigError;
use crate::tools::check_path;
use crate::workspace::history::view::{self, Version};
use crate::workspace::history::{self, Actor, Edit, HistoryError};
use r2_layout::{AgentId, Scope};
use serde_json::json;

/// Largest file the API writes (R2 takes more; a workspace file is text).
pub(super) const MAX_FILE_BYTES: usize = 1024 * 1024;

fn refused(e: HistoryError) -> WebReply {
    let status = match &e {
        HistoryError::NotFound(_) => 404,
        HistoryError::Refused(_) | HistoryError::Key(_) => 400,
        HistoryError::Storage(_) => 503,
    };
    WebReply::json(status, &json!({"ok": false, "error": e.to_string()}))
}

fn text(status: u16, message: impl Into<String>) -> WebReply {
    WebReply::bytes(status, "text/plain; charset=utf-8", message.into().into_bytes())
}

/// A workspace path from URL segments, checked like the agent's own paths.
fn workspace_path(agent: &AgentId, segments: &[&str]) -> Result<String, WebReply> {
    let raw = segments.iter().map(|s| percent_decode(s)).collect::<Vec<_>>().join("/");
    match check_path(&raw, agent, Scope::Main) {
        Ok(p) if p == "sessions" || p.starts_with("sessions/") => {
            Err(text(400, "session archives are not workspace files"))
        }
        Ok(p) if !p.is_empty() && !p.ends_with('/') => Ok(p),
        Ok(_) => Err(text(400, "name a file: /history/{path}")),
        Err(e) => Err(text(400, e.to_string())),
    }
}

fn keep<F: ApiFront>(front: &F, agent: &str) -> Result<usize, WebReply> {
    crate::settings::dreaming::history_keep(front.vars(), agent).map_err(|e| match e {
        ConfigError::UnknownAgent(..) => text(404, e.to_string()),
        _ => text(500, format!("configuration error: {e}")),
    })
}

fn limit(req: &WebRequest) -> usize {
    req.query("limit").and_then(|l| l.parse().ok()).unwrap_or(50)
}

macro_rules! or_reply {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(reply) => return reply,
        }
    };
}

/// `rest`: the path after the agent (`history…`, `files/…`, `dreams`, `memory/evidence`).
pub async fn serve<F: ApiFront>(front: &F, req: &WebRequest, agent: &str, rest: &[&str]) -> WebReply {
    let id = or_reply!(AgentId::parse(agent).map_err(|e| error(404, e.to_string())));
    let store = || front.store().map_err(|e| error(503, e));
    match (req.method.as_str(), rest) {
        ("GET", ["dreams"]) => relay(front, &DreamsStatusRequest { agent: agent.to_owned() }).await,
        ("GET", ["memory", "evidence"]) => {
            let store = req.query("store").unwrap_or("main").to_owned();
            let call = MemoryCall::Evidence { store, limit: limit(req) };
            relay(front, &MemoryRequest { agent: agent.to_owned(), call }).await
        }
        ("GET", ["history"]) => match view::recent(&or_reply!(store()), &id, limit(req)).await {
            Ok(changes) => WebReply::json(200, &json!({"agent": agent, "changes": changes})),
            Err(e) => refused(e),
        },
        ("GET", ["history", path @ ..]) => {
            let path = or_reply!(workspace_path(&id, path));
            read(&or_reply!(store()), req, &id, &path).await
        }
        ("POST", ["history", path @ ..]) => {
            let path = or_reply!(workspace_path(&id, path));
            let body: serde_json::Value = match hearth_json::from_slice(&req.body) {
                Ok(b) => b,
                Err(e) => return text(400, format!("bad body: {e}")),
            };
            let Some(version) = body["restore"].as_str() else {
                return text(400, "POST /history/{path} takes {\"restore\": version, \"why\"?: text}");
            };
            let version = or_reply!(Version::parse(version).map_err(refused));
            let keep = or_reply!(keep(front, agent));
            let why = body["why"].as_str().unwrap_or("");
            let store = or_reply!(store());
            match view::restore(&store, &id, &path, &version, Actor::Owner, why, front.now_ms(), keep).await {
                Ok(change) => WebReply::json(200, &json!({"ok": true, "changed": change.is_some(), "change": change})),
                Err(e) => refused(e),
            }
        }
        (method @ ("PUT" | "DELETE"), ["files", path @ ..]) => {
            let path = or_reply!(workspace_path(&id, path));
            let keep = or_reply!(keep(front, agent));
            let why = req.query("why").unwrap_or("admin API").to_owned();
            let edit = if method == "PUT" {
                if req.body.len() > MAX_FILE_BYTES {
                    return text(413, format!("body too large: the limit is {} KiB", MAX_FILE_BYTES.div_ceil(1024)));
                }
                Edit::write(&path, req.body.clone(), Actor::Owner, why)
            } else {
                Edit::delete(&path, Actor::Owner, why)
            };
            match history::apply(&or_reply!(store()), &id, edit, front.now_ms(), keep).await {
                Ok(change) => WebReply::json(200, &json!({"ok": true, "changed": change.is_some(), "change": change})),
                Err(e) => refused(e),
            }
        }
        _ => text(404, "not found"),
    }
}

/// A file's versions, one version, or a diff.
async fn read<S: crate::ports::ObjectStore>(store: &S, req: &WebRequest, id: &AgentId, path: &str) -> WebReply {
    if let Some(from) = req.query("diff") {
        let to = req.query("to").unwrap_or("current");
        let (from, to) = match (Version::parse(from), Version::parse(to)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return refused(e),
        };
        return match view::diff(store, id, path, &from, &to).await {
            Ok(diff) => WebReply::bytes(200, "text/x-diff; charset=utf-8", diff.into_bytes()),
            Err(e) => refused(e),
        };
    }
    if let Some(version) = req.query("version") {
        let version = or_reply!(Version::parse(version).map_err(refused));
        return match view::content(store, id, path, &version).await {
            Ok(Some(bytes)) => WebReply::bytes(200, &history::content_type_for(path), bytes),
            Ok(None) => text(404, format!("{path} did not exist in that version")),
            Err(e) => refused(e),
        };
    }
    match view::versions(store, id, path, limit(req)).await {
        Ok(versions) => WebReply::json(200, &json!({"agent": id.as_str(), "path": path, "versions": versions})),
        Err(e) => refused(e),
    }
}
