//! OpenAI-compatible chat completions (`POST {base}/chat/completions`), for
//! OpenAI itself and the many servers that speak its format.

use super::{usage_of as usage, ChatRequest, LlmError, LlmReply, StopReason};
use crate::config::LlmConfig;
use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};
use serde_json::{json, Value};

pub fn encode(cfg: &LlmConfig, req: &ChatRequest<'_>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": req.system})];
    for m in req.messages {
        match m {
            Message::User { content: UserContent::Text(t), .. } => {
                messages.push(json!({"role": "user", "content": t}));
            }
            Message::User { content: UserContent::Blocks(blocks), .. } => {
                let parts: Vec<Value> = blocks
                    .iter()
                    .enumerate()
                    .map(|(i, b)| match b {
                        UserBlock::Text { text } => json!({"type": "text", "text": text}),
                        UserBlock::Image { mime_type, r2_key } => match req.media.get(r2_key) {
                            Some(bytes) => json!({"type": "image_url", "image_url": {
                                "url": format!("data:{mime_type};base64,{}", crate::prompt::base64(bytes))}}),
                            None => json!({"type": "text", "text": format!("[image {r2_key} is not available]")}),
                        },
                        UserBlock::File { mime_type, filename, .. } => {
                            let note = crate::prompt::file_note(mime_type, filename.as_deref(), crate::media::transcript_follows(blocks, i));
                            json!({"type": "text", "text": note})
                        }
                    })
                    .collect();
                messages.push(json!({"role": "user", "content": parts}));
            }
            Message::Assistant { content, .. } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::ToolCall { id, name, arguments } => Some(json!({
                            "id": id, "type": "function",
                            "function": {"name": name, "arguments": arguments.to_string()}})),
                        _ => None,
                    })
                    .collect();
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text.join("\n")) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
            Message::ToolResult { tool_call_id, content, .. } => {
                let text: Vec<&str> = content.iter().map(|ResultBlock::Text { text }| text.as_str()).collect();
                messages.push(json!({"role": "tool", "tool_call_id": tool_call_id, "content": text.join("\n")}));
            }
        }
    }
    if let Some(extra) = req.appended_user {
        messages.push(json!({"role": "user", "content": extra}));
    }
    let mut body = json!({
        "model": cfg.model,
        "max_tokens": cfg.max_tokens,
        "messages": messages,
    });
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect(),
        );
    }
    body
}

pub fn decode(body: &Value) -> Result<LlmReply, LlmError> {
    let choice = body["choices"]
        .get(0)
        .ok_or_else(|| LlmError::Decode("no choices".into()))?;
    let msg = &choice["message"];
    let mut blocks = Vec::new();
    if let Some(t) = msg["content"].as_str() {
        if !t.is_empty() {
            blocks.push(AssistantBlock::Text { text: t.to_owned() });
        }
    }
    if let Some(calls) = msg["tool_calls"].as_array() {
        for c in calls {
            let raw = c["function"]["arguments"].as_str().unwrap_or("{}");
            // A model that emits broken JSON still gets a tool result telling it so.
            let arguments = serde_json::from_str(raw).unwrap_or_else(|_| json!({"_unparsed": raw}));
            blocks.push(AssistantBlock::ToolCall {
                id: c["id"].as_str().unwrap_or("").to_owned(),
                name: c["function"]["name"].as_str().unwrap_or("").to_owned(),
                arguments,
            });
        }
    }
    let has_calls = blocks.iter().any(|b| matches!(b, AssistantBlock::ToolCall { .. }));
    let stop = match choice["finish_reason"].as_str() {
        _ if has_calls => StopReason::ToolUse,
        Some("stop") => StopReason::Stop,
        Some("length") => StopReason::Length,
        _ => StopReason::Other,
    };
    let u = &body["usage"];
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0).min(prompt);
    Ok(LlmReply {
        blocks,
        stop,
        usage: usage(prompt - cached, u["completion_tokens"].as_u64().unwrap_or(0), cached, 0),
        model: body["model"].as_str().unwrap_or("").to_owned(),
    })
}
