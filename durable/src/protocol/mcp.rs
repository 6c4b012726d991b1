//! The agent's MCP servers as the Agent object hands them to a Session: each
//! server's settings from `agents/{id}/mcp.json` (placeholders unfilled: the
//! secrets are filled in by whoever calls the server, never stored) and the
//! tools it listed, cached by the Agent object for a while so a new session
//! does not list every server again.

use super::call::{agent_query, impl_call};
use crate::inbound::SessionKey;
use serde::Serialize;
use serde_json::Value;

/// `POST` [`McpToolsRequest`] → [`McpCatalog`]: the servers and their tools,
/// listed again where the cache is older than its time to live.
pub const MCP_TOOLS_PATH: &str = "/mcp/tools";
/// `GET ?agent=` → [`McpCatalog`]: what the cache holds, without listing.
pub const MCP_STATUS_PATH: &str = "/mcp/status";

/// The sessions a server's tools reach (`scopes` in `mcp.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpScope {
    /// The owner's main session and its heartbeat (the default).
    Main,
    /// Isolated `cron.json` job sessions.
    Jobs,
    /// HTTP threads other than `main` (Hearth's MCP server, the HTTP API).
    Api,
    /// Direct messages from other allowed people.
    Dms,
    /// Group chats and their topics.
    Groups,
}

impl McpScope {
    pub const ALL: [McpScope; 5] = [McpScope::Main, McpScope::Jobs, McpScope::Api, McpScope::Dms, McpScope::Groups];

    /// The scope a session is in.
    pub fn of(key: &SessionKey) -> McpScope {
        match key {
            SessionKey::Main(_) | SessionKey::Heartbeat(_) => McpScope::Main,
            SessionKey::Job { .. } => McpScope::Jobs,
            // Another agent asking is a caller over an API, not a person.
            SessionKey::Api { .. } | SessionKey::Delegated { .. } => McpScope::Api,
            // A sub-agent has the servers of the chat that started it: the
            // owner's main session's, or the narrowest shared ones.
            SessionKey::Task { scope: r2_layout::Scope::Main, .. } => McpScope::Main,
            SessionKey::Task { .. } => McpScope::Groups,
            SessionKey::Direct { .. } => McpScope::Dms,
            SessionKey::Group { .. } => McpScope::Groups,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            McpScope::Main => "main",
            McpScope::Jobs => "jobs",
            McpScope::Api => "api",
            McpScope::Dms => "dms",
            McpScope::Groups => "groups",
        }
    }
}

/// One server of `mcp.json`, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// The key in `mcpServers` (the middle of `mcp__{server}__{tool}`).
    pub name: String,
    /// The Streamable HTTP endpoint, `${NAME}` placeholders unfilled.
    pub url: String,
    /// Extra request headers (e.g. `Authorization`), placeholders unfilled.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Which sessions get its tools (default: the owner's main session).
    pub scopes: Vec<McpScope>,
    /// How long one call may take.
    pub timeout_ms: u32,
    /// `"approve"`: the server's tools (names or `*` patterns) whose calls
    /// wait for the owner's yes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
}

/// A tool as its server described it.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
}

/// A server and what its last listing found.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    pub config: McpServerConfig,
    /// The tools of the last listing that worked (kept when a later one fails).
    pub tools: Vec<McpTool>,
    /// When that listing was made (ms); `None`: never listed.
    pub listed_at: Option<i64>,
    /// When a listing was last tried (ms), whether or not it worked.
    #[serde(default)]
    pub checked_at: Option<i64>,
    /// Why the last listing failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The agent's MCP servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCatalog {
    pub servers: Vec<McpServer>,
    /// Why `mcp.json` could not be used, if it could not (no servers then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// Servers listed over the network for this answer (0 from a warm cache).
    #[serde(default)]
    pub listed_now: u32,
}

/// A Session asking for its agent's servers, at the start of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct McpToolsRequest {
    pub agent: String,
}

impl_call!(McpToolsRequest => Agent Post MCP_TOOLS_PATH, McpCatalog, |r| r.agent.clone());
super::agent::agent_read!(
    /// What the catalog's cache holds, listing nothing (the admin view).
    McpStatusRequest => MCP_STATUS_PATH, McpCatalog, agent_query);
