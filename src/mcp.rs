//! `POST /mcp/{agentId}`: Hearth as an MCP server (Streamable HTTP). The
//! JSON-RPC logic is `durable::mcp::server`, session ids and CORS
//! `durable::mcp::transport`; this file answers preflights, authenticates,
//! reads the body and gives the server its way to the Session and Agent
//! objects.

use crate::access;
use crate::adapters::{self, EnvVars, R2};
use crate::auth;
use crate::http::read_body_limited;
use crate::objects;
use crate::platform::AgentMemory;
use durable::inbound::{Inbound, SessionKey};
use durable::mcp::server::{self, Backend, Transport};
use durable::mcp::transport::{CORS_HEADERS, PREFLIGHT_HEADERS, SESSION_HEADER};
use durable::protocol::session::{AnswerReply, AnswerRequest, EnqueueRequest};
use durable::settings::api::Caller;
use durable::settings::Vars;
use serde_json::json;
use worker::{Env, Method, Request, Response, Result};

/// Largest JSON-RPC body taken.
const MAX_BODY: usize = 1024 * 1024;

struct WorkerBackend<'a> {
    env: &'a Env,
    store: R2,
    memory: AgentMemory,
}

impl Backend for WorkerBackend<'_> {
    type Store = R2;
    type Memory = AgentMemory;
    fn store(&self) -> &R2 {
        &self.store
    }
    fn memory(&self) -> &AgentMemory {
        &self.memory
    }
    async fn enqueue(&self, key: &SessionKey, inbound: &Inbound) -> std::result::Result<bool, String> {
        let req = EnqueueRequest::of(key, inbound);
        objects::call(self.env, &req).await.map(|r| r.queued).map_err(|e| e.to_string())
    }
    async fn answer(&self, key: &SessionKey, request: &str) -> std::result::Result<AnswerReply, String> {
        let req = AnswerRequest { session_key: key.clone(), request: request.to_owned() };
        objects::call(self.env, &req).await.map_err(|e| e.to_string())
    }
    async fn sleep(&self, ms: u64) {
        adapters::sleep(ms).await
    }
    fn now_ms(&self) -> i64 {
        adapters::now_ms()
    }
    fn new_uuid(&self) -> String {
        adapters::new_uuid()
    }
}

fn json_rpc_response(status: u16, body: &serde_json::Value) -> Result<Response> {
    Ok(Response::from_json(body)?.with_status(status))
}

/// `resp` with the CORS headers every answer of `/mcp` carries (a browser
/// client reads errors too), and `extra`.
fn with_cors(resp: Result<Response>, extra: &[(&str, &str)]) -> Result<Response> {
    let resp = resp?;
    let headers = resp.headers().clone();
    for (name, value) in CORS_HEADERS.iter().chain(extra) {
        headers.set(name, value)?;
    }
    Ok(resp.with_headers(headers))
}

/// `/mcp/{agent}`, any method.
pub async fn handle(req: Request, env: &Env, agent: &str) -> Result<Response> {
    if req.method() == Method::Options {
        // A browser's preflight carries no credentials: answered before them.
        return with_cors(Ok(Response::empty()?.with_status(204)), &PREFLIGHT_HEADERS);
    }
    with_cors(answer(req, env, agent).await, &[])
}

async fn answer(mut req: Request, env: &Env, agent: &str) -> Result<Response> {
    // Credentials first: without them a caller learns nothing, not even
    // which agents exist.
    let caller = match auth::authenticate(&req, env) {
        Ok(c) => c,
        Err(refused) => return refused.response(),
    };
    if !caller.allows(agent) {
        return Response::error("not found", 404);
    }
    let vars = EnvVars::of(env);
    let config = match access::config_after_auth(&vars, agent, access::is_configured(&vars, agent)) {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    if req.method() != Method::Post {
        // No server-initiated stream (GET); sessions keep no state, so there
        // is none to end (DELETE): both 405, as the specification allows.
        let headers = worker::Headers::new();
        headers.set("allow", "POST, OPTIONS")?;
        return Ok(Response::error("this MCP server takes POST only", 405)?.with_headers(headers));
    }
    let body = match read_body_limited(&mut req, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": server::INVALID_REQUEST,
                "message": format!("the body could not be read or is larger than {MAX_BODY} bytes")}});
            return json_rpc_response(413, &error);
        }
    };
    let version = req.headers().get("mcp-protocol-version").ok().flatten();
    let session = req.headers().get(SESSION_HEADER).ok().flatten();
    // The caller's own token keys its session ids (the console's cookie
    // stands for ADMIN_TOKEN).
    let secret = match &caller {
        Caller::Key(k) => k.token.clone(),
        Caller::Admin => vars.get("ADMIN_TOKEN").unwrap_or_default(),
    };
    let nonce = adapters::new_uuid();
    let transport = Transport {
        version: version.as_deref(),
        session: session.as_deref(),
        secret: &secret,
        nonce: &nonce,
        now_ms: adapters::now_ms(),
    };
    let backend = WorkerBackend {
        env,
        store: R2::from_env(env)?,
        memory: AgentMemory { env: env.clone(), agent: config.agent.as_str().to_owned() },
    };
    let reply = server::handle(&backend, &config, &caller, &transport, &body).await;
    let resp = match reply.body {
        Some(body) => json_rpc_response(reply.status, &body)?,
        None => Response::empty()?.with_status(reply.status),
    };
    match reply.session {
        Some(id) => {
            let headers = resp.headers().clone();
            headers.set(SESSION_HEADER, &id)?;
            Ok(resp.with_headers(headers))
        }
        None => Ok(resp),
    }
}
