//! What belongs to one provider only: the tools it runs itself (Anthropic's
//! server-side `web_search`) and the blocks they leave in a reply
//! (`server_tool_use`, `web_search_tool_result`, text with `citations`).
//!
//! Those blocks are kept in the history as [`AssistantBlock::Native`], as
//! they came, so every later request to the same provider replays them
//! exactly (the conversation stays valid and its prefix caches). Another
//! provider gets only their text. The encoders call in here, so their own
//! code only learns that such blocks and tools exist.

use crate::toolkit::ToolSpec;
use r2_layout::AssistantBlock;
use serde_json::{json, Value};

/// The `provider` of Anthropic's native blocks.
pub const ANTHROPIC: &str = "anthropic";

/// An Anthropic response block Hearth keeps as it came, if `b` is one.
pub fn from_anthropic(b: &Value) -> Option<AssistantBlock> {
    let keep = match b.get("type").and_then(Value::as_str) {
        Some("server_tool_use" | "web_search_tool_result") => true,
        Some("text") => b.get("citations").and_then(Value::as_array).is_some_and(|c| !c.is_empty()),
        _ => false,
    };
    keep.then(|| AssistantBlock::Native { provider: ANTHROPIC.into(), block: b.clone() })
}

/// A native block in an Anthropic request: as it came when Anthropic made
/// it, else its text (or nothing).
pub fn to_anthropic(provider: &str, block: &Value) -> Option<Value> {
    if provider == ANTHROPIC {
        return Some(block.clone());
    }
    plain_text(block).map(|text| json!({"type": "text", "text": text}))
}

/// The text of a native text block, for a provider that did not make it.
pub fn plain_text(block: &Value) -> Option<&str> {
    if block.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())
}

/// The `tools` of an Anthropic request: ordinary tools with their schema,
/// provider tools by their own definition.
pub fn anthropic_tools(tools: &[ToolSpec]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| match &t.native {
                Some(definition) => definition.clone(),
                None => json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}),
            })
            .collect(),
    )
}

/// The `tools` of an OpenAI-compatible request: provider tools left out
/// (they are another provider's).
pub fn openai_tools(tools: &[ToolSpec]) -> Value {
    Value::Array(
        tools
            .iter()
            .filter(|t| t.native.is_none())
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect(),
    )
}

/// The pages a reply cites (title, URL), each once, in order: the user sees
/// them under the answer, as the provider asks of apps that show its
/// search-grounded answers.
pub fn cited_sources(blocks: &[AssistantBlock]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for b in blocks {
        let AssistantBlock::Native { block, .. } = b else { continue };
        for c in block.get("citations").and_then(Value::as_array).into_iter().flatten() {
            let Some(url) = c.get("url").and_then(Value::as_str) else { continue };
            if !out.iter().any(|(_, u)| u == url) {
                out.push((c.get("title").and_then(Value::as_str).unwrap_or(url).to_owned(), url.to_owned()));
            }
        }
    }
    out
}

/// `text` with a "Sources" list of what `blocks` cite, if they cite anything.
pub fn with_sources(text: String, blocks: &[AssistantBlock]) -> String {
    let sources = cited_sources(blocks);
    if sources.is_empty() {
        return text;
    }
    let list: Vec<String> = sources.iter().map(|(title, url)| format!("- {title}: {url}")).collect();
    format!("{text}\n\nSources:\n{}", list.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{anthropic, openai, ChatRequest, Hydrated};
    use r2_layout::{Message, ResultBlock};

    /// An Anthropic reply that searched, in the shapes of Anthropic's web
    /// search tool documentation
    /// (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool):
    /// `server_tool_use`, `web_search_tool_result` with `web_search_result`s,
    /// text with `web_search_result_location` citations.
    fn searched_reply() -> Value {
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "text", "text": "I'll search for that."},
                {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "hearth agent"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
                    {"type": "web_search_result", "url": "https://a.test/hearth", "title": "Hearth", "encrypted_content": "EqgfCioIARgB", "page_age": "April 30, 2025"}
                ]},
                {"type": "text", "text": "Hearth runs on the edge.", "citations": [
                    {"type": "web_search_result_location", "url": "https://a.test/hearth", "title": "Hearth", "encrypted_index": "Eo8BCioIAhgB", "cited_text": "Hearth runs on Cloudflare's edge."}
                ]}
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5, "server_tool_use": {"web_search_requests": 1}}
        })
    }

    #[test]
    fn a_searched_reply_is_kept_and_replayed_exactly() {
        let reply = anthropic::decode(&searched_reply()).unwrap();
        assert_eq!(reply.blocks.len(), 4);
        assert!(matches!(&reply.blocks[1], AssistantBlock::Native { provider, .. } if provider == ANTHROPIC));
        assert!(reply.tool_calls().next().is_none(), "the provider ran the search: nothing for Hearth to run");
        assert_eq!(
            reply.text(),
            "I'll search for that.\nHearth runs on the edge.\n\nSources:\n- Hearth: https://a.test/hearth"
        );

        // The next request replays the blocks as they came (what the API requires).
        let history = [
            Message::user_text("what is hearth?", 1),
            Message::Assistant {
                content: reply.blocks.clone(),
                timestamp: 2,
                model: None,
                stop_reason: None,
                usage: None,
            },
            Message::user_text("thanks", 3),
        ];
        let media = Hydrated::new();
        let tools = [crate::web::search::anthropic_spec(5)];
        let req = ChatRequest {
            system: "s",
            messages: &history,
            tools: &tools,
            media: &media,
            appended_user: None,
            memo: None,
            stamps: &[],
            prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
        };
        let cfg = crate::testing::llm_config(&[("LLM_API_KEY", "k")]);
        let body = anthropic::encode(&cfg, &req);
        let sent = body["messages"][1]["content"].as_array().unwrap();
        let original = searched_reply()["content"].as_array().unwrap().clone();
        assert_eq!(sent[1], original[1]);
        assert_eq!(sent[2], original[2]);
        let mut cited = sent[3].clone();
        cited.as_object_mut().unwrap().remove("cache_control");
        assert_eq!(cited, original[3]);
        assert_eq!(body["tools"], json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]));

        // Another provider gets the words, not Anthropic's blocks, nor its tool.
        let cfg = crate::testing::llm_config(&[("LLM_API_KEY", "k"), ("LLM_PROVIDER", "openai")]);
        let body = openai::encode(&cfg, &req);
        assert_eq!(body["messages"][2]["content"], "I'll search for that.\nHearth runs on the edge.");
        assert!(body.get("tools").is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())), "{body}");
    }

    #[test]
    fn a_paused_turn_is_recognised() {
        let mut paused = searched_reply();
        paused["stop_reason"] = json!("pause_turn");
        assert_eq!(anthropic::decode(&paused).unwrap().stop, crate::llm::StopReason::Pause);
    }

    #[test]
    fn tool_results_stay_ordinary() {
        let _ = ResultBlock::Text { text: String::new() };
        assert!(from_anthropic(&json!({"type": "text", "text": "plain"})).is_none());
        assert!(from_anthropic(&json!({"type": "text", "text": "x", "citations": []})).is_none());
        assert!(from_anthropic(&json!({"type": "tool_use", "id": "t", "name": "n", "input": {}})).is_none());
    }
}
