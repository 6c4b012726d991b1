//! The Worker's side of the channels ([`durable::ports::Front`]): settings
//! from the `Env`, messages queued and questions asked through Durable
//! Object stubs, outgoing `fetch`, timers, logs, the `send_email` binding
//! and the runtime's WebCrypto. One value per request (or per Session
//! object's turn): it only holds the `Env`.

use crate::adapters::{self, EnvVars, FetchHttp};
use durable::inbound::{Inbound, SessionKey};
use durable::ports::{Front, Io, LogLevel, MailError};
use durable::protocol::dreams::Tap;
use durable::protocol::memory::{MemoryCall, MemoryCallError, MemoryReply, MemoryRequest};
use durable::protocol::people::{AtDoor, Door, DoorReply};
use durable::protocol::session::{EnqueueRequest, SessionStatus};
use durable::protocol::usage::{MeterReply, MeterRequest};
use durable::settings::{AgentConfig, ConfigError};
use std::rc::Rc;
use worker::Env;

pub struct WorkerFront {
    pub env: Env,
    vars: EnvVars,
}

impl WorkerFront {
    pub fn new(env: &Env) -> Self {
        WorkerFront { env: env.clone(), vars: EnvVars::of(env) }
    }
}

impl Io for WorkerFront {
    type Http = FetchHttp;
    fn http(&self) -> &FetchHttp {
        &FetchHttp
    }
    fn now_ms(&self) -> i64 {
        adapters::now_ms()
    }
    async fn sleep(&self, ms: u64) {
        adapters::sleep(ms).await
    }
    fn log(&self, level: LogLevel, msg: &str) {
        adapters::log(level, msg)
    }
    async fn send_email(&self, from: &str, to: &str, raw: &[u8]) -> Result<(), MailError> {
        crate::js::send_email(&self.env, from, to, raw).await
    }
    async fn stashed(&self, key: &str) -> Result<Vec<u8>, String> {
        use durable::ports::ObjectStore;
        let store = crate::adapters::R2::from_env(&self.env).map_err(|e| e.to_string())?;
        match store.get(key).await.map_err(|e| e.to_string())? {
            Some(o) => Ok(o.body),
            None => Err(format!("no stashed attachment {key}")),
        }
    }
}

/// The HTTP API's way to the objects: typed calls, read or relayed.
impl durable::http_api::ApiFront for WorkerFront {
    type Store = crate::adapters::R2;
    fn store(&self) -> Result<crate::adapters::R2, String> {
        crate::adapters::R2::from_env(&self.env).map_err(|e| e.to_string())
    }
    async fn call<C: durable::protocol::call::Call>(
        &self,
        call: &C,
    ) -> Result<C::Reply, durable::protocol::call::CallError> {
        crate::objects::call(&self.env, call).await
    }
    async fn relay<C: durable::protocol::call::Call>(&self, call: &C) -> Result<(u16, Vec<u8>), String> {
        crate::objects::send(&self.env, call).await.map_err(|e| e.to_string())
    }
    fn new_uuid(&self) -> String {
        adapters::new_uuid()
    }
    fn tool_names(&self) -> Vec<&'static str> {
        durable::session::toolbox::all_tool_names()
    }
}

impl Front for WorkerFront {
    type Vars = EnvVars;
    fn vars(&self) -> &EnvVars {
        &self.vars
    }
    fn config(&self, agent: &str) -> Result<Rc<AgentConfig>, ConfigError> {
        crate::access::load(&self.vars, agent)
    }
    async fn enqueue(&self, key: &SessionKey, inbound: &Inbound) -> Result<bool, String> {
        let req = EnqueueRequest::of(key, inbound);
        crate::objects::call(&self.env, &req).await.map(|r| r.queued).map_err(|e| e.to_string())
    }
    async fn session_status(&self, key: &SessionKey) -> Result<SessionStatus, String> {
        crate::objects::status(&self.env, key).await.map_err(|e| e.to_string())
    }
    async fn memory(&self, agent: &str, call: &MemoryCall) -> Result<MemoryReply, MemoryCallError> {
        // The agent id lets the object apply the agent's memory settings (BM25 k1, b).
        let req = MemoryRequest { agent: agent.to_owned(), call: call.clone() };
        Ok(crate::objects::call(&self.env, &req).await?)
    }
    async fn meter(&self, req: &MeterRequest) -> Result<MeterReply, String> {
        crate::objects::call(&self.env, req).await.map_err(|e| e.to_string())
    }
    async fn door(&self, door: &Door) -> Result<DoorReply, String> {
        crate::objects::call(&self.env, &AtDoor(door.clone())).await.map_err(|e| e.to_string())
    }
    async fn tap(&self, tap: &Tap) -> Result<(u16, String), String> {
        let (status, body) = crate::objects::send(&self.env, tap).await.map_err(|e| e.to_string())?;
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
    async fn stash(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), String> {
        use durable::ports::{ObjectStore, PutOptions};
        let store = crate::adapters::R2::from_env(&self.env).map_err(|e| e.to_string())?;
        let opts = PutOptions { content_type: Some(content_type.to_owned()), custom_metadata: vec![] };
        store.put(key, bytes, opts).await.map_err(|e| e.to_string())
    }
    fn decode_text(&self, label: &str, bytes: &[u8]) -> Option<String> {
        crate::js::decode_text(label, bytes)
    }
    async fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> Result<[u8; 32], String> {
        crate::js::hmac_sha256(key, data).await
    }
    async fn ed25519_verify(&self, key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> Result<bool, String> {
        crate::js::ed25519_verify(key, signature, message).await
    }
}
