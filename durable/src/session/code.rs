//! `run_code` in a session ([`crate::codemode`]): offered where the
//! platform has a sandbox and `CODE_MODE` lets this session have it; a
//! script's calls go through the session's own dispatcher
//! ([`toolbox::run`]), so each keeps its tool's guards, is shown to
//! the turn's watchers like any call, and is listed in the result.

use super::deps::SessionDeps;
use super::toolbox;
use crate::codemode::{self, program::InnerTool, run::InnerTools};
use crate::memory::tools::MemoryToolContext;
use crate::ports::{LogLevel, Platform};
use crate::toolkit::{ToolOutcome, ToolSpec};
use crate::tools::ToolContext;
use futures::future::LocalBoxFuture;
use serde_json::Value;

/// The tools a script of this session may call: the session's built-in
/// and web tools, less those the provider runs itself. Not its MCP tools
/// (each server decides what a call may do; a loop of them is not ours to
/// allow), and not `run_code`.
pub fn inner_specs(deps: &SessionDeps<'_>) -> Vec<ToolSpec> {
    let scope = deps.key.scope();
    let specs = toolbox::session_tools(scope, &deps.config.web, Vec::new());
    let specs = match deps.key {
        crate::inbound::SessionKey::Heartbeat(_)
        | crate::inbound::SessionKey::Job { .. }
        | crate::inbound::SessionKey::Task { .. } => toolbox::background_tools(specs),
        _ => specs,
    };
    specs.into_iter().filter(|t| t.native.is_none() && t.name != codemode::TOOL).collect()
}

/// `tools` with `run_code` added (sorted) when this session may have it.
pub fn with_run_code<P: Platform>(p: &P, deps: &SessionDeps<'_>, mut tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
    if !deps.config.code.offered_in(deps.key.scope()) || !p.sandbox_available() {
        return tools;
    }
    let inner: Vec<InnerTool> = inner_specs(deps).iter().map(InnerTool::of).collect();
    tools.push(codemode::spec(&inner, &deps.config.code));
    crate::order::sort_by(&mut tools, |a, b| a.name.cmp(&b.name));
    tools
}

/// The session's tools as a script calls them.
struct Calls<'a, 'd, P: Platform> {
    p: &'a P,
    deps: &'a SessionDeps<'d>,
    memory: &'a MemoryToolContext<'a>,
    workspace: &'a ToolContext<'a, P::Store>,
    names: Vec<String>,
}

impl<P: Platform> InnerTools for Calls<'_, '_, P> {
    fn offers(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    fn call<'a>(&'a self, name: &'a str, args: &'a Value) -> LocalBoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if toolbox::needs_approval(self.deps, name) {
                return ToolOutcome::err(format!(
                    "{name} waits for my owner's approval, which a script cannot ask for: call {name} directly"
                ));
            }
            self.deps.watch.tool(name, "running");
            let outcome = toolbox::run(self.p, self.deps, self.memory, self.workspace, name, args).await;
            self.deps.watch.tool(name, if outcome.is_error { "error" } else { "done" });
            if toolbox::writes_workspace(name) {
                self.deps.workspace_cache.borrow_mut().invalidate_listings();
            }
            outcome
        })
    }
}

/// Runs one tool call of the model: `run_code` here, any other through
/// [`toolbox::run`].
pub async fn run<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    memory: &MemoryToolContext<'_>,
    workspace: &ToolContext<'_, P::Store>,
    name: &str,
    args: &Value,
) -> ToolOutcome {
    if name == codemode::TOOL {
        return run_code(p, deps, memory, workspace, args).await;
    }
    toolbox::run(p, deps, memory, workspace, name, args).await
}

/// Runs one `run_code` call.
async fn run_code<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    memory: &MemoryToolContext<'_>,
    workspace: &ToolContext<'_, P::Store>,
    args: &Value,
) -> ToolOutcome {
    let cfg = &deps.config.code;
    if !cfg.offered_in(deps.key.scope()) {
        return ToolOutcome::err("run_code is not available in this conversation");
    }
    let specs = inner_specs(deps);
    let inner: Vec<InnerTool> = specs.iter().map(InnerTool::of).collect();
    let Some(code) = args.get("code").and_then(Value::as_str) else {
        return ToolOutcome::err("missing string argument 'code'");
    };
    let program = match codemode::program::build(code, &inner, cfg) {
        Ok(program) => program,
        Err(codemode::program::NotRun::Input(why)) => return ToolOutcome::err(why),
        Err(codemode::program::NotRun::Refused(r)) => {
            return ToolOutcome::err(format!("the script was not run: {r}"));
        }
    };
    let started = p.now_ms();
    let run = match p.start_sandbox(&program.job).await {
        Ok(run) => run,
        Err(e) => {
            p.log(LogLevel::Error, &format!("run_code: {e}"));
            return ToolOutcome::err(format!("the sandbox could not start: {e}"));
        }
    };
    let calls = Calls { p, deps, memory, workspace, names: inner.into_iter().map(|t| t.name).collect() };
    let record = codemode::run::drive(&*run, &calls, cfg.max_calls).await;
    let elapsed = p.now_ms() - started;
    p.log(
        LogLevel::Info,
        &format!(
            "run_code: {} tool calls in {elapsed} ms ({})",
            record.calls.len(),
            if record.end.is_ok() { "ran" } else { "failed" }
        ),
    );
    let mut told = codemode::run::tell(&program, &record, elapsed);
    if record.called("web_fetch") || record.called("web_search") {
        // What the script returns may be a page's words with the marks cut off.
        told.script = crate::web::untrusted(&[("source", "run_code".into())], &told.script);
    }
    told.into_outcome()
}
