//! MCP tools from a user's point of view: listed once and cached, frozen for
//! a session, called with the secrets filled in, failures told to the model.

use super::catalog::{self, Source};
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::mcp::toolset::McpState;
use crate::ports::{HttpError, HttpResponse};
use crate::protocol::mcp::{McpCatalog, McpScope, McpServer, McpServerConfig, McpTool};
use crate::session::deps::SessionDeps;
use crate::session::drain::drain;
use crate::session::store::SessionStore;
use crate::settings::AgentConfig;
use crate::testing::{MemSql, MemStore, ScriptedHttp, TestPlatform};
use futures::executor::block_on;
use r2_layout::{AgentId, Message};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

fn config(extra: &[(&str, &str)]) -> AgentConfig {
    let mut vars: HashMap<String, String> = HashMap::new();
    for (k, v) in [("OWNER_IDS", "telegram:1"), ("LLM_API_KEY", "k"), ("LLM_MAX_ATTEMPTS", "1")].iter().chain(extra) {
        vars.insert(k.to_string(), v.to_string());
    }
    AgentConfig::load(&vars, "main").unwrap()
}

fn json_answer(body: Value) -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    })
}

fn sse_answer(body: Value, session: &str) -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into()), ("mcp-session-id".into(), session.into())],
        body: format!("event: message\ndata: {body}\n\n").into_bytes(),
    })
}

fn accepted() -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse { status: 202, headers: vec![], body: vec![] })
}

/// What a server says to `initialize` (id 1) and `notifications/initialized`.
fn handshake(http: &ScriptedHttp, session: &str) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "serverInfo": {"name": "demo", "version": "1"}}});
    http.responses.borrow_mut().push_back(sse_answer(init, session));
    http.responses.borrow_mut().push_back(accepted());
}

fn echo_tool() -> Value {
    json!({"name": "echo", "description": "Echoes back the input string",
           "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}})
}

const MCP_JSON: &str = r#"{"mcpServers": {"demo": {"url": "https://mcp.test/mcp", "headers": {"Authorization": "Bearer ${DEMO_TOKEN}"}}}}"#;

struct Agent {
    store: MemStore,
    http: ScriptedHttp,
    sql: MemSql,
    now: Cell<i64>,
}

impl Agent {
    fn new(mcp_json: &str) -> Self {
        let a = Agent {
            store: MemStore::default(),
            http: ScriptedHttp::default(),
            sql: MemSql::default(),
            now: Cell::new(0),
        };
        a.store.put_text("agents/main/mcp.json", mcp_json);
        a
    }
    fn catalog(&self, secrets: &[(&str, &str)]) -> McpCatalog {
        let agent = AgentId::parse("main").unwrap();
        let settings = config(&[]).mcp;
        let secrets: HashMap<String, String> = secrets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let secret = |n: &str| secrets.get(n).cloned();
        let src = Source {
            store: &self.store,
            http: &self.http,
            sql: &self.sql,
            agent: &agent,
            settings: &settings,
            secret: &secret,
            now_ms: self.now.get(),
            absent: false,
        };
        block_on(catalog::catalog(&src, false)).unwrap()
    }
}

#[test]
fn the_agent_lists_a_server_once_and_serves_its_cache_until_the_ttl() {
    let a = Agent::new(MCP_JSON);
    handshake(&a.http, "s1");
    a.http
        .responses
        .borrow_mut()
        .push_back(json_answer(json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [echo_tool()]}})));
    let c = a.catalog(&[("DEMO_TOKEN", "t0k")]);
    assert_eq!(c.listed_now, 1);
    assert_eq!(c.servers[0].tools[0].name, "echo");
    let reqs = a.http.requests.borrow().clone();
    assert_eq!(reqs.len(), 3, "initialize, initialized, tools/list");
    assert!(
        reqs.iter().all(|r| r.headers.contains(&("Authorization".into(), "Bearer t0k".into()))),
        "the secret is filled in"
    );
    assert!(reqs[2].headers.contains(&("mcp-session-id".into(), "s1".into())));

    // Warm: no network at all.
    a.now.set(30 * 60_000);
    let again = a.catalog(&[("DEMO_TOKEN", "t0k")]);
    assert_eq!((again.listed_now, a.http.requests.borrow().len()), (0, 3));
    assert_eq!(again.servers, c.servers);

    // Past the TTL (60 minutes) the server is listed again; when it fails, its tools stay.
    a.now.set(61 * 60_000);
    a.http.responses.borrow_mut().push_back(Err(HttpError::Network("connection refused".into())));
    let down = a.catalog(&[("DEMO_TOKEN", "t0k")]);
    assert_eq!(down.listed_now, 1);
    assert_eq!(down.servers[0].tools, c.servers[0].tools, "an unreachable server keeps its tools");
    assert!(down.servers[0].error.as_deref().is_some_and(|e| e.contains("unreachable")), "{down:?}");

    // Sessions starting soon after do not each wait for the dead server again...
    let requests = a.http.requests.borrow().len();
    a.now.set(64 * 60_000);
    assert_eq!(a.catalog(&[("DEMO_TOKEN", "t0k")]).listed_now, 0);
    assert_eq!(a.http.requests.borrow().len(), requests);
    // ...but five minutes later it is tried again.
    a.now.set(66 * 60_000 + 1);
    a.http.responses.borrow_mut().push_back(Err(HttpError::Network("connection refused".into())));
    assert_eq!(a.catalog(&[("DEMO_TOKEN", "t0k")]).listed_now, 1);
}

#[test]
fn configuration_problems_are_named() {
    let a = Agent::new(MCP_JSON);
    let c = a.catalog(&[]);
    let e = c.servers[0].error.clone().unwrap();
    assert!(e.contains("${DEMO_TOKEN} is not set"), "{e}");
    assert!(a.http.requests.borrow().is_empty(), "nothing is sent without the secret");

    let a = Agent::new(r#"{"mcpServers": {"files": {"command": "npx", "args": ["server-filesystem"]}}}"#);
    let c = a.catalog(&[]);
    assert!(c.servers[0].error.as_deref().is_some_and(|e| e.contains("cannot run on Cloudflare Workers")));
    assert!(c.servers[0].config.scopes.is_empty(), "no session gets a server that cannot work");

    let a = Agent::new("{ not json");
    assert!(a.catalog(&[]).config_error.is_some_and(|e| e.contains("not valid JSON")));
    let a = Agent::new("{}");
    a.store.objects.borrow_mut().clear();
    assert_eq!(a.catalog(&[]), McpCatalog::default(), "no mcp.json: no servers");
}

/// A session of the agent, with the catalog its Agent object would give.
struct Session {
    p: TestPlatform,
    cfg: AgentConfig,
    key: SessionKey,
    ws: RefCell<crate::workspace::WorkspaceCache>,
    load_ops: Cell<Option<u32>>,
    media: RefCell<crate::media::MediaCache>,
    history: RefCell<crate::session::history::HistoryCache>,
    memo: RefCell<crate::llm::wire::WireMemo>,
    recall: crate::memory::recall::RecallGate,
    mcp: RefCell<McpState>,
    meter: RefCell<crate::session::meter_state::MeterState>,
    n: Cell<u32>,
}

fn demo_catalog(scopes: Vec<McpScope>) -> McpCatalog {
    McpCatalog {
        servers: vec![McpServer {
            config: McpServerConfig {
                name: "demo".into(),
                url: "https://mcp.test/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer ${DEMO_TOKEN}".into())],
                scopes,
                timeout_ms: 5000,
                approve: vec![],
            },
            tools: vec![hearth_json::from_value::<McpTool>(json!({
                "name": "echo", "description": "Echoes back the input string",
                "inputSchema": echo_tool()["inputSchema"]}))
            .unwrap()],
            listed_at: Some(0),
            checked_at: Some(0),
            error: None,
        }],
        ..Default::default()
    }
}

impl Session {
    fn new(key: &str) -> Self {
        let p = TestPlatform::default();
        SessionStore::new(&p.sql).init().unwrap();
        *p.mcp_catalog.borrow_mut() = demo_catalog(vec![McpScope::Main]);
        p.secrets.borrow_mut().insert("DEMO_TOKEN".into(), "t0k".into());
        Session {
            p,
            cfg: config(&[]),
            key: SessionKey::parse(key).unwrap(),
            ws: RefCell::default(),
            load_ops: Cell::default(),
            media: RefCell::default(),
            history: RefCell::default(),
            memo: RefCell::default(),
            recall: Default::default(),
            mcp: RefCell::default(),
            meter: RefCell::default(),
            n: Cell::new(0),
        }
    }
    fn say(&self, text: &str) {
        self.n.set(self.n.get() + 1);
        let m = Inbound {
            dedupe_key: format!("t:{}", self.n.get()),
            channel: ChannelKind::Telegram,
            kind: ChatKind::Direct,
            chat_id: "1".into(),
            sender_id: "1".into(),
            sender_name: "Ana".into(),
            text: text.into(),
            addressed: true,
            thread_id: None,
            reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
            received_at: 0,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        };
        SessionStore::new(&self.p.sql).enqueue(&m.dedupe_key, &serde_json::to_string(&m).unwrap(), 0).unwrap();
        let deps = SessionDeps {
            config: &self.cfg,
            key: &self.key,
            workspace_cache: &self.ws,
            workspace_load_ops: &self.load_ops,
            media_cache: &self.media,
            history: &self.history,
            wire_memo: &self.memo,
            recall: &self.recall,
            mcp: &self.mcp,
            meter: &self.meter,
            watch: &Default::default(),
        };
        block_on(drain(&self.p, &deps)).unwrap();
    }
    fn llm(&self, content: Value) {
        self.p.http.push_json(
            200,
            json!({"content": content, "stop_reason": "end_turn", "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 1}}),
        );
    }
    fn call_echo(&self) {
        self.llm(json!([{"type": "tool_use", "id": format!("toolu_{}", self.n.get()), "name": "mcp__demo__echo", "input": {"message": "hi"}}]));
    }
    /// The LLM requests' tool lists, in order.
    fn tool_lists(&self) -> Vec<Value> {
        let reqs = self.p.http.requests.borrow();
        reqs.iter()
            .filter(|r| r.url.ends_with("/v1/messages"))
            .map(|r| hearth_json::from_slice::<Value>(&r.body).unwrap()["tools"].clone())
            .collect()
    }
    fn tool_results(&self) -> Vec<(String, bool)> {
        let store = SessionStore::new(&self.p.sql);
        let sid = store.meta("session_id").unwrap().unwrap();
        store
            .history(&sid)
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                Message::ToolResult { is_error, .. } => Some((m.text(), is_error)),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn the_model_calls_an_mcp_tool_and_reads_its_result() {
    let s = Session::new("agent:main:main");
    s.call_echo();
    handshake(&s.p.http, "sess-A");
    s.p.http.responses.borrow_mut().push_back(sse_answer(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "Echo: hi"}]}}),
        "sess-A",
    ));
    s.llm(json!([{"type": "text", "text": "It said hi."}]));
    s.say("use the echo tool");
    assert_eq!(s.tool_results(), [("Echo: hi".to_owned(), false)]);
    assert_eq!(s.p.channel.sent.borrow().last().unwrap().1, "It said hi.");
    let call = s.p.http.request_json(3);
    assert_eq!(call["method"], "tools/call");
    assert_eq!(call["params"], json!({"name": "echo", "arguments": {"message": "hi"}}));
    let sent = s.p.http.requests.borrow()[3].clone();
    assert!(sent.headers.contains(&("Authorization".into(), "Bearer t0k".into())));
    assert!(sent.headers.contains(&("mcp-session-id".into(), "sess-A".into())));
    let tools = &s.tool_lists()[0];
    let echo = tools.as_array().unwrap().iter().find(|t| t["name"] == "mcp__demo__echo").unwrap();
    assert_eq!(echo["input_schema"]["required"], json!(["message"]));

    // The next turn: same tools, byte for byte, and no one asked for the catalog again.
    s.call_echo();
    s.p.http.responses.borrow_mut().push_back(sse_answer(
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "Echo: hi"}]}}),
        "sess-A",
    ));
    s.llm(json!([{"type": "text", "text": "Again."}]));
    let before = s.p.mcp_catalog_calls.get();
    *s.p.mcp_catalog.borrow_mut() = McpCatalog::default();
    s.say("again");
    assert_eq!(s.p.mcp_catalog_calls.get(), before, "a turn does not list tools");
    let lists = s.tool_lists();
    assert_eq!(lists[0].to_string(), lists[2].to_string(), "the tool list is frozen for the session");
    assert_eq!(s.tool_results().len(), 2, "the open MCP session was reused (no second handshake)");
}

#[test]
fn failures_reach_the_model_as_error_results() {
    let s = Session::new("agent:main:main");
    // An unreachable server.
    s.call_echo();
    s.p.http.responses.borrow_mut().push_back(Err(HttpError::Network("connection refused".into())));
    s.llm(json!([{"type": "text", "text": "It is down."}]));
    s.say("echo");
    let (text, is_error) = s.tool_results().pop().unwrap();
    assert!(is_error && text.contains("the MCP server demo is unreachable"), "{text}");

    // A result the server marks as an error.
    s.call_echo();
    handshake(&s.p.http, "sess-B");
    s.p.http.responses.borrow_mut().push_back(json_answer(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "rate limited"}], "isError": true}}),
    ));
    s.llm(json!([{"type": "text", "text": "ok"}]));
    s.say("echo");
    assert_eq!(s.tool_results().pop().unwrap(), ("rate limited".to_owned(), true));

    // The server forgot the MCP session: a new one is started and the call made again.
    s.call_echo();
    s.p.http.responses.borrow_mut().push_back(Ok(HttpResponse {
        status: 404,
        headers: vec![],
        body: b"no session".to_vec(),
    }));
    handshake(&s.p.http, "sess-C");
    s.p.http.responses.borrow_mut().push_back(json_answer(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "Echo: hi"}]}}),
    ));
    s.llm(json!([{"type": "text", "text": "ok"}]));
    s.say("echo");
    assert_eq!(s.tool_results().pop().unwrap(), ("Echo: hi".to_owned(), false));

    // A secret that was removed: said, and nothing sent.
    s.p.secrets.borrow_mut().clear();
    s.call_echo();
    s.llm(json!([{"type": "text", "text": "ok"}]));
    let before = s.p.http.requests.borrow().len();
    s.say("echo");
    let (text, is_error) = s.tool_results().pop().unwrap();
    assert!(is_error && text.contains("${DEMO_TOKEN} is not set"), "{text}");
    assert_eq!(s.p.http.requests.borrow().len(), before + 2, "two LLM calls, no MCP request");
}

#[test]
fn only_the_scopes_a_server_opts_into_get_its_tools() {
    let group = Session::new("agent:main:telegram:group:-100");
    group.llm(json!([{"type": "text", "text": "hello"}]));
    group.say("hi");
    let tools = group.tool_lists()[0].to_string();
    assert!(!tools.contains("mcp__demo__echo"), "a group gets no main-scope MCP tool: {tools}");

    let group = Session::new("agent:main:telegram:group:-100");
    *group.p.mcp_catalog.borrow_mut() = demo_catalog(vec![McpScope::Main, McpScope::Groups]);
    group.llm(json!([{"type": "text", "text": "hello"}]));
    group.say("hi");
    assert!(group.tool_lists()[0].to_string().contains("mcp__demo__echo"), "opted in");

    // A model asking for a tool its session does not have is told so.
    let dm = Session::new("agent:main:telegram:dm:5");
    dm.call_echo();
    dm.llm(json!([{"type": "text", "text": "ok"}]));
    dm.say("echo");
    let (text, is_error) = dm.tool_results().pop().unwrap();
    assert!(is_error && text.contains("not one of your MCP tools"), "{text}");
}
