use super::*;
use crate::inbound::ChatKind;
use crate::testing::MemSql;
use std::rc::Rc;

/// A client's response: what was written, and whether it is still open.
#[derive(Default)]
struct Client {
    written: RefCell<String>,
    closed: Cell<bool>,
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
    /// The events written: (event, id, data).
    fn events(&self) -> Vec<(String, Option<String>, serde_json::Value)> {
        self.written
            .borrow()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let field = |name: &str| e.lines().find_map(|l| l.strip_prefix(name)).map(str::to_owned);
                (field("event: ").unwrap(), field("id: "), hearth_json::from_str(&field("data: ").unwrap()).unwrap())
            })
            .collect()
    }
    /// The text a client shows: deltas appended, a `replace` starting over.
    fn shown(&self) -> String {
        let mut out = String::new();
        for (ev, _, data) in self.events() {
            if ev == "delta" {
                if data["replace"] == true {
                    out.clear();
                }
                out.push_str(data["text"].as_str().unwrap());
            }
        }
        out
    }
}

fn api_message(key: &str) -> Inbound {
    Inbound {
        dedupe_key: key.into(),
        channel: ChannelKind::Api,
        kind: ChatKind::Direct,
        chat_id: "t".into(),
        sender_id: "api".into(),
        sender_name: "api".into(),
        text: "hi".into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget { channel: ChannelKind::Api, ..Default::default() },
        received_at: 0,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    }
}

fn stream(w: &Watch, key: &str, last: Option<&str>) -> Rc<Client> {
    let c = Rc::new(Client::default());
    w.attach(key, "t1", Attach::Stream(Box::new(Sink(c.clone())), last.map(str::to_owned)));
    c
}

#[test]
fn a_stream_client_sees_each_piece_once_then_the_answer() {
    let w = Watch::default();
    let sql = MemSql::default();
    let early = stream(&w, "api:1", None);
    let mut waiting = w.attach("api:1", "t1", Attach::Wait).unwrap();
    w.begin(&api_message("api:1"));
    assert!(w.streaming());
    w.step(0);
    w.delta(Delta::Text("Let me "));
    w.delta(Delta::Text("look."));
    w.tool("memory_search", "running");
    let late = stream(&w, "api:1", None);
    w.tool("memory_search", "done");
    w.step(1);
    w.delta(Delta::Text("It is 42."));
    w.usage(&Usage::new(10, 2, 30, 0));
    w.usage(&Usage::new(12, 3, 30, 0));
    w.said(&ReplyTarget { channel: ChannelKind::Api, ..Default::default() }, "It is 42.");
    w.finish(&sql, 1).unwrap();

    for c in [&early, &late] {
        assert_eq!(c.shown(), "Let me look.It is 42.", "a late client catches up");
        let events = c.events();
        let kinds: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "tool").count(), 2);
        let (last, _, done) = events.last().unwrap();
        assert_eq!(last, "done");
        assert_eq!(done["text"], "It is 42.");
        assert_eq!(done["threadId"], "t1");
        assert_eq!(done["usage"]["completionTokens"], 5);
        assert_eq!(done["usage"]["promptTokens"], 82);
        assert!(c.closed.get());
    }
    assert_eq!(early.events().iter().filter(|(e, _, _)| e == "delta").count(), 3);
    let got = waiting.try_recv().unwrap().unwrap();
    assert!(matches!(&got, ApiOutcome::Done { text, .. } if text == "It is 42."));
    // A repeat of the request gets the same answer from storage.
    assert_eq!(w.stored(&sql, "api:1").unwrap(), Some(got));
    assert_eq!(w.stored(&sql, "api:2").unwrap(), None);
}

#[test]
fn a_retried_call_repeats_nothing_and_a_different_answer_replaces_the_step() {
    let w = Watch::default();
    let c = stream(&w, "k", None);
    w.begin(&api_message("k"));
    w.step(0);
    w.delta(Delta::Text("The answer "));
    w.delta(Delta::Text("is"));
    // The stream broke; the call starts again and says the same at first.
    w.delta(Delta::Retry);
    w.delta(Delta::Text("The ans"));
    assert_eq!(c.events().len(), 2, "nothing new yet");
    w.delta(Delta::Text("wer is 42"));
    assert_eq!(c.shown(), "The answer is 42");
    assert_eq!(c.events().last().unwrap().2, json!({"text": " 42"}));
    // Broke again, and this time it says something else.
    w.delta(Delta::Retry);
    w.delta(Delta::Text("Forty-two."));
    assert_eq!(c.shown(), "Forty-two.");
    assert_eq!(c.events().last().unwrap().2["replace"], true);
    assert_eq!(w.preview().as_deref(), Some("Forty-two."));
}

#[test]
fn a_reconnecting_client_gets_only_what_follows_its_last_event() {
    let w = Watch::default();
    let first = stream(&w, "k", None);
    w.begin(&api_message("k"));
    w.step(0);
    w.delta(Delta::Text("Héllo"));
    w.tool("read_file", "running");
    w.tool("read_file", "done");
    w.step(1);
    w.delta(Delta::Text("wor"));
    let last_id = first.events().iter().filter_map(|(_, id, _)| id.clone()).nth(1).unwrap();
    assert_eq!(last_id, "0-6-1", "step 0, six bytes, one tool event");
    first.gone.set(true);
    w.delta(Delta::Text("ld"));
    let again = stream(&w, "k", Some(&last_id));
    let events = again.events();
    assert_eq!(events[0].0, "tool", "{events:?}");
    assert_eq!(events[0].2["status"], "done");
    assert_eq!(again.shown(), "world");
    // After an eviction a new object resumes at step 1 and writes it anew:
    // the client that saw "wor" gets the rest only.
    let w = Watch::default();
    let third = stream(&w, "k", Some("1-3-0"));
    w.begin(&api_message("k"));
    w.step(1);
    w.delta(Delta::Text("world!"));
    assert_eq!(third.shown(), "ld!");
    // A position inside a character does not cut it.
    let w = Watch::default();
    let fourth = stream(&w, "k", Some("0-2-0"));
    w.begin(&api_message("k"));
    w.step(0);
    w.delta(Delta::Text("Héllo"));
    assert_eq!(fourth.shown(), "éllo");
}

#[test]
fn a_failed_turn_is_an_error_and_notices_skip_heartbeat_ok() {
    let w = Watch::default();
    let sql = MemSql::default();
    let c = stream(&w, "k", None);
    let mut rx = w.attach("k", "t1", Attach::Wait).unwrap();
    w.begin(&api_message("k"));
    w.failed("⚠️ My model is not answering right now");
    w.said(&ReplyTarget { channel: ChannelKind::Api, ..Default::default() }, "⚠️ My model is not answering right now");
    w.finish(&sql, 0).unwrap();
    let (ev, _, data) = c.events().pop().unwrap();
    assert_eq!((ev.as_str(), data["message"].as_str()), ("error", Some("⚠️ My model is not answering right now")));
    assert_eq!(rx.try_recv().unwrap().unwrap().http("t1").0, 502);

    let notify = ReplyTarget { channel: ChannelKind::Notify, ..Default::default() };
    w.said(&notify, "HEARTBEAT_OK");
    w.said(&notify, "Your 3pm meeting moved to 4pm.");
    assert_eq!(w.take_notices(), ["Your 3pm meeting moved to 4pm."]);
    assert!(w.take_notices().is_empty());
}

#[test]
fn a_client_that_left_stops_being_written_and_changes_nothing() {
    let w = Watch::default();
    let sql = MemSql::default();
    let c = stream(&w, "k", None);
    let mut rx = w.attach("k", "t1", Attach::Wait).unwrap();
    w.begin(&api_message("k"));
    w.step(0);
    c.gone.set(true);
    w.delta(Delta::Text("still written for the others"));
    assert!(!w.streaming(), "no one reads the stream any more");
    w.said(&ReplyTarget { channel: ChannelKind::Api, ..Default::default() }, "done anyway");
    w.finish(&sql, 0).unwrap();
    assert!(c.written.borrow().is_empty());
    assert!(matches!(rx.try_recv().unwrap(), Some(ApiOutcome::Done { .. })));
}

#[test]
fn clients_of_a_message_that_did_not_finish_keep_following_it() {
    let w = Watch::default();
    let sql = MemSql::default();
    let c = stream(&w, "k", None);
    w.begin(&api_message("k"));
    w.step(0);
    w.delta(Delta::Text("first try"));
    // Held (a budget, a storage error): the drain stops, and later begins it again.
    w.begin(&api_message("k"));
    w.step(0);
    w.delta(Delta::Text("first try, then more"));
    w.said(&ReplyTarget { channel: ChannelKind::Api, ..Default::default() }, "done");
    w.finish(&sql, 0).unwrap();
    assert_eq!(c.shown(), "first try, then more");
    assert!(c.closed.get());
}

#[test]
fn a_silent_stream_gets_keep_alive_comments_and_a_talking_one_does_not() {
    let w = Watch::default();
    let sql = MemSql::default();
    assert!(w.claim_pinger() && !w.claim_pinger(), "one keep-alive loop at a time");
    // Queued behind another message: nothing to say yet.
    let queued = stream(&w, "api:2", None);
    w.begin(&api_message("api:1"));
    let busy = stream(&w, "api:1", None);
    assert!(w.ping());
    assert_eq!(*queued.written.borrow(), ": keep-alive\n\n");
    assert_eq!(*busy.written.borrow(), ": keep-alive\n\n", "the model has not started either");
    w.step(0);
    w.delta(Delta::Text("Hello"));
    assert!(w.ping());
    assert_eq!(busy.written.borrow().matches(": keep-alive").count(), 1, "it spoke since: no comment");
    assert_eq!(queued.written.borrow().matches(": keep-alive").count(), 2);
    assert!(w.ping());
    assert_eq!(busy.written.borrow().matches(": keep-alive").count(), 2, "silent again");
    // A client that left is dropped; the events still parse around the comments.
    queued.gone.set(true);
    w.finish(&sql, 1).unwrap();
    assert!(busy.closed.get());
    let events: Vec<String> = busy
        .written
        .borrow()
        .split("\n\n")
        .filter(|e| !e.is_empty() && !e.starts_with(':'))
        .map(str::to_owned)
        .collect();
    assert!(events.iter().any(|e| e.contains("event: delta")), "{events:?}");
    assert!(!w.ping(), "no stream client left: the loop ends");
    assert!(w.claim_pinger(), "and the next stream starts one again");
}
