//! Admin routes for the workspace by layer (the console's workspace page;
//! the decisions are in `durable::workspace::admin`):
//! - `GET /api/agents/{id}/workspace`: the agent's tree (every file the
//!   overlay resolves, with its source), its pins and its skills, in one answer;
//! - `GET /api/agents/{id}/workspace/{path}`: one file as the overlay serves
//!   it (raw, placeholders unfilled), with its source, found by reading its
//!   keys layer by layer (no listing);
//! - `PUT`/`DELETE /api/agents/{id}/workspace/{path}`: an override in the
//!   agent's layer / removing it (the file re-inherits). A guardrail file
//!   needs `?accept=override` (seed 001: pinned files change by Accept).
//!   These go through the workspace history (`durable::workspace::history`,
//!   by `owner`, `?why=`), like `PUT /files/{path}`: one write path;
//! - the same under `/api/templates/{template}/workspace` and
//!   `/api/defaults/workspace` for the shared layers.

use crate::adapters::R2;
use crate::http::{json_response, percent_decode, query, read_body_limited};
use crate::objects::call;
use durable::ports::{ObjectStore, PutOptions};
use durable::protocol::agent::{PinStatusReply, PinsStatus};
use durable::workspace::admin::{self, AdminError, LayerRef};
use r2_layout::AgentId;
use serde_json::json;
use worker::{Env, Method, Request, Response, Result};

/// Largest file written (a workspace file is text; R2 takes more).
const MAX_FILE_BYTES: usize = 1024 * 1024;

fn refused(e: AdminError) -> Result<Response> {
    json_response(&json!({"error": e.to_string()}), e.status())
}

fn storage(e: impl std::fmt::Display) -> AdminError {
    AdminError::Storage(e.to_string())
}

/// The agent's template (`TEMPLATE`, `TEMPLATE__{ID}`).
fn template_of(env: &Env, agent: &str) -> std::result::Result<Option<String>, Result<Response>> {
    durable::settings::overlay::template(&crate::adapters::EnvVars::of(env), agent)
        .map_err(|e| crate::http::error_response(&e))
}

/// `/api/agents/{id}/workspace[/{path}]` (`rest`: the segments after `workspace`).
pub async fn agent(req: Request, env: &Env, agent: &str, rest: &[&str]) -> Result<Response> {
    let id = AgentId::parse(agent).map_err(|e| worker::Error::RustError(e.to_string()))?;
    let template = match template_of(env, agent) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let result = match (req.method(), rest) {
        (Method::Get, []) => tree(env, &id, template.as_deref()).await,
        (method, path) => {
            let path = match admin::check_path(&join(path)) {
                Ok(p) => p,
                Err(e) => return refused(e),
            };
            match method {
                Method::Get => resolved(env, &id, template.as_deref(), &path).await,
                Method::Put => {
                    let accept = query(&req, "accept").as_deref() == Some("override");
                    if let Err(e) = admin::check_agent_write(&path, accept) {
                        return refused(e);
                    }
                    agent_edit(req, env, &id, &path, true).await
                }
                Method::Delete => agent_edit(req, env, &id, &path, false).await,
                _ => return crate::api::json_error(405, "use GET, PUT or DELETE"),
            }
        }
    };
    result.or_else(refused)
}

/// `/api/templates/{t}/workspace[/{path}]` and `/api/defaults/workspace[/{path}]`.
pub async fn shared(
    req: Request,
    env: &Env,
    layer: std::result::Result<LayerRef, AdminError>,
    rest: &[&str],
) -> Result<Response> {
    let layer = match layer {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let result = match (req.method(), rest) {
        (Method::Get, []) => {
            async {
                let files = admin::list_layer(&R2::from_env(env).map_err(storage)?, &layer).await?;
                let view = admin::LayerFiles { files: admin::layer_tree(&layer, &files) };
                Response::from_json(&view).map_err(storage)
            }
            .await
        }
        (method, path) => {
            let path = match admin::check_path(&join(path)) {
                Ok(p) => p,
                Err(e) => return refused(e),
            };
            match method {
                Method::Get => read(env, &layer.key(&path), &path).await,
                Method::Put => write(req, env, &layer, &path).await,
                Method::Delete => remove(env, &layer, &path).await,
                _ => return crate::api::json_error(405, "use GET, PUT or DELETE"),
            }
        }
    };
    result.or_else(refused)
}

fn join(segments: &[&str]) -> String {
    segments.iter().map(|s| percent_decode(s)).collect::<Vec<_>>().join("/")
}

/// The tree, pins and skills of an agent.
async fn tree(env: &Env, id: &AgentId, template: Option<&str>) -> std::result::Result<Response, AdminError> {
    let r2 = R2::from_env(env).map_err(storage)?;
    let template_layer = match template {
        Some(t) => Some(LayerRef::template(t)?),
        None => None,
    };
    let agent_layer = LayerRef::Agent(id.clone());
    let tools = durable::session::toolbox::all_tool_names();
    let (own, defaults, template_files, pins, skills) = futures::future::join5(
        admin::list_layer(&r2, &agent_layer),
        admin::list_layer(&r2, &LayerRef::Defaults),
        async {
            match &template_layer {
                Some(l) => admin::list_layer(&r2, l).await.map(Some),
                None => Ok(None),
            }
        },
        pin_status(env, id.as_str(), template.is_some()),
        admin::skills_view(&r2, id, &tools),
    )
    .await;
    let (own, defaults, template_files, skills) = (own?, defaults?, template_files?, skills?);
    let pins = pins?;
    let files = admin::agent_tree(id, &own, template.zip(template_files.as_deref()), &defaults, pins.as_ref());
    let view = admin::AgentWorkspace { agent: id.as_str(), template, files, pins, skills };
    Response::from_json(&view).map_err(storage)
}

async fn pin_status(
    env: &Env,
    agent: &str,
    has_template: bool,
) -> std::result::Result<Option<PinStatusReply>, AdminError> {
    if !has_template {
        return Ok(None);
    }
    call(env, &PinsStatus { agent: agent.to_owned() }).await.map(Some).map_err(storage)
}

/// One file of the agent as the overlay resolves it: its keys read in the
/// overlay's order, pins asked only for a guardrail
/// (`durable::workspace::open`), no layer listed.
async fn resolved(
    env: &Env,
    id: &AgentId,
    template: Option<&str>,
    path: &str,
) -> std::result::Result<Response, AdminError> {
    let r2 = R2::from_env(env).map_err(storage)?;
    let pins = || pin_status(env, id.as_str(), template.is_some());
    let (file, obj) = durable::workspace::open::open_agent_file(&r2, id, template, path, pins).await?;
    let content = String::from_utf8_lossy(&obj.body);
    let view = admin::FileView::of(path, &file.key, &content, &obj.info.etag).resolved(&file);
    Response::from_json(&view).map_err(storage)
}

/// `key`'s content as a [`admin::FileView`] (a shared layer's file).
async fn read(env: &Env, key: &str, path: &str) -> std::result::Result<Response, AdminError> {
    let r2 = R2::from_env(env).map_err(storage)?;
    let Some(obj) = r2.get(key).await? else { return Err(AdminError::NotFound(path.to_owned())) };
    let content = String::from_utf8_lossy(&obj.body);
    Response::from_json(&admin::FileView::of(path, key, &content, &obj.info.etag)).map_err(storage)
}

async fn write(mut req: Request, env: &Env, layer: &LayerRef, path: &str) -> std::result::Result<Response, AdminError> {
    let body = match read_body_limited(&mut req, MAX_FILE_BYTES).await {
        Ok(b) => b,
        Err(r) => return r.map_err(storage),
    };
    if std::str::from_utf8(&body).is_err() {
        return Err(AdminError::BadPath(path.to_owned(), "the body must be UTF-8 text"));
    }
    let key = layer.key(path);
    let content_type = match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md") => "text/markdown; charset=utf-8",
        Some("json") => "application/json",
        _ => "text/plain; charset=utf-8",
    };
    let opts = PutOptions { content_type: Some(content_type.to_owned()), ..Default::default() };
    R2::from_env(env).map_err(storage)?.put(&key, body, opts).await?;
    json_response(&json!({"ok": true, "path": path, "key": key}), 200).map_err(storage)
}

async fn remove(env: &Env, layer: &LayerRef, path: &str) -> std::result::Result<Response, AdminError> {
    let r2 = R2::from_env(env).map_err(storage)?;
    let key = layer.key(path);
    if r2.head(&key).await?.is_none() {
        return Err(AdminError::NotFound(path.to_owned()));
    }
    r2.delete(std::slice::from_ref(&key)).await?;
    json_response(&json!({"ok": true, "path": path, "key": key, "deleted": true}), 200).map_err(storage)
}

/// An owner's write (`put`) or delete in the agent's layer, through the
/// workspace history (a version kept, `/undo` and restore work on it).
async fn agent_edit(
    mut req: Request,
    env: &Env,
    id: &AgentId,
    path: &str,
    put: bool,
) -> std::result::Result<Response, AdminError> {
    use durable::workspace::history::{self, Actor, Edit, HistoryError};
    let keep = durable::settings::dreaming::history_keep(&crate::adapters::EnvVars::of(env), id.as_str())
        .map_err(|e| AdminError::Storage(format!("configuration error: {e}")))?;
    let why = query(&req, "why").unwrap_or_else(|| "console".into());
    let r2 = R2::from_env(env).map_err(storage)?;
    let edit = if put {
        let body = match read_body_limited(&mut req, MAX_FILE_BYTES).await {
            Ok(b) => b,
            Err(r) => return r.map_err(storage),
        };
        if std::str::from_utf8(&body).is_err() {
            return Err(AdminError::BadPath(path.to_owned(), "the body must be UTF-8 text"));
        }
        Edit::write(path, body, Actor::Owner, why)
    } else {
        if r2.head(&LayerRef::Agent(id.clone()).key(path)).await?.is_none() {
            return Err(AdminError::NotFound(path.to_owned()));
        }
        Edit::delete(path, Actor::Owner, why)
    };
    match history::apply(&r2, id, edit, crate::adapters::now_ms(), keep).await {
        Ok(change) => {
            json_response(&json!({"ok": true, "path": path, "changed": change.is_some(), "change": change}), 200)
                .map_err(storage)
        }
        Err(HistoryError::NotFound(what)) => Err(AdminError::NotFound(what)),
        Err(HistoryError::Refused(why)) => Err(AdminError::Refused(why)),
        Err(e) => Err(AdminError::Storage(e.to_string())),
    }
}
