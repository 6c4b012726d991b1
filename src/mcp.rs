//! `POST /mcp/{agentId}`: Hearth as an MCP server (Streamable HTTP). The
//! HTTP side is `durable::mcp::endpoint`, the JSON-RPC `durable::mcp::server`;
//! this file authenticates, reads the body, puts the CORS headers on every
//! answer and gives the server its way to the Session and Agent objects.

use crate::access;
use crate::adapters::{self, EnvVars, R2};
use crate::auth;
use crate::objects;
use crate::platform::AgentMemory;
use durable::inbound::{Inbound, SessionKey};
use durable::mcp::endpoint::{self, CORS_HEADERS};
use durable::mcp::server::Backend;
use durable::protocol::session::{AnswerReply, AnswerRequest, EnqueueRequest};
use worker::{Env, Method, Request, Response, Result};

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

/// `resp` with the CORS headers every answer of `/mcp` carries (a browser
/// client reads errors too).
fn with_cors(resp: Result<Response>) -> Result<Response> {
    let resp = resp?;
    let headers = resp.headers().clone();
    for (name, value) in CORS_HEADERS {
        headers.set(name, value)?;
    }
    Ok(resp.with_headers(headers))
}

/// `/mcp/{agent}`, any method.
pub async fn handle(req: Request, env: &Env, agent: &str) -> Result<Response> {
    if req.method() == Method::Options {
        return with_cors(crate::http::answer(endpoint::preflight()));
    }
    with_cors(answer(req, env, agent).await)
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
    let Ok(request) = crate::channels::web_request(&mut req, endpoint::MAX_BODY).await else {
        return crate::http::answer(endpoint::too_large());
    };
    let backend = WorkerBackend {
        env,
        store: R2::from_env(env)?,
        memory: AgentMemory { env: env.clone(), agent: config.agent.as_str().to_owned() },
    };
    let (nonce, now) = (adapters::new_uuid(), adapters::now_ms());
    crate::http::answer(endpoint::answer(&backend, &config, &caller, &vars, &request, &nonce, now).await)
}
