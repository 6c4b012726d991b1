//! Anthropic Messages API encoding (`POST {base}/v1/messages`).
//!
//! Prompt caching: tools come first and the system prompt second in
//! Anthropic's cache order, so one `cache_control` breakpoint on the system
//! block caches both. A second breakpoint sits on the last block of the
//! history, so the conversation itself is cached too: the next turn (or a
//! compaction call, whose instruction is appended after it) finds the previous
//! call's breakpoint by Anthropic's prefix lookback and pays cache-read prices
//! for everything before its new messages. The breakpoint moves with the end
//! of the history; `cache_control` does not take part in the prefix match, and
//! the history is otherwise encoded deterministically (same input, same bytes).

use super::{ChatRequest, LlmError, LlmReply, StopReason};
use crate::settings::LlmConfig;
use r2_layout::Usage;
use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};
use serde_json::{json, Map, Value};

pub fn encode(cfg: &LlmConfig, req: &ChatRequest<'_>) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len() + 1);
    for m in req.messages {
        let (role, blocks) = match m {
            Message::User { content, .. } => ("user", user_blocks(content, req)),
            Message::Assistant { content, .. } => ("assistant", assistant_blocks(content)),
            Message::ToolResult { tool_call_id, content, is_error, .. } => {
                let text: Vec<&str> = content.iter().map(|ResultBlock::Text { text }| text.as_str()).collect();
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": text.join("\n")});
                if *is_error {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        push_merged(&mut messages, role, blocks);
    }
    mark_cache_breakpoint(&mut messages);
    if let Some(extra) = req.appended_user {
        push_merged(&mut messages, "user", vec![json!({"type": "text", "text": extra})]);
    }
    // The API wants the conversation to open with the user.
    if messages.first().and_then(|m| m["role"].as_str()) == Some("assistant") {
        messages.insert(0, json!({"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]}));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(cfg.model));
    body.insert("max_tokens".into(), json!(cfg.max_tokens));
    body.insert("system".into(), json!([{"type": "text", "text": req.system, "cache_control": {"type": "ephemeral"}}]));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("messages".into(), Value::Array(messages));
    Value::Object(body)
}

/// Puts the conversation's `cache_control` breakpoint on the last block of
/// the last message (Anthropic allows four; this is the second).
fn mark_cache_breakpoint(messages: &mut [Value]) {
    let last_block = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
        .and_then(Value::as_object_mut);
    if let Some(block) = last_block {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// Consecutive messages of one role are merged: tool results of one round
/// travel together, and a user message after a failed turn joins the previous.
fn push_merged(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if let Some(last) = messages.last_mut() {
        if last["role"] == role {
            if let Some(arr) = last["content"].as_array_mut() {
                arr.extend(blocks);
                return;
            }
        }
    }
    messages.push(json!({"role": role, "content": blocks}));
}

fn user_blocks(content: &UserContent, req: &ChatRequest<'_>) -> Vec<Value> {
    match content {
        UserContent::Text(t) => vec![json!({"type": "text", "text": t})],
        UserContent::Blocks(blocks) => blocks
            .iter()
            .enumerate()
            .map(|(i, b)| match b {
                UserBlock::Text { text } => json!({"type": "text", "text": text}),
                UserBlock::Image { mime_type, r2_key } => match req.media.get(r2_key) {
                    Some(bytes) => json!({"type": "image", "source": {
                        "type": "base64", "media_type": mime_type, "data": crate::text::base64(bytes)}}),
                    None => json!({"type": "text", "text": format!("[image {r2_key} is not available]")}),
                },
                UserBlock::File { mime_type, r2_key, filename } => match req.media.get(r2_key) {
                    Some(bytes) if mime_type == "application/pdf" => json!({"type": "document", "source": {
                        "type": "base64", "media_type": mime_type, "data": crate::text::base64(bytes)}}),
                    _ => json!({"type": "text", "text": crate::text::file_note(
                        mime_type,
                        filename.as_deref(),
                        crate::text::transcript_follows(blocks, i),
                    )}),
                },
            })
            .collect(),
    }
}

fn assistant_blocks(content: &[AssistantBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
            AssistantBlock::ToolCall { id, name, arguments } => {
                Some(json!({"type": "tool_use", "id": id, "name": name, "input": arguments}))
            }
            _ => None,
        })
        .collect()
}

pub fn decode(body: &Value) -> Result<LlmReply, LlmError> {
    let content = body["content"].as_array().ok_or_else(|| LlmError::Decode("no content array".into()))?;
    let mut blocks = Vec::new();
    for b in content {
        match b["type"].as_str() {
            Some("text") => blocks.push(AssistantBlock::Text { text: b["text"].as_str().unwrap_or("").to_owned() }),
            Some("thinking") => {
                blocks.push(AssistantBlock::Thinking { thinking: b["thinking"].as_str().unwrap_or("").to_owned() })
            }
            Some("tool_use") => blocks.push(AssistantBlock::ToolCall {
                id: b["id"].as_str().unwrap_or("").to_owned(),
                name: b["name"].as_str().unwrap_or("").to_owned(),
                arguments: b.get("input").cloned().unwrap_or(Value::Null),
            }),
            _ => {}
        }
    }
    let stop = match body["stop_reason"].as_str() {
        Some("end_turn") | Some("stop_sequence") => StopReason::Stop,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::Length,
        _ => StopReason::Other,
    };
    let u = &body["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Ok(LlmReply {
        blocks,
        stop,
        usage: Usage::new(
            n("input_tokens"),
            n("output_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        ),
        model: body["model"].as_str().unwrap_or("").to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Hydrated;

    fn cfg() -> LlmConfig {
        crate::testing::llm_config(&[("LLM_API_KEY", "k")])
    }

    fn encode_with(history: &[Message], appended: Option<&str>) -> Value {
        let media = Hydrated::new();
        encode(
            &cfg(),
            &ChatRequest { system: "sys", messages: history, tools: &[], media: &media, appended_user: appended },
        )
    }

    fn breakpoints(body: &Value) -> Vec<String> {
        let mut at = Vec::new();
        for (i, m) in body["messages"].as_array().into_iter().flatten().enumerate() {
            for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
                if b.get("cache_control").is_some() {
                    at.push(format!("{i}.{j}"));
                }
            }
        }
        at
    }

    #[test]
    fn the_conversation_is_cached_up_to_its_last_block() {
        let history = [Message::user_text("one", 1), Message::user_text("two", 2)];
        let body = encode_with(&history, None);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        // Both user texts merge into one message; the breakpoint is on the second.
        assert_eq!(breakpoints(&body), ["0.1"]);
    }

    #[test]
    fn an_appended_instruction_comes_after_the_breakpoint() {
        let history = [Message::user_text("one", 1)];
        let body = encode_with(&history, Some("summarise"));
        let blocks = body["messages"][0]["content"].as_array().cloned().unwrap_or_default();
        assert_eq!(blocks.len(), 2);
        assert_eq!(breakpoints(&body), ["0.0"], "the compaction instruction itself is not cached");
    }

    #[test]
    fn the_next_turn_repeats_the_previous_request_apart_from_the_breakpoint() {
        let first = [Message::user_text("one", 1)];
        let mut second = first.to_vec();
        second.push(Message::user_text("two", 2));
        let strip = |mut v: Value| {
            for m in v["messages"].as_array_mut().into_iter().flatten() {
                for b in m["content"].as_array_mut().into_iter().flatten() {
                    if let Some(o) = b.as_object_mut() {
                        o.remove("cache_control");
                    }
                }
            }
            v
        };
        let a = strip(encode_with(&first, None));
        let b = strip(encode_with(&second, None));
        assert_eq!(a["messages"][0]["content"][0], b["messages"][0]["content"][0]);
        assert_eq!(a["system"], b["system"]);
    }
}
