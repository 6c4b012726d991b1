//! A conversation's messages as exchanges: what each person said, and the agent's
//! answer, without what the runtime added.
//!
//! A user message starts an exchange; the visible text of the assistant messages
//! after it is its reply. Left out, because nobody said them: the `<system-reminder>`
//! blocks (the time, recalled notes), a compaction summary replayed as a user message,
//! tool calls and tool results, the model's thinking, media bytes (an image or file
//! is a short marker; a voice note's transcript and a photo's caption are text, so they
//! stay). The speaker is the message's sender, or a group line's `[Name]: ` author, or
//! [`UNNAMED_SPEAKER`].

use crate::protocol::memory::Exchange;
use r2_layout::{Message, UserBlock, UserContent};

/// The speaker of a message whose channel gave no name (an owner's old archive).
pub const UNNAMED_SPEAKER: &str = "user";
/// Characters of an exchange's text, and of its reply, that are kept (a pasted
/// document is a long message; its start is what anyone would search for).
pub const MAX_EXCHANGE_CHARS: usize = 8_000;
/// Characters of one batch (an archive's exchanges) sent to the Agent object at most:
/// a day's conversation is far less (sessions reset daily), and a pathological one
/// must not fill the object's 128 MB. What is over is left out, with a log line.
pub const MAX_BATCH_CHARS: usize = 4_000_000;
/// How a replayed compaction summary starts (`session::history::summary_message`).
pub const SUMMARY_PREFIX: &str = "[Summary of our earlier conversation";

/// The exchanges of `messages`, in order.
pub fn exchanges(messages: &[Message]) -> Vec<Exchange> {
    let mut out: Vec<Exchange> = Vec::new();
    for m in messages {
        match m {
            Message::User { content, timestamp, sender, channel } => {
                let text = said(content);
                if text.is_empty() || text.starts_with(SUMMARY_PREFIX) {
                    continue;
                }
                let (speaker, text) = speaker_of(sender.as_deref(), text);
                let channel = channel.clone().unwrap_or_default();
                out.push(Exchange { at: *timestamp, speaker, channel, text: cut(&text), reply: String::new() });
            }
            Message::Assistant { .. } => {
                let text = m.text();
                let text = text.trim();
                let Some(last) = out.last_mut() else { continue };
                if text.is_empty() {
                    continue;
                }
                if !last.reply.is_empty() {
                    last.reply.push('\n');
                }
                last.reply.push_str(text);
                last.reply = cut(&last.reply);
            }
            Message::ToolResult { .. } => {}
        }
    }
    out
}

/// The first exchanges of `found` that fit [`MAX_BATCH_CHARS`], and how many were left out.
pub fn within_batch(mut found: Vec<Exchange>) -> (Vec<Exchange>, usize) {
    let mut total = 0;
    let fits = found
        .iter()
        .take_while(|e| {
            total += e.text.len() + e.reply.len() + e.speaker.len();
            total <= MAX_BATCH_CHARS
        })
        .count();
    let left_out = found.len() - fits;
    found.truncate(fits);
    (found, left_out)
}

/// What a person said in a user message: its text blocks without reminders, media as
/// markers.
fn said(content: &UserContent) -> String {
    match content {
        UserContent::Text(t) => t.trim().to_owned(),
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                UserBlock::Text { text } if crate::text::is_reminder(text) => None,
                UserBlock::Text { text } => Some(text.trim().to_owned()),
                UserBlock::Image { .. } => Some("[image]".to_owned()),
                UserBlock::File { filename: Some(name), .. } => Some(format!("[file {name}]")),
                UserBlock::File { mime_type, .. } => Some(format!("[file {mime_type}]")),
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The speaker, and the text without a group line's `[Name]: ` when that named them.
fn speaker_of(sender: Option<&str>, text: String) -> (String, String) {
    let author = text
        .strip_prefix('[')
        .and_then(|rest| rest.split_once("]: "))
        .filter(|(name, _)| !name.is_empty() && name.chars().count() <= 64 && !name.contains(['[', '\n']));
    match (sender, author) {
        (Some(s), Some((name, rest))) if s == name => (s.to_owned(), rest.to_owned()),
        (Some(s), _) => (s.to_owned(), text),
        (None, Some((name, rest))) => (name.to_owned(), rest.to_owned()),
        (None, None) => (UNNAMED_SPEAKER.to_owned(), text),
    }
}

fn cut(text: &str) -> String {
    crate::text::truncate_chars(text, MAX_EXCHANGE_CHARS)
}

/// The text the index sees for an exchange: the speaker's name is searchable too
/// ("what did Ana say about…").
pub fn indexed_text(e: &Exchange) -> String {
    let mut s = String::with_capacity(e.speaker.len() + e.text.len() + e.reply.len() + 4);
    s.push_str(&e.speaker);
    s.push_str(": ");
    s.push_str(&e.text);
    if !e.reply.is_empty() {
        s.push('\n');
        s.push_str(&e.reply);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2_layout::{AssistantBlock, ResultBlock};

    fn assistant(blocks: Vec<AssistantBlock>, at: i64) -> Message {
        Message::Assistant { content: blocks, timestamp: at, model: None, stop_reason: None, usage: None }
    }

    fn user(blocks: Vec<UserBlock>, at: i64, sender: Option<&str>) -> Message {
        let channel = sender.map(|_| "telegram".to_owned());
        Message::User {
            content: UserContent::Blocks(blocks),
            timestamp: at,
            sender: sender.map(str::to_owned),
            channel,
        }
    }

    fn text(t: &str) -> UserBlock {
        UserBlock::Text { text: t.into() }
    }

    #[test]
    fn reminders_tools_and_thinking_stay_out_transcripts_and_captions_go_in() {
        let messages = vec![
            Message::user_text("[Summary of our earlier conversation, kept in memory]\nWe spoke of tea.", 1),
            user(
                vec![
                    text("<system-reminder>Current time: 2026-11-27 10:00</system-reminder>"),
                    text("<system-reminder>Possibly relevant, from your memory: …</system-reminder>"),
                    UserBlock::Image { mime_type: "image/jpeg".into(), r2_key: "media/k/1.jpg".into() },
                    text("my new bike"),
                ],
                10,
                Some("Ana"),
            ),
            assistant(
                vec![
                    AssistantBlock::Thinking { thinking: "secret plan".into() },
                    AssistantBlock::ToolCall { id: "t1".into(), name: "memory_add".into(), arguments: "{}".into() },
                ],
                11,
            ),
            Message::ToolResult {
                tool_call_id: "t1".into(),
                tool_name: "memory_add".into(),
                content: vec![ResultBlock::Text { text: "{\"ok\":true}".into() }],
                is_error: false,
                timestamp: 12,
            },
            assistant(vec![AssistantBlock::Text { text: "A red one, nice!".into() }], 13),
            user(
                vec![
                    UserBlock::File { mime_type: "audio/ogg".into(), r2_key: "k".into(), filename: None },
                    text("[Transcript of the voice note]: see you at the lake at six"),
                ],
                20,
                None,
            ),
        ];
        let got = exchanges(&messages);
        assert_eq!(got.len(), 2, "{got:?}");
        let first = Exchange {
            at: 10,
            speaker: "Ana".into(),
            channel: "telegram".into(),
            text: "[image]\nmy new bike".into(),
            reply: "A red one, nice!".into(),
        };
        assert_eq!(got[0], first);
        assert_eq!(got[1].speaker, UNNAMED_SPEAKER);
        assert_eq!(got[1].text, "[file audio/ogg]\n[Transcript of the voice note]: see you at the lake at six");
        assert_eq!(got[1].reply, "");
        let all = format!("{got:?}");
        for absent in ["system-reminder", "secret plan", "memory_add", "We spoke of tea"] {
            assert!(!all.contains(absent), "{absent} leaked into {all}");
        }
    }

    #[test]
    fn a_group_line_names_its_author() {
        let got = exchanges(&[
            user(vec![text("[Bo]: who is bringing the cake?")], 1, None),
            user(vec![text("[Ana]: me!")], 2, Some("Ana")),
            user(vec![text("[not a name]: [x]: y")], 3, Some("Cy")),
        ]);
        let who: Vec<(&str, &str)> = got.iter().map(|e| (e.speaker.as_str(), e.text.as_str())).collect();
        assert_eq!(who, [("Bo", "who is bringing the cake?"), ("Ana", "me!"), ("Cy", "[not a name]: [x]: y")]);
    }

    #[test]
    fn a_batch_stays_within_its_budget() {
        let big = |i: i64| Exchange {
            at: i,
            speaker: "A".into(),
            channel: String::new(),
            text: "x".repeat(MAX_EXCHANGE_CHARS),
            reply: String::new(),
        };
        let n = MAX_BATCH_CHARS / MAX_EXCHANGE_CHARS + 10;
        let (kept, left_out) = within_batch((0..n as i64).map(big).collect());
        assert!(kept.len() < n && left_out == n - kept.len(), "{} kept, {left_out} left out", kept.len());
        assert_eq!(within_batch(vec![big(1)]), (vec![big(1)], 0));
    }

    #[test]
    fn long_messages_are_cut() {
        let got = exchanges(&[Message::user_text("x".repeat(MAX_EXCHANGE_CHARS * 2), 1)]);
        assert_eq!(got[0].text.chars().count(), MAX_EXCHANGE_CHARS);
        assert_eq!(
            indexed_text(&Exchange {
                at: 0,
                speaker: "Ana".into(),
                channel: String::new(),
                text: "hi".into(),
                reply: "hello".into()
            }),
            "Ana: hi\nhello"
        );
    }
}
