//! Tools the agent can call during a turn.
//!
//! The list is sorted by name and depends only on the session's scope, so it
//! is the same bytes on every request of a session (prompt caching).
//! Workspace paths are relative to the agent's own prefix and checked before
//! any R2 key is built: no `..`, no absolute paths, no backslashes, no control
//! characters, at most 1024 bytes. Shared sessions cannot read private files.

mod skill;
pub mod transcripts;
pub mod write;

use crate::llm::ToolSpec;
use crate::skills::Skill;
use crate::ports::ObjectStore;
use r2_layout::{keys, AgentId, Scope, WorkspaceFile};
use serde_json::{json, Value};

/// Largest tool result kept in the history (a row must stay far below 2 MB).
pub const MAX_RESULT_CHARS: usize = 32_000;

pub fn tool_specs(scope: Scope) -> Vec<ToolSpec> {
    let mut tools = vec![ToolSpec {
        name: "read_file",
        description: "Read a file of your workspace (e.g. SOUL.md, TOOLS.md, memory/2026-01-31.md). \
A path ending in '/' (or empty) lists that folder instead.",
        input_schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path relative to your workspace"}},
            "required": ["path"]
        }),
    }];
    tools.push(skill::spec());
    if scope == Scope::Main {
        tools.extend(write::specs());
        tools.push(transcripts::spec());
    }
    tools.extend(crate::memory::tools::specs(scope));
    tools.sort_by_key(|t| t.name);
    tools
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutcome {
    pub(crate) fn ok(text: String) -> Self {
        ToolOutcome { text: crate::prompt::truncate_chars(&text, MAX_RESULT_CHARS), is_error: false }
    }
    pub(crate) fn err(text: impl Into<String>) -> Self {
        ToolOutcome { text: text.into(), is_error: true }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path must be relative to your workspace (no leading '/')")]
    Absolute,
    #[error("path may not contain '..', '\\\\' or control characters")]
    Traversal,
    #[error("path is longer than 1024 bytes")]
    TooLong,
    #[error("{0} is private to your owner's main session")]
    Private(String),
}

/// Checks a workspace path given by the model and returns it normalised.
pub fn check_path(raw: &str, scope: Scope) -> Result<String, PathError> {
    let path = raw.trim();
    if path.len() > 1024 {
        return Err(PathError::TooLong);
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute);
    }
    if path.contains('\\') || path.chars().any(char::is_control) || path.split('/').any(|s| s == ".." || s == ".") {
        return Err(PathError::Traversal);
    }
    if scope == Scope::Shared && is_private_path(path) {
        return Err(PathError::Private(path.to_owned()));
    }
    Ok(path.to_owned())
}

/// MEMORY.md, USER.md and the daily notes (and their folder).
pub fn is_private_path(path: &str) -> bool {
    let p = path.trim_start_matches("./");
    WorkspaceFile::from_file_name(p).is_some_and(|f| f.is_private()) || p == "memory" || p.starts_with("memory/")
}

pub struct ToolContext<'a, S: ObjectStore> {
    pub store: &'a S,
    pub agent: &'a AgentId,
    pub scope: Scope,
    pub skills: &'a [Skill],
    /// The live session: its id and messages so far.
    pub session_id: &'a str,
    pub live: &'a [r2_layout::Message],
}

pub async fn run_tool<S: ObjectStore>(ctx: &ToolContext<'_, S>, name: &str, args: &Value) -> ToolOutcome {
    match name {
        "read_file" => read_file(ctx, args).await,
        "load_skill" => skill::load_skill(ctx, args).await,
        // Write tools exist only in main sessions; a shared session asking is refused.
        "write_file" | "edit_file" | "delete_file" if ctx.scope != Scope::Main => {
            ToolOutcome::err("writing the workspace is only allowed in your owner's private session")
        }
        "session_logs" if ctx.scope != Scope::Main => {
            ToolOutcome::err("transcripts are only available in your owner's private session")
        }
        "session_logs" => transcripts::session_logs(ctx, args).await,
        "write_file" => write::write_file(ctx, args).await,
        "edit_file" => write::edit_file(ctx, args).await,
        "delete_file" => write::delete_file(ctx, args).await,
        other => ToolOutcome::err(format!("unknown tool {other:?}")),
    }
}

async fn read_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let Some(raw) = args.get("path").and_then(Value::as_str) else {
        return ToolOutcome::err("missing string argument 'path'");
    };
    let path = match check_path(raw, ctx.scope) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::err(e.to_string()),
    };
    if path.is_empty() || path.ends_with('/') {
        let prefix = keys::workspace_key(ctx.agent, &path);
        return match ctx.store.list(&prefix, Some("/"), None).await {
            Ok(page) => {
                let mut lines: Vec<String> = page
                    .prefixes
                    .iter()
                    .filter_map(|p| p.strip_prefix(&prefix).map(str::to_owned))
                    .filter(|p| ctx.scope == Scope::Main || !is_private_path(p.trim_end_matches('/')))
                    .collect();
                lines.extend(
                    page.objects
                        .iter()
                        .filter_map(|o| o.key.strip_prefix(&prefix).map(|n| (n, o.size)))
                        .filter(|(n, _)| ctx.scope == Scope::Main || !is_private_path(&format!("{path}{n}")))
                        .map(|(n, size)| format!("{n} ({size} bytes)")),
                );
                if lines.is_empty() {
                    ToolOutcome::ok(format!("{path:?} is empty"))
                } else {
                    ToolOutcome::ok(lines.join("\n"))
                }
            }
            Err(e) => ToolOutcome::err(format!("could not list {path:?}: {e}")),
        };
    }
    match ctx.store.get(&keys::workspace_key(ctx.agent, &path)).await {
        Ok(Some(obj)) => ToolOutcome::ok(String::from_utf8_lossy(&obj.body).into_owned()),
        Ok(None) => ToolOutcome::err(format!("{path} does not exist")),
        Err(e) => ToolOutcome::err(format!("could not read {path}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_and_privacy() {
        assert!(check_path("SOUL.md", Scope::Shared).is_ok());
        assert!(check_path("skills/x/SKILL.md", Scope::Shared).is_ok());
        for bad in ["../x", "/etc/passwd", "a/../../b", "a\\b", "a\u{7}b", "./SOUL.md"] {
            assert!(check_path(bad, Scope::Main).is_err(), "{bad:?}");
        }
        assert!(check_path(&"a".repeat(1025), Scope::Main).is_err());
        for private in ["MEMORY.md", "USER.md", "memory/2026-01-01.md", "memory/", "memory"] {
            assert!(matches!(check_path(private, Scope::Shared), Err(PathError::Private(_))), "{private}");
            assert!(check_path(private, Scope::Main).is_ok());
        }
    }
}
