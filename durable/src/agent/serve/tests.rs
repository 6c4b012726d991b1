//! The Agent object's routes, reached the way the Worker reaches them: a
//! typed call's bytes ([`Outgoing`]) read back by [`serve`], its answer
//! read as the call's reply ([`CallError::read`]).

use super::serve;
use crate::agent::host::tests::{host, Runtime};
use crate::agent::host::AgentHost;
use crate::inbound::SessionKey;
use crate::protocol::agent::*;
use crate::protocol::call::{Call, CallError, Method, Outgoing};
use crate::protocol::mcp::McpStatusRequest;
use crate::protocol::memory::{MemoryReply, MemoryRequest};
use crate::protocol::people::PeopleCall;
use crate::protocol::reminders::ReminderCall;
use crate::protocol::session::SessionTouch;
use crate::protocol::tasks::{TaskCall, TaskRequest};
use crate::protocol::usage::ReportRequest;
use crate::serving::{Answer, Incoming, Served};
use crate::testing::TestStreams;
use futures::executor::block_on;
use serde_json::{json, Value};

fn answer(h: &AgentHost<Runtime>, req: &Incoming) -> Answer {
    block_on(serve(h, req, &TestStreams::default())).answer().expect("an answer, not a stream")
}

/// `call` as the Worker sends it, answered by the object's route.
fn through<C: Call>(h: &AgentHost<Runtime>, call: &C) -> Result<C::Reply, CallError> {
    let a = answer(h, &Incoming::of(&Outgoing::of(call).unwrap()));
    CallError::read(a.status, &a.body)
}

fn json_of(a: &Answer) -> Value {
    hearth_json::from_slice(&a.body).unwrap()
}

fn key(s: &str) -> SessionKey {
    SessionKey::parse(s).unwrap()
}

#[test]
fn every_typed_call_reaches_its_route_and_reads_its_reply() {
    let h = host(&[("OWNER_IDS", "telegram:1")]);
    let agent = || "main".to_owned();
    let touch = SessionTouch {
        session_key: key("agent:main:main"),
        session_id: None,
        updated_at: Some(1),
        title: None,
        last: None,
    };
    assert!(through(&h, &touch).unwrap().ok);
    let sessions = through(&h, &SessionsRequest { agent: agent() }).unwrap();
    assert_eq!(sessions.len(), 1);
    let thread = ThreadCreate {
        session_key: key("agent:main:api:t1"),
        title: Some("T".into()),
        resource_id: None,
        created_at: 5,
    };
    assert_eq!(through(&h, &thread).unwrap().title.as_deref(), Some("T"));
    let again = through(&h, &thread).unwrap_err();
    assert_eq!((again.status, again.message.as_str()), (409, "the thread exists"));
    assert!(through(&h, &ThreadsRequest { agent: agent() }).unwrap().iter().any(|t| t.title.as_deref() == Some("T")));
    let published = PublishRequest { session_key: key("agent:main:main"), notices: vec!["hello".into()] };
    assert_eq!(through(&h, &published).unwrap().added, 1);
    let report = ReportRequest { agent: agent(), period: "all".into(), thread: None };
    assert_eq!(through(&h, &report).unwrap().calls, 0);
    assert!(through(&h, &TaskRequest { agent: agent(), call: TaskCall::List { origin: None } }).unwrap().ok);
    assert!(through(&h, &ReminderCall::list("main", None)).unwrap().error.is_none());
    assert!(through(&h, &McpStatusRequest { agent: agent() }).unwrap().servers.is_empty());
    assert_eq!(through(&h, &ScheduleStatusRequest { agent: agent() }).unwrap()["ticks"], 0);
    assert!(through(&h, &PeopleCall::List { agent: agent() }).is_ok());
}

#[test]
fn memory_calls_answer_the_reply_or_one_refusal_shape_and_apply_the_agents_settings() {
    let h = host(&[("MEMORY_BM25_K1", "0.9")]);
    let op = |name: &str| {
        let add = json!({"call": "op", "store": "main", "op": {"op": "add", "name": name, "content": "Olga likes green tea", "kind": "note", "created_at": 1}});
        MemoryRequest { agent: "main".into(), call: hearth_json::from_value(add).unwrap() }
    };
    assert!(matches!(through(&h, &op("tea")), Ok(MemoryReply::Applied { .. })));
    // The bench's shorthand: the fields without `call`, a search gets k=10.
    let search = Incoming::post("/memory/search", r#"{"store": "main", "query": "tea"}"#).with_query("agent", "main");
    let found = answer(&h, &search);
    assert_eq!((found.status, json_of(&found)["hits"][0]["entry"]["name"].clone()), (200, json!("tea")));
    let garbled = answer(&h, &Incoming::post("/memory/call", "not json"));
    assert_eq!(garbled.status, 400);
    assert!(json_of(&garbled)["error"].as_str().unwrap().starts_with("bad memory call"), "{}", garbled.text());
    // A refused operation is a 422 the Session reads back as a refusal.
    let remove = json!({"call": "op", "store": "main", "op": {"op": "remove", "name": "nope"}});
    let missing = MemoryRequest { agent: "main".into(), call: hearth_json::from_value(remove).unwrap() };
    let refused = through(&h, &missing).map(|_| ()).unwrap_err();
    assert_eq!(refused.status, 422, "{refused}");
    assert!(matches!(
        crate::protocol::memory::MemoryCallError::from(refused),
        crate::protocol::memory::MemoryCallError::Rejected(_)
    ));
    // An invalid setting is named, and nothing is done.
    let bad = host(&[("MEMORY_BM25_B", "7")]);
    let e = through(&bad, &op("tea")).map(|_| ()).unwrap_err();
    assert_eq!(e.status, 500);
    assert!(e.message.contains("MEMORY_BM25_B"), "{e}");
    let loaded = answer(&h, &Incoming::new(Method::Get, "/memory/stats"));
    assert_eq!(json_of(&loaded), json!({"loaded": ["main"]}));
}

#[test]
fn unknown_routes_and_bad_bodies_are_refused_in_the_one_shape() {
    let h = host(&[]);
    let nowhere = answer(&h, &Incoming::new(Method::Get, "/nowhere"));
    assert_eq!((nowhere.status, json_of(&nowhere)), (404, json!({"error": "not found"})));
    let wrong_method = answer(&h, &Incoming::new(Method::Get, TICK_PATH));
    assert_eq!(wrong_method.status, 404);
    let tick = answer(&h, &Incoming::post(TICK_PATH, "{"));
    assert_eq!(tick.status, 400);
    assert!(json_of(&tick)["error"].as_str().unwrap().starts_with("bad tick"));
    assert_eq!(answer(&h, &Incoming::new(Method::Get, HEALTH_PATH)).status, 200);
}

#[test]
fn the_notification_feed_is_a_stream_with_one_keepalive_loop() {
    let h = host(&[]);
    let streams = TestStreams::default();
    let feed = Incoming::of(&Outgoing::of(&FeedRequest { agent: "main".into(), after: None }).unwrap());
    let Served::Stream { headers, keepalive } = block_on(serve(&h, &feed, &streams)) else { panic!("a stream") };
    assert!(headers.iter().any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream")));
    assert_eq!(keepalive.map(|k| k.every_ms), Some(super::FEED_PING_MS));
    let Served::Stream { keepalive, .. } = block_on(serve(&h, &feed, &streams)) else { panic!("a stream") };
    assert!(keepalive.is_none(), "one loop pings every client");
    through(&h, &PublishRequest { session_key: key("agent:main:main"), notices: vec!["the build is green".into()] })
        .unwrap();
    let clients = streams.0.borrow();
    assert_eq!(clients.len(), 2);
    assert!(clients.iter().all(|c| c.written.borrow().contains("the build is green")), "both clients heard it");
}

/// Recall told the main session its memory is empty: the write that ends
/// that tells it (whoever writes: here the admin API's op), once, and a
/// tell that failed is made by the next write.
#[test]
fn a_write_after_an_empty_recall_tells_the_main_session_once() {
    use crate::agent::host::tests::memory;
    let h = host(&[("OWNER_IDS", "telegram:1")]);
    let recall = json!({"call": "recall", "store": "main", "query": "the vault code?", "k": 3, "conversations": 1});
    let add = |name: &str| json!({"call": "op", "store": "main", "op": {"op": "add", "name": name, "content": "The vault code is 7781", "kind": "note", "created_at": 1}});
    let told = || h.runtime().queue.told.borrow().clone();
    let (status, reply) = memory(&h, &recall);
    assert_eq!((status, reply["empty"].clone()), (200, json!(true)), "{reply}");
    h.runtime().queue.tells_fail.set(true);
    assert_eq!(memory(&h, &add("vault")).0, 200, "a failed tell does not fail the write");
    assert!(told().is_empty());
    h.runtime().queue.tells_fail.set(false);
    memory(&h, &add("vault 2"));
    assert_eq!(told(), ["agent:main:main"], "the next write tells");
    memory(&h, &add("vault 3"));
    assert_eq!(told().len(), 1, "told once");
    let (_, reply) = memory(&h, &recall);
    assert!(reply.get("empty").is_none(), "notes are stored: {reply}");
    // Another store's write tells nobody.
    let (_, _) = memory(&h, &recall);
    let group = json!({"call": "op", "store": "group:telegram:-5", "op": {"op": "add", "name": "g", "content": "x", "kind": "note", "created_at": 1}});
    memory(&h, &group);
    assert_eq!(told().len(), 1);
}
