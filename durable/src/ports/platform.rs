//! Everything a Durable Object gives the runtime, bundled.

use super::channel::Channel;
use super::http::Http;
use super::io::LogLevel;
use super::memory::MemoryService;
use super::object_store::{ObjectStore, StorageError};
use super::sandbox::{SandboxError, SandboxJob, SandboxRun};
use super::sql::Sql;

/// Everything a Durable Object gives the runtime, bundled so the runtime's
/// functions take one generic parameter.
#[allow(async_fn_in_trait)]
pub trait Platform {
    type Store: ObjectStore;
    type Http: Http;
    type Sql: Sql;
    type Channel: Channel;
    type Memory: MemoryService;
    fn store(&self) -> &Self::Store;
    fn http(&self) -> &Self::Http;
    fn sql(&self) -> &Self::Sql;
    fn channel(&self) -> &Self::Channel;
    /// The agent's memory (in the Agent object).
    fn memory(&self) -> &Self::Memory;
    fn now_ms(&self) -> i64;
    /// The agent's pinned guardrail versions (kept by its Agent object),
    /// asked once per turn when the agent has a template. Default: none.
    async fn pins(&self) -> Result<crate::protocol::pins::Pins, StorageError> {
        Ok(crate::protocol::pins::Pins::default())
    }
    /// The agent's MCP servers and their tools (from its Agent object, which
    /// caches the listings), asked when a session starts. Default: none.
    async fn mcp_catalog(&self) -> Result<crate::protocol::mcp::McpCatalog, StorageError> {
        Ok(crate::protocol::mcp::McpCatalog::default())
    }
    /// A session's start from its Agent object: the workspace it composed,
    /// its pins and the MCP servers, in one call
    /// ([`crate::protocol::workspace`]). Default: nothing handed over (the
    /// session loads and asks for each itself).
    async fn session_start(
        &self,
        req: &crate::protocol::workspace::SessionStartRequest,
    ) -> Result<crate::protocol::workspace::SessionStartReply, StorageError> {
        let _ = req;
        Ok(Default::default())
    }
    /// A Worker secret or var by name, for the `${NAME}` placeholders of
    /// `mcp.json`. Default: none.
    fn secret(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
    async fn sleep(&self, ms: u64);
    /// A fresh random UUID (v4, lowercase hyphenated).
    fn new_uuid(&self) -> String;
    fn log(&self, level: LogLevel, msg: &str);
    /// The agent's usage ledger and budget (in its Agent object): settles
    /// finished LLM calls and, when asked, reserves room for the next one
    /// ([`crate::protocol::usage`]). Default: no ledger, every call may go.
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, StorageError> {
        Ok(crate::protocol::usage::MeterReply {
            settled: req.settle.len() as u32,
            decision: req
                .reserve
                .as_ref()
                .map(|_| crate::protocol::usage::Decision::Go { reservation: 0, tight: false }),
            ..Default::default()
        })
    }
    /// A call about people to the agent's Agent object (`crate::people`:
    /// the owner's `/approve`, `/revoke`, `/people`, `/link`). Default: none.
    async fn people(
        &self,
        call: &crate::protocol::people::PeopleCall,
    ) -> Result<crate::protocol::people::PeopleReply, StorageError> {
        let _ = call;
        Err(StorageError("no people service here".into()))
    }
    /// A call about a tool call waiting for the owner (`crate::approvals`).
    /// Default: none.
    async fn approvals(
        &self,
        call: &crate::protocol::approvals::ApprovalCall,
    ) -> Result<crate::protocol::approvals::ApprovalState, StorageError> {
        let _ = call;
        Err(StorageError("no approvals service here".into()))
    }
    /// A call to the agent's reminders (kept by its Agent object,
    /// [`crate::protocol::reminders`]). Default: none can be kept here.
    async fn reminders(
        &self,
        call: &crate::protocol::reminders::ReminderCall,
    ) -> Result<crate::protocol::reminders::ReminderReply, StorageError> {
        let _ = call;
        Err(StorageError("no reminders here: they are kept by the Agent object".into()))
    }
    /// Whether scripts can run in a sandbox here (a Worker Loader binding,
    /// `[[worker_loaders]]`): without it `run_code` is not offered.
    fn sandbox_available(&self) -> bool {
        false
    }
    /// Starts `job` in a fresh isolate ([`SandboxRun`]). Default: no sandbox.
    async fn start_sandbox(&self, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
        let _ = job;
        Err(SandboxError("no Worker Loader binding (LOADER)".into()))
    }
    /// Queues a message in another Session object (a peer's delegated
    /// session, `crate::tasks::delegate`) and waits for its outcome. The
    /// turn runs in that object's alarm; this call only waits, and asking
    /// again with the same dedupe key joins the same turn. Default: there
    /// are no other objects.
    async fn ask_session(
        &self,
        req: &crate::protocol::api::ApiTurnRequest,
    ) -> Result<crate::protocol::api::ApiOutcome, StorageError> {
        let _ = req;
        Err(StorageError("no other sessions can be asked here".into()))
    }
    /// Stops the answer the session `key` is writing to `req.request`.
    async fn stop_session(
        &self,
        key: &crate::inbound::SessionKey,
        req: &crate::protocol::api::StopRequest,
    ) -> Result<(), StorageError> {
        let _ = (key, req);
        Ok(())
    }
    /// A call about the agent's background tasks (its Agent object:
    /// `crate::protocol::tasks`). Default: there are none.
    async fn tasks(
        &self,
        req: &crate::protocol::tasks::TaskRequest,
    ) -> Result<crate::protocol::tasks::TaskReply, StorageError> {
        let _ = req;
        Err(StorageError("background tasks are not available here".into()))
    }
}

/// A shared platform is a platform (a host hands its runtime's platform to
/// turns, and tests keep a handle on it to look inside).
impl<P: Platform> Platform for std::rc::Rc<P> {
    type Store = P::Store;
    type Http = P::Http;
    type Sql = P::Sql;
    type Channel = P::Channel;
    type Memory = P::Memory;
    fn store(&self) -> &Self::Store {
        (**self).store()
    }
    fn http(&self) -> &Self::Http {
        (**self).http()
    }
    fn sql(&self) -> &Self::Sql {
        (**self).sql()
    }
    fn channel(&self) -> &Self::Channel {
        (**self).channel()
    }
    fn memory(&self) -> &Self::Memory {
        (**self).memory()
    }
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }
    async fn pins(&self) -> Result<crate::protocol::pins::Pins, StorageError> {
        (**self).pins().await
    }
    async fn mcp_catalog(&self) -> Result<crate::protocol::mcp::McpCatalog, StorageError> {
        (**self).mcp_catalog().await
    }
    fn secret(&self, name: &str) -> Option<String> {
        (**self).secret(name)
    }
    async fn session_start(
        &self,
        req: &crate::protocol::workspace::SessionStartRequest,
    ) -> Result<crate::protocol::workspace::SessionStartReply, StorageError> {
        (**self).session_start(req).await
    }
    async fn sleep(&self, ms: u64) {
        (**self).sleep(ms).await
    }
    fn new_uuid(&self) -> String {
        (**self).new_uuid()
    }
    fn log(&self, level: LogLevel, msg: &str) {
        (**self).log(level, msg)
    }
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, StorageError> {
        (**self).meter(req).await
    }
    async fn people(
        &self,
        call: &crate::protocol::people::PeopleCall,
    ) -> Result<crate::protocol::people::PeopleReply, StorageError> {
        (**self).people(call).await
    }
    async fn approvals(
        &self,
        call: &crate::protocol::approvals::ApprovalCall,
    ) -> Result<crate::protocol::approvals::ApprovalState, StorageError> {
        (**self).approvals(call).await
    }
    async fn reminders(
        &self,
        call: &crate::protocol::reminders::ReminderCall,
    ) -> Result<crate::protocol::reminders::ReminderReply, StorageError> {
        (**self).reminders(call).await
    }
    fn sandbox_available(&self) -> bool {
        (**self).sandbox_available()
    }
    async fn start_sandbox(&self, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
        (**self).start_sandbox(job).await
    }
    async fn ask_session(
        &self,
        req: &crate::protocol::api::ApiTurnRequest,
    ) -> Result<crate::protocol::api::ApiOutcome, StorageError> {
        (**self).ask_session(req).await
    }
    async fn stop_session(
        &self,
        key: &crate::inbound::SessionKey,
        req: &crate::protocol::api::StopRequest,
    ) -> Result<(), StorageError> {
        (**self).stop_session(key, req).await
    }
    async fn tasks(
        &self,
        req: &crate::protocol::tasks::TaskRequest,
    ) -> Result<crate::protocol::tasks::TaskReply, StorageError> {
        (**self).tasks(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::Platform;
    use crate::testing::TestPlatform;
    use std::rc::Rc;

    /// Every method with a default answer reaches the shared platform: a
    /// default would silently drop its MCP servers or its secrets.
    #[test]
    fn a_shared_platform_answers_as_the_platform_it_shares() {
        let inner = TestPlatform::default();
        inner.secrets.borrow_mut().insert("GITHUB_TOKEN".into(), "ghp_x".into());
        inner.mcp_catalog.borrow_mut().config_error = Some("mcp.json: line 1".into());
        let shared = Rc::new(inner);
        assert_eq!(shared.secret("GITHUB_TOKEN").as_deref(), Some("ghp_x"));
        let catalog = futures::executor::block_on(shared.mcp_catalog()).unwrap();
        assert_eq!(catalog.config_error.as_deref(), Some("mcp.json: line 1"));
        assert_eq!(shared.mcp_catalog_calls.get(), 1);
    }
}
