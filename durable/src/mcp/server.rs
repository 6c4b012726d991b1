//! Hearth as an MCP server (`POST /mcp/{agentId}`, Streamable HTTP): an MCP
//! client (Claude Desktop, Cursor, another agent) can ask the agent, search
//! its memory and read its workspace.
//!
//! Each POST carries one JSON-RPC message (or a batch): requests get a
//! JSON answer, notifications and responses a 202. The server keeps no MCP
//! session (no `Mcp-Session-Id`: every request stands alone), so `GET` and
//! `DELETE` are 405. Whatever the body, the answer is JSON-RPC: a body that
//! is not JSON is a parse error, a message that is not JSON-RPC an invalid
//! request, an unknown method "method not found"; never a 500.
//!
//! What a caller may see depends on its credentials ([`Caller`]): only the
//! owner's reach the owner's main session, its private memory and files.

use super::client::SUPPORTED_VERSIONS;
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey, MAIN_THREAD};
use crate::memory::tools::{self as memory_tools, MemoryToolContext};
use crate::ports::{MemoryService, ObjectStore};
use crate::protocol::memory::store_for;
use crate::protocol::session::{AnswerReply, AnswerState};
use crate::settings::AgentConfig;
use crate::toolkit::{ToolOutcome, ToolSpec};
use crate::tools::ToolContext;
use crate::workspace::Workspace;
use serde_json::{json, Value};

/// Who is calling, as the Worker's authentication found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// Owner credentials (`ADMIN_TOKEN`): the main thread, private memory
    /// and files. Anyone else gets threads of their own and the shared scope.
    pub owner: bool,
}

/// The thread a caller talks in unless it names one.
pub fn default_thread(caller: Caller) -> &'static str {
    if caller.owner {
        MAIN_THREAD
    } else {
        "mcp"
    }
}

/// What the server needs from the Worker.
#[allow(async_fn_in_trait)]
pub trait Backend {
    type Store: ObjectStore;
    type Memory: MemoryService;
    fn store(&self) -> &Self::Store;
    fn memory(&self) -> &Self::Memory;
    /// Queues `inbound` in `key`'s session. `Ok(false)`: already queued.
    async fn enqueue(&self, key: &SessionKey, inbound: &Inbound) -> Result<bool, String>;
    /// How far `request` got in `key`'s session.
    async fn answer(&self, key: &SessionKey, request: &str) -> Result<AnswerReply, String>;
    async fn sleep(&self, ms: u64);
    fn now_ms(&self) -> i64;
    fn new_uuid(&self) -> String;
}

/// What to send back: a status and a JSON body (`None`: 202, no body).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
}

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// Answers one POST. `version_header`: the request's `MCP-Protocol-Version`.
pub async fn handle<B: Backend>(
    b: &B,
    cfg: &AgentConfig,
    caller: Caller,
    version_header: Option<&str>,
    body: &[u8],
) -> Reply {
    let msg: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Reply { status: 400, body: Some(error(Value::Null, PARSE_ERROR, format!("Parse error: {e}"))) }
        }
    };
    if let Some(v) = version_header.filter(|v| !SUPPORTED_VERSIONS.contains(v)) {
        let message = format!("Unsupported MCP-Protocol-Version {v:?}; supported: {}", SUPPORTED_VERSIONS.join(", "));
        return Reply { status: 400, body: Some(error(Value::Null, INVALID_REQUEST, message)) };
    }
    match msg {
        Value::Array(batch) if batch.is_empty() => {
            Reply { status: 400, body: Some(error(Value::Null, INVALID_REQUEST, "Invalid Request: empty batch")) }
        }
        Value::Array(batch) => {
            let mut answers = Vec::new();
            for m in &batch {
                if let Some(a) = one(b, cfg, caller, m).await {
                    answers.push(a);
                }
            }
            if answers.is_empty() {
                Reply { status: 202, body: None }
            } else {
                Reply { status: 200, body: Some(Value::Array(answers)) }
            }
        }
        m => match one(b, cfg, caller, &m).await {
            Some(a) if a.pointer("/error/code").and_then(Value::as_i64) == Some(INVALID_REQUEST) => {
                Reply { status: 400, body: Some(a) }
            }
            Some(a) => Reply { status: 200, body: Some(a) },
            None => Reply { status: 202, body: None },
        },
    }
}

/// One message: the response to a request, `None` for a notification or a
/// client's response.
async fn one<B: Backend>(b: &B, cfg: &AgentConfig, caller: Caller, m: &Value) -> Option<Value> {
    let id = m.get("id").cloned();
    let valid_id = matches!(&id, None | Some(Value::String(_) | Value::Number(_)));
    let method = m.get("method").and_then(Value::as_str);
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || !valid_id || !m.is_object() {
        return Some(error(id.unwrap_or(Value::Null), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"));
    }
    let Some(method) = method else {
        // A client's response to a server request (Hearth sends none).
        return if m.get("result").is_some() || m.get("error").is_some() {
            None
        } else {
            Some(error(id.unwrap_or(Value::Null), INVALID_REQUEST, "Invalid Request: no method"))
        };
    };
    let id = id?; // a notification: nothing to answer
    let params = m.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => Ok(initialize(cfg, &params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools(cfg, caller).iter().map(describe).collect::<Vec<_>>() })),
        "tools/call" => call(b, cfg, caller, &params).await,
        other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error(id, code, message),
    })
}

fn initialize(cfg: &AgentConfig, params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    let version = if SUPPORTED_VERSIONS.contains(&asked) { asked } else { SUPPORTED_VERSIONS[0] };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": format!("hearth-{}", cfg.agent), "title": "Hearth", "version": env!("CARGO_PKG_VERSION")},
        "instructions": format!(
            "This is the personal agent \"{}\" (Hearth). ask_agent talks to it (it remembers the thread), \
    search_memory searches what it has noted, read_workspace_file reads its files (SOUL.md, notes, ...).",
            cfg.agent
        )
    })
}

fn describe(t: &ToolSpec) -> Value {
    json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema})
}

/// The server's tools.
pub fn tools(cfg: &AgentConfig, caller: Caller) -> Vec<ToolSpec> {
    let agent = cfg.agent.as_str();
    let thread_note = if caller.owner {
        "Thread \"main\" (the default) is your main conversation with the agent, shared with your chats; \
any other name starts a separate conversation."
    } else {
        "Each thread name is a separate conversation."
    };
    vec![
        ToolSpec {
            name: "ask_agent".into(),
            description: format!(
                "Ask the agent {agent:?} something and get its answer. It answers in its own persona, with its \
memory and tools, and remembers the thread. {thread_note}"
            )
            .into(),
            input_schema: json!({"type": "object", "properties": {
                "message": {"type": "string", "description": "What to say to the agent"},
                "thread": {"type": "string", "description": "Conversation thread (letters, digits, '-', '_')"}
            }, "required": ["message"]}),
            native: None,
        },
        ToolSpec {
            name: "search_memory".into(),
            description: format!(
                "Search the agent {agent:?}'s memory (notes and summaries of past conversations) by keywords."
            )
            .into(),
            input_schema: json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "Keywords"},
                "k": {"type": "integer", "description": "How many results (default 5, max 50)"}
            }, "required": ["query"]}),
            native: None,
        },
        ToolSpec {
            name: "read_workspace_file".into(),
            description: format!(
                "Read a file of the agent {agent:?}'s workspace (e.g. SOUL.md, TOOLS.md, notes/…); a path ending \
in '/' (or empty) lists a folder."
            )
            .into(),
            input_schema: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace"}
            }, "required": ["path"]}),
            native: None,
        },
    ]
}

/// A `tools/call`: the tool's result, or a protocol error for an unknown
/// tool or malformed params.
async fn call<B: Backend>(b: &B, cfg: &AgentConfig, caller: Caller, params: &Value) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).ok_or((INVALID_PARAMS, "tools/call needs a name".into()))?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(a) if a.is_object() => a.clone(),
        Some(_) => return Err((INVALID_PARAMS, "arguments must be an object".into())),
    };
    let outcome = match name {
        "ask_agent" => ask(b, cfg, caller, &args).await,
        "search_memory" | "read_workspace_file" => {
            let key = match SessionKey::api_thread(&cfg.agent, default_thread(caller)) {
                Some(k) => k,
                None => return Err((INVALID_PARAMS, "no thread".into())),
            };
            let scope = key.scope();
            if name == "search_memory" {
                let ctx = MemoryToolContext {
                    agent: &cfg.agent,
                    store: store_for(&key),
                    scope,
                    model: &cfg.llm.model,
                    workspace: &Workspace::default(),
                    now_ms: b.now_ms(),
                    // The owner's searches, not the agent's use of its memory.
                    records_use: false,
                };
                memory_tools::search(b.memory(), &ctx, &args, false).await
            } else {
                let ws = Workspace::default();
                let ctx = ToolContext {
                    store: b.store(),
                    agent: &cfg.agent,
                    scope,
                    workspace: &ws,
                    tool_names: &[],
                    session_id: "",
                    live: &[],
                    now_ms: b.now_ms(),
                    history_keep: cfg.history_keep,
                };
                crate::tools::read_file(&ctx, &args).await
            }
        }
        other => return Err((INVALID_PARAMS, format!("Unknown tool: {other}"))),
    };
    Ok(json!({"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error}))
}

/// `ask_agent`: a turn in the caller's thread, its answer returned (or, past
/// `MCP_ASK_TIMEOUT_MS`, word that the agent is still working).
async fn ask<B: Backend>(b: &B, cfg: &AgentConfig, caller: Caller, args: &Value) -> ToolOutcome {
    let Some(message) = args.get("message").and_then(Value::as_str).filter(|m| !m.trim().is_empty()) else {
        return ToolOutcome::err("missing string argument 'message'");
    };
    let thread = args.get("thread").and_then(Value::as_str).unwrap_or(default_thread(caller));
    if thread == MAIN_THREAD && !caller.owner {
        return ToolOutcome::err("the main thread is the owner's private conversation: name another thread");
    }
    let Some(key) = SessionKey::api_thread(&cfg.agent, thread) else {
        return ToolOutcome::err(format!("{thread:?} is not a thread name: use 1-128 letters, digits, '-' or '_'"));
    };
    let request = format!("mcp:{}", b.new_uuid());
    let now = b.now_ms();
    let inbound = Inbound {
        dedupe_key: request.clone(),
        channel: ChannelKind::Api,
        kind: ChatKind::Direct,
        chat_id: thread.to_owned(),
        sender_id: "mcp".into(),
        sender_name: "MCP client".into(),
        text: message.to_owned(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Api,
            chat_id: thread.to_owned(),
            extra: Some(request.clone()),
            ..Default::default()
        },
        received_at: now,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
    };
    if let Err(e) = b.enqueue(&key, &inbound).await {
        return ToolOutcome::err(format!("the agent could not take the message: {e}"));
    }
    let deadline = now + i64::from(cfg.mcp.ask_timeout_ms);
    let mut wait = 50;
    loop {
        match b.answer(&key, &request).await {
            Ok(AnswerReply { state: AnswerState::Done, texts }) => {
                return match texts.is_empty() {
                    true => ToolOutcome::ok("(the agent had nothing to say)".into()),
                    false => ToolOutcome::ok(texts.join("\n\n")),
                }
            }
            Ok(_) => {}
            Err(e) => return ToolOutcome::err(format!("lost track of the answer: {e}")),
        }
        if b.now_ms() + wait > deadline {
            return ToolOutcome::err(format!(
                "the agent is still working on it after {} s. Its answer will be part of thread {thread:?}: \
ask there again later (e.g. \"what was your answer?\").",
                cfg.mcp.ask_timeout_ms / 1000
            ));
        }
        b.sleep(wait as u64).await;
        wait = (wait * 2).min(1000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{InProcessMemory, MemStore};
    use futures::executor::block_on;
    use std::cell::{Cell, RefCell};

    /// A Worker in miniature: the session answers after a few polls.
    #[derive(Default)]
    struct Fake {
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

    const OWNER: Caller = Caller { owner: true };
    const GUEST: Caller = Caller { owner: false };

    fn post(b: &Fake, caller: Caller, body: Value) -> Reply {
        block_on(handle(b, &cfg(), caller, None, body.to_string().as_bytes()))
    }

    fn call_tool(b: &Fake, caller: Caller, name: &str, arguments: Value) -> (String, bool) {
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
        assert_eq!(r, Reply { status: 202, body: None });
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
        let (text, is_error) = call_tool(&b, GUEST, "ask_agent", json!({"message": "hi", "thread": "main"}));
        assert!(is_error && text.contains("owner's private conversation"), "{text}");
        call_tool(&b, GUEST, "ask_agent", json!({"message": "hi"}));
        assert_eq!(b.queued.borrow().last().unwrap().0.render(), "agent:main:api:mcp");
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
        let (text, is_error) = call_tool(&b, GUEST, "read_workspace_file", json!({"path": "MEMORY.md"}));
        assert!(is_error && !text.contains("secret"), "{text}");
        assert_eq!(call_tool(&b, GUEST, "read_workspace_file", json!({"path": "SOUL.md"})).0, "kind");

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
        let (text, _) = call_tool(&b, GUEST, "search_memory", json!({"query": "coffee flat white"}));
        assert!(!text.contains("flat whites"), "a guest searches its own thread's store: {text}");
    }

    #[test]
    fn bad_json_rpc_gets_json_rpc_errors() {
        let b = Fake::default();
        let raw = |body: &[u8], header: Option<&str>| block_on(handle(&b, &cfg(), OWNER, header, body));
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
        let r = raw(br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_agent", "arguments": [1]}}"#, None);
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
}
