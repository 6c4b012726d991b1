//! The session's tools: the workspace tools ([`crate::tools`]), the memory
//! tools ([`crate::memory::tools`]), the web tools ([`crate::web`]) and the
//! session's MCP tools ([`crate::mcp::toolset`]) as one list and one
//! dispatcher.
//!
//! The list is sorted by name and depends only on the session's scope, the
//! agent's settings and the MCP tools frozen when the session started, so it
//! is the same bytes on every request of a session (prompt caching). It is
//! composed here, above the features, so none needs another.

use super::deps::SessionDeps;
use crate::mcp::toolset;
use crate::memory::tools::{self as memory_tools, MemoryToolContext};
use crate::ports::Platform;
use crate::protocol::mcp::McpScope;
use crate::settings::web::WebConfig;
use crate::toolkit::{ToolOutcome, ToolSpec};
use crate::tools::{self, ToolContext};
use r2_layout::Scope;
use serde_json::Value;

/// Every tool of a session: the built-in ones of `scope`, the web tools of
/// `web`, and `mcp` (the session's MCP tools), sorted by name.
pub fn session_tools(scope: Scope, web: &WebConfig, mcp: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let mut specs = tool_specs(scope);
    specs.extend(crate::web::specs(web));
    specs.extend(mcp);
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// The built-in tools a session of `scope` has, sorted by name.
pub fn tool_specs(scope: Scope) -> Vec<ToolSpec> {
    let mut specs = tools::specs(scope);
    specs.extend(memory_tools::specs(scope));
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// The names of [`tool_specs`].
pub fn tool_names(scope: Scope) -> Vec<&'static str> {
    tool_specs(scope)
        .into_iter()
        .filter_map(|t| match t.name {
            std::borrow::Cow::Borrowed(name) => Some(name),
            std::borrow::Cow::Owned(_) => None,
        })
        .collect()
}

/// Every tool Hearth has, in any scope (for skills' `allowed-tools`).
pub fn all_tool_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = [Scope::Main, Scope::Shared].into_iter().flat_map(tool_names).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The tools that write the agent's workspace (the next load must list again).
pub fn writes_workspace(name: &str) -> bool {
    matches!(name, "write_file" | "edit_file" | "delete_file")
}

/// Runs one tool call: a memory tool through the Agent object, an MCP tool
/// on its server, a web tool, else a workspace tool.
pub async fn run<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    memory: &MemoryToolContext<'_>,
    workspace: &ToolContext<'_, P::Store>,
    name: &str,
    args: &Value,
) -> ToolOutcome {
    if let Some(outcome) = memory_tools::run(p.memory(), memory, name, args).await {
        return outcome;
    }
    let scope = McpScope::of(deps.key);
    if let Some(outcome) = toolset::call(p, deps.mcp, scope, &deps.config.mcp, name, args).await {
        return outcome;
    }
    if let Some(outcome) = crate::web::run(p.http(), &deps.config.web, name, args).await {
        return outcome;
    }
    tools::run_tool(workspace, name, args).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_name_once() {
        let names = tool_names;
        let (main, shared) = (names(Scope::Main), names(Scope::Shared));
        for scope in [&main, &shared] {
            let distinct: std::collections::BTreeSet<_> = scope.iter().collect();
            assert_eq!(distinct.len(), scope.len(), "a provider refuses a tool named twice: {scope:?}");
        }
        assert!(main.contains(&"write_file") && !shared.contains(&"write_file"), "the scopes differ");
        let union: std::collections::BTreeSet<&str> = main.iter().chain(&shared).copied().collect();
        assert_eq!(all_tool_names(), union.into_iter().collect::<Vec<_>>(), "each tool of either scope, once");
    }
}
