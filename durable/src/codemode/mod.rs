//! Code mode: `run_code`, JavaScript the model writes, run in a fresh
//! isolate (a Dynamic Worker, from the Worker Loader binding `LOADER`).
//!
//! The isolate has no bindings, no env and no network (`globalOutbound:
//! null`). Its one way out is the bridge its entrypoint is given, whose
//! only method queues a tool call for the session: the `hearth` object of
//! the script (`hearth.read_file(path)`, …) is built on it. Each call runs
//! through the session's own dispatcher with the tool's guards (path
//! confinement, privacy scope, web address rules), so a script can do no
//! more than the model could with the same tools one call at a time, and
//! each call is shown to the session's watchers and listed in the result.
//!
//! Files: [`instrument`] (over [`lex`]) makes the script stop itself
//! (local workerd does not enforce an isolate's CPU limit; production also
//! gets `limits.cpuMs`); [`program`] builds the isolate's modules (the
//! harness `sandbox/main.js`, the guard `sandbox/guard.js`, the script);
//! [`run`] answers the script's calls and says what it did.

pub mod instrument;
pub mod lex;
pub mod program;
pub mod run;

use crate::settings::code::CodeConfig;
use crate::toolkit::ToolSpec;
use program::{InnerTool, MAX_VALUE_CHARS};

/// The tool's name.
pub const TOOL: &str = "run_code";

/// `run_code` for a session whose script may call `tools`.
pub fn spec(tools: &[InnerTool], cfg: &CodeConfig) -> ToolSpec {
    let signatures: Vec<String> = tools.iter().map(|t| format!("hearth.{}", t.signature())).collect();
    let description = format!(
        "Run JavaScript in a sandbox: a fresh isolate with no network, no imports and nothing of yours but the \
`hearth` object. Use it when a task needs many tool calls or some computation (counting, searching or comparing \
several files): one script instead of one step per call. `code` is the body of an async function (`await` freely, \
`return` the result) or an ES module whose default export is an async function taking `hearth`. Each method of \
`hearth` calls one of your tools and resolves to its text; a failed call throws. Arguments go in order or as one \
object: {}. You get back the returned value as JSON (cut at {MAX_VALUE_CHARS} characters), console.log lines, the \
tool calls made, or the error and its line. Limits per run: {} ms, {} tool calls.",
        if signatures.is_empty() { "(no tools)".to_owned() } else { signatures.join(", ") },
        cfg.timeout_ms,
        cfg.max_calls,
    );
    ToolSpec {
        name: TOOL.into(),
        description: description.into(),
        input_schema: crate::toolkit::schema(
            r#"{"type": "object",
                "properties": {"code": {"type": "string", "description": "JavaScript: an async function body, or a module with `export default async function (hearth) {…}`"}},
                "required": ["code"]}"#,
        ),
        native: None,
    }
}

#[cfg(test)]
mod tests;
