//! A session's start, as its Agent object answers it: the workspace the
//! Agent object composed (its listings and files, so the Session's loader
//! goes on from there), the pins it resolved them with, and the agent's MCP
//! servers. One call, where a new Session object otherwise listed and read
//! every layer of the workspace itself and asked for its MCP tools apart.

use super::call::impl_call;
use crate::inbound::SessionKey;
use crate::protocol::mcp::McpCatalog;
use crate::protocol::pins::Pins;
use serde::{Deserialize, Serialize};

/// `POST` [`SessionStartRequest`] → [`SessionStartReply`].
pub const SESSION_START_PATH: &str = "/sessions/start";

/// What a Session object asks for on its first turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStartRequest {
    /// The session: its agent, and its scope (what of the workspace it may see).
    pub session_key: SessionKey,
    /// `YYYY-MM-DD` in the agent's time zone: the daily notes a main session reads.
    pub today: String,
    pub yesterday: String,
    /// The object has no workspace yet (it is new, or was evicted).
    pub workspace: bool,
    /// The conversation starts: the agent's MCP servers and their tools.
    pub mcp: bool,
}

/// The Agent object's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStartReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceSnapshot>,
    /// The pins `workspace` was resolved with (none without a template).
    #[serde(default)]
    pub pins: Pins,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpCatalog>,
    /// R2 operations the Agent object made for this answer's workspace and
    /// `mcp.json` (taking a template's pins, once, reads more).
    #[serde(default)]
    pub r2_ops: u32,
}

/// A workspace loader's cache as data: what the Agent object hands a
/// Session (only what the session's scope may see) and keeps in its SQLite.
/// Its entries are arrays on the wire (tuple structs): smaller to send and
/// to parse, and less code than objects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
pub struct WorkspaceSnapshot {
    pub listings: Vec<ListingEntry>,
    /// Overlay files by key, raw (placeholders unfilled), with their etags.
    pub texts: Vec<TextEntry>,
    /// Daily notes (main scope only).
    #[serde(default)]
    pub notes: Vec<TextEntry>,
    pub skills: Vec<SkillEntry>,
}

/// One listing: its prefix, whether it was made with the `/` delimiter,
/// when (ms since the epoch), and its objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingEntry(pub String, pub bool, pub i64, pub Vec<ListedObject>);

/// An object of a listing: key, etag, size, upload time (ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedObject(pub String, pub String, pub u64, pub i64);

/// An object's key, the etag it had (empty for immutable versions) and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextEntry(pub String, pub String, pub String);

/// A SKILL.md's key, the etag it was read at, and the skill, or `None`
/// when it was left out (malformed, or needing what Hearth lacks: its
/// warning was logged once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry(pub String, pub String, pub Option<SkillFields>);

/// What a session uses of a skill (its listing in the prompt, `load_skill`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillFields {
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_tool: Option<String>,
    #[serde(default)]
    pub model_may_not_invoke: bool,
    pub local: bool,
}

impl_call!(SessionStartRequest => Agent Post SESSION_START_PATH, SessionStartReply,
    |r| r.session_key.agent().as_str().to_owned());
