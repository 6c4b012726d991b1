//! `/mcp/{agentId}` as HTTP (Streamable HTTP, POST only): the preflight,
//! the 405 and the 413, the transport read from the request's headers and
//! the JSON-RPC reply with its session id. The Worker authenticates the
//! caller, loads the agent's settings, reads the body (at most
//! [`MAX_BODY`]) and puts [`CORS_HEADERS`] on every answer, its own
//! refusals too (a browser client reads errors); the JSON-RPC is
//! [`super::server`].

use super::server::{self, Backend, Transport};
pub use super::transport::CORS_HEADERS;
use super::transport::{PREFLIGHT_HEADERS, SESSION_HEADER};
use crate::channels::webhook::WebRequest;
use crate::serving::Answer;
use crate::settings::api::Caller;
use crate::settings::{AgentConfig, Vars};
use serde_json::json;

/// Largest JSON-RPC body taken.
pub const MAX_BODY: usize = 1024 * 1024;

/// A browser's preflight (`OPTIONS`): it carries no credentials, so it is
/// answered before them.
pub fn preflight() -> Answer {
    let empty = Answer { status: 204, headers: vec![], body: vec![] };
    PREFLIGHT_HEADERS.iter().fold(empty, |a, (name, value)| a.with_header(name, value))
}

/// The body could not be read within [`MAX_BODY`]: a JSON-RPC error.
pub fn too_large() -> Answer {
    let message = format!("the body could not be read or is larger than {MAX_BODY} bytes");
    let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": server::INVALID_REQUEST, "message": message}});
    Answer::json(413, &error)
}

/// An authenticated caller's request to `config`'s agent. `nonce`: fresh
/// randomness for a new session id.
pub async fn answer<B: Backend>(
    backend: &B,
    config: &AgentConfig,
    caller: &Caller,
    vars: &impl Vars,
    req: &WebRequest,
    nonce: &str,
    now_ms: i64,
) -> Answer {
    if req.method != "POST" {
        // No server-initiated stream (GET); sessions keep no state, so there
        // is none to end (DELETE): both 405, as the specification allows.
        let refusal = b"this MCP server takes POST only".to_vec();
        let refusal = Answer::bytes(405, "text/plain; charset=utf-8", refusal);
        return refusal.with_header("allow", "POST, OPTIONS");
    }
    // The caller's own token keys its session ids (the console's cookie
    // stands for ADMIN_TOKEN).
    let secret = match caller {
        Caller::Key(k) => k.token.clone(),
        Caller::Admin => vars.get("ADMIN_TOKEN").unwrap_or_default(),
    };
    let transport = Transport {
        version: req.header("mcp-protocol-version"),
        session: req.header(SESSION_HEADER),
        secret: &secret,
        nonce,
        now_ms,
    };
    let reply = server::handle(backend, config, caller, &transport, &req.body).await;
    let answer = match reply.body {
        Some(body) => Answer::json(reply.status, &body),
        None => Answer { status: reply.status, headers: vec![], body: vec![] },
    };
    match reply.session {
        Some(id) => answer.with_header(SESSION_HEADER, &id),
        None => answer,
    }
}

#[cfg(test)]
mod tests;
