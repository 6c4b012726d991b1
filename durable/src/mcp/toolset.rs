//! A session's MCP tools: the catalog its Agent object gave when the session
//! started, kept for the whole session (in the object's memory and its
//! SQLite, so an evicted object finds the same list), offered to the model
//! as `mcp__{server}__{tool}`, and called straight from the Session object.
//!
//! Freezing the list is what keeps the prompt cache (seed 004 §18): adding
//! or removing a tool changes the cached prefix. So a server that stops
//! answering keeps its tools listed, and a call to one of them returns an
//! error result the model reads.

use super::client::{self, Connection, Endpoint, McpError};
use super::{config, content};
use crate::ports::{Platform, Sql, StorageError};
use crate::protocol::mcp::{McpCatalog, McpScope, McpServerConfig, McpTool};
use crate::settings::web::McpSettings;
use crate::toolkit::{ToolOutcome, ToolSpec};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The prefix of every MCP tool name.
pub const PREFIX: &str = "mcp__";
/// Providers' limit on a tool name.
pub const MAX_TOOL_NAME: usize = 64;

/// What a Session object keeps of its MCP tools between turns.
#[derive(Debug, Default)]
pub struct McpState {
    /// The session the catalog was taken for.
    pub session_id: Option<String>,
    pub catalog: Rc<McpCatalog>,
    /// Initialized connections by server name (reused across calls).
    connections: HashMap<String, Connection>,
    /// Catalogs taken from the Agent object since the object started.
    pub fetched: u32,
    /// The catalog was taken for this turn already, at the session's start
    /// ([`freeze_handed`]): the turn's tools use it, starting or not.
    handed: bool,
}

/// The catalog of a session, as stored in its SQLite.
#[derive(Serialize, hearth_json::Deserialize)]
struct Frozen {
    session_id: String,
    catalog: McpCatalog,
}

const META_KEY: &str = "mcp_catalog";

/// `mcp__{server}__{tool}` within [`MAX_TOOL_NAME`]: characters providers
/// refuse become `_`, and a name too long keeps its start and ends with a
/// hash of the tool's real name (so two long names stay apart).
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let name = format!("{PREFIX}{server}__{clean}");
    if name.len() <= MAX_TOOL_NAME {
        return name;
    }
    let hash = Sha256::digest(tool.as_bytes());
    let tag: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}_{tag}", &name[..MAX_TOOL_NAME - 9])
}

/// The tools of `catalog` a session in `scope` has, each name once (a name
/// two tools would share goes to the first), in name order.
pub fn entries(catalog: &McpCatalog, scope: McpScope) -> Vec<(String, &McpServerConfig, &McpTool)> {
    let mut out: Vec<(String, &McpServerConfig, &McpTool)> = Vec::new();
    for server in catalog.servers.iter().filter(|s| s.config.scopes.contains(&scope)) {
        for tool in &server.tools {
            let name = tool_name(&server.config.name, &tool.name);
            if !out.iter().any(|(n, _, _)| *n == name) {
                out.push((name, &server.config, tool));
            }
        }
    }
    crate::order::sort_by(&mut out, |a, b| a.0.cmp(&b.0));
    out
}

/// The tool specs of [`entries`].
pub fn specs(catalog: &McpCatalog, scope: McpScope) -> Vec<ToolSpec> {
    entries(catalog, scope)
        .into_iter()
        .map(|(name, server, tool)| ToolSpec {
            name: name.into(),
            description: if tool.description.is_empty() {
                format!("{} (from the MCP server {})", tool.name, server.name).into()
            } else {
                tool.description.clone().into()
            },
            input_schema: tool.input_schema.clone(),
            native: None,
        })
        .collect()
}

/// The session's catalog: the one it started with, else (a new session) its
/// Agent object's, frozen for it. An Agent object that cannot answer gives
/// no MCP tools this turn (not frozen: the next turn asks again).
/// `starting`: the conversation begins with this turn (a new session, or a
/// heartbeat or job run that starts from an empty history): take it afresh.
pub async fn session_catalog<P: Platform>(
    p: &P,
    state: &RefCell<McpState>,
    session_id: &str,
    starting: bool,
) -> Result<Rc<McpCatalog>, StorageError> {
    let handed = std::mem::take(&mut state.borrow_mut().handed);
    if (!starting || handed) && state.borrow().session_id.as_deref() == Some(session_id) {
        return Ok(state.borrow().catalog.clone());
    }
    let sql = p.sql();
    let stored = if starting { None } else { stored(sql)? };
    match stored {
        Some(f) if f.session_id == session_id => {
            let catalog = Rc::new(f.catalog);
            let mut s = state.borrow_mut();
            s.session_id = Some(session_id.to_owned());
            s.catalog = catalog.clone();
            s.connections.clear();
            Ok(catalog)
        }
        _ => freeze(sql, state, session_id, p.mcp_catalog().await?),
    }
}

/// Whether the session must take its Agent object's catalog this turn
/// (what [`session_catalog`] would ask for): it starts, or has none frozen.
pub fn needs_catalog<S: Sql>(
    sql: &S,
    state: &RefCell<McpState>,
    session_id: &str,
    starting: bool,
) -> Result<bool, StorageError> {
    if starting {
        return Ok(true);
    }
    if state.borrow().session_id.as_deref() == Some(session_id) {
        return Ok(false);
    }
    Ok(stored(sql)?.is_none_or(|f| f.session_id != session_id))
}

/// Freezes the catalog the Agent object handed at the session's start
/// (`crate::protocol::workspace`): this turn's tools are these.
pub fn freeze_handed<S: Sql>(
    sql: &S,
    state: &RefCell<McpState>,
    session_id: &str,
    catalog: McpCatalog,
) -> Result<(), StorageError> {
    freeze(sql, state, session_id, catalog)?;
    state.borrow_mut().handed = true;
    Ok(())
}

/// Keeps `catalog` as the session's, in memory and in its SQLite.
fn freeze<S: Sql>(
    sql: &S,
    state: &RefCell<McpState>,
    session_id: &str,
    catalog: McpCatalog,
) -> Result<Rc<McpCatalog>, StorageError> {
    let frozen = Frozen { session_id: session_id.to_owned(), catalog };
    let raw = serde_json::to_string(&frozen).map_err(|e| StorageError(e.to_string()))?;
    sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &[META_KEY.into(), raw.into()])?;
    let catalog = Rc::new(frozen.catalog);
    let mut s = state.borrow_mut();
    s.fetched += 1;
    s.session_id = Some(session_id.to_owned());
    s.catalog = catalog.clone();
    s.connections.clear();
    Ok(catalog)
}

fn stored<S: Sql>(sql: &S) -> Result<Option<Frozen>, StorageError> {
    Ok(meta(sql)?.and_then(|raw| hearth_json::from_slice::<Frozen>(raw.as_bytes()).ok()))
}

fn meta<S: Sql>(sql: &S) -> Result<Option<String>, StorageError> {
    let mut rows = sql.exec("SELECT value FROM meta WHERE key = ?", &[META_KEY.into()])?;
    Ok(rows.pop().and_then(|r| r.into_iter().next()).and_then(|v| v.into_string()))
}

/// Runs the MCP tool `name` of this session; `None` when `name` is not one.
pub async fn call<P: Platform>(
    p: &P,
    state: &RefCell<McpState>,
    scope: McpScope,
    settings: &McpSettings,
    name: &str,
    args: &Value,
) -> Option<ToolOutcome> {
    if !name.starts_with(PREFIX) {
        return None;
    }
    let catalog = state.borrow().catalog.clone();
    let Some((_, server, tool)) = entries(&catalog, scope).into_iter().find(|(n, _, _)| n == name) else {
        return Some(ToolOutcome::err(format!("{name} is not one of your MCP tools in this conversation")));
    };
    let secret = |n: &str| p.secret(n);
    let (url, headers) = match config::resolve(server, &secret) {
        Ok(r) => r,
        Err(e) => return Some(ToolOutcome::err(e)),
    };
    let ep = Endpoint { url: &url, headers: &headers, timeout_ms: server.timeout_ms };
    let mut conn = state.borrow_mut().connections.remove(&server.name);
    let failed = |e: McpError| ToolOutcome::err(format!("the MCP server {} {e}", server.name));
    for attempt in 0..2 {
        let mut c = match conn.take() {
            Some(c) => c,
            None => match client::initialize(p.http(), ep).await {
                Ok(c) => c,
                Err(e) => return Some(failed(e)),
            },
        };
        match client::call_tool(p.http(), ep, &mut c, &tool.name, args).await {
            Ok(result) => {
                state.borrow_mut().connections.insert(server.name.clone(), c);
                return Some(content::outcome(&result, settings.max_result_chars));
            }
            // The server forgot the session: start a new one, once.
            Err(McpError::SessionExpired) if attempt == 0 => continue,
            Err(e @ McpError::Rpc { .. }) => {
                state.borrow_mut().connections.insert(server.name.clone(), c);
                return Some(failed(e));
            }
            Err(e) => return Some(failed(e)),
        }
    }
    Some(failed(McpError::SessionExpired))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_what_providers_accept() {
        assert_eq!(tool_name("everything", "get-sum"), "mcp__everything__get-sum");
        assert_eq!(tool_name("gh", "repo.search files"), "mcp__gh__repo_search_files");
        let long = tool_name("server", &"very_long_tool_name_".repeat(5));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert_ne!(long, tool_name("server", &"very_long_tool_name_".repeat(6)), "long names stay apart");
        assert!(long.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
    }
}
