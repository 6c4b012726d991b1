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
    crate::order::sort_by(&mut specs, |a, b| a.name.cmp(&b.name));
    specs
}

/// The built-in tools a session of `scope` has, sorted by name.
pub fn tool_specs(scope: Scope) -> Vec<ToolSpec> {
    let mut specs = tools::specs(scope);
    specs.extend(memory_tools::specs(scope));
    specs.push(crate::reminders::tool::spec());
    crate::order::sort_by(&mut specs, |a, b| a.name.cmp(&b.name));
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
    thread_local! {
        /// Built once per isolate: the specs behind them are made of JSON values.
        static NAMES: Vec<&'static str> = {
            let mut names: Vec<&'static str> = [Scope::Main, Scope::Shared].into_iter().flat_map(tool_names).collect();
            crate::order::sort(&mut names);
            names.dedup();
            names
        };
    }
    NAMES.with(Vec::clone)
}

/// Tools a heartbeat or job run does without: editing memory entries by
/// hand, deleting files, reading transcripts, questions about itself. A
/// background run checks its list and acts on it; every tool definition is
/// sent (and paid for) on each of its calls.
pub const CONVERSATION_ONLY: &[&str] = &[
    "delete_file",
    "memory_alias",
    "memory_remove",
    "memory_rename",
    "memory_write",
    "my_stats",
    "session_logs",
    "what_do_i_know",
    "who_am_i",
];

/// The tools of a heartbeat or job run: [`tool_specs`] without [`CONVERSATION_ONLY`].
pub fn background_tools(specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
    specs.into_iter().filter(|t| !CONVERSATION_ONLY.contains(&&*t.name)).collect()
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
    if name == crate::reminders::tool::TOOL {
        let ctx = reminder_context(p, deps);
        return crate::apart::apart(crate::reminders::tool::run(p, &ctx, args)).await;
    }
    if let Some(outcome) = memory_tools::run(p.memory(), memory, name, args).await {
        if name == "my_stats" && !outcome.is_error {
            return crate::apart::apart(with_reminder_stats(p, deps, outcome)).await;
        }
        return outcome;
    }
    // `session_logs` reads transcripts from R2, but its search is ranked by the
    // conversation memory.
    if name == "session_logs" && args.get("action").and_then(Value::as_str) == Some("search") {
        return memory_tools::search_transcripts(p.memory(), memory, args).await;
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

/// Whether a call of `name` waits for the owner in this session
/// (`APPROVE_TOOLS`, or its MCP server's `"approve"` list; see
/// [`super::parked`]).
pub fn needs_approval(deps: &SessionDeps<'_>, name: &str) -> bool {
    if deps.config.approval.names(name) {
        return true;
    }
    if !name.starts_with(crate::mcp::toolset::PREFIX) {
        return false;
    }
    let mcp = deps.mcp.borrow();
    let entries = toolset::entries(&mcp.catalog, McpScope::of(deps.key));
    let found = entries.into_iter().find(|(n, _, _)| n == name);
    found.is_some_and(|(_, server, tool)| {
        server.approve.iter().any(|p| crate::settings::approval::matches(p, &tool.name))
    })
}

/// What the `remind` tool and `/reminders` know of this turn: the chat the
/// message being answered came from is where a reminder set now fires.
pub fn reminder_context<'a, P: Platform>(
    p: &P,
    deps: &'a SessionDeps<'_>,
) -> crate::reminders::tool::ReminderContext<'a> {
    crate::reminders::tool::ReminderContext {
        agent: &deps.config.agent,
        key: deps.key,
        target: deps.watch.answering(),
        timezone: &deps.config.timezone,
        now_ms: p.now_ms(),
        speaker: deps.watch.speaker(),
    }
}

/// `my_stats` with this chat's reminders (every chat's in the owner's
/// main session) beside the memory's figures.
async fn with_reminder_stats<P: Platform>(p: &P, deps: &SessionDeps<'_>, outcome: ToolOutcome) -> ToolOutcome {
    let Ok(Value::Object(mut stats)) = hearth_json::from_str::<Value>(&outcome.text) else { return outcome };
    if let Some(Value::Object(more)) = crate::reminders::tool::stats(p, &reminder_context(p, deps)).await {
        stats.extend(more);
    }
    ToolOutcome::ok(Value::Object(stats).to_string())
}

/// The history's row for the outcome of call `id` of tool `name`, at `at_ms`.
pub fn result_message(id: String, name: String, outcome: ToolOutcome, at_ms: i64) -> r2_layout::Message {
    r2_layout::Message::ToolResult {
        tool_call_id: id,
        tool_name: name,
        content: vec![r2_layout::ResultBlock::Text { text: outcome.text }],
        is_error: outcome.is_error,
        timestamp: at_ms,
    }
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

    /// The built-in schemas are JSON text (`toolkit::schema`): each must parse
    /// into an object schema, else the model would be shown a tool without
    /// its arguments.
    #[test]
    fn every_built_in_schema_is_an_object_schema() {
        let code = crate::settings::code::CodeConfig::default();
        let mut specs = tool_specs(Scope::Main);
        specs.extend(tool_specs(Scope::Shared));
        specs.extend([crate::tasks::spawn::spawn_spec(), crate::tasks::spawn::tasks_spec()]);
        specs.extend([crate::web::search::spec(), crate::web::fetch::spec(), crate::codemode::spec(&[], &code)]);
        assert!(specs.len() > 30, "{} specs", specs.len());
        for t in &specs {
            let schema = &t.input_schema;
            assert_eq!(schema["type"], "object", "{}: {schema}", t.name);
            let properties = schema["properties"].as_object();
            assert!(properties.is_some(), "{}: no properties in {schema}", t.name);
            for required in schema["required"].as_array().into_iter().flatten() {
                let required = required.as_str().unwrap_or_default();
                assert!(
                    properties.is_some_and(|p| p.contains_key(required)),
                    "{}: {required} is not a property",
                    t.name
                );
            }
        }
    }

    #[test]
    fn background_runs_send_fewer_tools_but_can_still_read_note_and_edit() {
        let size = |specs: &[ToolSpec]| {
            serde_json::to_string(&specs.iter().map(|t| (&t.name, &t.description, &t.input_schema)).collect::<Vec<_>>())
                .unwrap()
                .len()
        };
        let all = tool_specs(Scope::Main);
        let bg = background_tools(tool_specs(Scope::Main));
        let names: Vec<&str> = bg.iter().map(|t| &*t.name).collect();
        for needed in
            ["read_file", "edit_file", "write_file", "memory_search", "memory_get", "memory_add", "load_skill"]
        {
            assert!(names.contains(&needed), "{needed} missing from {names:?}");
        }
        for name in CONVERSATION_ONLY {
            assert!(all.iter().any(|t| t.name == *name), "{name} is a tool");
        }
        assert!(size(&bg) * 10 < size(&all) * 7, "at least 30% smaller: {} of {}", size(&bg), size(&all));
    }
}
