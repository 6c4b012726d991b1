//! An MCP client over Streamable HTTP: every JSON-RPC message is a `POST`
//! to the server's endpoint, answered with one JSON message or a
//! Server-Sent Events stream that carries it (`Accept` names both).
//!
//! - `initialize` proposes [`LATEST_VERSION`]; the server answers with the
//!   version it will speak, which must be one Hearth knows
//!   ([`SUPPORTED_VERSIONS`]) and is sent back as `MCP-Protocol-Version` on
//!   every later request; then `notifications/initialized`.
//! - A server may give a session id (`Mcp-Session-Id`) with its answer to
//!   `initialize`; it travels on every later request. A 404 to a request
//!   that carried one means the session is over: [`McpError::SessionExpired`]
//!   (the caller initializes again).
//! - `tools/list` is followed through its `nextCursor` pages; `tools/call`
//!   returns the result as the server sent it (see [`super::content`]).
//!
//! Answers are read up to [`MAX_RESPONSE_BYTES`] within the server's
//! timeout; anything unreadable is an error, never a panic.

use crate::ports::{FetchLimits, Http, HttpError, HttpRequest, HttpResponse};
use crate::protocol::mcp::McpTool;
use serde_json::{json, Value};

/// The protocol version Hearth proposes.
pub const LATEST_VERSION: &str = "2025-11-25";
/// The versions whose Streamable HTTP transport Hearth speaks.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// Largest answer read from a server.
pub const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;
/// Most `tools/list` pages followed (a server that pages forever stops here).
pub const MAX_LIST_PAGES: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("did not answer within {0} ms")]
    Timeout(u32),
    #[error("is unreachable: {0}")]
    Network(String),
    #[error("answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("ended its MCP session")]
    SessionExpired,
    #[error("refused {method}: {message} (JSON-RPC error {code})")]
    Rpc { method: String, code: i64, message: String },
    #[error("sent an answer that is not MCP: {0}")]
    Malformed(String),
    #[error("answered with more than {0} bytes")]
    TooLarge(u64),
    #[error("speaks MCP protocol version {0:?}; Hearth speaks {supported}", supported = SUPPORTED_VERSIONS.join(", "))]
    Version(String),
}

/// Where a server is: its URL and headers (placeholders filled) and how long
/// one request may take.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<'a> {
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub timeout_ms: u32,
}

/// An initialized connection: what the server said in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Connection {
    pub session_id: Option<String>,
    pub protocol_version: String,
    /// The server's `serverInfo.name`, for logs.
    pub server_name: String,
    next_id: u64,
}

impl Connection {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// `initialize`, then `notifications/initialized`.
pub async fn initialize<H: Http>(http: &H, ep: Endpoint<'_>) -> Result<Connection, McpError> {
    let params = json!({
        "protocolVersion": LATEST_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "hearth", "title": "Hearth", "version": env!("CARGO_PKG_VERSION")}
    });
    let mut conn = Connection::default();
    let id = conn.next_id();
    let (result, resp) = request(http, ep, &conn, id, "initialize", params).await?;
    let version = result.get("protocolVersion").and_then(Value::as_str).unwrap_or("").to_owned();
    if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
        return Err(McpError::Version(version));
    }
    conn.protocol_version = version;
    conn.session_id = resp.header("mcp-session-id").map(str::to_owned).filter(|s| !s.is_empty());
    conn.server_name =
        result.pointer("/serverInfo/name").and_then(Value::as_str).unwrap_or("").chars().take(100).collect();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = post(http, ep, &conn, &note).await?;
    if !(200..300).contains(&resp.status) {
        return Err(McpError::Http { status: resp.status, body: snippet(&resp.body) });
    }
    Ok(conn)
}

/// Every tool of the server (following `nextCursor`).
pub async fn list_tools<H: Http>(http: &H, ep: Endpoint<'_>, conn: &mut Connection) -> Result<Vec<McpTool>, McpError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let id = conn.next_id();
        let (result, _) = request(http, ep, conn, id, "tools/list", params).await?;
        let page = result.get("tools").and_then(Value::as_array).ok_or_else(|| {
            McpError::Malformed(format!(
                "tools/list answered without a tools list: {}",
                snippet(result.to_string().as_bytes())
            ))
        })?;
        tools.extend(page.iter().filter_map(tool));
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() && cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
            _ => return Ok(tools),
        }
    }
    Ok(tools)
}

/// One tool of a `tools/list` page (a nameless entry is skipped).
fn tool(t: &Value) -> Option<McpTool> {
    let name = t.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    let description = t.get("description").or_else(|| t.get("title")).and_then(Value::as_str).unwrap_or("").to_owned();
    let input_schema = match t.get("inputSchema") {
        Some(s) if s.is_object() => s.clone(),
        _ => json!({"type": "object"}),
    };
    Some(McpTool { name: name.to_owned(), description, input_schema })
}

/// `tools/call`: the result object as the server sent it.
pub async fn call_tool<H: Http>(
    http: &H,
    ep: Endpoint<'_>,
    conn: &mut Connection,
    name: &str,
    arguments: &Value,
) -> Result<Value, McpError> {
    let arguments = if arguments.is_object() { arguments.clone() } else { json!({}) };
    let id = conn.next_id();
    let (result, _) = request(http, ep, conn, id, "tools/call", json!({"name": name, "arguments": arguments})).await?;
    Ok(result)
}

/// One request: its result, and the HTTP response it came in.
async fn request<H: Http>(
    http: &H,
    ep: Endpoint<'_>,
    conn: &Connection,
    id: u64,
    method: &str,
    params: Value,
) -> Result<(Value, HttpResponse), McpError> {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = post(http, ep, conn, &msg).await?;
    if resp.status == 404 && conn.session_id.is_some() {
        return Err(McpError::SessionExpired);
    }
    if !(200..300).contains(&resp.status) {
        return Err(McpError::Http { status: resp.status, body: snippet(&resp.body) });
    }
    let content_type = resp.header("content-type").unwrap_or("").to_ascii_lowercase();
    let answer = if content_type.starts_with("text/event-stream") {
        sse_messages(&resp.body).into_iter().find(|m| answers(m, id))
    } else {
        match hearth_json::from_slice::<Value>(&resp.body) {
            Ok(Value::Array(batch)) => batch.into_iter().find(|m| answers(m, id)),
            Ok(m) if answers(&m, id) => Some(m),
            Ok(other) => {
                return Err(McpError::Malformed(format!(
                    "no answer to request {id}: {}",
                    snippet(other.to_string().as_bytes())
                )))
            }
            Err(e) => return Err(McpError::Malformed(format!("{e}: {}", snippet(&resp.body)))),
        }
    };
    let answer =
        answer.ok_or_else(|| McpError::Malformed(format!("no answer to request {id} in {}", snippet(&resp.body))))?;
    if let Some(err) = answer.get("error") {
        return Err(McpError::Rpc {
            method: method.to_owned(),
            code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: err.get("message").and_then(Value::as_str).unwrap_or("").chars().take(500).collect(),
        });
    }
    match answer.get("result") {
        Some(r) if r.is_object() => Ok((r.clone(), resp)),
        _ => Err(McpError::Malformed(format!("the answer to {method} has no result object"))),
    }
}

/// Whether `m` is the response to request `id`.
fn answers(m: &Value, id: u64) -> bool {
    let same_id = match m.get("id") {
        Some(Value::Number(n)) => n.as_u64() == Some(id),
        Some(Value::String(s)) => s == &id.to_string(),
        _ => false,
    };
    same_id && (m.get("result").is_some() || m.get("error").is_some())
}

async fn post<H: Http>(http: &H, ep: Endpoint<'_>, conn: &Connection, msg: &Value) -> Result<HttpResponse, McpError> {
    let mut req = HttpRequest::post_json(ep.url.to_owned(), msg, ep.timeout_ms)
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = &conn.session_id {
        req = req.header("mcp-session-id", id);
    }
    if !conn.protocol_version.is_empty() {
        req = req.header("mcp-protocol-version", &conn.protocol_version);
    }
    for (k, v) in ep.headers {
        req = req.header(k, v);
    }
    let limits = FetchLimits { max_body_bytes: MAX_RESPONSE_BYTES, manual_redirects: false };
    match http.send_limited(req, limits).await {
        Ok(r) if r.truncated => Err(McpError::TooLarge(MAX_RESPONSE_BYTES)),
        Ok(r) => Ok(r.response),
        Err(HttpError::Timeout) => Err(McpError::Timeout(ep.timeout_ms)),
        Err(HttpError::Network(e)) => Err(McpError::Network(e)),
    }
}

/// The JSON messages of a Server-Sent Events body (`data:` lines of each
/// event joined; comments, ids and event names ignored; unreadable data
/// skipped).
pub fn sse_messages(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let mut data = String::new();
    let mut flush = |data: &mut String| {
        if !data.is_empty() {
            if let Ok(v) = hearth_json::from_slice::<Value>(data.as_bytes()) {
                out.push(v);
            }
            data.clear();
        }
    };
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    flush(&mut data);
    out
}

/// The start of a body, for error messages.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ScriptedHttp;
    use futures::executor::block_on;

    fn ep() -> Endpoint<'static> {
        Endpoint { url: "https://mcp.test/mcp", headers: &[], timeout_ms: 1000 }
    }

    fn answer(status: u16, content_type: &str, session: Option<&str>, body: &str) -> Result<HttpResponse, HttpError> {
        let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
        if let Some(s) = session {
            headers.push(("mcp-session-id".into(), s.into()));
        }
        Ok(HttpResponse { status, headers, body: body.as_bytes().to_vec() })
    }

    fn init_answer(version: &str) -> String {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "t", "version": "1"}}})
        .to_string()
    }

    #[test]
    fn initialize_negotiates_and_keeps_the_session() {
        let http = ScriptedHttp::default();
        let sse = format!("event: message\nid: e1\ndata: {}\n\n", init_answer("2025-06-18"));
        http.responses.borrow_mut().push_back(answer(200, "text/event-stream", Some("sess-1"), &sse));
        http.responses.borrow_mut().push_back(answer(202, "", None, ""));
        let conn = block_on(initialize(&http, ep())).unwrap();
        assert_eq!((conn.protocol_version.as_str(), conn.session_id.as_deref()), ("2025-06-18", Some("sess-1")));
        let reqs = http.requests.borrow();
        let first: Value = hearth_json::from_slice(&reqs[0].body).unwrap();
        assert_eq!(first["params"]["protocolVersion"], LATEST_VERSION);
        assert!(reqs[0].headers.contains(&("accept".into(), "application/json, text/event-stream".into())));
        let second: Value = hearth_json::from_slice(&reqs[1].body).unwrap();
        assert_eq!(second, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(reqs[1].headers.contains(&("mcp-session-id".into(), "sess-1".into())));
        assert!(reqs[1].headers.contains(&("mcp-protocol-version".into(), "2025-06-18".into())));

        let http = ScriptedHttp::default();
        http.responses.borrow_mut().push_back(answer(200, "application/json", None, &init_answer("2024-11-05")));
        assert_eq!(block_on(initialize(&http, ep())).unwrap_err(), McpError::Version("2024-11-05".into()));
    }

    #[test]
    fn tools_are_listed_across_pages() {
        let http = ScriptedHttp::default();
        let page = |id: u64, names: &[&str], next: Option<&str>| {
            let tools: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "description": "d", "inputSchema": {"type": "object"}}))
                .collect();
            let mut result = json!({ "tools": tools });
            if let Some(n) = next {
                result["nextCursor"] = json!(n);
            }
            answer(200, "application/json", None, &json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
        };
        http.responses.borrow_mut().push_back(page(1, &["a", "b"], Some("c2")));
        http.responses.borrow_mut().push_back(page(2, &["c"], None));
        let mut conn = Connection { protocol_version: LATEST_VERSION.into(), ..Default::default() };
        let tools = block_on(list_tools(&http, ep(), &mut conn)).unwrap();
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(http.request_json(1)["params"], json!({"cursor": "c2"}));
    }

    #[test]
    fn failures_are_errors_not_panics() {
        let mut conn =
            Connection { session_id: Some("s".into()), protocol_version: LATEST_VERSION.into(), ..Default::default() };
        let run = |resp: Result<HttpResponse, HttpError>, conn: &mut Connection| {
            let http = ScriptedHttp::default();
            http.responses.borrow_mut().push_back(resp);
            block_on(call_tool(&http, ep(), conn, "t", &json!({})))
        };
        assert_eq!(run(answer(404, "text/plain", None, "gone"), &mut conn).unwrap_err(), McpError::SessionExpired);
        assert_eq!(run(Err(HttpError::Timeout), &mut conn).unwrap_err(), McpError::Timeout(1000));
        assert!(matches!(
            run(answer(200, "application/json", None, "{not json"), &mut conn),
            Err(McpError::Malformed(_))
        ));
        assert!(matches!(
            run(answer(200, "text/event-stream", None, "data: {\"x\":1}\n\n"), &mut conn),
            Err(McpError::Malformed(_))
        ));
        assert!(matches!(
            run(answer(500, "text/plain", None, "boom"), &mut conn),
            Err(McpError::Http { status: 500, .. })
        ));
        let rpc =
            json!({"jsonrpc": "2.0", "id": conn.next_id + 1, "error": {"code": -32602, "message": "Unknown tool: t"}});
        match run(answer(200, "application/json", None, &rpc.to_string()), &mut conn) {
            Err(McpError::Rpc { code: -32602, message, .. }) => assert_eq!(message, "Unknown tool: t"),
            other => panic!("{other:?}"),
        }
        let http = ScriptedHttp::default();
        http.responses.borrow_mut().push_back(Ok(HttpResponse {
            status: 200,
            headers: vec![],
            body: vec![b' '; MAX_RESPONSE_BYTES as usize + 1],
        }));
        assert_eq!(
            block_on(call_tool(&http, ep(), &mut conn, "t", &json!({}))).unwrap_err(),
            McpError::TooLarge(MAX_RESPONSE_BYTES)
        );
    }

    #[test]
    fn sse_streams_carry_notifications_before_the_answer() {
        let body = ": keepalive\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n\
data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":7,\"result\":{}}\r\n\r\n";
        let msgs = sse_messages(body.as_bytes());
        assert_eq!(msgs.len(), 2);
        assert!(answers(&msgs[1], 7) && !answers(&msgs[0], 7));
    }
}
