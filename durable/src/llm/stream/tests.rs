use super::*;
use crate::llm::{complete_with, Hydrated, StopReason};
use crate::testing::TestPlatform;
use r2_layout::Message;
use std::cell::RefCell;

fn fixture(path: &str) -> String {
    let path = format!("{}/../tests/fixtures/real-world/llm/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap()
}

fn cfg(provider: &str) -> LlmConfig {
    crate::testing::llm_config(&[("LLM_API_KEY", "k"), ("LLM_PROVIDER", provider), ("RETRY_BASE_MS", "10")])
}

/// What the sink saw, as text (a retry shows as `⟲`).
struct Seen(RefCell<String>);

impl Seen {
    fn new() -> Self {
        Seen(RefCell::new(String::new()))
    }
    fn sink(&self) -> impl Fn(Delta<'_>) + '_ {
        |d| match d {
            Delta::Text(t) => self.0.borrow_mut().push_str(t),
            Delta::Retry => self.0.borrow_mut().push('⟲'),
        }
    }
    fn text(&self) -> String {
        self.0.borrow().clone()
    }
}

fn call(p: &TestPlatform, cfg: &LlmConfig, seen: &Seen) -> Result<LlmReply, LlmError> {
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
        prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
    };
    let sink = seen.sink();
    futures::executor::block_on(complete_with(p, cfg, &req, Some(&sink)))
}

fn run(provider: &str, body: &str, piece: usize) -> (Result<LlmReply, LlmError>, String) {
    let p = TestPlatform::default();
    p.http.push_sse_text(body, piece);
    let seen = Seen::new();
    let out = call(&p, &cfg(provider), &seen);
    (out, seen.text())
}

#[test]
fn anthropic_transcripts_fold_into_the_replies_they_stand_for() {
    let (r, seen) = run("anthropic", &fixture("anthropic/stream-tool-use.sse"), 64);
    let r = r.unwrap();
    assert_eq!(seen, "I'll check the current weather in Paris for you.");
    assert_eq!(r.text(), seen, "the text streamed is the text stored");
    assert_eq!(r.stop, StopReason::ToolUse);
    let calls: Vec<_> = r.tool_calls().collect();
    assert_eq!(calls, [("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", &json!({"location": "Paris"}))]);
    assert_eq!((r.usage.input, r.usage.output), (377, 65), "input from message_start, output from message_delta");
    assert_eq!(r.model, "claude-sonnet-4-20250514");

    // Cut in the middle of a tool call's input by the output limit: kept for
    // the turn to report, never run as a half-written call.
    let (r, _) = run("anthropic", &fixture("anthropic/stream-max-tokens-partial-tool-json.sse"), 100);
    let r = r.unwrap();
    assert_eq!(r.stop, StopReason::Length);
    let (_, _, input) = r.tool_calls().next().unwrap();
    assert!(input["_unparsed"].as_str().unwrap().starts_with("{\"filename\": \"taxes.txt"), "{input}");

    let (r, _) = run("anthropic", &fixture("anthropic/stream-refusal.sse"), 7);
    assert_eq!(r.unwrap().stop, StopReason::Refusal);
    let (r, seen) = run("anthropic", &fixture("anthropic/stream-thinking-refusal.sse"), 50);
    let r = r.unwrap();
    assert_eq!(r.stop, StopReason::Refusal);
    assert!(!seen.contains("thinking"), "thinking is not streamed as the answer: {seen}");
    for f in [
        "stream-basic.sse",
        "stream-recorded-text.sse",
        "stream-recorded-tool-use.sse",
        "stream-recorded-after-tool-result.sse",
    ] {
        let (r, seen) = run("anthropic", &fixture(&format!("anthropic/{f}")), 33);
        let r = r.unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(r.text(), seen, "{f}");
        assert!(r.usage.output > 0, "{f}");
    }
}

#[test]
fn openai_transcripts_fold_into_the_replies_they_stand_for() {
    let (r, seen) = run("openai", &fixture("openai/stream-text-include-usage.sse"), 80);
    let r = r.unwrap();
    assert_eq!(r.text(), seen);
    assert_eq!(r.stop, StopReason::Stop);
    assert_eq!((r.usage.input, r.usage.output), (14, 30), "the usage of the last chunk, whose choices are empty");

    let (r, seen) = run("openai", &fixture("openai/stream-two-tool-calls.sse"), 90);
    let r = r.unwrap();
    assert!(seen.is_empty());
    assert_eq!(r.stop, StopReason::ToolUse);
    let calls: Vec<_> = r.tool_calls().collect();
    assert_eq!(calls.len(), 2, "two calls interleaved by index");
    assert!(calls.iter().all(|(id, _, args)| id.starts_with("call_") && args.is_object()), "{calls:?}");
    assert_eq!((calls[0].1, calls[1].1), ("GetWeatherArgs", "get_stock_price"));

    let (r, _) = run("openai", &fixture("openai/stream-tool-call-partial-arguments.sse"), 5);
    let r = r.unwrap();
    let (_, _, args) = r.tool_calls().next().unwrap();
    assert!(args.is_object() && !args.as_object().unwrap().contains_key("_unparsed"), "{args}");

    let (r, _) = run("openai", &fixture("openai/stream-finish-length.sse"), 40);
    assert_eq!(r.unwrap().stop, StopReason::Length);
    let (r, seen) = run("openai", &fixture("openai/stream-refusal.sse"), 40);
    let r = r.unwrap();
    assert_eq!(r.stop, StopReason::Refusal);
    assert_eq!(r.text(), seen, "the refusal is what the model said");
    let (r, _) = run("openai", &fixture("openai/stream-chunks-docs.sse"), 40);
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn a_double_encoded_input_streams_as_it_would_arrive_whole() {
    // A model that writes its input as a JSON string holding the object.
    let input = json!({"path": "TOOLS.md"}).to_string();
    let raw = json!(input).to_string();
    let (a, b) = raw.split_at(raw.len() / 2);
    let mut body =
        String::from("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[]}}\n\n");
    let block = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}});
    body.push_str(&format!("event: content_block_start\ndata: {block}\n\n"));
    for piece in ["", a, b] {
        let d = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}});
        body.push_str(&format!("event: content_block_delta\ndata: {d}\n\n"));
    }
    body.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
    body.push_str(
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n",
    );
    let (r, _) = run("anthropic", &body, 16);
    let whole = crate::llm::anthropic::decode(&json!({"content": [{"type": "tool_use", "id": "toolu_1",
        "name": "read_file", "input": input}], "stop_reason": "tool_use"}))
    .unwrap();
    assert_eq!(r.unwrap().blocks, whole.blocks, "streamed or not, the same call is stored");
}

#[test]
fn a_stream_cut_at_any_byte_gives_the_same_reply() {
    let body = fixture("anthropic/stream-tool-use.sse");
    let (whole, _) = run("anthropic", &body, body.len());
    for piece in [1, 2, 3, 7, 13] {
        let (r, _) = run("anthropic", &body, piece);
        assert_eq!(r, whole, "pieces of {piece} bytes");
    }
    let body = fixture("openai/stream-two-tool-calls.sse");
    let (whole, _) = run("openai", &body, body.len());
    assert_eq!(run("openai", &body, 1).0, whole);
}

#[test]
fn the_request_asks_for_a_stream_and_the_usage() {
    let p = TestPlatform::default();
    p.http.push_sse_text(&fixture("openai/stream-text-include-usage.sse"), 1000);
    call(&p, &cfg("openai"), &Seen::new()).unwrap();
    let body = p.http.request_json(0);
    assert_eq!((body["stream"].as_bool(), body["stream_options"]["include_usage"].as_bool()), (Some(true), Some(true)));
    assert!(body["messages"].is_array(), "still the whole request: {body}");
    let p = TestPlatform::default();
    p.http.push_sse_text(&fixture("anthropic/stream-basic.sse"), 1000);
    call(&p, &cfg("anthropic"), &Seen::new()).unwrap();
    let body = p.http.request_json(0);
    assert_eq!((body["stream"].as_bool(), body.get("stream_options")), (Some(true), None));
}

#[test]
fn a_stream_that_breaks_is_retried_and_the_sink_is_told() {
    let text = fixture("anthropic/stream-tool-use.sse");
    let at = text.find("event: content_block_stop").unwrap();
    // 1. an overloaded `error` event inside a 200 after the text began;
    // 2. a dropped connection; 3. a stream that simply ends early.
    let p = TestPlatform::default();
    let mut first = text[..at].to_owned();
    first.push_str(&fixture("anthropic/stream-error-overloaded.sse"));
    p.http.push_sse_text(&first, 50);
    p.http.push_sse(vec![Ok(text.as_bytes()[..at].to_vec()), Err(HttpError::Network("connection reset".into()))]);
    p.http.push_sse_text(&text[..at], 50);
    p.http.push_sse_text(&text, 50);
    let seen = Seen::new();
    let r = call(&p, &cfg("anthropic"), &seen).unwrap();
    assert_eq!(r.tool_calls().count(), 1);
    let sentence = "I'll check the current weather in Paris for you.";
    assert_eq!(seen.text(), format!("{sentence}⟲{sentence}⟲{sentence}⟲{sentence}"));
    assert_eq!(p.http.requests.borrow().len(), 4);
    assert!(p.logs.borrow().iter().any(|l| l.contains("overloaded_error")), "{:?}", p.logs.borrow());

    // A refusal in the stream (an invalid request) is final, not retried.
    let p = TestPlatform::default();
    p.http.push_sse_text(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n",
        10,
    );
    let e = call(&p, &cfg("anthropic"), &Seen::new()).unwrap_err();
    assert!(matches!(e, LlmError::Rejected { status: 400, .. }), "{e:?}");
    assert_eq!(p.http.requests.borrow().len(), 1);

    // Every attempt breaking: the user is told as for any failing call.
    let p = TestPlatform::default();
    for _ in 0..4 {
        p.http.push_sse_text(&text[..at], 50);
    }
    let e = call(&p, &cfg("anthropic"), &Seen::new()).unwrap_err();
    assert!(matches!(e, LlmError::Exhausted { attempts: 4, .. }), "{e:?}");
}

#[test]
fn error_answers_and_servers_that_do_not_stream() {
    // A 429 before the stream: retried after the wait asked for.
    let p = TestPlatform::default();
    p.http.streams.borrow_mut().push_back(Ok(crate::testing::ScriptedStream {
        status: 429,
        headers: vec![("retry-after".into(), "2".into()), ("content-type".into(), "application/json".into())],
        pieces: vec![Ok(br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.to_vec())],
    }));
    p.http.push_sse_text(&fixture("anthropic/stream-basic.sse"), 30);
    let seen = Seen::new();
    assert!(call(&p, &cfg("anthropic"), &seen).is_ok());
    assert_eq!(*p.slept.borrow(), vec![2000]);
    assert!(seen.text().starts_with('⟲'), "the second attempt starts afresh");
    // A 401 is final.
    let p = TestPlatform::default();
    p.http.push_json(401, json!({"error": {"message": "invalid x-api-key"}}));
    assert!(matches!(call(&p, &cfg("anthropic"), &Seen::new()), Err(LlmError::Rejected { status: 401, .. })));
    // A proxy that ignores `stream` and answers JSON: decoded, its text handed on once.
    let p = TestPlatform::default();
    p.http.push_json(200, json!({"choices": [{"finish_reason": "stop", "message": {"content": "whole"}}]}));
    let seen = Seen::new();
    assert_eq!(call(&p, &cfg("openai"), &seen).unwrap().text(), "whole");
    assert_eq!(seen.text(), "whole");
}

#[test]
fn a_streamed_answer_keeps_the_split_of_its_cache_writes() {
    // The recorded stream, its message_start usage as a heartbeat's first
    // run reports it: the prefix written for an hour, the message for 5 minutes.
    let recorded = fixture("anthropic/stream-recorded-text.sse");
    let zero = r#""cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}"#;
    assert!(recorded.contains(zero));
    let split = r#""cache_creation_input_tokens":8100,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":8000}"#;
    // message_delta repeats the totals (cumulative), without the split.
    let delta = r#""input_tokens":135,"cache_creation_input_tokens":0,"#;
    assert!(recorded.contains(delta));
    let body =
        recorded.replace(zero, split).replace(delta, r#""input_tokens":135,"cache_creation_input_tokens":8100,"#);
    let (r, _) = run("anthropic", &body, 64);
    let u = r.unwrap().usage;
    assert_eq!((u.cache_write, u.cache_write_1h, u.cache_write_5m()), (8_100, 8_000, 100));
}
