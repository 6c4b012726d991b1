//! The Agent object's host against in-memory doubles.

use super::host::{AgentHost, AgentRuntime, PinsAnswer, PinsCall};
use crate::inbound::{Inbound, SessionKey};
use crate::ports::{LogLevel, StorageError};
use crate::protocol::agent::{PinsRequest, TickRequest};
use crate::protocol::session::SessionTouch;
use crate::scheduled::view::TicksRun;
use crate::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
use crate::testing::{MemSql, MemStore};
use futures::executor::block_on;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Default)]
struct Queue {
    queued: RefCell<Vec<(String, Inbound)>>,
}

impl SessionQueue for Queue {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        _: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError> {
        self.queued.borrow_mut().push((key.render(), inbound.clone()));
        Ok(EnqueueOutcome::Queued)
    }
    async fn usage(&self, _: &SessionKey) -> Result<SessionCounters, StorageError> {
        Ok(SessionCounters::default())
    }
}

struct Runtime {
    sql: Rc<MemSql>,
    store: Rc<MemStore>,
    vars: HashMap<String, String>,
    queue: Queue,
    wakes: Cell<u32>,
    now: Rc<Cell<i64>>,
    http: crate::testing::ScriptedHttp,
}

impl AgentRuntime for Runtime {
    type Sql = MemSql;
    type Store = Rc<MemStore>;
    type Vars = HashMap<String, String>;
    type Queue = Queue;
    type Http = crate::testing::ScriptedHttp;
    fn http(&self) -> &crate::testing::ScriptedHttp {
        &self.http
    }
    fn sql(&self) -> &Rc<MemSql> {
        &self.sql
    }
    fn store(&self) -> Result<Rc<MemStore>, StorageError> {
        Ok(self.store.clone())
    }
    fn vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn queue(&self) -> &Queue {
        &self.queue
    }
    async fn wake(&self) -> Result<(), StorageError> {
        self.wakes.set(self.wakes.get() + 1);
        Ok(())
    }
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    fn clock(&self) -> Box<dyn Fn() -> i64> {
        let now = self.now.clone();
        Box::new(move || now.get())
    }
    fn log(&self, _: LogLevel, _: &str) {}
}

fn host(vars: &[(&str, &str)]) -> AgentHost<Runtime> {
    AgentHost::new(Runtime {
        sql: Rc::new(MemSql::default()),
        store: Rc::new(MemStore::default()),
        vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        queue: Queue::default(),
        wakes: Cell::new(0),
        now: Rc::new(Cell::new(1_773_543_600_000)),
        http: Default::default(),
    })
}

#[test]
fn the_mcp_catalog_is_the_agents_own_with_its_own_secrets() {
    use crate::protocol::mcp::McpToolsRequest;
    let h = host(&[("AGENTS", "main,work"), ("TOKEN", "shared"), ("TOKEN__WORK", "work-only")]);
    let store = h.runtime().store.clone();
    store.put_text(
        "agents/work/mcp.json",
        r#"{"mcpServers": {"s": {"url": "https://s.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}"#,
    );
    let refused = block_on(h.mcp_catalog(&McpToolsRequest { agent: "nobody".into() }, false)).unwrap_err();
    assert_eq!(refused.status, 404);
    let main = block_on(h.mcp_catalog(&McpToolsRequest { agent: "main".into() }, false)).unwrap();
    assert!(main.servers.is_empty(), "main has no mcp.json");
    // The server is down: the listing fails, but with the agent's own secret.
    h.runtime().http.responses.borrow_mut().push_back(Err(crate::ports::HttpError::Network("refused".into())));
    let work = block_on(h.mcp_catalog(&McpToolsRequest { agent: "work".into() }, false)).unwrap();
    assert_eq!(work.listed_now, 1);
    let sent = h.runtime().http.requests.borrow();
    assert!(sent[0].headers.contains(&("Authorization".into(), "Bearer work-only".into())), "{:?}", sent[0].headers);
    // The admin view lists nothing.
    drop(sent);
    let cached = block_on(h.mcp_catalog(&McpToolsRequest { agent: "work".into() }, true)).unwrap();
    assert_eq!((cached.listed_now, h.runtime().http.requests.borrow().len()), (0, 1));
}

#[test]
fn memory_calls_answer_in_the_wire_format_and_apply_the_agents_settings() {
    let h = host(&[("MEMORY_BM25_K1", "0.9")]);
    let add = json!({"call": "op", "store": "main", "op": {"op": "add", "name": "tea", "content": "Olga likes green tea", "kind": "note", "created_at": 1}});
    let (status, reply) = h.memory_call(Some("main"), add.to_string().as_bytes());
    assert_eq!((status, reply["ok"].as_bool()), (200, Some(true)), "{reply}");
    let (status, reply) = h.memory_named(Some("main"), "search", br#"{"store": "main", "query": "tea"}"#);
    assert_eq!(status, 200);
    assert_eq!(reply["hits"][0]["entry"]["name"], "tea");
    let (status, reply) = h.memory_call(Some("main"), b"not json");
    assert_eq!((status, reply["ok"].as_bool()), (400, Some(false)));
    let bad = host(&[("MEMORY_BM25_B", "7")]);
    let (status, reply) = bad.memory_call(Some("main"), add.to_string().as_bytes());
    assert_eq!(status, 500);
    assert!(reply["message"].as_str().unwrap_or("").contains("MEMORY_BM25_B"), "{reply}");
    assert_eq!(h.memory_stats(None, None).1["loaded"], json!(["main"]));
}

#[test]
fn sessions_register_and_list() {
    let h = host(&[]);
    let touch = SessionTouch {
        session_key: SessionKey::parse("agent:main:main").unwrap(),
        session_id: Some("s1".into()),
        updated_at: Some(5),
    };
    h.touch(&touch).unwrap();
    h.touch(&touch).unwrap();
    let list = h.sessions().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].key().map(|k| k.render()).as_deref(), Some("agent:main:main"));
}

#[test]
fn pins_without_a_template_pin_nothing_and_refuse_accepts() {
    let h = host(&[]);
    let req = PinsRequest { agent: "main".into(), ..Default::default() };
    assert!(matches!(block_on(h.pins(PinsCall::Get, &req)).unwrap(), PinsAnswer::Pins(p) if p.files.is_empty()));
    let accept = PinsRequest { file: Some("GUARDRAILS.md".into()), ..req.clone() };
    assert_eq!(block_on(h.pins(PinsCall::Accept, &accept)).unwrap_err().status, 409);
    let stranger = PinsRequest { agent: "other".into(), ..Default::default() };
    assert_eq!(block_on(h.pins(PinsCall::Get, &stranger)).unwrap_err().status, 404);
}

#[test]
fn a_tick_is_recorded_woken_and_run_by_the_alarm() {
    let h = host(&[("OWNER_IDS", "telegram:1"), ("HEARTBEAT_ACTIVE_HOURS", "00:00-23:59")]);
    h.runtime().store.put_text("agents/main/HEARTBEAT.md", "- [ ] water the plants\n");
    assert!(block_on(h.schedule_status()).unwrap().is_none(), "no trigger yet");
    let at = h.runtime().now.get();
    assert_eq!(block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: at })).unwrap().pending, at);
    assert_eq!(h.runtime().wakes.get(), 1);
    assert_eq!(block_on(h.alarm()).unwrap(), TicksRun::Ran { ticks: 1, more: false });
    let queued = h.runtime().queue.queued.borrow();
    assert_eq!(queued.len(), 1, "one heartbeat run queued");
    assert_eq!(queued[0].0, "agent:main:heartbeat");
    drop(queued);
    let status = block_on(h.schedule_status()).unwrap().expect("a view");
    assert_eq!(status.last_processed_tick, Some(at));
}
