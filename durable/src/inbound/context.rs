//! What a message refers to: the message it replies to (and the part of it
//! the user quoted), where a forwarded message came from, or the message a
//! user picked to ask about. Channels fill [`MessageContext`] from their
//! wire formats (Telegram's `reply_to_message`, `external_reply`, `quote`,
//! `forward_origin`; Discord's resolved messages, and `referenced_message`
//! for Gateway replies); the session renders it as a short preface of the
//! stored user message, so "what do you think of this?" does not reach the
//! model alone.
//!
//! Bounded: every quoted text and name is cut (with [`CUT_MARKER`]), and at
//! most [`MAX_CONTEXT_ITEMS`] items are rendered, so a reply to a 4,000
//! character message costs a few hundred characters of context, once.

use serde::Serialize;

/// Longest quoted text (the replied-to message, a quote) kept in a preface.
pub const MAX_QUOTED_CHARS: usize = 300;
/// Longest name (an author, a chat title) kept in a preface.
pub const MAX_NAME_CHARS: usize = 64;
/// At most this many context items are rendered.
pub const MAX_CONTEXT_ITEMS: usize = 3;
/// Marks a text cut to fit.
pub const CUT_MARKER: &str = "…[cut]";

/// One thing the user's message refers to.
///
/// How channels fill it: Telegram in `channels::telegram::context`; Discord's
/// message command (`data.resolved.messages[target_id]`) as [`About`]. A
/// Discord Gateway `MESSAGE_CREATE` that replies (type 19, with
/// `message_reference` and `referenced_message`) maps to [`Reply`]: `author`
/// the referenced message's `author.global_name` (else `username`), `yours`
/// when that author is the bot, `text` its `content` with attachment names
/// in brackets first; a `referenced_message` of `null` (deleted) gives a
/// `Reply` with no text. A forward (`message_snapshots`) maps to [`Forward`].
///
/// [`About`]: MessageContext::About
/// [`Reply`]: MessageContext::Reply
/// [`Forward`]: MessageContext::Forward
///
/// Read tag-first through [`MessageContextDe`], without serde's content
/// buffer (see `r2_layout::tagged`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageContext {
    /// The user replied to this message.
    Reply {
        /// Who wrote it ("Ana (@ana)", `the channel "Daily News"`); `None`: unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<String>,
        /// The agent wrote it (one of its own answers).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        yours: bool,
        /// Where it was, when not in this chat (`"Daily News"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        place: Option<String>,
        /// Its text, or what it carried (`[photo] caption`, `[location: …]`).
        #[serde(default)]
        text: String,
        /// The part of it the user quoted, when they quoted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quote: Option<String>,
    },
    /// The user's message is forwarded; `origin` first sent it.
    Forward { origin: String },
    /// The user picked this message to ask about (Discord's message menu).
    About {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<String>,
        #[serde(default)]
        text: String,
    },
}

/// [`MessageContext`]'s externally tagged twin (`r2_layout::read_tagged`).
#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "MessageContext", rename_all = "snake_case")]
enum MessageContextDe {
    Reply {
        #[serde(default)]
        author: Option<String>,
        #[serde(default)]
        yours: bool,
        #[serde(default)]
        place: Option<String>,
        #[serde(default)]
        text: String,
        #[serde(default)]
        quote: Option<String>,
    },
    Forward {
        origin: String,
    },
    About {
        #[serde(default)]
        author: Option<String>,
        #[serde(default)]
        text: String,
    },
}
r2_layout::read_tagged!(MessageContext, MessageContextDe, "type", "a message's context (an object with a type)");

/// `text` on one line, at most `max` characters, marked when cut.
pub fn clip(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let keep = max.saturating_sub(CUT_MARKER.chars().count());
    let mut out: String = flat.chars().take(keep).collect();
    out.truncate(out.trim_end().len());
    out.push_str(CUT_MARKER);
    out
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", clip(text, MAX_QUOTED_CHARS))
}

impl MessageContext {
    /// The preface line: `[Replying to Ana: "…"]`, `[Forwarded from …]`.
    pub fn render(&self) -> String {
        match self {
            MessageContext::Reply { author, yours, place, text, quote } => {
                let mut whom = if *yours {
                    "your message".to_owned()
                } else {
                    match author.as_deref().map(|a| clip(a, MAX_NAME_CHARS)).filter(|a| !a.is_empty()) {
                        Some(a) => format!("a message from {a}"),
                        None => "a message".to_owned(),
                    }
                };
                if let Some(p) = place.as_deref().map(|p| clip(p, MAX_NAME_CHARS)).filter(|p| !p.is_empty()) {
                    whom.push_str(&format!(" in {p}"));
                }
                let mut line = format!("[Replying to {whom}");
                if !text.trim().is_empty() {
                    line.push_str(&format!(": {}", quoted(text)));
                }
                if let Some(q) = quote.as_deref().filter(|q| !q.trim().is_empty()) {
                    line.push_str(&format!(", quoting {}", quoted(q)));
                }
                line.push(']');
                line
            }
            MessageContext::Forward { origin } => format!("[Forwarded from {}]", clip(origin, MAX_NAME_CHARS)),
            MessageContext::About { author, text } => {
                let whom = match author.as_deref().map(|a| clip(a, MAX_NAME_CHARS)).filter(|a| !a.is_empty()) {
                    Some(a) => format!("a message from {a}"),
                    None => "a message".to_owned(),
                };
                if text.trim().is_empty() {
                    format!("[Asking about {whom} (it has no text)]")
                } else {
                    format!("[Asking about {whom}: {}]", quoted(text))
                }
            }
        }
    }
}

/// `text` with the context's preface lines before it (none: `text` as is).
pub fn with_preface(context: &[MessageContext], text: String) -> String {
    if context.is_empty() {
        return text;
    }
    let mut lines: Vec<String> = context.iter().take(MAX_CONTEXT_ITEMS).map(MessageContext::render).collect();
    if !text.trim().is_empty() {
        lines.push(text);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(author: Option<&str>, text: &str, quote: Option<&str>) -> MessageContext {
        MessageContext::Reply {
            author: author.map(str::to_owned),
            yours: false,
            place: None,
            text: text.into(),
            quote: quote.map(str::to_owned),
        }
    }

    #[test]
    fn prefaces_name_the_author_quote_the_text_and_keep_the_message_last() {
        let ctx = [reply(Some("Ana (@ana)"), "The meeting moved\nto Thursday.", Some("Thursday"))];
        assert_eq!(
            with_preface(&ctx, "what do you think?".into()),
            "[Replying to a message from Ana (@ana): \"The meeting moved to Thursday.\", quoting \"Thursday\"]\nwhat do you think?"
        );
        let mine = MessageContext::Reply { author: None, yours: true, place: None, text: "Done.".into(), quote: None };
        assert_eq!(mine.render(), "[Replying to your message: \"Done.\"]");
        let elsewhere = MessageContext::Reply {
            author: Some("the channel \"News\"".into()),
            yours: false,
            place: None,
            text: "[photo]".into(),
            quote: Some("rates rise".into()),
        };
        assert_eq!(
            elsewhere.render(),
            "[Replying to a message from the channel \"News\": \"[photo]\", quoting \"rates rise\"]"
        );
        assert_eq!(reply(None, "", None).render(), "[Replying to a message]");
        let fwd = MessageContext::Forward { origin: "Luigi".into() };
        assert_eq!(with_preface(&[fwd], "look".into()), "[Forwarded from Luigi]\nlook");
        let about = MessageContext::About { author: Some("ian".into()), text: "some message".into() };
        assert_eq!(with_preface(&[about], String::new()), "[Asking about a message from ian: \"some message\"]");
        assert_eq!(with_preface(&[], "plain".into()), "plain");
    }

    #[test]
    fn long_texts_and_names_are_cut_with_a_marker_and_items_are_capped() {
        let long = "word ".repeat(1000);
        let line = reply(Some(&"N".repeat(500)), &long, Some(&long)).render();
        assert!(line.matches(CUT_MARKER).count() == 3, "{line}");
        assert!(line.chars().count() < MAX_QUOTED_CHARS * 2 + MAX_NAME_CHARS + 60, "{}", line.len());
        let many: Vec<_> = (0..10).map(|i| MessageContext::Forward { origin: format!("o{i}") }).collect();
        let text = with_preface(&many, "x".into());
        assert_eq!(text.lines().count(), MAX_CONTEXT_ITEMS + 1);
        // Cutting never splits a character.
        let emoji = "😀".repeat(MAX_QUOTED_CHARS + 5);
        assert!(clip(&emoji, MAX_QUOTED_CHARS).ends_with(CUT_MARKER));
        assert_eq!(clip(&emoji, MAX_QUOTED_CHARS).chars().count(), MAX_QUOTED_CHARS);
    }

    #[test]
    fn context_travels_as_tagged_json() {
        let ctx = reply(Some("Ana"), "hi", None);
        let json = serde_json::to_value(&ctx).unwrap();
        assert_eq!(json, serde_json::json!({"type": "reply", "author": "Ana", "text": "hi"}));
        assert_eq!(hearth_json::from_value::<MessageContext>(json).unwrap(), ctx);
    }
}
