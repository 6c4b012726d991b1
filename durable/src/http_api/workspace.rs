//! The workspace by layer over the admin API (the console's workspace page;
//! the decisions are in [`crate::workspace::admin`]):
//! - `GET /api/agents/{id}/workspace`: the agent's tree (every file the
//!   overlay resolves, with its source), its pins and its skills, in one answer;
//! - `GET /api/agents/{id}/workspace/{path}`: one file as the overlay serves
//!   it (raw, placeholders unfilled), with its source, found by reading its
//!   keys layer by layer (no listing);
//! - `PUT`/`DELETE /api/agents/{id}/workspace/{path}`: an override in the
//!   agent's layer / removing it (the file re-inherits). A guardrail file
//!   needs `?accept=override` (seed 001: pinned files change by Accept).
//!   These go through the workspace history ([`crate::workspace::history`],
//!   by `owner`, `?why=`), like `PUT /files/{path}`: one write path;
//! - the same under `/api/templates/{template}/workspace` and
//!   `/api/defaults/workspace` for the shared layers.

use super::front::{error, ApiFront, WebReply};
use crate::channels::webhook::WebRequest;
use crate::ports::{ObjectStore, PutOptions};
use crate::protocol::agent::{PinStatusReply, PinsStatus};
use crate::serving::decode_component as percent_decode;
use crate::settings::ConfigError;
use crate::workspace::admin::{self, AdminError, LayerRef};
use crate::workspace::history::{self, Actor, Edit, HistoryError};
use r2_layout::AgentId;
use serde_json::json;

/// Largest file written (a workspace file is text; R2 takes more).
pub(super) const MAX_FILE_BYTES: usize = 1024 * 1024;

fn refused(e: AdminError) -> WebReply {
    error(e.status(), e.to_string())
}

fn storage(e: impl std::fmt::Display) -> AdminError {
    AdminError::Storage(e.to_string())
}

fn text(status: u16, message: String) -> WebReply {
    WebReply::bytes(status, "text/plain; charset=utf-8", message.into_bytes())
}

/// A configuration problem as the caller sees it (an unknown agent: 404).
fn config_refused(e: &ConfigError) -> WebReply {
    match e {
        ConfigError::UnknownAgent(..) => text(404, e.to_string()),
        _ => text(500, format!("configuration error: {e}")),
    }
}

fn answer(result: Result<WebReply, AdminError>) -> WebReply {
    result.unwrap_or_else(refused)
}

/// The path a request names, checked; `Err`: the refusal.
fn path_of(segments: &[&str]) -> Result<String, WebReply> {
    let raw = segments.iter().map(|s| percent_decode(s)).collect::<Vec<_>>().join("/");
    admin::check_path(&raw).map_err(refused)
}

/// `/api/agents/{id}/workspace[/{path}]` (`rest`: the segments after `workspace`).
pub async fn agent<F: ApiFront>(front: &F, req: &WebRequest, agent: &str, rest: &[&str]) -> WebReply {
    let id = match AgentId::parse(agent) {
        Ok(id) => id,
        Err(e) => return error(404, e.to_string()),
    };
    let template = match crate::settings::overlay::template(front.vars(), agent) {
        Ok(t) => t,
        Err(e) => return config_refused(&e),
    };
    let template = template.as_deref();
    if let ("GET", []) = (req.method.as_str(), rest) {
        return answer(tree(front, &id, template).await);
    }
    let path = match path_of(rest) {
        Ok(p) => p,
        Err(r) => return r,
    };
    match req.method.as_str() {
        "GET" => answer(resolved(front, &id, template, &path).await),
        "PUT" => {
            let accept = req.query("accept") == Some("override");
            if let Err(e) = admin::check_agent_write(&path, accept) {
                return refused(e);
            }
            agent_edit(front, req, &id, &path, true).await
        }
        "DELETE" => agent_edit(front, req, &id, &path, false).await,
        _ => error(405, "use GET, PUT or DELETE"),
    }
}

/// `/api/templates/{t}/workspace[/{path}]` (`template` as it came in the
/// URL) and, with `template` `None`, `/api/defaults/workspace[/{path}]`.
pub async fn shared<F: ApiFront>(front: &F, req: &WebRequest, template: Option<&str>, rest: &[&str]) -> WebReply {
    let layer = match template {
        Some(t) => match LayerRef::template(&percent_decode(t)) {
            Ok(l) => l,
            Err(e) => return refused(e),
        },
        None => LayerRef::Defaults,
    };
    let store = match front.store() {
        Ok(s) => s,
        Err(e) => return refused(storage(e)),
    };
    if let ("GET", []) = (req.method.as_str(), rest) {
        return match admin::list_layer(&store, &layer).await {
            Ok(files) => WebReply::json(200, &admin::LayerFiles { files: admin::layer_tree(&layer, &files) }),
            Err(e) => refused(e),
        };
    }
    let path = match path_of(rest) {
        Ok(p) => p,
        Err(r) => return r,
    };
    answer(match req.method.as_str() {
        "GET" => read(&store, &layer.key(&path), &path).await,
        "PUT" => write(&store, req, &layer, &path).await,
        "DELETE" => remove(&store, &layer, &path).await,
        _ => return error(405, "use GET, PUT or DELETE"),
    })
}

/// The tree, pins and skills of an agent.
async fn tree<F: ApiFront>(front: &F, id: &AgentId, template: Option<&str>) -> Result<WebReply, AdminError> {
    let store = front.store().map_err(storage)?;
    let template_layer = match template {
        Some(t) => Some(LayerRef::template(t)?),
        None => None,
    };
    let agent_layer = LayerRef::Agent(id.clone());
    let tools = front.tool_names();
    let (own, defaults, template_files, pins, skills) = futures::future::join5(
        admin::list_layer(&store, &agent_layer),
        admin::list_layer(&store, &LayerRef::Defaults),
        async {
            match &template_layer {
                Some(l) => admin::list_layer(&store, l).await.map(Some),
                None => Ok(None),
            }
        },
        pin_status(front, id.as_str(), template.is_some()),
        admin::skills_view(&store, id, &tools),
    )
    .await;
    let (own, defaults, template_files, skills) = (own?, defaults?, template_files?, skills?);
    let pins = pins?;
    let files = admin::agent_tree(id, &own, template.zip(template_files.as_deref()), &defaults, pins.as_ref());
    Ok(WebReply::json(200, &admin::AgentWorkspace { agent: id.as_str(), template, files, pins, skills }))
}

async fn pin_status<F: ApiFront>(
    front: &F,
    agent: &str,
    has_template: bool,
) -> Result<Option<PinStatusReply>, AdminError> {
    if !has_template {
        return Ok(None);
    }
    front.call(&PinsStatus { agent: agent.to_owned() }).await.map(Some).map_err(storage)
}

/// One file of the agent as the overlay resolves it: its keys read in the
/// overlay's order, pins asked only for a guardrail
/// ([`crate::workspace::open`]), no layer listed.
async fn resolved<F: ApiFront>(
    front: &F,
    id: &AgentId,
    template: Option<&str>,
    path: &str,
) -> Result<WebReply, AdminError> {
    let store = front.store().map_err(storage)?;
    let pins = || pin_status(front, id.as_str(), template.is_some());
    let (file, obj) = crate::workspace::open::open_agent_file(&store, id, template, path, pins).await?;
    let content = String::from_utf8_lossy(&obj.body);
    Ok(WebReply::json(200, &admin::FileView::of(path, &file.key, &content, &obj.info.etag).resolved(&file)))
}

/// `key`'s content as a [`admin::FileView`] (a shared layer's file).
async fn read<S: ObjectStore>(store: &S, key: &str, path: &str) -> Result<WebReply, AdminError> {
    let Some(obj) = store.get(key).await? else { return Err(AdminError::NotFound(path.to_owned())) };
    let content = String::from_utf8_lossy(&obj.body);
    Ok(WebReply::json(200, &admin::FileView::of(path, key, &content, &obj.info.etag)))
}

/// The body as a file's text: UTF-8, at most [`MAX_FILE_BYTES`].
fn file_body(req: &WebRequest, path: &str) -> Result<Vec<u8>, WebReply> {
    if req.body.len() > MAX_FILE_BYTES {
        let limit = MAX_FILE_BYTES.div_ceil(1024);
        return Err(text(413, format!("body too large: the limit is {limit} KiB")));
    }
    if std::str::from_utf8(&req.body).is_err() {
        return Err(refused(AdminError::BadPath(path.to_owned(), "the body must be UTF-8 text")));
    }
    Ok(req.body.clone())
}

async fn write<S: ObjectStore>(
    store: &S,
    req: &WebRequest,
    layer: &LayerRef,
    path: &str,
) -> Result<WebReply, AdminError> {
    let body = match file_body(req, path) {
        Ok(b) => b,
        Err(reply) => return Ok(reply),
    };
    let key = layer.key(path);
    let content_type = match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md") => "text/markdown; charset=utf-8",
        Some("json") => "application/json",
        _ => "text/plain; charset=utf-8",
    };
    let opts = PutOptions { content_type: Some(content_type.to_owned()), ..Default::default() };
    store.put(&key, body, opts).await?;
    Ok(WebReply::json(200, &json!({"ok": true, "path": path, "key": key})))
}

async fn remove<S: ObjectStore>(store: &S, layer: &LayerRef, path: &str) -> Result<WebReply, AdminError> {
    let key = layer.key(path);
    if store.head(&key).await?.is_none() {
        return Err(AdminError::NotFound(path.to_owned()));
    }
    store.delete(std::slice::from_ref(&key)).await?;
    Ok(WebReply::json(200, &json!({"ok": true, "path": path, "key": key, "deleted": true})))
}

/// An owner's write (`put`) or delete in the agent's layer, through the
/// workspace history (a version kept, `/undo` and restore work on it).
async fn agent_edit<F: ApiFront>(front: &F, req: &WebRequest, id: &AgentId, path: &str, put: bool) -> WebReply {
    let keep = match crate::settings::dreaming::history_keep(front.vars(), id.as_str()) {
        Ok(k) => k,
        Err(e) => return refused(AdminError::Storage(format!("configuration error: {e}"))),
    };
    let why = req.query("why").unwrap_or("console").to_owned();
    let store = match front.store() {
        Ok(s) => s,
        Err(e) => return refused(storage(e)),
    };
    let edit = if put {
        match file_body(req, path) {
            Ok(body) => Edit::write(path, body, Actor::Owner, why),
            Err(reply) => return reply,
        }
    } else {
        match store.head(&LayerRef::Agent(id.clone()).key(path)).await {
            Ok(Some(_)) => Edit::delete(path, Actor::Owner, why),
            Ok(None) => return refused(AdminError::NotFound(path.to_owned())),
            Err(e) => return refused(e.into()),
        }
    };
    match history::apply(&store, id, edit, front.now_ms(), keep).await {
        Ok(change) => {
            WebReply::json(200, &json!({"ok": true, "path": path, "changed": change.is_some(), "change": change}))
        }
        Err(HistoryError::NotFound(what)) => refused(AdminError::NotFound(what)),
        Err(HistoryError::Refused(why)) => refused(AdminError::Refused(why)),
        Err(e) => refused(AdminError::Storage(e.to_string())),
    }
}

#[cfg(test)]
mod tests;
