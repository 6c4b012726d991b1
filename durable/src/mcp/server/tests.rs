//! Hearth's MCP server natively: JSON-RPC, tools, threads per caller, session ids.

use super::*;
use crate::testing::{InProcessMemory, MemStore};
use futures::executor::block_on;
use std::cell::{Cell, RefCell};

/// A Worker in miniature: the session answers after a few polls.
#[derive(Default)]
pub(crate) struct Fake {
    store: MemStore,
    memory: InProcessMemory,
    queued: RefCell<Vec<(SessionKey, Inbound)>>,
    polls_to_answer: Cell<u32>,
    never_answers: Cell<bool>,
    now: Cell<i64>,
}

impl Backend for Fake {
    type Store = MemStore;
    type Memory = InProcessMemory;
    fn store(&self) -> &MemStore {
        &self.store
    }
    fn memory(&self) -> &InProcessMemory {
        &self.memory
    }
    async fn enqueue(&self, key: &SessionKey, inbound: &Inbound) -> Result<bool, String> {
        self.queued.borrow_mut().push((key.clone(), inbound.clone()));
        Ok(true)
    }
    async fn answer(&self, _key: &SessionKey, request: &str) -> Result<AnswerReply, String> {
        let left = self.polls_to_answer.get();
        if left > 0 || self.never_answers.get() {
            self.polls_to_answer.set(left.saturating_sub(1));
            return Ok(AnswerReply { state: AnswerState::Running, texts: vec![] });
        }
        let q = self.queued.borrow();
        let (_, m) = q.iter().find(|(_, m)| m.dedupe_key == request).ok_or("unknown")?;
        Ok(AnswerReply { state: AnswerState::Done, texts: vec![format!("echo: {}", m.text)] })
    }
    async fn sleep(&self, ms: u64) {
        self.now.set(self.now.get() + ms as i64);
    }
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    fn new_uuid(&self) -> String {
        format!("u{}", self.queued.borrow().len())
    }
}

fn cfg() -> AgentConfig {
    let vars: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    AgentConfig::load(&vars, "main").unwrap()
}

const OWNER: &Caller = &Caller::Admin;

/// A key of `API_TOKENS` without `owner`.
fn guest(name: &str) -> Caller {
    Caller::Key(crate::settings::api::ApiKey {
        name: name.into(),
        token: format!("{name}-token-0123456789"),
        agents: None,
        owner: false,
    })
}

fn secret(caller: &Caller) -> String {
    match caller {
        Caller::Admin => "the-admin-token".into(),
        Caller::Key(k) => k.token.clone(),
    }
}

fn transport<'a>(secret: &'a str, session: Option<&'a str>) -> Transport<'a> {
    Transport { version: None, session, secret, nonce: "0123456789abcdef", now_ms: 1_000 }
}

fn post(b: &Fake, caller: &Caller, body: Value) -> Reply {
    let secret = secret(caller);
    block_on(handle(b, &cfg(), caller, &transport(&secret, None), body.to_string().as_bytes()))
}

fn call_tool(b: &Fake, caller: &Caller, name: &str, arguments: Value) -> (String, bool) {
    let r = post(
        b,
        caller,
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let result = &r.body.unwrap()["result"];
    (result["content"][0]["text"].as_str().unwrap().to_owned(), result["isError"].as_bool().unwrap())
}

#[test]
fn initialize_and_list() {
    let b = Fake::default();
    let r = post(
        &b,
        OWNER,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
    );
    let result = &r.body.unwrap()["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
    let r = post(
        &b,
        OWNER,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2099-01-01"}}),
    );
    assert_eq!(r.body.unwrap()["result"]["protocolVersion"], SUPPORTED_VERSIONS[0], "an unknown version gets ours");
    let r = post(&b, OWNER, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(r, Reply { status: 202, body: None, session: None });
    let r = post(&b, OWNER, json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list"}));
    let body = r.body.unwrap();
    assert_eq!(body["id"], "a");
    let names: Vec<&str> =
        body["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ask_agent", "search_memory", "read_workspace_file"]);
    assert_eq!(body["result"]["tools"][0]["inputSchema"]["required"], json!(["message"]));
}

#[test]
fn ask_agent_runs_a_turn_in_the_thread_and_returns_the_answer() {
    let b = Fake::default();
    b.polls_to_answer.set(3);
    assert_eq!(call_tool(&b, OWNER, "ask_agent", json!({"message": "hello"})), ("echo: hello".to_owned(), false));
    let (key, inbound) = b.queued.borrow()[0].clone();
    assert_eq!(key.render(), "agent:main:main", "the owner's default thread is the main session");
    assert_eq!(
        (inbound.channel.as_str(), inbound.reply_target.extra.as_deref()),
        ("api", Some(inbound.dedupe_key.as_str()))
    );
    call_tool(&b, OWNER, "ask_agent", json!({"message": "hi", "thread": "work"}));
    assert_eq!(b.queued.borrow()[1].0.render(), "agent:main:api:work");

    // Privacy: only the owner's credentials reach the main session.
    let (text, is_error) = call_tool(&b, &guest("site"), "ask_agent", json!({"message": "hi", "thread": "main"}));
    assert!(is_error && text.contains("owner's private conversation"), "{text}");
    call_tool(&b, &guest("site"), "ask_agent", json!({"message": "hi"}));
    assert_eq!(b.queued.borrow().last().unwrap().0.render(), "agent:main:api:key-site-mcp", "the key's own thread");
    call_tool(&b, &guest("site"), "ask_agent", json!({"message": "hi", "thread": "support"}));
    assert_eq!(b.queued.borrow().last().unwrap().0.render(), "agent:main:api:key-site-support");
    call_tool(&b, &guest("shop"), "ask_agent", json!({"message": "hi", "thread": "support"}));
    assert_eq!(
        b.queued.borrow().last().unwrap().0.render(),
        "agent:main:api:key-shop-support",
        "two keys never share a thread"
    );
    assert_eq!(b.queued.borrow().last().unwrap().1.sender_id, "shop");
    let (text, is_error) = call_tool(&b, OWNER, "ask_agent", json!({"message": "hi", "thread": "a/b"}));
    assert!(is_error && text.contains("not a thread name"), "{text}");
    let (text, is_error) = call_tool(&b, OWNER, "ask_agent", json!({}));
    assert!(is_error && text.contains("message"), "{text}");

    // A turn longer than the caller can wait.
    b.never_answers.set(true);
    let (text, is_error) = call_tool(&b, OWNER, "ask_agent", json!({"message": "slow"}));
    assert!(is_error && text.contains("still working") && text.contains("\"main\""), "{text}");
    assert!(b.now.get() <= 55_000 + 1000, "gave up at the timeout: {}", b.now.get());
}

#[test]
fn memory_and_files_by_scope() {
    let b = Fake::default();
    b.store.put_text("agents/main/SOUL.md", "kind");
    b.store.put_text("agents/main/MEMORY.md", "the owner's secret");
    assert_eq!(
        call_tool(&b, OWNER, "read_workspace_file", json!({"path": "MEMORY.md"})),
        ("the owner's secret".into(), false)
    );
    let (text, is_error) = call_tool(&b, &guest("site"), "read_workspace_file", json!({"path": "MEMORY.md"}));
    assert!(is_error && !text.contains("secret"), "{text}");
    assert_eq!(call_tool(&b, &guest("site"), "read_workspace_file", json!({"path": "SOUL.md"})).0, "kind");

    let add = crate::protocol::memory::MemoryCall::Op {
        store: "main".into(),
        op: hearth_memory::Op::Add {
            name: "coffee".into(),
            content: "Olga drinks flat whites".into(),
            kind: hearth_memory::Kind::Note,
            created_at: 0,
        },
    };
    block_on(b.memory.call(&add)).unwrap();
    let (text, _) = call_tool(&b, OWNER, "search_memory", json!({"query": "coffee flat white"}));
    assert!(text.contains("flat whites"), "{text}");
    let (text, _) = call_tool(&b, &guest("site"), "search_memory", json!({"query": "coffee flat white"}));
    assert!(!text.contains("flat whites"), "a guest searches its own thread's store: {text}");
    let key_store = crate::protocol::memory::store_for(&SessionKey::api_thread(&cfg().agent, "key-site-mcp").unwrap());
    let add = crate::protocol::memory::MemoryCall::Op {
        store: key_store,
        op: hearth_memory::Op::Add {
            name: "hours".into(),
            content: "The shop opens at nine".into(),
            kind: hearth_memory::Kind::Note,
            created_at: 0,
        },
    };
    block_on(b.memory.call(&add)).unwrap();
    assert!(call_tool(&b, &guest("site"), "search_memory", json!({"query": "shop opens"})).0.contains("nine"));
    assert!(!call_tool(&b, &guest("shop"), "search_memory", json!({"query": "shop opens"})).0.contains("nine"));
}

#[test]
fn bad_json_rpc_gets_json_rpc_errors() {
    let b = Fake::default();
    let raw = |body: &[u8], header: Option<&str>| {
        let t = Transport { version: header, ..transport("the-admin-token", None) };
        block_on(handle(&b, &cfg(), OWNER, &t, body))
    };
    let code = |r: &Reply| r.body.as_ref().and_then(|b| b.pointer("/error/code")).and_then(Value::as_i64);
    let r = raw(b"{not json", None);
    assert_eq!((r.status, code(&r)), (400, Some(PARSE_ERROR)));
    let r = raw(br#"{"id": 1, "method": "ping"}"#, None);
    assert_eq!((r.status, code(&r)), (400, Some(INVALID_REQUEST)));
    let r = raw(br#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}"#, None);
    assert_eq!(code(&r), Some(INVALID_REQUEST));
    let r = raw(br#"[]"#, None);
    assert_eq!((r.status, code(&r)), (400, Some(INVALID_REQUEST)));
    let r = raw(br#"42"#, None);
    assert_eq!((r.status, code(&r)), (400, Some(INVALID_REQUEST)));
    let r = raw(br#"{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}"#, None);
    assert_eq!((r.status, code(&r)), (200, Some(METHOD_NOT_FOUND)));
    let r = raw(br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm_rf"}}"#, None);
    assert_eq!(code(&r), Some(INVALID_PARAMS));
    let r = raw(
        br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_agent", "arguments": [1]}}"#,
        None,
    );
    assert_eq!(code(&r), Some(INVALID_PARAMS));
    let r = raw(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#, Some("1999-01-01"));
    assert_eq!((r.status, code(&r)), (400, Some(INVALID_REQUEST)));
    let r = raw(br#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#, None);
    assert_eq!(r.status, 202, "a client's response is accepted");
    let r = raw(br#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/x"}, {"jsonrpc": "2.0", "id": 2, "method": "nope"}]"#, None);
    let answers = r.body.unwrap();
    assert_eq!(answers.as_array().unwrap().len(), 2, "{answers}");
    assert_eq!(answers[0]["result"], json!({}));
    assert_eq!(answers[1]["error"]["code"], METHOD_NOT_FOUND);
}

#[test]
fn initialize_gives_a_session_id_that_only_its_credentials_can_bring_back() {
    let b = Fake::default();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}});
    let site = guest("site");
    let site_secret = secret(&site);
    let send = |caller: &Caller, secret: &str, session: Option<&str>, body: &Value| {
        block_on(handle(&b, &cfg(), caller, &transport(secret, session), body.to_string().as_bytes()))
    };
    let r = send(&site, &site_secret, None, &init);
    let id = r.session.clone().expect("initialize answers with a session id");
    assert_eq!(r.status, 200);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let ok = send(&site, &site_secret, Some(&id), &list);
    assert_eq!((ok.status, ok.session.is_none()), (200, true), "only initialize issues one");
    // Another key (or the owner) bringing it back: unknown here, 404.
    let shop = guest("shop");
    let stolen = send(&shop, &secret(&shop), Some(&id), &list);
    assert_eq!(stolen.status, 404);
    assert_eq!(stolen.body.as_ref().unwrap()["error"]["code"], SESSION_NOT_FOUND);
    assert_eq!(send(OWNER, "the-admin-token", Some(&id), &list).status, 404);
    assert_eq!(send(&site, &site_secret, Some("made-up"), &list).status, 404);
    // No session id at all is fine (a client that does not do sessions).
    assert_eq!(send(&site, &site_secret, None, &list).status, 200);
    // A failed initialize gets none.
    let bad = json!({"jsonrpc": "1.0", "id": 3, "method": "initialize"});
    assert!(send(&site, &site_secret, None, &bad).session.is_none());
}
