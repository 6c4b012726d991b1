//! OpenAI-compatible chat completions (`POST {base}/chat/completions`), for
//! OpenAI itself and the many servers that speak its format.

use super::wire::{json_string, Fragment};
use super::{ChatRequest, Hydrated, LlmError, LlmReply, StopReason};
use crate::settings::LlmConfig;
use r2_layout::Usage;
use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};
use serde_json::{json, Value};
use std::rc::Rc;

/// One history message as OpenAI chat messages (one each; each serialized),
/// once it follows the providers' rules ([`super::rules::wire_form`]).
pub fn fragment(m: &Message, media: &Hydrated) -> Fragment {
    let m = super::rules::wire_form(m);
    let mut parts: Vec<Value> = Vec::with_capacity(1);
    match &*m {
        Message::User { content: UserContent::Text(t), .. } => {
            parts.push(json!({"role": "user", "content": t}));
        }
        Message::User { content: UserContent::Blocks(blocks), .. } => {
            let content: Vec<Value> = blocks
                .iter()
                .enumerate()
                .map(|(i, b)| match b {
                    UserBlock::Text { text } => json!({"type": "text", "text": text}),
                    UserBlock::Image { mime_type, r2_key } => match media.get(r2_key) {
                        Some(bytes) => json!({"type": "image_url", "image_url": {
                            "url": format!("data:{mime_type};base64,{}", crate::text::base64(bytes))}}),
                        None => json!({"type": "text", "text": format!("[image {r2_key} is not available]")}),
                    },
                    UserBlock::File { mime_type, filename, .. } => {
                        let note = crate::text::file_note(
                            mime_type,
                            filename.as_deref(),
                            crate::text::transcript_follows(blocks, i),
                        );
                        json!({"type": "text", "text": note})
                    }
                })
                .collect();
            parts.push(json!({"role": "user", "content": content}));
        }
        Message::Assistant { content, .. } => {
            let text: Vec<&str> = content.iter().filter_map(AssistantBlock::visible_text).collect();
            let calls: Vec<Value> = content
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::ToolCall { id, name, arguments } => Some(json!({
                        "id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}})),
                    _ => None,
                })
                .collect();
            // `null` content is only valid beside tool calls: an empty
            // reply kept in the history must not make every later request a 400.
            let content = match (text.is_empty(), calls.is_empty()) {
                (false, _) => json!(text.join("\n")),
                (true, false) => Value::Null,
                (true, true) => json!(""),
            };
            let mut msg = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            parts.push(msg);
        }
        Message::ToolResult { tool_call_id, content, .. } => {
            let text: Vec<&str> = content.iter().map(|ResultBlock::Text { text }| text.as_str()).collect();
            parts.push(json!({"role": "tool", "tool_call_id": tool_call_id, "content": text.join("\n")}));
        }
    }
    Fragment { role: "", parts: parts.iter().map(Value::to_string).collect() }
}

/// The request body, from the fragments of `req.messages` (in order).
pub fn encode_body(cfg: &LlmConfig, req: &ChatRequest<'_>, fragments: &[Rc<Fragment>]) -> Vec<u8> {
    let mut out = String::with_capacity(
        fragments.iter().map(|f| f.parts.iter().map(|p| p.len() + 1).sum::<usize>()).sum::<usize>()
            + req.system.len()
            + 4096,
    );
    out.push_str("{\"model\":");
    out.push_str(&json_string(&cfg.model));
    out.push_str(",\"");
    out.push_str(cfg.max_tokens_param.name());
    out.push_str("\":");
    out.push_str(&cfg.max_tokens.to_string());
    out.push_str(",\"messages\":[");
    out.push_str(&json!({"role": "system", "content": req.system}).to_string());
    for part in fragments.iter().flat_map(|f| f.parts.iter()) {
        out.push(',');
        out.push_str(part);
    }
    if let Some(extra) = req.appended_user {
        out.push(',');
        out.push_str(&json!({"role": "user", "content": extra}).to_string());
    }
    out.push(']');
    let tools = super::native::openai_tools(req.tools);
    if tools.as_array().is_some_and(|t| !t.is_empty()) {
        out.push_str(",\"tools\":");
        out.push_str(&tools.to_string());
    }
    out.push('}');
    out.into_bytes()
}

/// The request body as JSON (tests read what would be sent).
pub fn encode(cfg: &LlmConfig, req: &ChatRequest<'_>) -> Value {
    let fragments = super::wire::fragments_once(req.messages, |m| fragment(m, req.media));
    hearth_json::from_slice(&encode_body(cfg, req, &fragments)).unwrap_or(Value::Null)
}

pub fn decode(body: &Value) -> Result<LlmReply, LlmError> {
    let choice = body["choices"].get(0).ok_or_else(|| LlmError::Decode("no choices".into()))?;
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
            // Broken JSON is kept for the tool to report; no arguments (some
            // servers send "") are `{}` (see `rules::tool_input`).
            let arguments = super::rules::tool_input(&Value::String(raw.to_owned())).into_owned();
            blocks.push(AssistantBlock::ToolCall {
                id: c["id"].as_str().unwrap_or("").to_owned(),
                name: c["function"]["name"].as_str().unwrap_or("").to_owned(),
                arguments,
            });
        }
    }
    // A refusal comes as `refusal` text with `content: null`; it is what the
    // model said, so it is kept as its text.
    let refusal = msg["refusal"].as_str().filter(|r| !r.trim().is_empty());
    if let Some(r) = refusal {
        blocks.push(AssistantBlock::Text { text: r.to_owned() });
    }
    let has_calls = blocks.iter().any(|b| matches!(b, AssistantBlock::ToolCall { .. }));
    let stop = match choice["finish_reason"].as_str() {
        _ if refusal.is_some() => StopReason::Refusal,
        Some("content_filter") => StopReason::Refusal,
        // Cut while writing a call: the call is incomplete (see the turn).
        Some("length") => StopReason::Length,
        _ if has_calls => StopReason::ToolUse,
        Some("stop") => StopReason::Stop,
        _ => StopReason::Other,
    };
    if stop == StopReason::Refusal {
        blocks.retain(|b| !matches!(b, AssistantBlock::ToolCall { .. }));
    }
    let u = &body["usage"];
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0).min(prompt);
    Ok(LlmReply {
        blocks,
        stop,
        usage: Usage::new(prompt - cached, u["completion_tokens"].as_u64().unwrap_or(0), cached, 0),
        model: body["model"].as_str().unwrap_or("").to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Hydrated;
    use crate::toolkit::ToolSpec;
    use r2_layout::Usage;

    fn cfg() -> LlmConfig {
        crate::testing::llm_config(&[("LLM_PROVIDER", "openai"), ("LLM_MODEL", "gpt-test")])
    }

    fn assistant(content: Vec<AssistantBlock>) -> Message {
        Message::Assistant { content, timestamp: 0, model: None, stop_reason: None, usage: None::<Usage> }
    }

    #[test]
    fn encodes_a_tool_round_as_chat_completions() {
        let messages = vec![
            Message::User {
                content: UserContent::Text("read TOOLS.md".into()),
                sender: None,
                channel: None,
                timestamp: 0,
            },
            assistant(vec![AssistantBlock::ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "TOOLS.md"}),
            }]),
            Message::ToolResult {
                tool_call_id: "call_1".into(),
                tool_name: "read_file".into(),
                content: vec![ResultBlock::Text { text: "notes".into() }],
                is_error: false,
                timestamp: 0,
            },
            // An empty reply kept in the history.
            assistant(vec![]),
        ];
        let tools = [ToolSpec {
            name: "read_file".into(),
            description: "reads".into(),
            input_schema: json!({"type": "object"}),
            native: None,
        }];
        let media = Hydrated::new();
        let req = ChatRequest {
            system: "SYS",
            messages: &messages,
            tools: &tools,
            media: &media,
            appended_user: Some("summarise"),
            memo: None,
            stamps: &[],
            prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
        };
        let body = encode(&cfg(), &req);
        assert_eq!(body["model"], "gpt-test");
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "SYS"}));
        assert_eq!(m[1], json!({"role": "user", "content": "read TOOLS.md"}));
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(
            m[2]["tool_calls"][0]["function"],
            json!({"name": "read_file", "arguments": "{\"path\":\"TOOLS.md\"}"})
        );
        assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "call_1", "content": "notes"}));
        assert_eq!(
            m[4],
            json!({"role": "assistant", "content": crate::llm::rules::EMPTY_REPLY}),
            "never null (nor blank) without tool calls"
        );
        assert_eq!(m[5], json!({"role": "user", "content": "summarise"}));
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "function": {"name": "read_file", "description": "reads", "parameters": {"type": "object"}}})
        );
    }

    #[test]
    fn images_are_data_urls_and_missing_ones_a_note() {
        let messages = vec![Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/jpeg".into(), r2_key: "media/a.jpg".into() },
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/gone.png".into() },
                UserBlock::Text { text: "what is this?".into() },
            ]),
            sender: None,
            channel: None,
            timestamp: 0,
        }];
        let mut media = Hydrated::new();
        media.insert("media/a.jpg".into(), std::rc::Rc::new(vec![0xff, 0xd8, 0xff]));
        let req = ChatRequest {
            system: "S",
            messages: &messages,
            tools: &[],
            media: &media,
            appended_user: None,
            memo: None,
            stamps: &[],
            prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
        };
        let body = encode(&cfg(), &req);
        let parts = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(parts[0], json!({"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}));
        assert_eq!(parts[1]["type"], "text");
        assert!(parts[1]["text"].as_str().unwrap().contains("media/gone.png"));
        assert_eq!(parts[2], json!({"type": "text", "text": "what is this?"}));
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn decodes_text_tool_calls_and_usage() {
        let reply = decode(&json!({
            "model": "gpt-test-2024",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"A.md\"}"}},
                    {"id": "call_10", "type": "function", "function": {"name": "read_file", "arguments": "{broken"}}
                ]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 40}}
        }))
        .unwrap();
        assert_eq!(reply.stop, StopReason::ToolUse);
        let calls: Vec<_> = reply.tool_calls().collect();
        assert_eq!(calls[0], ("call_9", "read_file", &json!({"path": "A.md"})));
        assert_eq!(calls[1].2, &json!({"_unparsed": "{broken"}));
        assert_eq!(
            (reply.usage.input, reply.usage.cache_read, reply.usage.output, reply.usage.total_tokens),
            (60, 40, 10, 110)
        );
        assert_eq!(reply.model, "gpt-test-2024");

        let text = decode(&json!({"choices": [{"finish_reason": "length", "message": {"content": "cut"}}],
            "usage": {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 99}}}))
        .unwrap();
        assert_eq!((text.text().as_str(), text.stop), ("cut", StopReason::Length));
        assert_eq!(text.usage.input, 0, "cached never exceeds the prompt");
        assert!(decode(&json!({"choices": []})).is_err());
        assert!(decode(&json!({"error": {"message": "x"}})).is_err());
    }

    fn fixture(name: &str) -> Value {
        let path = format!("{}/../tests/fixtures/real-world/llm/openai/{name}", env!("CARGO_MANIFEST_DIR"));
        hearth_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn real_bodies_refusal_cut_and_calls() {
        // content null + refusal text (openai-python's recorded response).
        let r = decode(&fixture("chat-refusal.json")).unwrap();
        assert_eq!(r.stop, StopReason::Refusal);
        assert_eq!(r.text(), "I'm very sorry, but I can't assist with that.");
        let r = decode(&fixture("chat-finish-length.json")).unwrap();
        assert_eq!((r.stop, r.text().as_str()), (StopReason::Length, "{\""));
        let r = decode(&fixture("chat-tool-calls.json")).unwrap();
        assert_eq!(r.stop, StopReason::ToolUse);
        assert!(r.tool_calls().all(|(id, _, args)| id.starts_with("call_") && args.is_object()));
        // A server that sends no id and "" arguments (pi#4854, brave#56601).
        let r = decode(&json!({"choices": [{"finish_reason": "tool_calls", "message": {"content": null,
            "tool_calls": [{"id": "", "type": "function", "function": {"name": "who_am_i", "arguments": ""}}]}}]}))
        .unwrap();
        assert_eq!(r.tool_calls().next(), Some(("", "who_am_i", &json!({}))));
    }

    #[test]
    fn the_output_limit_is_sent_under_the_name_the_model_takes() {
        let body = |model: &str| {
            let cfg = crate::testing::llm_config(&[("LLM_PROVIDER", "openai"), ("LLM_MODEL", model)]);
            let messages = [Message::user_text("hi", 0)];
            let media = Hydrated::new();
            let req = ChatRequest {
                system: "S",
                messages: &messages,
                tools: &[],
                media: &media,
                appended_user: None,
                memo: None,
                stamps: &[],
                prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
            };
            encode(&cfg, &req)
        };
        let old = body("gpt-4o-mini");
        assert_eq!((old["max_tokens"].as_u64(), old.get("max_completion_tokens")), (Some(4096), None));
        let new = body("gpt-5-mini");
        assert_eq!((new.get("max_tokens"), new["max_completion_tokens"].as_u64()), (None, Some(4096)));
    }
}
