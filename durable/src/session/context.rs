//! Context budgeting: a rough token count of a request, and the last-resort
//! trim that shapes one request to fit the model's window.

use crate::llm::rules::pair_tool_calls;
use crate::llm::Hydrated;
use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};

/// Put first when older messages are left out of a request.
pub const TRIM_NOTE: &str =
    "[Note: earlier messages of this conversation were left out to fit the model's context window.]";

/// Replaces an attachment left out of a request that would not fit.
pub const MEDIA_CUT_NOTE: &str = "[An attachment is left out here to fit the model's context window.]";

/// Tokens an image adds to a request (a large image costs about this much on
/// either provider).
pub const IMAGE_TOKENS: u64 = 1_600;
/// Most tokens a document (PDF) is counted for.
pub const DOCUMENT_MAX_TOKENS: u64 = 100_000;

/// Tokens a document of `bytes` is counted for (about a twelfth of its size,
/// capped).
pub fn document_tokens(bytes: u64) -> u64 {
    (bytes / 12).clamp(1, DOCUMENT_MAX_TOKENS)
}

/// Tokens an attachment adds when it is sent as media in this request
/// (`media`: what the call hydrated); 0 for a reference sent as a text note.
fn media_tokens(block: &UserBlock, media: &Hydrated) -> u64 {
    match block {
        UserBlock::Image { r2_key, .. } if media.contains_key(r2_key) => IMAGE_TOKENS,
        UserBlock::File { r2_key, .. } => media.get(r2_key).map_or(0, |bytes| document_tokens(bytes.len() as u64)),
        _ => 0,
    }
}

/// The tokens of a message's text (4 bytes of its JSON a token): the part of
/// [`message_tokens`] that does not depend on the call's media, so it can be
/// kept per message ([`super::history::Replay`]).
pub fn text_tokens(m: &Message) -> u64 {
    (m.json_len() as u64).div_ceil(4)
}

/// The tokens the attachments of `m` add in this call.
fn attached_tokens(m: &Message, media: &Hydrated) -> u64 {
    match m {
        Message::User { content: UserContent::Blocks(blocks), .. } => {
            blocks.iter().map(|b| media_tokens(b, media)).sum()
        }
        _ => 0,
    }
}

/// A rough token count of one message (4 bytes a token, plus its media).
pub fn message_tokens(m: &Message, media: &Hydrated) -> u64 {
    text_tokens(m) + attached_tokens(m, media)
}

/// A rough token count of a request, enough to decide compaction and trims.
pub fn estimate_tokens(system: &str, messages: &[Message], tools_json_len: usize, media: &Hydrated) -> u64 {
    estimate_known(system, messages, messages.iter().map(text_tokens).sum(), tools_json_len, media)
}

/// [`estimate_tokens`] with the text tokens of `messages` already known
/// (their sum of [`text_tokens`]): what is left to count is their media.
pub fn estimate_known(system: &str, messages: &[Message], text: u64, tools_json_len: usize, media: &Hydrated) -> u64 {
    ((system.len() + tools_json_len) as u64).div_ceil(4)
        + text
        + if media.is_empty() { 0 } else { messages.iter().map(|m| attached_tokens(m, media)).sum::<u64>() }
}

/// Appended where a message's text was cut.
fn cut_note(chars: usize) -> String {
    format!("\n[… {chars} characters cut here to fit the model's context window]")
}

/// Last resort when even a compacted history does not fit: shapes this
/// request (not the history) to fit `budget`. The oldest messages are left out
/// (with [`TRIM_NOTE`] first), the kept part starts at a user message and has
/// no tool result without its call; if the newest exchange alone is still too
/// large, attachments are left out and the largest texts cut, each with a
/// visible note. One pass, no retry.
pub fn trim_to_fit(
    messages: &[Message],
    system: &str,
    tools_len: usize,
    budget: u64,
    media: &Hydrated,
) -> Vec<Message> {
    let fixed = estimate_tokens(system, &[], tools_len, media);
    let costs: Vec<u64> = messages.iter().map(|m| message_tokens(m, media)).collect();
    if fixed + costs.iter().sum::<u64>() <= budget {
        return messages.to_vec();
    }
    let note = Message::user_text(TRIM_NOTE, messages.first().map(Message::timestamp).unwrap_or(0));
    let note_cost = message_tokens(&note, media);
    let mut suffix = vec![0u64; messages.len() + 1];
    for i in (0..messages.len()).rev() {
        suffix[i] = suffix[i + 1] + costs[i];
    }
    let mut user_starts = (1..messages.len()).filter(|&i| matches!(messages[i], Message::User { .. }));
    let start = user_starts
        .clone()
        .find(|&i| fixed + note_cost + suffix[i] <= budget)
        .or_else(|| user_starts.next_back())
        .unwrap_or(0);
    let mut out = Vec::with_capacity(messages.len() - start + 1);
    if start > 0 {
        out.push(note);
    }
    out.extend_from_slice(&messages[start..]);
    let mut out = pair_tool_calls(out);
    shrink_to_fit(&mut out, fixed, budget, media);
    out
}

/// Cuts the largest messages until the request fits (bounded: each step
/// removes an attachment or cuts a text; it stops when nothing is left to cut).
fn shrink_to_fit(out: &mut [Message], fixed: u64, budget: u64, media: &Hydrated) {
    for _ in 0..4 * out.len() + 8 {
        let costs: Vec<u64> = out.iter().map(|m| message_tokens(m, media)).collect();
        let total = fixed + costs.iter().sum::<u64>();
        if total <= budget {
            return;
        }
        let mut largest_first: Vec<usize> = (0..out.len()).collect();
        crate::order::sort_by_key(&mut largest_first, |&i| std::cmp::Reverse(costs[i]));
        if !largest_first.into_iter().any(|i| shrink_message(&mut out[i], total - budget, media)) {
            return;
        }
    }
}

/// Texts shorter than this are not worth cutting (the note would be as long).
const MIN_CUTTABLE_BYTES: usize = 256;

/// Makes one message smaller by about `excess` tokens: an attachment becomes
/// a note, else the longest text is cut (its start kept) or oversized tool
/// call arguments are replaced. `false` when there is nothing to cut.
fn shrink_message(m: &mut Message, excess: u64, media: &Hydrated) -> bool {
    if let Message::User { content: UserContent::Blocks(blocks), .. } = m {
        if let Some(i) = blocks.iter().position(|b| media_tokens(b, media) > 0) {
            blocks[i] = UserBlock::Text { text: MEDIA_CUT_NOTE.into() };
            return true;
        }
    }
    if let Message::Assistant { content, .. } = m {
        let args_len = |b: &AssistantBlock| match b {
            AssistantBlock::ToolCall { arguments, .. } => arguments.to_string().len(),
            _ => 0,
        };
        let text_len = |b: &AssistantBlock| match b {
            AssistantBlock::Text { text } => text.len(),
            _ => 0,
        };
        let longest_args = content.iter().map(args_len).max().unwrap_or(0);
        if longest_args >= MIN_CUTTABLE_BYTES && longest_args > content.iter().map(text_len).max().unwrap_or(0) {
            if let Some(AssistantBlock::ToolCall { arguments, .. }) = content.iter_mut().max_by_key(|b| args_len(b)) {
                *arguments = serde_json::json!({"note": "arguments left out to fit the model's context window"});
                return true;
            }
        }
    }
    let texts: Vec<&mut String> = match m {
        Message::User { content: UserContent::Text(t), .. } => vec![t],
        Message::User { content: UserContent::Blocks(blocks), .. } => blocks
            .iter_mut()
            .filter_map(|b| match b {
                UserBlock::Text { text } => Some(text),
                _ => None,
            })
            .collect(),
        Message::Assistant { content, .. } => content
            .iter_mut()
            .filter_map(|b| match b {
                AssistantBlock::Text { text } | AssistantBlock::Thinking { thinking: text } => Some(text),
                _ => None,
            })
            .collect(),
        Message::ToolResult { content, .. } => content.iter_mut().map(|ResultBlock::Text { text }| text).collect(),
    };
    let Some(text) = texts.into_iter().max_by_key(|t| t.len()) else { return false };
    if text.len() < MIN_CUTTABLE_BYTES {
        return false;
    }
    // Cutting raw bytes removes at least as many JSON bytes (escapes only add).
    let cut = (excess as usize).saturating_mul(4).saturating_add(cut_note(0).len() + 16);
    let mut keep = text.len().saturating_sub(cut);
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    let removed = text[keep..].chars().count();
    text.truncate(keep);
    text.push_str(&cut_note(removed));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(content: Vec<AssistantBlock>, timestamp: i64) -> Message {
        Message::Assistant { content, timestamp, model: None, stop_reason: None, usage: None }
    }

    fn call(id: &str) -> AssistantBlock {
        AssistantBlock::ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "x"}),
        }
    }

    #[test]
    fn media_counts_in_the_estimate() {
        let img = Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                UserBlock::File { mime_type: "application/pdf".into(), r2_key: "media/k/b.pdf".into(), filename: None },
            ]),
            sender: None,
            channel: None,
            timestamp: 0,
        };
        let none = Hydrated::new();
        let text_only = message_tokens(&img, &none);
        assert!(text_only < 100, "references sent as notes are small: {text_only}");
        let mut media = Hydrated::new();
        media.insert("media/k/a.png".into(), std::rc::Rc::new(vec![0; 10]));
        media.insert("media/k/b.pdf".into(), std::rc::Rc::new(vec![0; 120_000]));
        assert_eq!(message_tokens(&img, &media), text_only + IMAGE_TOKENS + 10_000);
        assert_eq!(document_tokens(u64::MAX), DOCUMENT_MAX_TOKENS);
    }

    #[test]
    fn trimming_leaves_a_note_and_fits() {
        let none = Hydrated::new();
        let msgs: Vec<Message> = (0..6).map(|i| Message::user_text("y".repeat(1000), i)).collect();
        let out = trim_to_fit(&msgs, "", 0, 600, &none);
        assert!(out[0].text().contains("left out"));
        assert_eq!(out.len(), 3, "note + the two newest messages that fit");
        assert!(estimate_tokens("", &out, 0, &none) <= 600);
        assert_eq!(trim_to_fit(&msgs, "", 0, 100_000, &none).len(), 6);
    }

    #[test]
    fn a_single_oversize_message_is_cut_with_a_note() {
        let none = Hydrated::new();
        let msgs = vec![Message::user_text("z".repeat(40_000), 1)];
        let out = trim_to_fit(&msgs, &"s".repeat(2_000), 400, 3_000, &none);
        assert_eq!(out.len(), 1);
        assert!(estimate_tokens(&"s".repeat(2_000), &out, 400, &none) <= 3_000);
        let text = out[0].text();
        assert!(
            text.starts_with("zzz") && text.contains("characters cut here to fit"),
            "{}",
            &text[text.len() - 100..]
        );
    }

    #[test]
    fn a_trim_never_starts_with_a_tool_result() {
        let none = Hydrated::new();
        let big = "w".repeat(4_000);
        let msgs = vec![
            Message::user_text(big.clone(), 1),
            assistant(vec![call("a")], 2),
            Message::ToolResult {
                tool_call_id: "a".into(),
                tool_name: "read_file".into(),
                content: vec![ResultBlock::Text { text: big.clone() }],
                is_error: false,
                timestamp: 3,
            },
            assistant(vec![AssistantBlock::Text { text: "read".into() }], 4),
            Message::user_text("short", 5),
        ];
        let out = trim_to_fit(&msgs, "", 0, 1_500, &none);
        assert!(matches!(&out[0], Message::User { .. }));
        assert!(!out.iter().any(|m| matches!(m, Message::ToolResult { .. })), "the result went with its call");
        assert!(estimate_tokens("", &out, 0, &none) <= 1_500);
        // A huge tool result in the newest exchange is cut, its pairing kept.
        let msgs = vec![msgs[0].clone(), msgs[1].clone(), msgs[2].clone()];
        let out = trim_to_fit(&msgs, "", 0, 800, &none);
        assert!(matches!(&out[0], Message::User { .. }));
        assert!(matches!(out.last(), Some(Message::ToolResult { .. })));
        assert!(estimate_tokens("", &out, 0, &none) <= 800);
    }

    #[test]
    fn an_image_is_left_out_before_text_is_cut() {
        let mut media = Hydrated::new();
        media.insert("media/k/a.png".into(), std::rc::Rc::new(vec![0; 10]));
        let msgs = vec![Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                UserBlock::Text { text: "what is this?".into() },
            ]),
            sender: None,
            channel: None,
            timestamp: 0,
        }];
        let out = trim_to_fit(&msgs, "", 0, 1_000, &media);
        assert!(out[0].text().contains("what is this?") && out[0].text().contains(MEDIA_CUT_NOTE));
    }
}
