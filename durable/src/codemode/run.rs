//! One run of a script: its tool calls answered as they come (several may
//! be in flight), then what it did, as the tool's result.

use super::program::{load_error_line, Program, Report, MAX_VALUE_CHARS};
use crate::ports::{SandboxEvent, SandboxRun};
use crate::toolkit::ToolOutcome;
use futures::future::{select, Either, LocalBoxFuture};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;

/// Runs the script's calls to the session's tools (the session's own
/// dispatcher, with each tool's guards).
pub trait InnerTools {
    /// Whether the script may call `name`.
    fn offers(&self, name: &str) -> bool;
    fn call<'a>(&'a self, name: &'a str, args: &'a Value) -> LocalBoxFuture<'a, ToolOutcome>;
}

/// One tool call a script made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    pub name: String,
    /// Its arguments as JSON, cut short.
    pub args: String,
    pub is_error: bool,
    /// Characters of the answer.
    pub chars: usize,
}

/// How a run went, before it is told to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    pub calls: Vec<CallRecord>,
    /// The harness's report, or why there is none.
    pub end: Result<String, String>,
}

impl RunRecord {
    /// Whether a call named `name` was made.
    pub fn called(&self, name: &str) -> bool {
        self.calls.iter().any(|c| c.name == name)
    }
}

const ARGS_SHOWN: usize = 120;

/// Answers `run`'s calls through `tools` until it ends; at most `max_calls`
/// reach a tool. Calls still running when the script ends are awaited (a
/// write the script did not wait for still finishes), then the record.
pub async fn drive(run: &dyn SandboxRun, tools: &dyn InnerTools, max_calls: u32) -> RunRecord {
    let mut calls: Vec<CallRecord> = Vec::new();
    let mut inflight: FuturesUnordered<LocalBoxFuture<'_, (u32, usize, ToolOutcome)>> = FuturesUnordered::new();
    // The script's next event, while calls are in flight (`None`: ask anew).
    let mut next: Option<LocalBoxFuture<'_, SandboxEvent>> = None;
    let end = loop {
        let waiting = next.take().unwrap_or_else(|| run.next());
        let event = if inflight.is_empty() {
            Either::Left(waiting.await)
        } else {
            match select(waiting, inflight.next()).await {
                Either::Left((event, _)) => Either::Left(event),
                Either::Right((done, pending)) => {
                    next = Some(pending);
                    Either::Right(done)
                }
            }
        };
        match event {
            Either::Right(Some((id, index, outcome))) => {
                if let Some(c) = calls.get_mut(index) {
                    c.is_error = outcome.is_error;
                    c.chars = outcome.text.chars().count();
                }
                run.answer(id, outcome.is_error, &outcome.text);
                continue;
            }
            Either::Right(None) => continue,
            Either::Left(SandboxEvent::Done(end)) => break end,
            Either::Left(SandboxEvent::Call { id, name, args }) => {
                let parsed = match hearth_json::from_str::<Value>(&args) {
                    Ok(v @ Value::Object(_)) => Ok(v),
                    _ => Err("arguments must be one object (or the arguments in order)".to_owned()),
                };
                let refusal = if !tools.offers(&name) {
                    Some(format!("no tool {name:?} here"))
                } else if calls.len() >= max_calls as usize {
                    Some(format!("a script may make at most {max_calls} tool calls"))
                } else {
                    parsed.as_ref().err().cloned()
                };
                if let Some(why) = refusal {
                    run.answer(id, true, &why);
                    continue;
                }
                let index = calls.len();
                calls.push(CallRecord { name: name.clone(), args: cut(&args, ARGS_SHOWN), is_error: false, chars: 0 });
                let args = parsed.unwrap_or(Value::Null);
                inflight.push(Box::pin(async move {
                    let outcome = tools.call(&name, &args).await;
                    (id, index, outcome)
                }));
            }
        }
    };
    while let Some((id, index, outcome)) = inflight.next().await {
        if let Some(c) = calls.get_mut(index) {
            c.is_error = outcome.is_error;
            c.chars = outcome.text.chars().count();
        }
        run.answer(id, outcome.is_error, &outcome.text);
    }
    RunRecord { calls, end }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// Line `n` (1-based) of `source`, trimmed and cut short.
fn source_line(source: &str, n: usize) -> Option<String> {
    let line = source.lines().nth(n.checked_sub(1)?)?.trim();
    (!line.is_empty()).then(|| cut(line, 160))
}

/// The parts of the result that come from the script itself (its value
/// and console), which a caller may mark as untrusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    /// `Result: …` or `Error: …`, with the console after it.
    pub script: String,
    /// The tool calls and the figures (Hearth's own words).
    pub summary: String,
    pub is_error: bool,
}

/// What the model is told about a run that took `elapsed_ms`.
pub fn tell(program: &Program, record: &RunRecord, elapsed_ms: i64) -> Told {
    let (script, is_error, steps) = match &record.end {
        Err(message) => {
            let line = load_error_line(message);
            let message = message.trim_start_matches("Failed to start Worker:").trim();
            let message = message.trim_start_matches("Uncaught ");
            // The load error's own position names the instrumented module.
            let message = message.split("\n  at user.js:").next().unwrap_or(message).trim();
            (format!("Error: {}", with_line(message, line, &program.source)), true, None)
        }
        Ok(text) => match Report::parse(text) {
            Err(e) => (format!("Error: {e}"), true, None),
            Ok(report) => {
                let (mut told, is_error) = told_report(program, &report);
                if !report.logs.is_empty() || report.dropped_logs > 0 {
                    told.push_str(&format!("\nConsole ({} lines):\n{}", report.logs.len(), report.logs.join("\n")));
                    if report.dropped_logs > 0 {
                        told.push_str(&format!("\n[{} more console lines not kept]", report.dropped_logs));
                    }
                }
                (told, is_error, Some(report.steps))
            }
        },
    };
    let mut summary = String::new();
    if !record.calls.is_empty() {
        summary.push_str(&format!("Tool calls ({}):", record.calls.len()));
        for (i, c) in record.calls.iter().enumerate().take(20) {
            let how = if c.is_error { "error" } else { "ok" };
            summary.push_str(&format!("\n{}. {} {} → {how}, {} chars", i + 1, c.name, c.args, c.chars));
        }
        if record.calls.len() > 20 {
            summary.push_str(&format!("\n… and {} more", record.calls.len() - 20));
        }
        summary.push('\n');
    }
    summary.push_str(&format!("Ran in {elapsed_ms} ms"));
    if let Some(steps) = steps {
        summary.push_str(&format!(", {steps} steps"));
    }
    summary.push('.');
    Told { script, summary, is_error }
}

fn with_line(message: &str, line: usize, source: &str) -> String {
    match (line, source_line(source, line)) {
        (0, _) => message.to_owned(),
        (n, Some(text)) => format!("{message} (line {n}: {text})"),
        (n, None) => format!("{message} (line {n})"),
    }
}

fn told_report(program: &Program, report: &Report) -> (String, bool) {
    if !report.stopped.is_empty() {
        let line = report.error.as_ref().map_or(0, |e| e.line);
        let why = format!(
            "stopped: {} (limits: {} steps, {} ms of computing, {} ms in all)",
            report.stopped, program.max_steps, program.job.cpu_ms, program.job.wall_ms
        );
        return (format!("Error: {}", with_line(&why, line, &program.source)), true);
    }
    if let Some(e) = &report.error {
        let message = if e.name == "thrown" {
            format!("the script threw {}", e.message)
        } else {
            format!("{}: {}", e.name, e.message)
        };
        return (format!("Error: {}", with_line(&message, e.line, &program.source)), true);
    }
    let text = match &report.value {
        None => "Result: undefined (the script returned nothing)".to_owned(),
        Some(v) if report.value_chars > v.chars().count() => format!(
            "Result (JSON): {v}\n[the result was {} characters of JSON; cut to the first {MAX_VALUE_CHARS}: \
return less, or a summary]",
            report.value_chars
        ),
        Some(v) => format!("Result (JSON): {v}"),
    };
    (text, false)
}

impl Told {
    pub fn into_outcome(self) -> ToolOutcome {
        let text = format!("{}\n{}", self.script, self.summary);
        if self.is_error {
            ToolOutcome::err(crate::text::truncate_chars(&text, crate::toolkit::MAX_RESULT_CHARS))
        } else {
            ToolOutcome::ok(text)
        }
    }
}
