//! The system prompt: a session's workspace rendered into sections in the
//! order of [`r2_layout::workspace::load_plan`], within seed 000's budgets.
//! Loading the files is [`crate::workspace`]'s job; this module only renders.
//!
//! The system prompt holds only what is stable for the session; the time goes
//! into a `<system-reminder>` in the user's message, so the provider's prompt
//! cache keeps hitting from turn to turn.

use crate::text::{truncate_chars, TRUNCATED_MARKER};
use crate::workspace::fill_ins::shown_text;
use crate::workspace::front_matter::body_for_prompt;
use crate::workspace::identity::parse_identity;
use crate::workspace::{skills, Workspace};
use r2_layout::workspace::{load_plan, Section};
use r2_layout::{Scope, WorkspaceFile};

/// Per-file budget (seed 000).
pub const MAX_FILE_CHARS: usize = 12_000;
/// Whole-workspace budget (seed 000): the workspace files and daily notes
/// together. The core scaffold, the skills list and the runtime line are
/// not workspace files and are always emitted whole.
pub const MAX_TOTAL_CHARS: usize = 60_000;

/// Facts about the session that do not change from turn to turn.
#[derive(Debug, Clone)]
pub struct RuntimeInfo<'a> {
    pub agent: &'a str,
    pub session_key: &'a str,
    pub channel: &'a str,
    pub model: &'a str,
    pub timezone: &'a str,
    pub scope: Scope,
}

const SCAFFOLD: &str = "You are a personal AI agent running on Hearth. Your workspace files below \
define who you are, who you serve and how you work; follow them. Reply in the language of the \
person you talk to. Be concise: your replies are chat messages. Use your tools when they help; \
`read_file` reads any file of your workspace (e.g. `SOUL.md`, `memory/2026-01-31.md`).";

/// Assembles the system prompt: sections in plan order. Each workspace file
/// (and daily note) is cut to [`MAX_FILE_CHARS`], and together they stay
/// within [`MAX_TOTAL_CHARS`]: once that is spent, the remaining files are
/// left out whole. The scaffold, the skills list and the runtime line are
/// outside the budget and always emitted.
pub fn build_system_prompt(ws: &Workspace, runtime: &RuntimeInfo<'_>) -> String {
    let plan = load_plan(runtime.scope, ws.bootstrap());
    let mut out = String::with_capacity(8 * 1024);
    let mut budget = MAX_TOTAL_CHARS;
    let marker_chars = TRUNCATED_MARKER.chars().count();
    for section in plan {
        let (body, budgeted): (Option<String>, bool) = match section {
            Section::Scaffold => (Some(SCAFFOLD.to_owned()), false),
            Section::File(f) => (file_body(ws, f), true),
            Section::Yesterday => (ws.yesterday.as_ref().map(|t| t.to_string()), true),
            Section::Today => (ws.today.as_ref().map(|t| t.to_string()), true),
            Section::Skills => {
                let listed: Vec<&skills::Skill> = ws.skills.iter().collect();
                ((!listed.is_empty()).then(|| skills::render(&listed, MAX_FILE_CHARS)), false)
            }
            Section::Runtime => (Some(render_runtime(runtime)), false),
        };
        let Some(body) = body else { continue };
        let body = body.trim();
        if body.is_empty() {
            continue;
        }
        let body = if budgeted {
            let room = MAX_FILE_CHARS.min(budget);
            if room <= marker_chars {
                continue; // the workspace budget is spent: nothing of this file fits
            }
            let cut = truncate_chars(body, room);
            budget = budget.saturating_sub(cut.chars().count());
            cut
        } else {
            body.to_owned()
        };
        out.push_str("## ");
        out.push_str(section.title());
        out.push_str("\n\n");
        out.push_str(&body);
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out
}

/// A workspace file as the prompt shows it ([`shown_text`]): never its
/// front matter; unfilled template hints (`- **Name:** _(your name)_`,
/// `(your timezone, e.g., UTC+8)`) removed from every file but the pinned
/// guardrails. IDENTITY.md comes with its persona line. A file that held
/// nothing else is left out, and HEARTBEAT.md only with meaningful content
/// in its body.
fn file_body(ws: &Workspace, file: WorkspaceFile) -> Option<String> {
    let text = ws.files.get(&file)?;
    let shown = shown_text(file, text);
    if file.is_guardrail() {
        return Some(shown.text.into_owned());
    }
    if file == WorkspaceFile::Identity {
        return Some(match parse_identity(body_for_prompt(text)).persona_line() {
            Some(line) => format!("{line}\n\n{}", shown.text.trim()),
            None => shown.text.into_owned(),
        });
    }
    let must_have_content = shown.trimmed || file == WorkspaceFile::Heartbeat;
    if must_have_content && !hearth_schedule::heartbeat::is_meaningful(&shown.text) {
        return None;
    }
    Some(shown.text.into_owned())
}

fn render_runtime(r: &RuntimeInfo<'_>) -> String {
    let kind = match r.scope {
        Scope::Main => "main (your owner's private session)",
        Scope::Shared => "shared (not your owner's private session: never reveal private notes here)",
    };
    format!(
        "agent={} | session={} | kind={} | channel={} | model={} | timezone={}",
        r.agent, r.session_key, kind, r.channel, r.model, r.timezone
    )
}

/// The `<system-reminder>` put before the user's text: what changes each turn.
pub fn system_reminder(now_local: &str) -> String {
    crate::text::reminder(&format!("Current time: {now_local}"))
}

#[cfg(test)]
mod tests;
