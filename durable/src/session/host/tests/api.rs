//! API messages and chat previews through the host: the turn runs in the
//! alarm, clients and chats follow it.

use super::*;
use crate::inbound::ChannelKind;
use crate::ports::{EventSink, HttpError, PreviewOutcome, Sql};
use crate::protocol::api::{ApiOutcome, ApiTurnRequest};
use crate::session::host::ApiStart;
use crate::session::watch::Attach;

/// An Anthropic stream writing `pieces` as text deltas.
pub(in crate::session) fn sse(pieces: &[&str]) -> String {
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"content\":[],\
         \"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"cache_read_input_tokens\":40}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for p in pieces {
        let data = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}});
        out.push_str(&format!("event: content_block_delta\ndata: {data}\n\n"));
    }
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    out
}

/// The events of an SSE response piece by piece, and whether it ended.
#[derive(Default)]
pub(super) struct Client {
    pub(super) written: RefCell<String>,
    pub(super) closed: Cell<bool>,
    gone: Cell<bool>,
}

struct Sink(Rc<Client>);

impl EventSink for Sink {
    fn send(&self, bytes: &[u8]) -> bool {
        if self.0.gone.get() {
            return false;
        }
        self.0.written.borrow_mut().push_str(std::str::from_utf8(bytes).unwrap());
        true
    }
    fn close(&self) {
        self.0.closed.set(true);
    }
}

impl Client {
    pub(super) fn events(&self) -> Vec<(String, serde_json::Value)> {
        self.written
            .borrow()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let field = |n: &str| e.lines().find_map(|l| l.strip_prefix(n)).unwrap().to_owned();
                (field("event: "), hearth_json::from_str(&field("data: ")).unwrap())
            })
            .collect()
    }
    pub(super) fn deltas(&self) -> String {
        self.events()
            .iter()
            .filter(|(e, _)| e == "delta")
            .map(|(_, d)| d["text"].as_str().unwrap().to_owned())
            .collect()
    }
}

pub(in crate::session) fn api_request(key: &str, text: &str) -> ApiTurnRequest {
    ApiTurnRequest {
        session_key: SessionKey::parse("agent:main:api:notes").unwrap(),
        inbound: Inbound {
            dedupe_key: format!("api:admin:{key}"),
            channel: ChannelKind::Api,
            kind: ChatKind::Direct,
            chat_id: "notes".into(),
            sender_id: "admin".into(),
            sender_name: "admin".into(),
            text: text.into(),
            addressed: true,
            thread_id: None,
            reply_target: ReplyTarget { channel: ChannelKind::Api, chat_id: "notes".into(), ..Default::default() },
            received_at: 0,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        },
        thread_id: "notes".into(),
        stream: true,
        last_event_id: None,
    }
}

pub(super) fn stream(h: &SessionHost<TestRuntime>, req: &ApiTurnRequest) -> Rc<Client> {
    let c = Rc::new(Client::default());
    let start = block_on(h.api_turn(req, Attach::Stream(Box::new(Sink(c.clone())), None))).unwrap();
    assert!(matches!(start, ApiStart::Streaming));
    c
}

fn wait(h: &SessionHost<TestRuntime>, req: &ApiTurnRequest) -> ApiStart {
    block_on(h.api_turn(req, Attach::Wait)).unwrap()
}

#[test]
fn an_api_client_reads_the_answer_as_it_is_written_and_the_thread_keeps_it() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let c = stream(&h, &api_request("k1", "what is six times seven?"));
    assert_eq!(h.runtime().wakes.get(), 1, "queued like any message");
    p.http.push_sse_text(&sse(&["It ", "is ", "forty", "-two."]), 40);
    block_on(h.alarm()).unwrap();
    assert_eq!(c.deltas(), "It is forty-two.");
    assert!(c.events().iter().filter(|(e, _)| e == "delta").count() >= 2, "piece by piece");
    let (last, done) = c.events().pop().unwrap();
    assert_eq!(last, "done");
    assert_eq!((done["text"].as_str(), done["threadId"].as_str()), (Some("It is forty-two."), Some("notes")));
    assert_eq!(
        (done["usage"]["promptTokens"].as_u64(), done["usage"]["completionTokens"].as_u64()),
        (Some(50), Some(7))
    );
    assert!(c.closed.get());
    assert_eq!(p.http.request_json(0)["stream"], true, "a watched turn streams its model call");
    let status = h.status(false).unwrap();
    assert_eq!(status.message_count, 2, "the question and the answer are in the thread");
    assert!(p.channel.sent.borrow().is_empty(), "an API answer goes to no chat");
}

#[test]
fn generate_waits_for_the_turn_and_a_repeated_key_gets_the_same_answer() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let req = ApiTurnRequest { stream: false, ..api_request("same", "hello") };
    let ApiStart::Waiting(mut rx) = wait(&h, &req) else { panic!("not waiting") };
    answer(&p, "hi there");
    block_on(h.alarm()).unwrap();
    let outcome = rx.try_recv().unwrap().unwrap();
    assert!(matches!(&outcome, ApiOutcome::Done { text, .. } if text == "hi there"));
    assert_eq!(p.http.request_json(0).get("stream"), None, "no one streams: one plain call");
    // The client retries with the same Idempotency-Key: no second turn.
    assert!(matches!(wait(&h, &req), ApiStart::Answered(o) if o == outcome));
    let c = stream(&h, &req);
    assert_eq!(c.events().pop().unwrap().1["text"], "hi there");
    assert_eq!(p.http.requests.borrow().len(), 1);
    assert_eq!(h.status(true).unwrap().message_count, 2);
}

#[test]
fn a_repeat_while_the_turn_runs_joins_it_and_a_client_that_leaves_cancels_nothing() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let req = api_request("k", "tell me");
    let first = stream(&h, &req);
    let second = stream(&h, &req);
    assert_eq!(h.runtime().wakes.get(), 1, "the repeat was not queued again");
    first.gone.set(true);
    p.http.push_sse_text(&sse(&["one ", "two ", "three"]), 30);
    block_on(h.alarm()).unwrap();
    assert!(first.written.borrow().is_empty());
    assert_eq!(second.deltas(), "one two three");
    assert_eq!(h.status(true).unwrap().message_count, 2, "the turn completed and is in the history");
}

#[test]
fn a_stream_that_breaks_is_retried_and_the_client_sees_each_word_once() {
    let h = host(&[("RETRY_BASE_MS", "10")]);
    let p = h.runtime().p.clone();
    let c = stream(&h, &api_request("k", "count"));
    let full = sse(&["one ", "two ", "three ", "four"]);
    let cut = full.find("three").unwrap();
    p.http.push_sse(vec![Ok(full.as_bytes()[..cut].to_vec()), Err(HttpError::Network("reset".into()))]);
    p.http.push_sse_text(&full, 25);
    block_on(h.alarm()).unwrap();
    assert_eq!(c.deltas(), "one two three four");
    assert_eq!(c.events().pop().unwrap().1["text"], "one two three four");
    assert_eq!(p.http.requests.borrow().len(), 2);
}

#[test]
fn a_failing_model_is_an_error_for_the_client_and_tool_steps_are_told() {
    let h = host(&[("LLM_MAX_ATTEMPTS", "1")]);
    let p = h.runtime().p.clone();
    let c = stream(&h, &api_request("k", "hi"));
    p.http.push_json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    block_on(h.alarm()).unwrap();
    let (event, data) = c.events().pop().unwrap();
    assert_eq!(event, "error");
    assert!(data["message"].as_str().unwrap().contains("not answering"), "{data}");

    let c = stream(&h, &api_request("k2", "who am I?"));
    p.http.push_sse_text(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":\
         {\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"who_am_i\",\"input\":{}}}\n\n\
         event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n\
         event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        50,
    );
    p.http.push_sse_text(&sse(&["You are the owner."]), 50);
    block_on(h.alarm()).unwrap();
    let tools: Vec<String> = c
        .events()
        .iter()
        .filter(|(e, _)| e == "tool")
        .map(|(_, d)| format!("{} {}", d["name"].as_str().unwrap(), d["status"].as_str().unwrap()))
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert!(tools[0].ends_with("running") && tools[0].starts_with("who_am_i"), "{tools:?}");
    assert_eq!(c.deltas(), "You are the owner.");
}

#[test]
fn broken_settings_tell_waiting_clients_and_keep_the_message() {
    let h = host(&[("LLM_PROVIDER", "gemini")]);
    let ApiStart::Waiting(mut rx) = wait(&h, &ApiTurnRequest { stream: false, ..api_request("k", "hi") }) else {
        panic!()
    };
    block_on(h.alarm()).unwrap();
    let outcome = rx.try_recv().unwrap().unwrap();
    assert!(matches!(&outcome, ApiOutcome::Failed { message } if message.contains("LLM_PROVIDER")), "{outcome:?}");
    assert_eq!(h.status(true).unwrap().open, 1, "still queued for when the settings are fixed");
}

#[test]
fn what_a_heartbeat_says_reaches_the_notification_feed_but_heartbeat_ok_does_not() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    for (n, said) in [(1, "HEARTBEAT_OK"), (2, "The backup failed last night.")] {
        let mut req = request(n, "run the heartbeat");
        req.session_key = SessionKey::parse("agent:main:heartbeat").unwrap();
        req.inbound.channel = ChannelKind::System;
        req.inbound.reply_target = ReplyTarget { channel: ChannelKind::Notify, ..Default::default() };
        block_on(h.enqueue(&req)).unwrap();
        answer(&p, said);
        block_on(h.alarm()).unwrap();
    }
    let published = h.runtime().published.borrow().clone();
    assert_eq!(published, [("agent:main:heartbeat".to_owned(), "The backup failed last night.".to_owned())]);
}

/// The chat's log: previews and sends in order.
fn chat_log(p: &TestPlatform) -> Vec<String> {
    p.channel.log.borrow().clone()
}

#[test]
fn a_telegram_chat_sees_a_draft_grow_then_gets_the_answer() {
    let h = host(&[("STREAM_REPLIES_INTERVAL_MS", "200")]);
    let p = h.runtime().p.clone();
    p.channel.previews_work.set(true);
    block_on(h.enqueue(&request(1, "write a poem"))).unwrap();
    let words: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    p.http.push_sse_text(&sse(&words), 60);
    block_on(h.alarm()).unwrap();
    let log = chat_log(&p);
    let answer = words.concat();
    let drafts: Vec<&String> = log.iter().filter(|l| l.starts_with("draft#1: ")).collect();
    assert!(drafts.len() >= 2, "{log:?}");
    for d in &drafts {
        assert!(answer.starts_with(d.trim_start_matches("draft#1: ")), "a draft shows the answer so far: {d}");
    }
    assert_eq!(log.last(), Some(&format!("send: {}", answer.trim_end())));
    assert_eq!(log.iter().filter(|l| l.starts_with("send")).count(), 1, "the answer is sent once: {log:?}");
}

#[test]
fn a_chat_that_refuses_drafts_gets_one_edited_message_that_goes_once_the_answer_is_there() {
    let h = host(&[("STREAM_REPLIES_INTERVAL_MS", "200")]);
    let p = h.runtime().p.clone();
    p.channel.previews_work.set(true);
    p.channel.preview_outcomes.borrow_mut().push_back(PreviewOutcome::Unsupported("TEXTDRAFT_PEER_INVALID".into()));
    block_on(h.enqueue(&request(1, "go"))).unwrap();
    let words: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    p.http.push_sse_text(&sse(&words), 60);
    block_on(h.alarm()).unwrap();
    let log = chat_log(&p);
    let edits: Vec<&String> = log.iter().filter(|l| l.starts_with("edit ")).collect();
    assert!(edits.len() >= 2, "{log:?}");
    let handle = edits[0].split(':').next().unwrap().trim_start_matches("edit ").to_owned();
    assert!(edits.iter().all(|e| e.starts_with(&format!("edit {handle}:"))), "one message, edited: {log:?}");
    let sent = log.iter().position(|l| l.starts_with("send: ")).unwrap();
    assert_eq!(log[sent + 1], format!("end {handle}"), "removed after the answer was sent: {log:?}");
    assert_eq!(log.len(), sent + 2);
}

#[test]
fn a_rate_limited_preview_waits_as_asked_and_a_resumed_turn_edits_the_same_message() {
    let h = host(&[("STREAM_REPLIES", "edit"), ("STREAM_REPLIES_INTERVAL_MS", "100")]);
    let p = h.runtime().p.clone();
    p.channel.previews_work.set(true);
    // (An hour: the doubles' clock also runs with the typing refresh.)
    p.channel.preview_outcomes.borrow_mut().push_back(PreviewOutcome::Wait(3_600_000));
    // A turn evicted after its preview message was made: the message is known.
    p.sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", &[]).unwrap();
    p.sql.exec("INSERT INTO meta (key, value) VALUES ('preview:1', 'm42')", &[]).unwrap();
    block_on(h.enqueue(&request(1, "go"))).unwrap();
    let words: Vec<String> = (0..30).map(|i| format!("w{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    p.http.push_sse_text(&sse(&words), 40);
    block_on(h.alarm()).unwrap();
    let log = chat_log(&p);
    assert!(log[0].starts_with("refused edit: Wait"), "{log:?}");
    assert!(!log.iter().any(|l| l.starts_with("edit ")), "nothing more within the wait asked for: {log:?}");
    assert_eq!(log.last().map(String::as_str), Some("end m42"), "{log:?}");
}
