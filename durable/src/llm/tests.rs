//! The client against a scripted provider: long waits, the output-limit
//! parameter, repaired histories that stay cached.

use super::*;
use crate::testing::TestPlatform;
use r2_layout::{Message, UserContent};

fn cfg() -> LlmConfig {
    crate::testing::llm_config(&[("LLM_API_KEY", "k"), ("RETRY_BASE_MS", "10")])
}

fn call(p: &TestPlatform) -> Result<LlmReply, LlmError> {
    let messages =
        [Message::User { content: UserContent::Text("hi".into()), sender: None, channel: None, timestamp: 0 }];
    let media = Hydrated::new();
    let req = ChatRequest {
        system: "s",
        messages: &messages,
        tools: &[],
        media: &media,
        appended_user: None,
        memo: None,
        stamps: &[],
        prefix_ttl: CacheTtl::FiveMinutes,
    };
    futures::executor::block_on(complete(p, &cfg(), &req))
}

#[test]
fn a_provider_asking_for_a_long_wait_is_not_called_several_times_and_the_user_is_told_the_wait() {
    let p = TestPlatform::default();
    p.http.responses.borrow_mut().push_back(Ok(crate::ports::HttpResponse {
        status: 429,
        headers: vec![("retry-after".into(), "300".into())],
        body: br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.to_vec(),
    }));
    let e = call(&p).unwrap_err();
    assert_eq!(p.http.requests.borrow().len(), 1, "no retries against a 5-minute wait");
    assert!(matches!(&e, LlmError::Throttled { wait_s: 300, .. }), "{e:?}");
    let msg = e.user_message();
    assert!(msg.contains("wait 5 min") && msg.contains("try again later"), "{msg}");
    assert!(!msg.contains("retried several times"), "{msg}");

    // Failures that use up the attempts still say so.
    let p = TestPlatform::default();
    for _ in 0..4 {
        p.http.push_json(503, serde_json::json!({"error": {"message": "overloaded"}}));
    }
    let e = call(&p).unwrap_err();
    assert!(matches!(e, LlmError::Exhausted { attempts: 4, .. }), "{e:?}");
    assert_eq!(human_wait(90), "90 s");
    assert_eq!(human_wait(3 * 3600), "3 h");
}

fn fixture(path: &str) -> Value {
    let path = format!("{}/../tests/fixtures/real-world/llm/{path}", env!("CARGO_MANIFEST_DIR"));
    hearth_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn openai_text(text: &str) -> Value {
    serde_json::json!({"choices": [{"finish_reason": "stop", "message": {"content": text}}]})
}

#[test]
fn a_model_that_refuses_max_tokens_is_asked_again_with_max_completion_tokens() {
    // An OpenAI-compatible name the default does not recognise.
    let cfg =
        crate::testing::llm_config(&[("LLM_API_KEY", "k"), ("LLM_PROVIDER", "openai"), ("LLM_MODEL", "my-gpt5-proxy")]);
    let p = TestPlatform::default();
    p.http.push_json(400, fixture("openai/error-400-max-tokens-unsupported.json"));
    p.http.push_json(200, openai_text("hello"));
    let messages = [Message::user_text("hi", 0)];
    let media = Hydrated::new();
    let req = ChatRequest {
        system: "s",
        messages: &messages,
        tools: &[],
        media: &media,
        appended_user: None,
        memo: None,
        stamps: &[],
        prefix_ttl: CacheTtl::FiveMinutes,
    };
    let reply = futures::executor::block_on(complete(&p, &cfg, &req)).unwrap();
    assert_eq!(reply.text(), "hello");
    let second = p.http.request_json(1);
    assert_eq!((second.get("max_tokens"), second["max_completion_tokens"].as_u64()), (None, Some(4096)));
    assert!(p.logs.borrow().iter().any(|l| l.contains("LLM_MAX_TOKENS_PARAM=max_completion_tokens")));
    // A proxy's variant of the message (no type, another code) too.
    let p = TestPlatform::default();
    p.http.push_json(400, fixture("openai/error-400-max-tokens-unsupported-copilot-proxy.json"));
    p.http.push_json(200, openai_text("hello"));
    assert!(futures::executor::block_on(complete(&p, &cfg, &req)).is_ok());
}

#[test]
fn repaired_messages_stay_cached_between_turns() {
    // Stored before the rules: a blank reply, calls without ids.
    let call = |id: &str| r2_layout::AssistantBlock::ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: serde_json::json!({}),
    };
    let result = |id: &str| Message::ToolResult {
        tool_call_id: id.into(),
        tool_name: "read_file".into(),
        content: vec![r2_layout::ResultBlock::Text { text: "ok".into() }],
        is_error: false,
        timestamp: 3,
    };
    let assistant = |content| Message::Assistant { content, timestamp: 2, model: None, stop_reason: None, usage: None };
    let mut history = vec![
        Message::user_text("hi", 1),
        assistant(vec![r2_layout::AssistantBlock::Text { text: " ".into() }]),
        Message::user_text("read", 1),
        assistant(vec![call(""), call("")]),
        result(""),
        result(""),
    ];
    let memo = std::cell::RefCell::new(wire::WireMemo::default());
    let media = Hydrated::new();
    let body = |history: &[Message]| {
        let req = ChatRequest {
            system: "s",
            messages: history,
            tools: &[],
            media: &media,
            appended_user: None,
            memo: Some(&memo),
            stamps: &[],
            prefix_ttl: CacheTtl::FiveMinutes,
        };
        String::from_utf8(build_request(&cfg(), &req).unwrap().body).unwrap()
    };
    let first = body(&history);
    history.push(Message::user_text("next", 4));
    let second = body(&history);
    assert_eq!(memo.borrow().encoded, 7, "six, then only the new one");
    assert_eq!(memo.borrow().reused, 6);
    // The same bytes, apart from the moving breakpoint: the prompt cache hits.
    let plain = |b: &str| b.replace(",\"cache_control\":{\"type\":\"ephemeral\"}", "");
    let first = plain(&first);
    assert!(plain(&second).starts_with(first.trim_end_matches("]}]}")), "{first}\n{second}");
    assert!(second.contains("call_2_0") && !second.contains("\"id\":\"\""), "{second}");
}

fn history_with_a_photo() -> Vec<Message> {
    vec![
        Message::User {
            content: UserContent::Blocks(vec![
                r2_layout::UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                r2_layout::UserBlock::Text { text: "what is this?".into() },
            ]),
            sender: None,
            channel: None,
            timestamp: 1,
        },
        Message::user_text("and now?", 2),
    ]
}

#[test]
fn a_refused_history_is_sent_once_more_as_plain_text() {
    let p = TestPlatform::default();
    p.http.push_json(400, fixture("anthropic/error-400-could-not-process-image.json"));
    p.http
        .push_json(200, serde_json::json!({"content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn"}));
    let messages = history_with_a_photo();
    let mut media = Hydrated::new();
    media.insert("media/k/a.png".into(), std::rc::Rc::new(b"\x89PNG\r\n\x1a\n".to_vec()));
    let req = ChatRequest {
        system: "s",
        messages: &messages,
        tools: &[],
        media: &media,
        appended_user: None,
        memo: None,
        stamps: &[],
        prefix_ttl: CacheTtl::FiveMinutes,
    };
    let done = futures::executor::block_on(complete_repairing(&p, &cfg(), &req)).unwrap();
    assert!(done.strict);
    assert_eq!(done.reply.text(), "fine");
    let retry = p.http.request_json(1).to_string();
    assert!(!retry.contains("\"image\"") && retry.contains("image/png"), "the image went as a note: {retry}");

    // Refused again: the user learns what happened and that /reset starts afresh.
    let p = TestPlatform::default();
    p.http.push_json(400, fixture("anthropic/error-400-could-not-process-image.json"));
    p.http.push_json(400, fixture("anthropic/error-400-empty-message-content.json"));
    let e = futures::executor::block_on(complete_repairing(&p, &cfg(), &req)).unwrap_err();
    assert_eq!(p.http.requests.borrow().len(), 2, "one repair, one retry");
    let msg = e.user_message();
    assert!(msg.contains("/reset") && msg.contains("HTTP 400") && msg.contains("non-empty content"), "{msg}");
    // Other refusals are not retried.
    let p = TestPlatform::default();
    p.http.push_json(401, serde_json::json!({"error": {"message": "invalid x-api-key"}}));
    assert!(futures::executor::block_on(complete_repairing(&p, &cfg(), &req)).is_err());
    assert_eq!(p.http.requests.borrow().len(), 1);
}
