//! The object routes natively: the request as the Worker read it, the call
//! the route makes (its bytes, as [`Outgoing`] writes them), the object's
//! answer scripted, and the reply the client gets.

use super::*;
use crate::api::routes::route;
use crate::protocol::call::Outgoing;
use crate::protocol::call::{Call, CallError};
use crate::settings::api::Caller;
use crate::testing::FakeFront;
use futures::executor::block_on;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::VecDeque;

thread_local! {
    /// The bucket the workspace routes read (one per test thread).
    pub(super) static STORE: std::rc::Rc<crate::testing::MemStore> = Default::default();
    /// What the objects answer next (status, body); none left: unreachable.
    static ANSWERS: RefCell<VecDeque<(u16, Vec<u8>)>> = RefCell::default();
    /// The calls sent: the target (path and query) and the body.
    static SENT: RefCell<Vec<(String, Value)>> = RefCell::default();
}

pub(super) fn answers(list: &[(u16, Value)]) {
    ANSWERS.with(|a| *a.borrow_mut() = list.iter().map(|(s, v)| (*s, v.to_string().into_bytes())).collect());
    SENT.with(|s| s.borrow_mut().clear());
}

pub(super) fn sent() -> Vec<(String, Value)> {
    SENT.with(|s| s.borrow().clone())
}

impl ApiFront for FakeFront {
    type Store = std::rc::Rc<crate::testing::MemStore>;
    fn store(&self) -> Result<std::rc::Rc<crate::testing::MemStore>, String> {
        Ok(STORE.with(|s| s.clone()))
    }
    async fn call<C: Call>(&self, call: &C) -> Result<C::Reply, CallError> {
        let (status, body) = self.relay(call).await.map_err(CallError::unreachable)?;
        CallError::read(status, &body)
    }
    fn new_uuid(&self) -> String {
        "0f0e0d0c-0000-4000-8000-000000000001".into()
    }
    fn tool_names(&self) -> Vec<&'static str> {
        vec!["read", "write", "edit", "exec"]
    }
    async fn relay<C: Call>(&self, call: &C) -> Result<(u16, Vec<u8>), String> {
        let out = Outgoing::of(call).map_err(|e| e.to_string())?;
        let body = out.body.as_deref().map(|b| hearth_json::from_slice(b).unwrap()).unwrap_or(Value::Null);
        SENT.with(|s| s.borrow_mut().push((out.target, body)));
        ANSWERS.with(|a| a.borrow_mut().pop_front()).ok_or_else(|| "no object answers".to_owned())
    }
}

/// `method path` (after `/api/`) with `body` and `query`, as the admin.
pub(super) fn ask(method: &str, path: &str, query: &[(&str, &str)], body: &str) -> WebReply {
    let front = FakeFront::with(&[("AGENTS", "main"), ("TEMPLATE", "base")]);
    let segments: Vec<&str> = path.split('/').collect();
    let method = crate::protocol::call::Method::parse(method);
    let r = route(method, &segments, &Caller::Admin, &["main".to_owned()]).unwrap();
    let req = WebRequest {
        method: method.as_str().into(),
        query: query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        body: body.as_bytes().to_vec(),
        ..Default::default()
    };
    block_on(serve(&front, &Caller::Admin, &r, &req)).expect("an object route")
}

pub(super) fn body(r: &WebReply) -> Value {
    hearth_json::from_slice(&r.body).unwrap()
}

#[test]
fn the_objects_answer_reaches_the_client_as_it_came() {
    answers(&[(200, json!({"text": "no one yet", "list": []}))]);
    let r = ask("GET", "agents/main/people", &[], "");
    assert_eq!((r.status, body(&r)["text"].clone()), (200, json!("no one yet")));
    assert_eq!(sent(), [(crate::protocol::people::PEOPLE_PATH.to_owned(), json!({"list": {"agent": "main"}}))]);
    answers(&[(409, json!({"error": "that code was used"}))]);
    let r = ask("POST", "agents/main/people", &[], r#"{"approve": "ABC123"}"#);
    assert_eq!((r.status, body(&r)), (409, json!({"error": "that code was used"})), "a refusal as the object said it");
    answers(&[]);
    let r = ask("GET", "agents/main/schedule", &[], "");
    assert_eq!(r.status, 503, "an object that cannot be reached");
    assert!(body(&r)["error"].as_str().unwrap().contains("could not be reached"));
}

#[test]
fn bad_requests_are_400s_naming_the_problem_and_reach_no_object() {
    answers(&[]);
    for (method, path, query, sent_body, why) in [
        ("POST", "agents/main/people", vec![], "[]", "not a people action"),
        ("POST", "agents/main/approvals/x", vec![], r#"{"approve": true}"#, "is not a request number"),
        ("POST", "agents/main/approvals/3", vec![], r#"{"approve": "yes"}"#, "send {\"approve\": true}"),
        ("GET", "agents/main/reminders", vec![("session", "agent:work:main")], "", "is not a session key of agent"),
        ("GET", "agents/main/sessions/agent:work:main", vec![], "", "is not a session key of agent"),
        (
            "POST",
            "agents/main/memory/call",
            vec![],
            r#"{"call": "recall", "store": "main", "query": "x", "k": 1}"#,
            "are the sessions' calls",
        ),
        ("POST", "agents/main/memory/call", vec![], r#"{"call": "nope"}"#, "not a memory call"),
        ("GET", "agents/main/memory/notes", vec![("limit", "lots")], "", "limit must be a whole number"),
    ] {
        let r = ask(method, path, &query, sent_body);
        assert_eq!(r.status, 400, "{method} {path}: {}", r.text());
        assert!(body(&r)["error"].as_str().unwrap().contains(why), "{method} {path}: {}", r.text());
    }
    assert!(sent().is_empty(), "nothing was asked of an object");
}

#[test]
fn reminders_tasks_and_usage_ask_the_agent_object_by_type() {
    answers(&[(200, json!({"ok": true, "reminders": [], "pending": 0}))]);
    let r = ask("DELETE", "agents/main/reminders/r9", &[], "");
    assert_eq!((r.status, body(&r)), (404, json!({"error": "no pending reminder \"r9\""})));
    assert_eq!(sent()[0].0, "/reminders");
    assert_eq!(sent()[0].1["id"], "r9");
    answers(&[(200, json!({"ok": false, "error": "no task t1"}))]);
    let r = ask("DELETE", "agents/main/tasks/t1", &[], "");
    assert_eq!((r.status, body(&r)), (404, json!({"error": "no task t1"})));
    answers(&[(400, json!({"error": "bad period \"soon\""}))]);
    let r = ask("GET", "agents/main/usage", &[("period", "soon")], "");
    assert_eq!(r.status, 400);
    assert_eq!(sent()[0].1, json!({"agent": "main", "period": "soon"}));
    answers(&[(200, json!([{"sessionKey": "agent:main:telegram:group:-1"}]))]);
    let r = ask("GET", "agents/main/memory/stores", &[], "");
    assert_eq!(body(&r), json!({"stores": ["main", "group:telegram:-1"]}));
}

#[test]
fn the_worker_keeps_the_routes_that_are_not_the_objects() {
    let front = FakeFront::with(&[]);
    let segments = ["agents", "main", "stream"];
    let r = route(crate::protocol::call::Method::Post, &segments, &Caller::Admin, &["main".to_owned()]).unwrap();
    assert!(block_on(serve(&front, &Caller::Admin, &r, &WebRequest::default())).is_none());
}

#[test]
fn threads_are_the_callers_own_and_a_taken_id_is_a_409() {
    let front = FakeFront::with(&[("AGENTS", "main")]);
    let caller = Caller::Key(crate::settings::api::ApiKey {
        name: "app".into(),
        token: "a-long-enough-token".into(),
        agents: Some(vec!["main".into()]),
        owner: false,
    });
    let segments = ["agents", "main", "memory", "threads"];
    let post = route(crate::protocol::call::Method::Post, &segments, &caller, &["main".to_owned()]).unwrap();
    let req = WebRequest {
        method: "POST".into(),
        body: br#"{"threadId": "t1", "title": "Plans"}"#.to_vec(),
        ..Default::default()
    };
    let row = json!({"sessionKey": "agent:main:api:key-app-t1", "title": "Plans", "createdAt": 1, "updatedAt": 1});
    answers(&[(201, row.clone()), (409, json!({"error": "the thread exists"}))]);
    let made = block_on(serve(&front, &caller, &post, &req)).unwrap();
    assert_eq!((made.status, body(&made)["id"].clone()), (201, json!("t1")), "{}", made.text());
    assert_eq!(sent()[0].1["sessionKey"], "agent:main:api:key-app-t1", "a key's thread is its own session");
    let again = block_on(serve(&front, &caller, &post, &req)).unwrap();
    assert_eq!((again.status, body(&again)), (409, json!({"error": "the thread \"t1\" exists"})));
    let big = WebRequest { body: vec![b' '; 17 * 1024], ..req.clone() };
    assert_eq!(block_on(serve(&front, &caller, &post, &big)).unwrap().status, 413);
    // The list shows a key only its own threads, by the id it gave.
    let get = route(crate::protocol::call::Method::Get, &segments, &caller, &["main".to_owned()]).unwrap();
    answers(&[(
        200,
        json!([row, {"sessionKey": "agent:main:api:t2", "title": "the owner's", "createdAt": 1, "updatedAt": 1}]),
    )]);
    let listed = block_on(serve(&front, &caller, &get, &WebRequest::default())).unwrap();
    let ids: Vec<Value> = body(&listed).as_array().unwrap().iter().map(|t| t["id"].clone()).collect();
    assert_eq!(ids, [json!("t1")]);
}

#[test]
fn the_gateway_routes_follow_its_setting() {
    answers(&[]);
    let off = ask("POST", "agents/main/gateway/connect", &[], "");
    assert_eq!((off.status, body(&off)), (409, json!({"error": "DISCORD_GATEWAY is not on for agent \"main\""})));
    answers(&[(200, json!({"state": "idle"}))]);
    let status = ask("GET", "agents/main/gateway", &[], "");
    assert_eq!((status.status, sent()[0].0.as_str()), (200, crate::protocol::gateway::STATUS_PATH));
}

#[test]
fn the_owner_writes_a_file_reads_its_versions_and_restores_one() {
    answers(&[]);
    let put = |content: &str| ask("PUT", "agents/main/files/notes/plan.md", &[("why", "draft")], content);
    assert_eq!(body(&put("one\n"))["changed"], true);
    assert_eq!(body(&put("two\n"))["changed"], true);
    let versions = ask("GET", "agents/main/history/notes/plan.md", &[], "");
    let list = body(&versions)["versions"].as_array().unwrap().clone();
    assert_eq!(list.len(), 2, "{}", versions.text());
    let oldest = list[1]["sha256"].as_str().map(|h| format!("sha256:{h}")).expect("a version's hash");
    let diff = ask("GET", "agents/main/history/notes/plan.md", &[("diff", &oldest)], "");
    assert_eq!(diff.header("content-type"), Some("text/x-diff; charset=utf-8"));
    assert!(diff.text().contains("-one") && diff.text().contains("+two"), "{}", diff.text());
    let first = ask("GET", "agents/main/history/notes/plan.md", &[("version", &oldest)], "");
    assert_eq!((first.status, first.text().as_ref()), (200, "one\n"));
    let restored =
        ask("POST", "agents/main/history/notes/plan.md", &[], &json!({"restore": oldest, "why": "back"}).to_string());
    assert_eq!(body(&restored)["changed"], true, "{}", restored.text());
    let recent = ask("GET", "agents/main/history", &[], "");
    assert_eq!(body(&recent)["changes"].as_array().unwrap().len(), 3);
    let archives = ask("GET", "agents/main/history/sessions/x.jsonl", &[], "");
    assert_eq!((archives.status, archives.text().as_ref()), (400, "session archives are not workspace files"));
    let missing = ask("GET", "agents/main/history/nothing.md", &[("version", "current")], "");
    assert_eq!(missing.status, 404, "{}", missing.text());
    assert!(sent().is_empty(), "the history is the bucket's, no object is asked");
}
