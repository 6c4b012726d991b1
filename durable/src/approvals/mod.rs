//! Tool calls that wait for the owner's yes (`APPROVE_TOOLS`, an MCP
//! server's `"approve"` list): the requests as the Agent object keeps them,
//! what the owner is shown, the buttons' data, and what the model is told
//! when the answer is no.
//!
//! The flow (see `crate::session::parked` for the turn's side): a turn
//! reaching such a call stores it and asks its Agent object, which asks the
//! owner in their private chat with Approve / Deny buttons (never in a
//! group), shows it on the console and the notification stream, and the
//! turn stops: nothing waits in memory, no request stays open. A tap (by
//! the owner only), the console or the HTTP API decides; the Agent object
//! wakes the session, which runs the call once (Approve) or gives the model
//! a tool error (Deny). No answer by `APPROVAL_TIMEOUT_MINUTES` is a no:
//! the session's alarm is set for then.

pub mod store;

use crate::protocol::approvals::{Decision, Origin};

/// The buttons' data: `ok:{id}:a` (approve), `ok:{id}:d` (deny), and
/// `ok:{id}:s` on a settled message's one button (a tap on it says how it
/// went).
pub fn data(id: i64, action: char) -> String {
    format!("ok:{id}:{action}")
}

/// `ok:{id}:{a|d|s}`.
pub fn parse_data(data: &str) -> Option<(i64, char)> {
    let rest = data.strip_prefix("ok:")?;
    let (id, action) = rest.split_once(':')?;
    let action = action.chars().next().filter(|c| matches!(c, 'a' | 'd' | 's') && action.len() == 1)?;
    Some((id.parse().ok()?, action))
}

/// Arguments shown to the owner: the JSON cut to this many characters.
pub const ARGS_SHOWN: usize = 300;

/// The call's arguments as the owner reads them (and as they are stored).
pub fn short_args(args: &serde_json::Value) -> String {
    crate::text::truncate_chars(&args.to_string(), ARGS_SHOWN)
}

/// Where the call comes from, in words.
pub fn origin_words(o: &Origin) -> String {
    let who = if o.sender.is_empty() { String::new() } else { format!(", from {}", o.sender) };
    if o.group {
        format!("{} group {}{who}", o.channel, o.chat)
    } else {
        format!("{} chat {}{who}", o.channel, o.chat)
    }
}

/// What the owner is asked.
pub fn prompt(agent: &str, o: &Origin, tool: &str, args: &str, minutes: i64) -> String {
    format!(
        "🔐 May I run this?\nAgent: {agent}\nChat: {}\nTool: {tool}\nArguments: {args}\n\nApprove runs it once. \
No answer within {minutes} minutes counts as Deny.",
        origin_words(o)
    )
}

/// The one button a settled request keeps.
pub fn settled_label(d: Decision) -> &'static str {
    match d {
        Decision::Approved => "✅ Approved",
        Decision::Denied => "❌ Denied",
        Decision::Expired => "⌛ No answer: not run",
        Decision::Waiting => "⏳ Waiting",
    }
}

/// What Telegram shows the one who tapped.
pub fn tap_note(d: Decision, already: bool) -> &'static str {
    match (d, already) {
        (Decision::Approved, false) => "Approved: I run it once.",
        (Decision::Denied, false) => "Denied: I won't run it.",
        (Decision::Approved, true) => "Already approved.",
        (Decision::Denied, true) => "Already denied.",
        (Decision::Expired, _) => "Too late: no answer came in time, so it did not run.",
        (Decision::Waiting, _) => "Still waiting.",
    }
}

/// The note for a tap by anyone but the owner.
pub const NOT_YOURS: &str = "Only my owner can decide this.";

/// What the model is told instead of the tool's result.
pub fn refusal(tool: &str, d: Decision, minutes: i64) -> String {
    match d {
        Decision::Expired => format!(
            "Not run: my owner did not answer within {minutes} minutes whether I may call {tool}. Tell the user, and \
do not try again unless they ask."
        ),
        _ => format!("Not run: my owner denied this call of {tool}. Tell the user; do not try it another way."),
    }
}

/// What the chat a call came from is told while it waits (unless the owner
/// was asked in that very chat).
pub fn waiting_note(tool: &str, minutes: i64) -> String {
    format!("⏳ I asked my owner before using {tool}; I go on when they answer (at most {minutes} minutes).")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;

    #[test]
    fn button_data_fits_telegram_and_is_checked() {
        assert_eq!(parse_data(&data(12, 'a')), Some((12, 'a')));
        assert_eq!(parse_data("ok:12:d"), Some((12, 'd')));
        assert!(data(i64::MAX, 's').len() <= 64, "Telegram's callback_data limit");
        for bad in ["ok:x:a", "ok:1:approve", "dream:1:a", "ok:1", "", "ok:1:r"] {
            assert_eq!(parse_data(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_owner_sees_agent_chat_tool_and_shortened_arguments() {
        let o = Origin { channel: ChannelKind::Telegram, chat: "-100123".into(), group: true, sender: "Pat".into() };
        let args = short_args(&serde_json::json!({"url": format!("https://example.com/{}", "x".repeat(500))}));
        assert_eq!(args.chars().count(), ARGS_SHOWN);
        let p = prompt("main", &o, "web_fetch", &args, 30);
        for part in
            ["Agent: main", "telegram group -100123, from Pat", "Tool: web_fetch", "https://example.com/", "30 minutes"]
        {
            assert!(p.contains(part), "{part} in {p}");
        }
        assert!(refusal("web_fetch", Decision::Denied, 30).contains("denied"));
        assert!(refusal("web_fetch", Decision::Expired, 30).contains("30 minutes"));
    }
}
