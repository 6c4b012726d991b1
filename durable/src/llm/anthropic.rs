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

use super::wire::{json_string, Fragment};
use super::{ChatRequest, Hydrated, LlmError, LlmReply, StopReason};
use crate::settings::LlmConfig;
use r2_layout::Usage;
use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};
use serde_json::{json, Value};
use std::rc::Rc;

/// One history message as an Anthropic message fragment: its role and its
/// content blocks (none: the message is left out). The message is first made
/// to follow the providers' rules ([`super::rules::wire_form`]).
pub fn fragment(m: &Message, media: &Hydrated) -> Fragment {
    let m = super::rules::wire_form(m);
    let (role, blocks) = match &*m {
        Message::User { content, .. } => ("user", user_blocks(content, media)),
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
    Fragment { role, parts: blocks.iter().map(Value::to_string).collect() }
}

/// The request body, from the fragments of `req.messages` (in order).
pub fn encode_body(cfg: &LlmConfig, req: &ChatRequest<'_>, fragments: &[Rc<Fragment>]) -> Vec<u8> {
    // Consecutive messages of one role are merged: tool results of one round
    // travel together, and a user message after a failed turn joins the previous.
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::with_capacity(fragments.len() + 1);
    for f in fragments.iter().filter(|f| !f.parts.is_empty()) {
        match groups.last_mut() {
            Some((role, parts)) if *role == f.role => parts.extend(f.parts.iter().map(String::as_str)),
            _ => groups.push((f.role, f.parts.iter().map(String::as_str).collect())),
        }
    }
    // The conversation's breakpoint on its last block (see the module docs);
    // the appended instruction comes after it.
    let breakpoint = groups.last().map(|(_, parts)| (groups.len() - 1, parts.len() - 1));
    let appended = req.appended_user.map(|extra| json!({"type": "text", "text": extra}).to_string());
    if let Some(extra) = &appended {
        match groups.last_mut() {
            Some(("user", parts)) => parts.push(extra),
            _ => groups.push(("user", vec![extra])),
        }
    }
    // The API wants the conversation to open with the user.
    let opener = json!({"type": "text", "text": "(conversation continues)"}).to_string();
    let shift = usize::from(groups.first().is_some_and(|(role, _)| *role == "assistant"));
    if shift == 1 {
        groups.insert(0, ("user", vec![&opener]));
    }
    let breakpoint = breakpoint.map(|(g, p)| (g + shift, p));
    let mut out = String::with_capacity(
        fragments.iter().map(|f| f.parts.iter().map(|p| p.len() + 1).sum::<usize>()).sum::<usize>()
            + req.system.len()
            + 4096,
    );
    out.push_str("{\"model\":");
    out.push_str(&json_string(&cfg.model));
    out.push_str(",\"max_tokens\":");
    out.push_str(&cfg.max_tokens.to_string());
    out.push_str(",\"system\":[{\"type\":\"text\",\"text\":");
    out.push_str(&json_string(req.system));
    out.push_str(",\"cache_control\":");
    out.push_str(req.prefix_ttl.cache_control());
    out.push_str("}]");
    if !req.tools.is_empty() {
        out.push_str(",\"tools\":");
        out.push_str(&super::native::anthropic_tools(req.tools).to_string());
    }
    out.push_str(",\"messages\":[");
    for (g, (role, parts)) in groups.iter().enumerate() {
        if g > 0 {
            out.push(',');
        }
        out.push_str("{\"role\":\"");
        out.push_str(role);
        out.push_str("\",\"content\":[");
        for (p, part) in parts.iter().enumerate() {
            if p > 0 {
                out.push(',');
            }
            match part.strip_suffix('}') {
                // The conversation's breakpoint (Anthropic allows four; this
                // is the second, after the system prompt's).
                Some(open) if breakpoint == Some((g, p)) => {
                    out.push_str(open);
                    out.push_str(",\"cache_control\":{\"type\":\"ephemeral\"}}");
                }
                _ => out.push_str(part),
            }
        }
        out.push_str("]}");
    }
    out.push_str("]}");
    out.into_bytes()
}

/// The request body as JSON (tests read what would be sent).
pub fn encode(cfg: &LlmConfig, req: &ChatRequest<'_>) -> Value {
    let fragments = super::wire::fragments_once(req.messages, |m| fragment(m, req.media));
    hearth_json::from_slice(&encode_body(cfg, req, &fragments)).unwrap_or(Value::Null)
}

fn user_blocks(content: &UserContent, media: &Hydrated) -> Vec<Value> {
    match content {
        UserContent::Text(t) => vec![json!({"type": "text", "text": t})],
        UserContent::Blocks(blocks) => blocks
            .iter()
            .enumerate()
            .map(|(i, b)| match b {
                UserBlock::Text { text } => json!({"type": "text", "text": text}),
                UserBlock::Image { mime_type, r2_key } => match media.get(r2_key) {
                    Some(bytes) => json!({"type": "image", "source": {
                        "type": "base64", "media_type": mime_type, "data": crate::text::base64(bytes)}}),
                    None => json!({"type": "text", "text": format!("[image {r2_key} is not available]")}),
                },
                UserBlock::File { mime_type, r2_key, filename } => match media.get(r2_key) {
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
            AssistantBlock::Native { provider, block } => super::native::to_anthropic(provider, block),
            _ => None,
        })
        .collect()
}

pub fn decode(body: &Value) -> Result<LlmReply, LlmError> {
    let content = body["content"].as_array().ok_or_else(|| LlmError::Decode("no content array".into()))?;
    let mut blocks = Vec::new();
    for b in content {
        if let Some(native) = super::native::from_anthropic(b) {
            blocks.push(native);
            continue;
        }
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
        Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::Length,
        Some("refusal") => StopReason::Refusal,
        Some("pause_turn") => StopReason::Pause,
        _ => StopReason::Other,
    };
    if stop == StopReason::Refusal {
        // A refused message may still carry a tool call: it must not run.
        blocks.retain(|b| !matches!(b, AssistantBlock::ToolCall { .. }));
    }
    let u = &body["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Ok(LlmReply {
        blocks,
        stop,
        // `cache_creation` splits the writes by lifetime: the hour's are
        // priced apart (2× the input price, 5 minutes' 1.25×).
        usage: Usage::new(
            n("input_tokens"),
            n("output_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        )
        .with_1h_writes(u["cache_creation"]["ephemeral_1h_input_tokens"].as_u64().unwrap_or(0)),
        model: body["model"].as_str().unwrap_or("").to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{CacheTtl, Hydrated, EXTENDED_CACHE_TTL_BETA};

    fn cfg() -> LlmConfig {
        crate::testing::llm_config(&[("LLM_API_KEY", "k")])
    }

    fn encode_with(history: &[Message], appended: Option<&str>) -> Value {
        let media = Hydrated::new();
        encode(
            &cfg(),
            &ChatRequest {
                system: "sys",
                messages: history,
                tools: &[],
                media: &media,
                appended_user: appended,
                memo: None,
                stamps: &[],
                prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
            },
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

    fn fixture(name: &str) -> Value {
        let path = format!("{}/../tests/fixtures/real-world/llm/anthropic/{name}", env!("CARGO_MANIFEST_DIR"));
        hearth_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn real_bodies_refusal_cut_and_pause() {
        // A refusal that also carries a tool call: the call must not run.
        let r = decode(&fixture("message-refusal-with-tool-use.json")).unwrap();
        assert_eq!(r.stop, StopReason::Refusal);
        assert_eq!(r.tool_calls().count(), 0);
        let r = decode(&fixture("message-max-tokens-partial-tool-use.json")).unwrap();
        assert_eq!(r.stop, StopReason::Length);
        assert_eq!(r.tool_calls().count(), 1, "kept, for the turn to answer without running it");
        // Only a server tool block: nothing Hearth runs or shows, but it is
        // kept, so the request that continues the turn sends it back.
        let r = decode(&fixture("message-pause-turn.json")).unwrap();
        assert_eq!((r.stop, r.blocks.len(), r.tool_calls().count()), (StopReason::Pause, 1, 0));
        assert!(matches!(&r.blocks[0], AssistantBlock::Native { block, .. } if block["type"] == "server_tool_use"));
        assert!(r.text().is_empty());
        let r = decode(&fixture("message-text-end-turn.json")).unwrap();
        assert_eq!(r.stop, StopReason::Stop);
        assert!(!r.text().is_empty());
    }

    #[test]
    fn whatever_the_history_holds_the_request_breaks_no_rule() {
        // The 400s of tests/fixtures/real-world/llm/anthropic/error-400-*.json,
        // each from a message like these, stored before the rules.
        let history = vec![
            Message::user_text("", 1),
            Message::Assistant {
                content: vec![AssistantBlock::Text { text: " \n ".into() }],
                timestamp: 2,
                model: None,
                stop_reason: None,
                usage: None,
            },
            Message::user_text("read it", 3),
            Message::Assistant {
                content: vec![
                    AssistantBlock::ToolCall { id: "".into(), name: "read_file".into(), arguments: json!("SOUL.md") },
                    AssistantBlock::ToolCall {
                        id: "fn.read:1".into(),
                        name: "read_file".into(),
                        arguments: json!(null),
                    },
                ],
                timestamp: 4,
                model: None,
                stop_reason: None,
                usage: None,
            },
            Message::ToolResult {
                tool_call_id: "".into(),
                tool_name: "read_file".into(),
                content: vec![ResultBlock::Text { text: "".into() }],
                is_error: true,
                timestamp: 5,
            },
            Message::ToolResult {
                tool_call_id: "fn.read:1".into(),
                tool_name: "read_file".into(),
                content: vec![ResultBlock::Text { text: "soul".into() }],
                is_error: false,
                timestamp: 5,
            },
            Message::ToolResult {
                tool_call_id: "toolu_orphan".into(),
                tool_name: "read_file".into(),
                content: vec![ResultBlock::Text { text: "x".into() }],
                is_error: false,
                timestamp: 5,
            },
            Message::user_text("thanks", 6),
        ];
        let media = Hydrated::new();
        let req = ChatRequest {
            system: "s",
            messages: &history,
            tools: &[],
            media: &media,
            appended_user: None,
            memo: None,
            stamps: &[],
            prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
        };
        let http = crate::llm::build_request(&cfg(), &req).unwrap();
        let body: Value = hearth_json::from_slice(&http.body).unwrap();
        let mut open: Vec<String> = Vec::new();
        for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
            let blocks = m["content"].as_array().unwrap();
            assert!(!blocks.is_empty(), "messages.{i}: empty content");
            let results: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str())
                .collect();
            let mut expected = std::mem::take(&mut open);
            expected.sort();
            let mut got: Vec<String> = results.iter().map(|s| s.to_string()).collect();
            got.sort();
            assert_eq!(got, expected, "messages.{i}: tool results answer exactly the previous calls");
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => assert!(!b["text"].as_str().unwrap().trim().is_empty(), "messages.{i}: blank text"),
                    Some("tool_use") => {
                        assert!(crate::llm::rules::valid_tool_id(b["id"].as_str().unwrap()), "{b}");
                        assert!(b["input"].is_object(), "{b}");
                        open.push(b["id"].as_str().unwrap().to_owned());
                    }
                    Some("tool_result") => assert!(!b["content"].as_str().unwrap().trim().is_empty(), "{b}"),
                    other => panic!("unexpected block {other:?}"),
                }
            }
        }
        assert!(open.is_empty());
        assert!(http.body.windows(12).all(|w| w != b"toolu_orphan"), "the orphan result is left out");
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

    /// The lifetimes of a body's breakpoints in Anthropic's processing
    /// order (tools, system, messages), `5m` for one without a `ttl`.
    fn ttls(body: &Value) -> Vec<String> {
        let blocks = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(body["system"].as_array().into_iter().flatten())
            .chain(
                body["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|m| m["content"].as_array().into_iter().flatten()),
            );
        blocks.filter_map(|b| b.get("cache_control")).map(|c| c["ttl"].as_str().unwrap_or("5m").to_owned()).collect()
    }

    fn with_ttl(ttl: CacheTtl, history: &[Message]) -> crate::ports::HttpRequest {
        let media = Hydrated::new();
        let tools = crate::toolkit::ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            input_schema: json!({"type": "object"}),
            native: None,
        };
        let req = ChatRequest {
            system: "sys",
            messages: history,
            tools: std::slice::from_ref(&tools),
            media: &media,
            appended_user: None,
            memo: None,
            stamps: &[],
            prefix_ttl: ttl,
        };
        crate::llm::build_request(&cfg(), &req).unwrap()
    }

    #[test]
    fn an_hour_for_the_prefix_and_5_minutes_for_the_conversation_after_it() {
        let history = [Message::user_text("[Heartbeat 2026-01-12 10:00] check", 1)];
        let http = with_ttl(CacheTtl::OneHour, &history);
        let body: Value = hearth_json::from_slice(&http.body).unwrap();
        assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
        assert_eq!(body["messages"][0]["content"][0]["cache_control"], json!({"type": "ephemeral"}));
        // Longer lifetimes first, as the API demands (else a 400).
        assert_eq!(ttls(&body), ["1h", "5m"]);
        assert_eq!(
            http.headers.iter().find(|(n, _)| n == "anthropic-beta").map(|(_, v)| v.as_str()),
            Some(EXTENDED_CACHE_TTL_BETA)
        );
        // 5 minutes: the request as it always was, no beta flag.
        let http = with_ttl(CacheTtl::FiveMinutes, &history);
        let text = String::from_utf8(http.body.clone()).unwrap();
        assert!(text.contains(r#""text":"sys","cache_control":{"type":"ephemeral"}}]"#), "{text}");
        assert!(!text.contains("ttl"));
        assert!(http.headers.iter().all(|(n, _)| n != "anthropic-beta"));
    }

    #[test]
    fn the_lifetime_leaves_the_cached_bytes_as_they_are() {
        // A heartbeat whose next run is 90 minutes away asks for 5 minutes,
        // the one after for an hour: both read what the other wrote.
        let history = [Message::user_text("check", 1)];
        let strip = |http: crate::ports::HttpRequest| {
            let mut v: Value = hearth_json::from_slice(&http.body).unwrap();
            v["system"][0].as_object_mut().unwrap().remove("cache_control");
            v["messages"][0]["content"][0].as_object_mut().unwrap().remove("cache_control");
            v
        };
        assert_eq!(strip(with_ttl(CacheTtl::OneHour, &history)), strip(with_ttl(CacheTtl::FiveMinutes, &history)));
    }

    #[test]
    fn writes_made_for_an_hour_are_told_apart() {
        let r = decode(&fixture("message-cache-write-1h.json")).unwrap();
        assert_eq!((r.usage.cache_write, r.usage.cache_write_1h, r.usage.cache_read), (10_408, 10_408, 14_265));
        assert_eq!(r.usage.cache_write_5m(), 0);
        let r = decode(&fixture("message-cache-write-5m.json")).unwrap();
        assert_eq!((r.usage.cache_write, r.usage.cache_write_1h, r.usage.cache_write_5m()), (6_847, 0, 6_847));
        // Without the split (older API versions, proxies): all 5 minutes.
        let r = decode(&fixture("message-text-end-turn.json")).unwrap();
        assert_eq!(r.usage.cache_write_1h, 0);
        // A split that claims more than was written is cut to the writes.
        let mut body = fixture("message-cache-write-5m.json");
        body["usage"]["cache_creation"]["ephemeral_1h_input_tokens"] = json!(99_999);
        assert_eq!(decode(&body).unwrap().usage.cache_write_1h, 6_847);
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
