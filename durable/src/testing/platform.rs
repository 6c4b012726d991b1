//! The session's platform of doubles ([`TestPlatform`]): every port at
//! once, time moving only when slept through; and the LLM settings tests
//! start from.

use super::channel::RecordingChannel;
use super::http::ScriptedHttp;
use super::objects::{InProcessMemory, InProcessReminders, InProcessUsage, SessionDoubles, TestApprovals};
use super::sandbox::{ScriptedRun, ScriptedSandbox};
use super::sql::MemSql;
use super::store::MemStore;
use super::wait::YieldOnce;
use crate::ports::*;
use std::cell::{Cell, RefCell};

/// A platform of doubles; time advances only when slept through.
#[derive(Default)]
pub struct TestPlatform {
    pub reminders: InProcessReminders,
    pub store: MemStore,
    pub http: ScriptedHttp,
    pub sql: MemSql,
    pub channel: RecordingChannel,
    pub memory: InProcessMemory,
    pub usage: InProcessUsage,
    pub now: Cell<i64>,
    pub slept: RefCell<Vec<u64>>,
    pub logs: RefCell<Vec<String>>,
    uuid_counter: Cell<u64>,
    /// What the Agent object answers for the MCP catalog (default: no servers).
    pub mcp_catalog: RefCell<crate::protocol::mcp::McpCatalog>,
    /// The Agent object cannot be reached for it.
    pub mcp_catalog_fails: Cell<bool>,
    /// How many times the catalog was asked for.
    pub mcp_catalog_calls: Cell<u32>,
    /// The Worker's secrets, for `mcp.json` placeholders.
    pub secrets: RefCell<std::collections::HashMap<String, String>>,
    /// `run_code`'s sandbox; `None` (the default): no Worker Loader binding.
    pub sandbox: RefCell<Option<ScriptedSandbox>>,
    /// The Agent object's side of tool calls waiting for the owner.
    pub approvals: RefCell<TestApprovals>,
    /// The Agent object's side of the people commands: the calls, and the reply.
    pub people_calls: RefCell<Vec<crate::protocol::people::PeopleCall>>,
    pub people_reply: RefCell<crate::protocol::people::PeopleReply>,
    /// Other sessions asked (`ask_session`), and what they answer in turn:
    /// `None` never answers; none left: the session cannot be reached.
    pub sessions: SessionDoubles,
}

impl Platform for TestPlatform {
    type Store = MemStore;
    type Http = ScriptedHttp;
    type Sql = MemSql;
    type Channel = RecordingChannel;
    type Memory = InProcessMemory;
    fn memory(&self) -> &InProcessMemory {
        &self.memory
    }
    fn store(&self) -> &MemStore {
        &self.store
    }
    fn http(&self) -> &ScriptedHttp {
        &self.http
    }
    fn sql(&self) -> &MemSql {
        &self.sql
    }
    fn channel(&self) -> &RecordingChannel {
        &self.channel
    }
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    async fn mcp_catalog(&self) -> Result<crate::protocol::mcp::McpCatalog, StorageError> {
        self.mcp_catalog_calls.set(self.mcp_catalog_calls.get() + 1);
        if self.mcp_catalog_fails.get() {
            return Err(StorageError("agent object unavailable".into()));
        }
        Ok(self.mcp_catalog.borrow().clone())
    }
    fn secret(&self, name: &str) -> Option<String> {
        self.secrets.borrow().get(name).cloned()
    }
    async fn people(
        &self,
        call: &crate::protocol::people::PeopleCall,
    ) -> Result<crate::protocol::people::PeopleReply, StorageError> {
        self.people_calls.borrow_mut().push(call.clone());
        Ok(self.people_reply.borrow().clone())
    }
    async fn approvals(
        &self,
        call: &crate::protocol::approvals::ApprovalCall,
    ) -> Result<crate::protocol::approvals::ApprovalState, StorageError> {
        use crate::protocol::approvals::{ApprovalCall, ApprovalState, Decision};
        let mut a = self.approvals.borrow_mut();
        a.calls.push(call.clone());
        match call {
            ApprovalCall::Ask(ask) if a.expires_at == 0 => a.expires_at = self.now.get() + ask.timeout_ms,
            ApprovalCall::Status { expire: true, .. }
                if a.decision == Decision::Waiting && self.now.get() >= a.expires_at =>
            {
                a.decision = Decision::Expired;
            }
            _ => {}
        }
        Ok(ApprovalState { id: 1, decision: a.decision, expires_at: a.expires_at, asked_in: a.asked_in.clone() })
    }
    fn sandbox_available(&self) -> bool {
        self.sandbox.borrow().is_some()
    }
    async fn start_sandbox(&self, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
        let mut sandbox = self.sandbox.borrow_mut();
        let Some(sandbox) = sandbox.as_mut() else { return Err(SandboxError("no sandbox".into())) };
        sandbox.jobs.push(job.clone());
        let events = sandbox.runs.pop_front().unwrap_or_default();
        Ok(Box::new(ScriptedRun { events: RefCell::new(events.into()), answers: sandbox.answers.clone() }))
    }
    async fn sleep(&self, ms: u64) {
        self.slept.borrow_mut().push(ms);
        self.now.set(self.now.get() + ms as i64);
        // Lets whatever runs beside the sleeper make progress, as a timer would.
        YieldOnce::default().await;
    }
    fn new_uuid(&self) -> String {
        let n = self.uuid_counter.get() + 1;
        self.uuid_counter.set(n);
        format!("00000000-0000-4000-8000-{n:012}")
    }
    fn log(&self, _level: LogLevel, msg: &str) {
        self.logs.borrow_mut().push(msg.to_owned());
    }
    async fn reminders(
        &self,
        call: &crate::protocol::reminders::ReminderCall,
    ) -> Result<crate::protocol::reminders::ReminderReply, StorageError> {
        let r = &self.reminders;
        r.calls.borrow_mut().push(call.clone());
        if r.unavailable.get() {
            return Err(StorageError("injected: the Agent object is unavailable".into()));
        }
        let limit = |_: &str| Ok(r.max.get().unwrap_or(crate::protocol::reminders::DEFAULT_MAX));
        let answered = crate::reminders::answer(&r.sql, call, self.now.get(), &limit)?;
        r.wake_ats.borrow_mut().extend(answered.wake_at);
        Ok(answered.reply)
    }
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, StorageError> {
        self.usage.requests.borrow_mut().push(req.clone());
        if self.usage.unavailable.get() {
            return Err(StorageError("injected: the Agent object is unavailable".into()));
        }
        let log = |_: LogLevel, msg: &str| self.logs.borrow_mut().push(msg.to_owned());
        self.usage.book.borrow_mut().meter(&self.usage.sql, req, self.now.get(), &log)
    }
    async fn ask_session(
        &self,
        req: &crate::protocol::api::ApiTurnRequest,
    ) -> Result<crate::protocol::api::ApiOutcome, StorageError> {
        self.sessions.asked.borrow_mut().push(req.clone());
        let next = self.sessions.answers.borrow_mut().pop_front();
        match next {
            Some(Some(outcome)) => Ok(outcome),
            Some(None) => futures::future::pending().await,
            None => Err(StorageError("injected: the session cannot be reached".into())),
        }
    }
    async fn stop_session(
        &self,
        key: &crate::inbound::SessionKey,
        req: &crate::protocol::api::StopRequest,
    ) -> Result<(), StorageError> {
        self.sessions.stopped.borrow_mut().push((key.clone(), req.clone()));
        Ok(())
    }
    async fn tasks(
        &self,
        req: &crate::protocol::tasks::TaskRequest,
    ) -> Result<crate::protocol::tasks::TaskReply, StorageError> {
        self.sessions.tasks.borrow_mut().push(req.clone());
        match self.sessions.task_replies.borrow_mut().pop_front() {
            Some(Some(reply)) => Ok(reply),
            Some(None) => Err(StorageError("injected: the Agent object cannot be reached".into())),
            None => Ok(crate::protocol::tasks::TaskReply { ok: true, ..Default::default() }),
        }
    }
}

/// The LLM settings an agent gets from `vars` (plus defaults), for tests of
/// the encodings and the retry loop.
pub fn llm_config(vars: &[(&str, &str)]) -> crate::settings::LlmConfig {
    let vars: std::collections::HashMap<String, String> =
        vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    match crate::settings::AgentConfig::load(&vars, "main") {
        Ok(c) => c.llm,
        Err(e) => panic!("test settings rejected: {e}"),
    }
}
