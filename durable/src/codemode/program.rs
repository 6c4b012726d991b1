//! The modules a script runs as: `main.js` (the harness and entrypoint),
//! `guard.js` (the step guard) and `user.js` (the script, instrumented),
//! and the report the harness sends back.

use super::instrument::{instrument, Refusal};
use crate::ports::SandboxJob;
use crate::settings::code::CodeConfig;
use crate::toolkit::ToolSpec;
use serde_json::{json, Value};

const MAIN_JS: &str = include_str!("sandbox/main.js");
const GUARD_JS: &str = include_str!("sandbox/guard.js");

/// Characters of the returned value's JSON the model gets.
pub const MAX_VALUE_CHARS: usize = 16_000;
/// Console output kept: lines, characters in all, characters per line.
pub const MAX_LOG_LINES: usize = 100;
pub const MAX_LOG_CHARS: usize = 6_000;
pub const MAX_LINE_CHARS: usize = 500;
/// Longest script accepted.
pub const MAX_CODE_CHARS: usize = 100_000;
/// Steps of the guard per millisecond of `CODE_MODE_CPU_MS` (a step is a
/// loop round or a function call, a few nanoseconds to a few hundred).
pub const STEPS_PER_CPU_MS: u64 = 50_000;

/// A tool of the session, as the script calls it: `hearth.{name}(…params)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InnerTool {
    pub name: String,
    /// Its arguments in order: the required ones as the schema lists them,
    /// then the optional ones.
    pub params: Vec<String>,
    pub required: usize,
}

impl InnerTool {
    pub fn of(spec: &ToolSpec) -> Self {
        let required: Vec<String> = spec
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let mut params = required.clone();
        if let Some(props) = spec.input_schema.get("properties").and_then(Value::as_object) {
            params.extend(props.keys().filter(|k| !required.contains(k)).cloned());
        }
        InnerTool { name: spec.name.to_string(), required: required.len(), params }
    }

    /// `read_file(path)`, `memory_search(query, k?)`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| if i < self.required { p.clone() } else { format!("{p}?") })
            .collect();
        format!("{}({})", self.name, params.join(", "))
    }
}

/// The script as its isolate runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub job: SandboxJob,
    /// The script's own text (for the line an error points at).
    pub source: String,
    pub max_steps: u64,
}

/// Why a script is not run at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRun {
    /// No `code`, or too long.
    Input(String),
    Refused(Refusal),
}

/// Builds the isolate's modules for `code` with `tools`.
pub fn build(code: &str, tools: &[InnerTool], cfg: &CodeConfig) -> Result<Program, NotRun> {
    if code.trim().is_empty() {
        return Err(NotRun::Input("`code` is empty: pass the JavaScript to run".into()));
    }
    if code.chars().count() > MAX_CODE_CHARS {
        return Err(NotRun::Input(format!("`code` is longer than {MAX_CODE_CHARS} characters")));
    }
    let user = instrument(code).map_err(NotRun::Refused)?;
    let max_steps = u64::from(cfg.cpu_ms) * STEPS_PER_CPU_MS;
    let config = json!({
        "tools": tools.iter().map(|t| (t.name.clone(), json!(t.params))).collect::<serde_json::Map<_, _>>(),
        "maxValueChars": MAX_VALUE_CHARS,
        "maxLogChars": MAX_LOG_CHARS,
        "maxLogLines": MAX_LOG_LINES,
        "maxLineChars": MAX_LINE_CHARS,
    });
    let main = replace_marked(MAIN_JS, "/*CONFIG*/", &config.to_string());
    let guard = replace_marked(GUARD_JS, "/*MAX_STEPS*/", &max_steps.to_string());
    let guard = replace_marked(&guard, "/*WALL_MS*/", &cfg.timeout_ms.to_string());
    let guard = replace_marked(&guard, "/*CPU_MS*/", &cfg.cpu_ms.to_string());
    Ok(Program {
        job: SandboxJob {
            modules: vec![("main.js".into(), main), ("guard.js".into(), guard), ("user.js".into(), user.module)],
            wall_ms: cfg.timeout_ms,
            cpu_ms: cfg.cpu_ms,
        },
        source: code.to_owned(),
        max_steps,
    })
}

/// `js` with the placeholder value after `marker` (to the end of its
/// line, less a trailing `;`) replaced by `value`.
fn replace_marked(js: &str, marker: &str, value: &str) -> String {
    let Some(at) = js.find(marker) else { return js.to_owned() };
    let line_end = js[at..].find('\n').map_or(js.len(), |e| at + e);
    let end = if js[..line_end].ends_with(';') { line_end - 1 } else { line_end };
    format!("{}{}{}", &js[..at], value, &js[end..])
}

/// What the harness reports (`main.js`, `Sandbox.run`).
#[derive(Debug, Clone, PartialEq, Eq, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The returned value as JSON (cut to [`MAX_VALUE_CHARS`]); `None` for
    /// `undefined` or after an error.
    pub value: Option<String>,
    /// Length of the whole JSON text of the value.
    pub value_chars: usize,
    pub logs: Vec<String>,
    pub dropped_logs: u64,
    pub error: Option<ScriptError>,
    /// Why the guard stopped the script ("" if it did not).
    pub stopped: String,
    pub steps: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, hearth_json::Deserialize)]
pub struct ScriptError {
    pub name: String,
    pub message: String,
    /// In the script (0: unknown).
    pub line: usize,
}

impl Report {
    pub fn parse(text: &str) -> Result<Report, String> {
        hearth_json::from_str(text).map_err(|e| format!("the sandbox's report is unreadable: {e}"))
    }
}

/// The line of the script a load error names (`… at user.js:LINE:COL`).
pub fn load_error_line(message: &str) -> usize {
    message
        .find("user.js:")
        .map(|at| message[at + 8..].chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &'static str, schema: Value) -> ToolSpec {
        ToolSpec { name: name.into(), description: "".into(), input_schema: schema, native: None }
    }

    #[test]
    fn signatures_put_required_arguments_first() {
        let t = InnerTool::of(&spec(
            "memory_search",
            json!({"type": "object", "properties": {"k": {}, "query": {}}, "required": ["query"]}),
        ));
        assert_eq!(t.params, vec!["query", "k"]);
        assert_eq!(t.signature(), "memory_search(query, k?)");
        let w = InnerTool::of(&spec(
            "write_file",
            json!({"properties": {"content": {}, "path": {}}, "required": ["path", "content"]}),
        ));
        assert_eq!(w.signature(), "write_file(path, content)");
        assert_eq!(InnerTool::of(&spec("who_am_i", json!({"type": "object"}))).signature(), "who_am_i()");
    }

    #[test]
    fn the_modules_carry_the_limits_and_the_tools() {
        let tools = vec![InnerTool { name: "read_file".into(), params: vec!["path".into()], required: 1 }];
        let cfg = CodeConfig { cpu_ms: 100, timeout_ms: 2_000, ..CodeConfig::default() };
        let p = build("return 1 + 1", &tools, &cfg).unwrap();
        let names: Vec<&str> = p.job.modules.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["main.js", "guard.js", "user.js"], "main.js first: it is the main module");
        let main = &p.job.modules[0].1;
        assert!(main.contains(r#"const CONFIG = {"maxLineChars":500,"#), "{main}");
        assert!(main.contains(r#""tools":{"read_file":["path"]}"#));
        let guard = &p.job.modules[1].1;
        assert!(guard.contains("const MAX_STEPS = 5000000;") && guard.contains("const WALL_MS = 2000;"));
        assert!(guard.contains("const CPU_MS = 100;"));
        assert_eq!((p.job.wall_ms, p.job.cpu_ms, p.max_steps), (2_000, 100, 5_000_000));
        assert!(p.job.modules[2].1.starts_with("export default async function (hearth) {return 1 + 1\n}"));
    }

    #[test]
    fn empty_long_or_refused_scripts_do_not_run() {
        let cfg = CodeConfig::default();
        assert!(matches!(build("  ", &[], &cfg), Err(NotRun::Input(_))));
        assert!(matches!(build(&"x".repeat(MAX_CODE_CHARS + 1), &[], &cfg), Err(NotRun::Input(_))));
        assert!(matches!(build("import x from 'y'", &[], &cfg), Err(NotRun::Refused(_))));
    }

    #[test]
    fn reports_and_load_errors_are_read() {
        let r = Report::parse(
            r#"{"value":"[1,2]","valueChars":5,"logs":["hi"],"droppedLogs":0,"error":null,"stopped":"","steps":3}"#,
        )
        .unwrap();
        assert_eq!((r.value.as_deref(), r.logs.len(), r.steps), (Some("[1,2]"), 1, 3));
        assert!(Report::parse("{\"value\": 5}").is_err());
        assert_eq!(
            load_error_line("Failed to start Worker:\nUncaught SyntaxError: Unexpected token ';'\n  at user.js:12:50"),
            12
        );
        assert_eq!(load_error_line("no line"), 0);
    }
}
