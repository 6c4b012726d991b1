//! `/reminders` in any chat, answered without an LLM call: this chat's
//! pending reminders (every chat's in the owner's main session), and
//! `/reminders cancel r3` to cancel one.

use super::tool::ReminderContext;
use super::when;
use crate::ports::Platform;
use crate::protocol::reminders::{ReminderCall, ReminderReply};
use crate::protocol::session::PostMode;

/// Reminders the command lists at most.
const SHOWN: usize = 20;

/// `/reminders`, possibly addressed as `/reminders@botname`, with or without words after it.
pub fn is_command(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    first.split('@').next().unwrap_or("").eq_ignore_ascii_case("/reminders")
}

fn unavailable(e: impl std::fmt::Display) -> String {
    format!("⚠️ I could not reach my reminders right now ({e}). Nothing was changed; try again in a moment.")
}

/// The answer to `text` (a `/reminders` command) in this chat.
pub async fn answer<P: Platform>(p: &P, ctx: &ReminderContext<'_>, text: &str) -> String {
    let mut words = text.split_whitespace().skip(1);
    let agent = ctx.agent.as_str();
    match (words.next(), words.next()) {
        (Some(w), Some(id)) if w.eq_ignore_ascii_case("cancel") => {
            let call = ReminderCall::cancel(agent, id, ctx.scope());
            match p.reminders(&call).await {
                Ok(ReminderReply { error: Some(why), .. }) => format!("⚠️ {why}"),
                Ok(r) if r.reminders.is_empty() => {
                    format!("There is no pending reminder {id} here: nothing was cancelled.")
                }
                Ok(r) => {
                    let ids: Vec<&str> = r.reminders.iter().map(|r| r.id.as_str()).collect();
                    format!("🗑️ Cancelled {}.", ids.join(", "))
                }
                Err(e) => unavailable(e),
            }
        }
        (Some(w), _) if !w.eq_ignore_ascii_case("list") => {
            "Use /reminders to list this chat's reminders, /reminders cancel r3 to cancel one.".into()
        }
        _ => {
            let call = ReminderCall::list(agent, ctx.scope());
            match p.reminders(&call).await {
                Ok(ReminderReply { error: Some(why), .. }) => format!("⚠️ {why}"),
                Ok(r) => listing(ctx, &r),
                Err(e) => unavailable(e),
            }
        }
    }
}

fn listing(ctx: &ReminderContext<'_>, r: &ReminderReply) -> String {
    let every_chat = ctx.scope().is_none();
    if r.reminders.is_empty() {
        let here = if every_chat { "" } else { " in this chat" };
        return format!(
            "No reminders pending{here}. Ask me to remind you of something (\"remind me in an hour to call the dentist\")."
        );
    }
    let title = if every_chat { "Your reminders, in every chat" } else { "Reminders in this chat" };
    let mut out = format!("⏰ {title} ({}):", r.matched);
    for rem in r.reminders.iter().take(SHOWN) {
        let when = rem.next_at.map(|at| when::said(at, ctx.now_ms, &rem.timezone)).unwrap_or_default();
        let repeats = when::repeat_said(&when::Repeat::of(rem)).map(|s| format!(", {s}")).unwrap_or_default();
        let task = if rem.mode == PostMode::Turn { " (task)" } else { "" };
        let chat = if every_chat { format!(" [{}]", rem.chat) } else { String::new() };
        let text = crate::text::truncate_chars(rem.text.trim(), 120);
        out.push_str(&format!("\n• {}: {when}{repeats}{task}{chat}: {text}", rem.id));
    }
    if r.matched as usize > SHOWN {
        out.push_str(&format!("\n… and {} more.", r.matched as usize - SHOWN));
    }
    out.push_str("\nTo cancel one: /reminders cancel r3 (its id).");
    out
}
