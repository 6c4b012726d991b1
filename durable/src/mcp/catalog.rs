//! The Agent object's catalog of the agent's MCP servers: `mcp.json` read
//! from R2, each server's tool list cached in the object's SQLite for
//! `MCP_TOOLS_TTL_MINUTES`, so a session that starts gets its tools without
//! a network call while the cache is warm (and a turn never asks at all: the
//! session keeps what it got, see [`super::toolset`]).
//!
//! A server whose listing fails keeps the tools of its last good listing
//! (with the error noted), so a session that starts while it is down still
//! offers its tools and a call says it is unreachable.

use super::client::{self, Endpoint};
use super::config;
use crate::ports::{Http, ObjectStore, Sql, StorageError};
use crate::protocol::mcp::{McpCatalog, McpServer, McpServerConfig, McpTool};
use crate::settings::web::McpSettings;
use crate::storage::col_string;
use r2_layout::{keys, AgentId};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS mcp_servers (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    tools TEXT NOT NULL,
    listed_at INTEGER,
    checked_at INTEGER,
    error TEXT)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "mcp_servers", statements: &[SCHEMA] };

/// A server whose listing failed is tried again after this long (not by
/// every session that starts meanwhile: each would wait for its timeout).
pub const RETRY_FAILED_MS: i64 = 5 * 60_000;
/// Longest a listing may take (a session's first turn waits for it).
pub const LIST_TIMEOUT_MS: u32 = 10_000;

/// The file, under the agent's prefix.
pub const FILE: &str = "mcp.json";

/// What the catalog needs from the Agent object.
pub struct Source<'a, S: ObjectStore, H: Http, Q: Sql> {
    pub store: &'a S,
    pub http: &'a H,
    pub sql: &'a Q,
    pub agent: &'a AgentId,
    pub settings: &'a McpSettings,
    /// A secret by name (the agent's `NAME__AGENT` form first).
    pub secret: &'a dyn Fn(&str) -> Option<String>,
    pub now_ms: i64,
    /// A listing of the agent's root made just now found no `mcp.json`:
    /// it is not read.
    pub absent: bool,
}

/// The agent's servers and their tools, listing those whose cache is cold
/// (or whose settings changed). `cached_only`: list nothing (the admin view).
pub async fn catalog<S: ObjectStore, H: Http, Q: Sql>(
    src: &Source<'_, S, H, Q>,
    cached_only: bool,
) -> Result<McpCatalog, StorageError> {
    crate::storage::ensure(src.sql, &TABLES)?;
    let cached = rows(src.sql)?;
    let file = if src.absent { None } else { src.store.get(&keys::workspace_key(src.agent, FILE)).await? };
    let Some(file) = file else {
        if !cached.is_empty() {
            src.sql.exec("DELETE FROM mcp_servers", &[])?;
        }
        return Ok(McpCatalog::default());
    };
    let entries = match config::parse(&file.body, src.settings.timeout_ms) {
        Ok(e) => e,
        Err(e) => return Ok(McpCatalog { config_error: Some(e), ..Default::default() }),
    };
    let mut servers = Vec::with_capacity(entries.len());
    let mut to_list = Vec::new();
    for entry in entries {
        let config = match entry.config {
            Ok(c) => c,
            Err(e) => {
                servers.push(McpServer {
                    config: McpServerConfig {
                        name: entry.name,
                        url: String::new(),
                        headers: vec![],
                        scopes: vec![],
                        timeout_ms: 0,
                        approve: vec![],
                    },
                    tools: vec![],
                    listed_at: None,
                    checked_at: None,
                    error: Some(e),
                });
                continue;
            }
        };
        let old = cached.iter().find(|s| s.config.name == config.name);
        let fresh = old.is_some_and(|s| {
            let within = |at: Option<i64>, ms: i64| at.is_some_and(|at| src.now_ms - at < ms);
            s.config == config
                && match s.error {
                    None => within(s.listed_at, src.settings.tools_ttl_ms),
                    Some(_) => within(s.checked_at, RETRY_FAILED_MS.min(src.settings.tools_ttl_ms)),
                }
        });
        match old {
            Some(s) if fresh || cached_only => servers.push(s.clone()),
            // The last good tools stay while the server's address is the same.
            Some(s) if s.config.url == config.url => {
                to_list.push(servers.len());
                servers.push(McpServer { config, ..s.clone() });
            }
            _ => {
                to_list.push(servers.len());
                servers.push(McpServer { config, tools: vec![], listed_at: None, checked_at: None, error: None });
            }
        }
    }
    if !cached_only {
        let listings = futures::future::join_all(to_list.iter().map(|&i| list(src, &servers[i].config))).await;
        for (&i, listing) in to_list.iter().zip(listings) {
            let server = &mut servers[i];
            server.checked_at = Some(src.now_ms);
            match listing {
                Ok(tools) => {
                    server.tools = tools;
                    server.listed_at = Some(src.now_ms);
                    server.error = None;
                }
                Err(e) => server.error = Some(e),
            }
        }
        save(src.sql, &servers)?;
    }
    Ok(McpCatalog { servers, config_error: None, listed_now: if cached_only { 0 } else { to_list.len() as u32 } })
}

/// One server's tools, over the network.
async fn list<S: ObjectStore, H: Http, Q: Sql>(
    src: &Source<'_, S, H, Q>,
    server: &McpServerConfig,
) -> Result<Vec<McpTool>, String> {
    let (url, headers) = config::resolve(server, src.secret)?;
    let ep = Endpoint { url: &url, headers: &headers, timeout_ms: server.timeout_ms.min(LIST_TIMEOUT_MS) };
    let failed = |e: client::McpError| format!("the MCP server {} {e}", server.name);
    let mut conn = client::initialize(src.http, ep).await.map_err(failed)?;
    client::list_tools(src.http, ep, &mut conn).await.map_err(failed)
}

fn rows<Q: Sql>(sql: &Q) -> Result<Vec<McpServer>, StorageError> {
    let rows =
        sql.exec("SELECT name, config, tools, listed_at, checked_at, error FROM mcp_servers ORDER BY name", &[])?;
    Ok(rows
        .into_iter()
        .filter_map(|mut r| {
            let config: McpServerConfig = hearth_json::from_slice(col_string(&mut r, 1).as_bytes()).ok()?;
            let tools: Vec<McpTool> = hearth_json::from_slice(col_string(&mut r, 2).as_bytes()).ok()?;
            let at = |i: usize| r.get(i).and_then(crate::ports::SqlValue::as_i64);
            let (listed_at, checked_at) = (at(3), at(4));
            let error = r.get_mut(5).and_then(|v| std::mem::replace(v, crate::ports::SqlValue::Null).into_string());
            Some(McpServer { config, tools, listed_at, checked_at, error })
        })
        .collect())
}

fn save<Q: Sql>(sql: &Q, servers: &[McpServer]) -> Result<(), StorageError> {
    let mut statements = vec![("DELETE FROM mcp_servers".to_owned(), vec![])];
    for s in servers.iter().filter(|s| !s.config.url.is_empty()) {
        statements.push((
            "INSERT INTO mcp_servers (name, config, tools, listed_at, checked_at, error) VALUES (?, ?, ?, ?, ?, ?)"
                .to_owned(),
            vec![
                s.config.name.clone().into(),
                to_json(&s.config).into(),
                to_json(&s.tools).into(),
                s.listed_at.map_or(crate::ports::SqlValue::Null, Into::into),
                s.checked_at.map_or(crate::ports::SqlValue::Null, Into::into),
                s.error.clone().map_or(crate::ports::SqlValue::Null, Into::into),
            ],
        ));
    }
    sql.exec_atomic(statements)
}

/// A JSON string (these types always serialize).
fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
