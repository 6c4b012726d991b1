//! The Session object's routes, reached the way the Worker and the other
//! objects reach them: a typed call's bytes ([`Outgoing`]) read back by
//! [`serve`], its answer read as the call's reply ([`CallError::read`]).

use super::serve;
use crate::protocol::api::{ApiOutcome, ApiTurnRequest, AskSession, StopRequest, StopSession, STOP_PATH, TURN_PATH};
use crate::protocol::call::{Ack, Call, CallError, Method, Outgoing};
use crate::protocol::session::{
    Admission, AdmitSession, AnswerRequest, AnswerState, ResetSession, StatusRequest, WakeSession, ADMISSION_PATH,
    ENQUEUE_PATH, POST_PATH,
};
use crate::serving::{Answer, Incoming, Served};
use crate::session::host::tests::api::{api_request, sse};
use crate::session::host::tests::{answer as model_says, host, request, TestRuntime};
use crate::session::host::SessionHost;
use crate::testing::TestStreams;
use futures::executor::block_on;
use serde_json::{json, Value};

fn answer(h: &SessionHost<TestRuntime>, req: &Incoming) -> Answer {
    block_on(serve(h, req, &TestStreams::default())).answer().expect("an answer, not a stream")
}

/// `call` as the Worker sends it, answered by the object's route.
fn through<C: Call>(h: &SessionHost<TestRuntime>, call: &C) -> Result<C::Reply, CallError> {
    let a = answer(h, &Incoming::of(&Outgoing::of(call).unwrap()));
    CallError::read(a.status, &a.body)
}

fn json_of(a: &Answer) -> Value {
    hearth_json::from_slice(&a.body).unwrap()
}

#[test]
fn the_typed_calls_reach_their_routes_and_read_their_replies() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let enqueue = request(1, "hi");
    let key = enqueue.session_key.clone();
    assert!(through(&h, &enqueue).unwrap().queued);
    assert!(!through(&h, &enqueue).unwrap().queued, "a redelivery is acknowledged, not queued");
    let brief = through(&h, &StatusRequest { session_key: key.clone(), brief: true }).unwrap();
    assert_eq!(brief.open, 1);
    let asked = AnswerRequest { session_key: key.clone(), request: enqueue.inbound.dedupe_key.clone() };
    assert_eq!(through(&h, &asked).unwrap().state, AnswerState::Queued, "the query survives its encoding");
    model_says(&p, "hello Ana");
    block_on(h.alarm()).unwrap();
    assert_eq!(through(&h, &asked).unwrap().state, AnswerState::Done);
    let admit = AdmitSession { session_key: key.clone(), admission: Admission { open: false } };
    assert_eq!(through(&h, &admit).unwrap(), Ack::DONE);
    assert_eq!(through(&h, &WakeSession { session_key: key.clone() }).unwrap(), Ack::DONE);
    let stop = StopSession { session_key: key.clone(), stop: StopRequest { request: None } };
    assert!(!through(&h, &stop).unwrap().stopped, "nothing was being written");
    assert!(through(&h, &ResetSession { session_key: key.clone() }).is_ok());
    let fresh = host(&[]);
    let never = through(&fresh, &ResetSession { session_key: key }).unwrap_err();
    assert_eq!((never.status, never.message.as_str()), (404, "no such session"));
}

#[test]
fn an_api_message_is_a_stream_with_its_thread_and_key_or_its_answer_once_done() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let streams = TestStreams::default();
    let req = api_request("k1", "what is six times seven?");
    let out = Outgoing::of(&req).unwrap();
    let Served::Stream { headers, keepalive } = block_on(serve(&h, &Incoming::of(&out), &streams)) else {
        panic!("a stream")
    };
    let header = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(header("x-thread-id"), Some("notes"));
    assert_eq!(header("idempotency-key"), Some("k1"));
    assert!(header("content-type").unwrap().starts_with("text/event-stream"));
    assert!(keepalive.is_some());
    p.http.push_sse_text(&sse(&["It ", "is ", "forty-two."]), 40);
    block_on(h.alarm()).unwrap();
    let client = streams.0.borrow()[0].clone();
    assert!(client.written.borrow().contains("event: done"), "{}", client.written.borrow());
    assert!(client.closed.get());
    // The same key again, waiting: the answer the thread kept, as the HTTP API's JSON.
    let again = Incoming::of(&Outgoing::of(&ApiTurnRequest { stream: false, ..req.clone() }).unwrap());
    let kept = answer(&h, &again);
    assert_eq!((kept.status, json_of(&kept)["text"].clone()), (200, json!("It is forty-two.")));
    assert_eq!((kept.header("x-thread-id"), kept.header("idempotency-key")), (Some("notes"), Some("k1")));
    // Another session's delegate call reads the outcome itself.
    let outcome = through(&h, &AskSession(ApiTurnRequest { stream: false, ..req })).unwrap();
    assert!(matches!(outcome, ApiOutcome::Done { text, .. } if text == "It is forty-two."));
}

#[test]
fn a_waiting_api_message_is_answered_when_the_alarm_ran_its_turn() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let req = ApiTurnRequest { stream: false, ..api_request("w1", "hello") };
    let asked = Incoming::of(&Outgoing::of(&req).unwrap());
    model_says(&p, "hi there");
    let streams = TestStreams::default();
    let (served, ran) = block_on(futures::future::join(serve(&h, &asked, &streams), h.alarm()));
    ran.unwrap();
    let a = served.answer().unwrap();
    assert_eq!((a.status, json_of(&a)["text"].clone()), (200, json!("hi there")));
}

#[test]
fn bad_bodies_and_unknown_routes_are_refused_in_the_one_shape() {
    let h = host(&[]);
    let nowhere = answer(&h, &Incoming::new(Method::Get, "/nowhere"));
    assert_eq!((nowhere.status, json_of(&nowhere)), (404, json!({"error": "not found"})));
    for path in [ENQUEUE_PATH, POST_PATH, TURN_PATH, STOP_PATH, ADMISSION_PATH] {
        let bad = answer(&h, &Incoming::post(path, "{"));
        assert_eq!(bad.status, 400, "{path}");
        assert!(json_of(&bad)["error"].as_str().unwrap().starts_with("bad "), "{path}: {}", bad.text());
    }
    let unasked = answer(&h, &Incoming::new(Method::Get, "/answer"));
    assert_eq!((unasked.status, json_of(&unasked)), (400, json!({"error": "answer needs ?request="})));
}
