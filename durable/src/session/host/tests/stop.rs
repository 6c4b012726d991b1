//! Stopping an answer while the model writes it (`POST .../threads/{id}/stop`):
//! the stream is dropped, what was written stays, marked; failures and
//! early stops leave a note the thread shows after a reload.

use super::api::{api_request, sse, stream};
use super::*;
use crate::protocol::api::StopRequest;
use crate::testing::YieldOnce;
use r2_layout::{AssistantBlock, Message};

/// Runs the alarm, and stops the answer once `c`'s deltas contain `after`.
fn stop_when(h: &SessionHost<TestRuntime>, c: &super::api::Client, after: &str, req: StopRequest) -> bool {
    stop_once(h, || c.deltas().contains(after), req)
}

/// Runs the alarm, and stops the answer once `ready()`.
fn stop_once(h: &SessionHost<TestRuntime>, ready: impl Fn() -> bool, req: StopRequest) -> bool {
    let stopped = Cell::new(None);
    let stopper = async {
        while !ready() {
            YieldOnce::default().await;
        }
        stopped.set(Some(h.stop(&req).stopped));
    };
    block_on(futures::future::join(h.alarm(), stopper)).0.unwrap();
    stopped.get().expect("the stopper ran")
}

#[test]
fn a_stopped_answer_keeps_what_was_written_marked_and_the_stream_is_dropped() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let c = stream(&h, &api_request("k1", "count to ten"));
    let words: Vec<String> = (1..=10).map(|i| format!("w{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    p.http.push_sse_text(&sse(&words), 20);
    let req = StopRequest { request: Some("api:admin:k1".into()) };
    assert!(stop_when(&h, &c, "w3 ", req));
    let written = c.deltas();
    assert!(written.starts_with("w1 w2 w3 ") && !written.contains("w10"), "{written}");
    let (event, done) = c.events().pop().unwrap();
    assert_eq!(event, "done");
    assert_eq!(done["stopped"], true);
    assert_eq!(done["text"].as_str(), Some(written.as_str()), "the answer is what was written");
    assert!(c.closed.get());
    // The history keeps the partial answer, marked.
    let status = h.status(false).unwrap();
    let messages = status.messages.unwrap();
    let Some(Message::Assistant { content, stop_reason, usage, .. }) = messages.last() else { panic!("{messages:?}") };
    assert_eq!(stop_reason.as_deref(), Some("stopped"));
    assert!(matches!(&content[..], [AssistantBlock::Text { text }] if *text == written));
    assert!(usage.unwrap().output > 0, "the stopped call is recorded (estimated)");
    assert!(status.usage.input > 0, "and counted in the session's usage");
    assert_eq!(status.open, 0, "the message is done");
    assert!(status.notes.is_empty());
    // The next question goes on normally, with the stopped answer in its history.
    let c2 = stream(&h, &api_request("k2", "go on"));
    p.http.push_sse_text(&sse(&["fine."]), 50);
    block_on(h.alarm()).unwrap();
    assert_eq!(c2.deltas(), "fine.");
    let asked = p.http.request_json(1);
    let replayed = asked["messages"].to_string();
    assert!(replayed.contains("w1 w2 w3"), "the model reads the stopped answer: {replayed}");
}

#[test]
fn a_stop_for_another_message_or_none_running_stops_nothing() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let idle = h.stop(&StopRequest::default());
    assert!(!idle.stopped);
    assert!(idle.reason.unwrap().contains("no answer"));
    let c = stream(&h, &api_request("k1", "hello"));
    p.http.push_sse_text(&sse(&["a ", "b ", "c ", "d"]), 20);
    let other = StopRequest { request: Some("api:admin:someone-else".into()) };
    assert!(!stop_when(&h, &c, "b ", other));
    assert_eq!(c.deltas(), "a b c d", "the answer went on");
    assert_eq!(c.events().pop().unwrap().1.get("stopped"), None);
}

#[test]
fn a_stop_before_the_first_word_and_a_failed_model_leave_notes_in_the_thread() {
    let h = host(&[("LLM_MAX_ATTEMPTS", "1")]);
    let p = h.runtime().p.clone();
    let c = stream(&h, &api_request("k1", "hi"));
    p.http.push_json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    block_on(h.alarm()).unwrap();
    assert_eq!(c.events().pop().unwrap().0, "error");
    let status = h.status(false).unwrap();
    assert_eq!(status.notes.len(), 1, "{:?}", status.notes);
    assert_eq!(status.notes[0].kind, "error");
    assert!(status.notes[0].text.contains("not answering"), "{:?}", status.notes);
    assert!(h.status(true).unwrap().notes.is_empty(), "the brief status leaves them out");

    // Stopped before the model wrote anything: a note, no empty answer.
    let c = stream(&h, &api_request("k2", "and now?"));
    p.http.pending_polls.set(50);
    p.http.push_json(200, json!({"content": [{"type": "text", "text": "never seen"}], "stop_reason": "end_turn"}));
    let asked = || p.http.requests.borrow().len() == 2;
    assert!(stop_once(&h, asked, StopRequest::default()));
    let status = h.status(false).unwrap();
    let kinds: Vec<&str> = status.notes.iter().map(|n| n.kind.as_str()).collect();
    assert_eq!(kinds, ["error", "stopped"]);
    let messages = status.messages.unwrap();
    assert!(matches!(messages.last(), Some(Message::User { .. })), "no assistant message: {messages:?}");
    assert_eq!(c.events().pop().unwrap().1["stopped"], true);
}

#[test]
fn a_chat_is_told_what_was_written_and_that_it_was_stopped() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    // A Telegram message of the owner, stopped from the console's main thread.
    block_on(h.enqueue(&request(1, "tell me a story"))).unwrap();
    // Nobody follows it as a stream: the call is not streamed, and the stop
    // drops it before an answer.
    p.http.pending_polls.set(50);
    answer(&p, "Once upon a time");
    assert!(stop_once(&h, || !p.http.requests.borrow().is_empty(), StopRequest::default()));
    let sent = p.channel.sent.borrow().clone();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].1.contains("Stopped"), "{sent:?}");
    assert!(!sent[0].1.contains("Once upon"), "what was never shown is not sent");
}
