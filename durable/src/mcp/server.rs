//! Hearth as an MCP server (`POST /mcp/{agentId}`, Streamable HTTP): an MCP
//! client (Claude Desktop, Cursor, another agent) can ask the agent, search
//! its memory and read its workspace.
//!
//! Each POST carries one JSON-RPC message (or a batch): requests get a
//! JSON answer, notifications and responses a 202. `initialize` is answered
//! with an `Mcp-Session-Id` that later requests may bring back; the server
//! keeps no state per session ([`super::transport`]: ids checked without
//! storage, CORS), so `GET` (no server-initiated stream) and `DELETE` are
//! 405. Whatever the body, the answer is JSON-RPC: a body that is not JSON
//! is a parse error, a message that is not JSON-RPC an invalid request, an
//! unknown method "method not found"; never a 500.
//!
//! What a caller may see depends on its credentials ([`Caller`], as for the
//! HTTP API, [`crate::api::thread_session`]): only the owner's reach the
//! owner's main session, its private memory and files. A key of
//! `API_TOKENS` without `owner` talks in threads of its own
//! (`agent:{id}:api:key-{name}-{thread}`, by default `mcp`), in the shared
//! scope, and searches only its default thread's memory.

use super::client::SUPPORTED_VERSIONS;
use super::transport;
use crate::api::thread_session;
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey, MAIN_THREAD};
use crate::memory::tools::{self as memory_tools, MemoryToolContext};
use crate::ports::{MemoryService, ObjectStore};
use crate::protocol::memory::store_for;
use crate::protocol::session::{AnswerReply, AnswerState};
use crate::settings::api::Caller;
use crate::settings::AgentConfig;
use crate::toolkit::{ToolOutcome, ToolSpec};
use crate::tools::ToolContext;
use crate::workspace::Workspace;
use serde_json::{json, Value};

/// The thread a caller talks in unless it names one: the owner's main
/// session for owner credentials, else the key's own `mcp` thread.
pub fn default_thread(caller: &Caller) -> &'static str {
    if caller.is_owner() {
        MAIN_THREAD
    } else {
        "mcp"
    }
}

/// The HTTP side of one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Transport<'a> {
    /// `MCP-Protocol-Version`.
    pub version: Option<&'a str>,
    /// `Mcp-Session-Id`.
    pub session: Option<&'a str>,
    /// The caller's own token, which keys its session ids.
    pub secret: &'a str,
    /// Fresh randomness for a new session id.
    pub nonce: &'a str,
    pub now_ms: i64,
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

/// What to send back: a status and a JSON body (`None`: 202, no body), and
/// the session id of an `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
    pub session: Option<String>,
}

impl Reply {
    fn of(status: u16, body: Option<Value>) -> Reply {
        Reply { status, body, session: None }
    }
}

/// Not a JSON-RPC code of the specification: the one MCP servers use for an
/// unknown session (answered with HTTP 404).
pub const SESSION_NOT_FOUND: i64 = -32001;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// Answers one POST.
pub async fn handle<B: Backend>(b: &B, cfg: &AgentConfig, caller: &Caller, t: &Transport<'_>, body: &[u8]) -> Reply {
    let msg: Value = match hearth_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Reply::of(400, Some(error(Value::Null, PARSE_ERROR, format!("Parse error: {e}")))),
    };
    if let Some(v) = t.version.filter(|v| !SUPPORTED_VERSIONS.contains(v)) {
        let message = format!("Unsupported MCP-Protocol-Version {v:?}; supported: {}", SUPPORTED_VERSIONS.join(", "));
        return Reply::of(400, Some(error(Value::Null, INVALID_REQUEST, message)));
    }
    let agent = cfg.agent.as_str();
    if let Some(id) = t.session.filter(|id| !transport::session_valid(id, t.secret, agent, caller.name())) {
        let message = format!("Session not found: {id:?} is not a session of these credentials; initialize again");
        return Reply::of(404, Some(error(Value::Null, SESSION_NOT_FOUND, message)));
    }
    let is_initialize = |m: &Value| m.get("method").and_then(Value::as_str) == Some("initialize");
    let initializes = match &msg {
        Value::Array(batch) => batch.iter().any(is_initialize),
        m => is_initialize(m),
    };
    let mut reply = match msg {
        Value::Array(batch) if batch.is_empty() => {
            Reply::of(400, Some(error(Value::Null, INVALID_REQUEST, "Invalid Request: empty batch")))
        }
        Value::Array(batch) => {
            let mut answers = Vec::new();
            for m in &batch {
                if let Some(a) = one(b, cfg, caller, m).await {
                    answers.push(a);
                }
            }
            if answers.is_empty() {
                Reply::of(202, None)
            } else {
                Reply::of(200, Some(Value::Array(answers)))
            }
        }
        m => match one(b, cfg, caller, &m).await {
            Some(a) if a.pointer("/error/code").and_then(Value::as_i64) == Some(INVALID_REQUEST) => {
                Reply::of(400, Some(a))
            }
            Some(a) => Reply::of(200, Some(a)),
            None => Reply::of(202, None),
        },
    };
    if initializes && reply.status == 200 {
        reply.session = Some(transport::new_session_id(t.secret, agent, caller.name(), t.now_ms, t.nonce));
    }
    reply
}

/// One message: the response to a request, `None` for a notification or a
/// client's response.
async fn one<B: Backend>(b: &B, cfg: &AgentConfig, caller: &Caller, m: &Value) -> Option<Value> {
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
pub fn tools(cfg: &AgentConfig, caller: &Caller) -> Vec<ToolSpec> {
    let agent = cfg.agent.as_str();
    let thread_note = if caller.is_owner() {
        "Thread \"main\" (the default) is your main conversation with the agent, shared with your chats; \
any other name starts a separate conversation."
    } else {
        "Each thread name is a separate conversation of your key (\"mcp\" by default)."
    };
    vec![
        ToolSpec {
            name: "ask_agent".into(),
            description: format!(
                "Ask the agent {agent:?} something and get its answer. It answers in its own persona, with its \
memory and tools, and remembers the thread. {thread_note}"
            )
            .into(),
            input_schema: crate::toolkit::schema(
                r#"{"type": "object", "properties": {
                    "message": {"type": "string", "description": "What to say to the agent"},
                    "thread": {"type": "string", "description": "Conversation thread (1-64 letters, digits, '-', '_')"}
                }, "required": ["message"]}"#,
            ),
            native: None,
        },
        ToolSpec {
            name: "search_memory".into(),
            description: format!(
                "Search the agent {agent:?}'s memory by keywords: its notes and summaries of past conversations \
(`hits`), and what was said in them (`conversations`: who said what, when, with the exchanges around it). \
`since`/`until` limit the conversations to a time: YYYY-MM-DD, YYYY-MM, today, last week, 3 days ago..."
            )
            .into(),
            input_schema: crate::toolkit::schema(
                r#"{"type": "object", "properties": {
                    "query": {"type": "string", "description": "Keywords"},
                    "k": {"type": "integer", "description": "How many results of each kind (default 5)"},
                    "since": {"type": "string", "description": "Only conversations from then on"},
                    "until": {"type": "string", "description": "Only conversations up to then"}
                }, "required": ["query"]}"#,
            ),
            native: None,
        },
        ToolSpec {
            name: "read_workspace_file".into(),
            description: format!(
                "Read a file of the agent {agent:?}'s workspace (e.g. SOUL.md, TOOLS.md, notes/…); a path ending \
in '/' (or empty) lists a folder."
            )
            .into(),
            input_schema: crate::toolkit::schema(
                r#"{"type": "object", "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace"}
                }, "required": ["path"]}"#,
            ),
            native: None,
        },
    ]
}

/// A `tools/call`: the tool's result, or a protocol error for an unknown
/// tool or malformed params.
async fn call<B: Backend>(b: &B, cfg: &AgentConfig, caller: &Caller, params: &Value) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).ok_or((INVALID_PARAMS, "tools/call needs a name".into()))?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(a) if a.is_object() => a.clone(),
        Some(_) => return Err((INVALID_PARAMS, "arguments must be an object".into())),
    };
    let outcome = match name {
        "ask_agent" => ask(b, cfg, caller, &args).await,
        "search_memory" | "read_workspace_file" => {
            let key = match thread_session(&cfg.agent, caller, default_thread(caller)) {
                Ok(k) => k,
                Err(e) => return Err((INVALID_PARAMS, e.message)),
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
                    timezone: &cfg.timezone,
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
async fn ask<B: Backend>(b: &B, cfg: &AgentConfig, caller: &Caller, args: &Value) -> ToolOutcome {
    let Some(message) = args.get("message").and_then(Value::as_str).filter(|m| !m.trim().is_empty()) else {
        return ToolOutcome::err("missing string argument 'message'");
    };
    let thread = args.get("thread").and_then(Value::as_str).unwrap_or(default_thread(caller));
    if thread == MAIN_THREAD && !caller.is_owner() {
        return ToolOutcome::err("the main thread is the owner's private conversation: name another thread");
    }
    let key = match thread_session(&cfg.agent, caller, thread) {
        Ok(k) => k,
        Err(_) => {
            return ToolOutcome::err(format!("{thread:?} is not a thread name: use 1-64 letters, digits, '-' or '_'"))
        }
    };
    let request = format!("mcp:{}", b.new_uuid());
    let now = b.now_ms();
    let inbound = Inbound {
        dedupe_key: request.clone(),
        channel: ChannelKind::Api,
        kind: ChatKind::Direct,
        chat_id: thread.to_owned(),
        sender_id: caller.name().to_owned(),
        sender_name: format!("MCP client ({})", caller.name()),
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
        order: None,
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
pub(super) mod tests;
