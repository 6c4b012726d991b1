//! What the providers accept in a conversation, and the repairs that make any
//! message acceptable.
//!
//! A history is replayed on every turn, so one block a provider refuses makes
//! every later request fail. The rules are the union of what Anthropic, OpenAI
//! and the stricter OpenAI-compatible servers demand, so a history stays valid
//! when `LLM_PROVIDER` changes. Each names the refusal it prevents:
//!
//! - a text block is neither empty nor only whitespace (Anthropic: `text
//!   content blocks must be non-empty` / `must contain non-whitespace text`),
//!   and no message is left without content (`all messages must have
//!   non-empty content`): blank text becomes a visible placeholder;
//! - a tool-call id is non-empty and matches `^[a-zA-Z0-9_-]+$` (Anthropic:
//!   `String should match pattern`; OpenAI: `empty string. Expected a string
//!   with minimum length 1`), unique within its message; a tool name is 1–64
//!   such characters;
//! - a tool call's input is a JSON object (Anthropic: `Input should be a valid
//!   dictionary`);
//! - a tool result has text (an empty error result is refused);
//! - every tool call is answered right after its message, and every result
//!   follows its call ([`pair_tool_calls`]).
//!
//! They are applied when a message is stored ([`conform`], by the session's
//! store) and again when a request is encoded ([`wire_form`] per message,
//! [`paired`] across messages), for histories stored before a rule existed.
//! Every repair is a function of the message alone (an id made for an empty
//! one comes from the message's timestamp and the call's position), so a call
//! and its result repaired apart still match, and the per-message fragments of
//! [`super::wire`] stay valid. [`strict_form`] is the last resort when a
//! provider still refuses a history (see [`super::complete_repairing`]).

use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};
use serde_json::{json, Value};
use std::borrow::Cow;

/// Stands for a user's text that was empty or only whitespace.
pub const EMPTY_USER_TEXT: &str = "[The user sent a message with no text.]";
/// Stands for a model reply with no text and no tool call.
pub const EMPTY_REPLY: &str = "[empty reply]";
/// Stands for a tool result with no text.
pub const EMPTY_TOOL_OUTPUT: &str = "(no output)";
/// The name given to a tool call that came without a usable one.
pub const UNNAMED_TOOL: &str = "unnamed_tool";
/// The key that carries a tool input that was not a JSON object.
pub const UNPARSED_INPUT: &str = "_unparsed";
/// The result given to a tool call that has none (its turn was cut short).
pub const INTERRUPTED_TOOL: &str = "interrupted: the tool did not finish";
/// Longest tool name the providers take.
const MAX_TOOL_NAME: usize = 64;

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether both providers take `id` as a tool-call id.
pub fn valid_tool_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(is_id_char)
}

/// FNV-1a: a short, stable fingerprint (not a security measure).
fn fingerprint(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5, |h: u32, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// `id` as both providers take it, from `id` alone: itself when valid; else
/// its characters with the invalid ones as `_` and a fingerprint of the
/// original, so two ids that differ only in invalid characters stay apart.
pub fn wire_tool_id(id: &str) -> Cow<'_, str> {
    if valid_tool_id(id) {
        return Cow::Borrowed(id);
    }
    let kept: String = id.chars().take(40).map(|c| if is_id_char(c) { c } else { '_' }).collect();
    Cow::Owned(format!("call_{kept}_{:08x}", fingerprint(id)))
}

/// A tool name both providers take: 1–64 of `[a-zA-Z0-9_-]`.
pub fn wire_tool_name(name: &str) -> Cow<'_, str> {
    if !name.is_empty() && name.len() <= MAX_TOOL_NAME && name.chars().all(is_id_char) {
        return Cow::Borrowed(name);
    }
    let kept: String = name.trim().chars().take(MAX_TOOL_NAME).map(|c| if is_id_char(c) { c } else { '_' }).collect();
    Cow::Owned(if kept.is_empty() { UNNAMED_TOOL.to_owned() } else { kept })
}

/// A tool input as a JSON object: nothing becomes `{}`, a string holding a
/// JSON object becomes that object, anything else is kept under
/// [`UNPARSED_INPUT`] (the tool then reports what it misses).
pub fn tool_input(v: &Value) -> Cow<'_, Value> {
    match v {
        Value::Object(_) => Cow::Borrowed(v),
        Value::Null => Cow::Owned(json!({})),
        Value::String(s) if blank(s) => Cow::Owned(json!({})),
        Value::String(s) => match hearth_json::from_slice::<Value>(s.as_bytes()) {
            Ok(parsed @ Value::Object(_)) => Cow::Owned(parsed),
            _ => Cow::Owned(json!({ UNPARSED_INPUT: s })),
        },
        other => Cow::Owned(json!({ UNPARSED_INPUT: other })),
    }
}

/// The ids a message's tool calls carry on the wire, in order: each valid
/// and unique within the message. An empty or repeated id gets
/// `call_{timestamp}_{position}`, the same whenever it is computed.
fn call_ids(content: &[AssistantBlock], timestamp: i64) -> Vec<Cow<'_, str>> {
    let mut out: Vec<Cow<'_, str>> = Vec::new();
    for (i, b) in content.iter().enumerate() {
        let AssistantBlock::ToolCall { id, .. } = b else { continue };
        let mut wire = wire_tool_id(id);
        if id.is_empty() || out.contains(&wire) {
            wire = Cow::Owned(format!("call_{}_{i}", timestamp.unsigned_abs()));
        }
        while out.contains(&wire) {
            wire = Cow::Owned(format!("{wire}_{i}"));
        }
        out.push(wire);
    }
    out
}

fn user_block_ok(b: &UserBlock) -> bool {
    !matches!(b, UserBlock::Text { text } if blank(text))
}

/// Whether `m` already follows every per-message rule.
fn well_formed(m: &Message) -> bool {
    match m {
        Message::User { content: UserContent::Text(t), .. } => !blank(t),
        Message::User { content: UserContent::Blocks(blocks), .. } => {
            !blocks.is_empty() && blocks.iter().all(user_block_ok)
        }
        Message::Assistant { content, timestamp, .. } => {
            let ids = call_ids(content, *timestamp);
            let mut calls = content.iter().filter_map(|b| match b {
                AssistantBlock::ToolCall { id, name, arguments } => Some((id, name, arguments)),
                _ => None,
            });
            let calls_ok = calls.by_ref().zip(&ids).all(|((id, name, args), wire)| {
                id == wire && matches!(wire_tool_name(name), Cow::Borrowed(_)) && args.is_object()
            });
            let blocks_ok = content.iter().all(|b| match b {
                AssistantBlock::Text { text } => !blank(text),
                AssistantBlock::Thinking { thinking } => !blank(thinking),
                AssistantBlock::ToolCall { .. } => true,
                // The provider's own blocks go back as it made them.
                AssistantBlock::Native { .. } => true,
            });
            let says_something = content.iter().any(|b| !matches!(b, AssistantBlock::Thinking { .. }));
            calls_ok && blocks_ok && says_something
        }
        Message::ToolResult { tool_call_id, content, .. } => {
            valid_tool_id(tool_call_id) && content.iter().any(|ResultBlock::Text { text }| !blank(text))
        }
    }
}

/// `m` repaired to follow every per-message rule (see the module docs).
fn repaired(m: &Message) -> Message {
    match m {
        Message::User { content: UserContent::Text(_), timestamp, sender, channel } => Message::User {
            content: UserContent::Text(EMPTY_USER_TEXT.into()),
            timestamp: *timestamp,
            sender: sender.clone(),
            channel: channel.clone(),
        },
        Message::User { content: UserContent::Blocks(blocks), timestamp, sender, channel } => {
            let mut blocks: Vec<UserBlock> = blocks
                .iter()
                .map(|b| if user_block_ok(b) { b.clone() } else { UserBlock::Text { text: EMPTY_USER_TEXT.into() } })
                .collect();
            if blocks.is_empty() {
                blocks.push(UserBlock::Text { text: EMPTY_USER_TEXT.into() });
            }
            Message::User {
                content: UserContent::Blocks(blocks),
                timestamp: *timestamp,
                sender: sender.clone(),
                channel: channel.clone(),
            }
        }
        Message::Assistant { content, timestamp, model, stop_reason, usage } => {
            let mut ids = call_ids(content, *timestamp).into_iter();
            let mut fixed: Vec<AssistantBlock> = content
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::Text { text } if blank(text) => None,
                    AssistantBlock::Thinking { thinking } if blank(thinking) => None,
                    AssistantBlock::ToolCall { id, name, arguments } => Some(AssistantBlock::ToolCall {
                        id: ids.next().map(Cow::into_owned).unwrap_or_else(|| id.clone()),
                        name: wire_tool_name(name).into_owned(),
                        arguments: tool_input(arguments).into_owned(),
                    }),
                    other => Some(other.clone()),
                })
                .collect();
            if fixed.iter().all(|b| matches!(b, AssistantBlock::Thinking { .. })) {
                fixed.push(AssistantBlock::Text { text: EMPTY_REPLY.into() });
            }
            Message::Assistant {
                content: fixed,
                timestamp: *timestamp,
                model: model.clone(),
                stop_reason: stop_reason.clone(),
                usage: *usage,
            }
        }
        Message::ToolResult { tool_call_id, tool_name, content, is_error, timestamp } => {
            let mut kept: Vec<ResultBlock> =
                content.iter().filter(|ResultBlock::Text { text }| !blank(text)).cloned().collect();
            if kept.is_empty() {
                kept.push(ResultBlock::Text { text: EMPTY_TOOL_OUTPUT.into() });
            }
            Message::ToolResult {
                tool_call_id: wire_tool_id(tool_call_id).into_owned(),
                tool_name: tool_name.clone(),
                content: kept,
                is_error: *is_error,
                timestamp: *timestamp,
            }
        }
    }
}

/// `m` as it may be stored: every per-message rule applied. Idempotent.
pub fn conform(m: Message) -> Message {
    if well_formed(&m) {
        m
    } else {
        repaired(&m)
    }
}

/// `m` as it may be encoded (borrowed when it needs no repair).
pub fn wire_form(m: &Message) -> Cow<'_, Message> {
    if well_formed(m) {
        Cow::Borrowed(m)
    } else {
        Cow::Owned(repaired(m))
    }
}

/// Whether every tool call is answered right after its message, with its
/// call's wire id, and every result follows its call.
fn pairs_ok(messages: &[Message]) -> bool {
    let mut open: Vec<Cow<'_, str>> = Vec::new();
    for m in messages {
        match m {
            Message::ToolResult { tool_call_id, .. } => match open.iter().position(|id| id == tool_call_id) {
                Some(i) => {
                    open.remove(i);
                }
                None => return false,
            },
            other => {
                if !open.is_empty() {
                    return false;
                }
                if let Message::Assistant { content, timestamp, .. } = other {
                    open = call_ids(content, *timestamp);
                    let raw = content.iter().filter_map(|b| match b {
                        AssistantBlock::ToolCall { id, .. } => Some(id),
                        _ => None,
                    });
                    if raw.zip(&open).any(|(raw, wire)| raw != wire) {
                        return false;
                    }
                }
            }
        }
    }
    open.is_empty()
}

/// `messages` with every tool call paired (see [`pair_tool_calls`]),
/// borrowed when they already are.
pub fn paired(messages: &[Message]) -> Cow<'_, [Message]> {
    paired_after(messages, 0)
}

/// [`paired`], for `messages` whose first `known` are paired already: only
/// the part from the last message before them that is no tool result is
/// checked ([`pairs_ok`] forgets every open call at such a message, so what
/// comes before it cannot make the rest wrong).
pub fn paired_after(messages: &[Message], known: usize) -> Cow<'_, [Message]> {
    let from = (0..messages.len().min(known.saturating_add(1)))
        .rev()
        .find(|&i| !matches!(messages[i], Message::ToolResult { .. }))
        .unwrap_or(0);
    if pairs_ok(&messages[from..]) {
        Cow::Borrowed(messages)
    } else {
        Cow::Owned(pair_tool_calls(messages.to_vec()))
    }
}

/// Makes the tool calls of a history what the providers accept: every call
/// carries its wire id and is followed by its result, which carries the same
/// id; every result follows its call. A turn cut short between saving the
/// model's tool call and saving the result (eviction) would otherwise make
/// every later request fail: the missing result becomes an error result
/// ([`INTERRUPTED_TOOL`]). Results whose call is not right before them (left
/// behind by a compaction or a trim) are dropped. Idempotent.
pub fn pair_tool_calls(messages: Vec<Message>) -> Vec<Message> {
    struct Open {
        raw: String,
        wire: String,
        name: String,
        timestamp: i64,
    }
    let mut out = Vec::with_capacity(messages.len());
    // Calls of the latest assistant message still waiting for their result.
    let mut open: Vec<Open> = Vec::new();
    let answer_open = |open: &mut Vec<Open>, out: &mut Vec<Message>| {
        for call in open.drain(..) {
            out.push(Message::ToolResult {
                tool_call_id: call.wire,
                tool_name: call.name,
                content: vec![ResultBlock::Text { text: INTERRUPTED_TOOL.into() }],
                is_error: true,
                timestamp: call.timestamp,
            });
        }
    };
    for m in messages {
        match m {
            Message::ToolResult { tool_call_id, tool_name, content, is_error, timestamp } => {
                if let Some(i) = open.iter().position(|c| c.raw == tool_call_id || c.wire == tool_call_id) {
                    let call = open.remove(i);
                    out.push(Message::ToolResult { tool_call_id: call.wire, tool_name, content, is_error, timestamp });
                }
            }
            Message::Assistant { mut content, timestamp, model, stop_reason, usage } => {
                answer_open(&mut open, &mut out);
                let ids: Vec<String> = call_ids(&content, timestamp).into_iter().map(Cow::into_owned).collect();
                let mut ids = ids.into_iter();
                for b in content.iter_mut() {
                    if let AssistantBlock::ToolCall { id, name, .. } = b {
                        let wire = ids.next().unwrap_or_else(|| id.clone());
                        let raw = std::mem::replace(id, wire.clone());
                        open.push(Open { raw, wire, name: name.clone(), timestamp });
                    }
                }
                out.push(Message::Assistant { content, timestamp, model, stop_reason, usage });
            }
            user => {
                answer_open(&mut open, &mut out);
                out.push(user);
            }
        }
    }
    answer_open(&mut open, &mut out);
    out
}

/// Longest tool input or result kept in a strict note.
const STRICT_NOTE_MAX_CHARS: usize = 8_000;

/// `m` reduced to plain text, for a history the provider refused although
/// every rule above holds: media become notes, a tool call and its result
/// become text, thinking goes. What is left is text in user and assistant
/// messages, which every provider takes.
pub fn strict_form(m: &Message) -> Message {
    let cut = |s: &str| crate::text::truncate_chars(s, STRICT_NOTE_MAX_CHARS);
    let strict = match m {
        Message::User { content: UserContent::Text(_), .. } => m.clone(),
        Message::User { content: UserContent::Blocks(blocks), timestamp, sender, channel } => {
            let texts = blocks
                .iter()
                .map(|b| match b {
                    UserBlock::Text { text } => text.clone(),
                    UserBlock::Image { mime_type, .. } => {
                        format!("[An image ({mime_type}) was here; it is not shown.]")
                    }
                    UserBlock::File { mime_type, filename, .. } => {
                        crate::text::file_note(mime_type, filename.as_deref(), false)
                    }
                })
                .map(|text| UserBlock::Text { text })
                .collect();
            Message::User {
                content: UserContent::Blocks(texts),
                timestamp: *timestamp,
                sender: sender.clone(),
                channel: channel.clone(),
            }
        }
        Message::Assistant { content, timestamp, model, stop_reason, usage } => Message::Assistant {
            content: content
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::Text { text } => Some(AssistantBlock::Text { text: text.clone() }),
                    AssistantBlock::Thinking { .. } => None,
                    AssistantBlock::ToolCall { name, arguments, .. } => Some(AssistantBlock::Text {
                        text: format!("[Tool call: {name} {}]", cut(&arguments.to_string())),
                    }),
                    // Only the words of a provider's own blocks.
                    AssistantBlock::Native { block, .. } => {
                        super::native::plain_text(block).map(|t| AssistantBlock::Text { text: t.to_owned() })
                    }
                })
                .collect(),
            timestamp: *timestamp,
            model: model.clone(),
            stop_reason: stop_reason.clone(),
            usage: *usage,
        },
        Message::ToolResult { tool_name, content, is_error, timestamp, .. } => {
            let text: Vec<&str> = content.iter().map(|ResultBlock::Text { text }| text.as_str()).collect();
            let outcome = if *is_error { "error" } else { "result" };
            Message::user_text(format!("[Tool {outcome} of {tool_name}: {}]", cut(&text.join("\n"))), *timestamp)
        }
    };
    conform(strict)
}

#[cfg(test)]
mod tests;
