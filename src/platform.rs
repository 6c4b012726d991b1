//! The [`durable::ports::Platform`] a Durable Object hands to the runtime.
//! Its reply channel is the agent's clients of `durable::channels`, bound to
//! the Worker's front.

use crate::adapters::{self, DoSql, FetchHttp, R2};
use crate::front::WorkerFront;
use durable::channels::{AgentChannels, Channels};
use durable::ports::{Front, LogLevel, MemoryService, Platform};
use durable::protocol::memory::{MemoryCall, MemoryCallError, MemoryReply};
use worker::Env;

/// The agent's memory: calls go to its Agent object (`AGENT.idFromName(agent)`).
pub struct AgentMemory {
    pub env: Env,
    pub agent: String,
}

impl MemoryService for AgentMemory {
    async fn call(&self, call: &MemoryCall) -> Result<MemoryReply, MemoryCallError> {
        WorkerFront::new(&self.env).memory(&self.agent, call).await
    }
}

pub struct DoPlatform {
    pub store: R2,
    pub sql: DoSql,
    pub channels: AgentChannels<WorkerFront>,
    pub memory: AgentMemory,
    /// The Worker Loader binding, for `run_code` (none: no such tool).
    pub loader: Option<wasm_bindgen::JsValue>,
}

impl DoPlatform {
    /// The platform of a Session object's turns: its agent's bucket, bots
    /// and memory.
    pub fn for_session(
        sql: &DoSql,
        env: &Env,
        config: &durable::settings::AgentConfig,
        key: &durable::inbound::SessionKey,
    ) -> worker::Result<Self> {
        Ok(DoPlatform {
            store: R2::from_env(env)?,
            sql: sql.clone(),
            channels: AgentChannels {
                front: WorkerFront::new(env),
                channels: Channels::for_agent(&crate::adapters::EnvVars::of(env), config),
            },
            memory: AgentMemory { env: env.clone(), agent: key.agent().as_str().to_owned() },
            loader: crate::sandbox::loader_of(env),
        })
    }
}

impl DoPlatform {
    /// A typed call to another object (the agent's Agent object, a peer session).
    async fn agent_call<C: durable::protocol::call::Call>(
        &self,
        call: &C,
    ) -> Result<C::Reply, durable::ports::StorageError> {
        crate::objects::call(&self.memory.env, call)
            .await
            .map_err(|e| durable::ports::StorageError(format!("{}: {e}", C::PATH)))
    }
}

impl Platform for DoPlatform {
    type Store = R2;
    type Http = FetchHttp;
    type Sql = DoSql;
    type Channel = AgentChannels<WorkerFront>;
    type Memory = AgentMemory;
    fn memory(&self) -> &AgentMemory {
        &self.memory
    }
    fn store(&self) -> &R2 {
        &self.store
    }
    fn http(&self) -> &FetchHttp {
        &FetchHttp
    }
    fn sql(&self) -> &DoSql {
        &self.sql
    }
    fn channel(&self) -> &AgentChannels<WorkerFront> {
        &self.channels
    }
    fn now_ms(&self) -> i64 {
        adapters::now_ms()
    }
    async fn pins(&self) -> Result<durable::protocol::pins::Pins, durable::ports::StorageError> {
        self.agent_call(&durable::protocol::agent::PinsGet { agent: self.memory.agent.clone() }).await
    }
    async fn meter(
        &self,
        req: &durable::protocol::usage::MeterRequest,
    ) -> Result<durable::protocol::usage::MeterReply, durable::ports::StorageError> {
        self.agent_call(req).await
    }
    async fn reminders(
        &self,
        call: &durable::protocol::reminders::ReminderCall,
    ) -> Result<durable::protocol::reminders::ReminderReply, durable::ports::StorageError> {
        self.agent_call(call).await
    }
    async fn session_start(
        &self,
        req: &durable::protocol::workspace::SessionStartRequest,
    ) -> Result<durable::protocol::workspace::SessionStartReply, durable::ports::StorageError> {
        self.agent_call(req).await
    }
    async fn mcp_catalog(&self) -> Result<durable::protocol::mcp::McpCatalog, durable::ports::StorageError> {
        self.agent_call(&durable::protocol::mcp::McpToolsRequest { agent: self.memory.agent.clone() }).await
    }
    async fn people(
        &self,
        call: &durable::protocol::people::PeopleCall,
    ) -> Result<durable::protocol::people::PeopleReply, durable::ports::StorageError> {
        self.agent_call(call).await
    }
    async fn approvals(
        &self,
        call: &durable::protocol::approvals::ApprovalCall,
    ) -> Result<durable::protocol::approvals::ApprovalState, durable::ports::StorageError> {
        self.agent_call(call).await
    }
    fn secret(&self, name: &str) -> Option<String> {
        durable::settings::setting(&crate::adapters::EnvVars::of(&self.memory.env), &self.memory.agent, name)
    }
    async fn sleep(&self, ms: u64) {
        adapters::sleep(ms).await
    }
    fn new_uuid(&self) -> String {
        adapters::new_uuid()
    }
    fn log(&self, level: LogLevel, msg: &str) {
        adapters::log(level, msg)
    }
    fn sandbox_available(&self) -> bool {
        self.loader.is_some()
    }
    async fn ask_session(
        &self,
        req: &durable::protocol::api::ApiTurnRequest,
    ) -> Result<durable::protocol::api::ApiOutcome, durable::ports::StorageError> {
        crate::objects::ask_session(&self.memory.env, req)
            .await
            .map_err(|e| durable::ports::StorageError(e.to_string()))
    }
    async fn tasks(
        &self,
        req: &durable::protocol::tasks::TaskRequest,
    ) -> Result<durable::protocol::tasks::TaskReply, durable::ports::StorageError> {
        self.agent_call(req).await
    }
    async fn stop_session(
        &self,
        key: &durable::inbound::SessionKey,
        req: &durable::protocol::api::StopRequest,
    ) -> Result<(), durable::ports::StorageError> {
        let stop = durable::protocol::api::StopSession { session_key: key.clone(), stop: req.clone() };
        self.agent_call(&stop).await.map(drop)
    }
    async fn start_sandbox(
        &self,
        job: &durable::ports::SandboxJob,
    ) -> Result<Box<dyn durable::ports::SandboxRun>, durable::ports::SandboxError> {
        match &self.loader {
            Some(loader) => crate::sandbox::start(loader, job),
            None => Err(durable::ports::SandboxError("no Worker Loader binding (LOADER)".into())),
        }
    }
}
