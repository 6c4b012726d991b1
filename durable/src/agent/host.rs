//! The Agent object's logic, hosted by the Worker's thin `Agent` class:
//! `struct Agent(AgentHost<DoRuntime>)` delegates every request and the
//! alarm here, so all of it runs natively in tests.
//!
//! One Agent object per agent id holds what belongs to the agent rather than
//! to one conversation: the BM25 memory ([`MemoryHub`]), the session
//! registry, the pinned guardrail versions, heartbeat and job state, and the
//! tool lists of the agent's MCP servers ([`crate::mcp::catalog`]).

use super::notifications::Feed;
use super::registry::Registry;
use crate::memory::{HubHost, MemoryHub};
use crate::ports::{Http, LogLevel, ObjectStore, Sql, StorageError};
use crate::protocol::agent::{
    AcceptReply, PinStatusReply, PinsRequest, SessionEntry, StrangerNoticeReply, StrangerNoticeRequest, TickReply,
    TickRequest,
};
use crate::protocol::mcp::{McpCatalog, McpToolsRequest};
use crate::protocol::memory::{MemoryCall, MemoryCallError, MemoryReply};
use crate::protocol::pins::{AcceptOutcome, Pins};
use crate::protocol::session::SessionTouch;
use crate::scheduled::view::{self, ScheduleStatus, TicksRun};
use crate::scheduled::SessionQueue;
use crate::settings::{agent_ids, memory_bm25, memory_conversation_ranking, Vars};
use crate::workspace::pins::{self as pin_ops, Accepted, PinError, PinStore};
use r2_layout::AgentId;
use std::cell::RefCell;
use std::rc::Rc;

/// What the object's runtime gives its host.
#[allow(async_fn_in_trait)]
pub trait AgentRuntime {
    type Sql: Sql + 'static;
    type Store: ObjectStore;
    type Vars: Vars;
    type Queue: SessionQueue;
    type Http: Http;
    /// The object's SQLite (shared with the memory stores).
    fn sql(&self) -> &Rc<Self::Sql>;
    /// The R2 bucket.
    fn store(&self) -> Result<Self::Store, StorageError>;
    /// The Worker's vars and secrets.
    fn vars(&self) -> &Self::Vars;
    /// The Session objects, for queueing heartbeat and job runs.
    fn queue(&self) -> &Self::Queue;
    /// Outgoing HTTP (listing the agent's MCP servers).
    fn http(&self) -> &Self::Http;
    /// The agent's settings. An isolate's vars are fixed for its life, so a
    /// runtime may keep them; by default they are read.
    fn agent_config(&self, agent: &str) -> Result<Rc<crate::settings::AgentConfig>, crate::settings::ConfigError> {
        crate::settings::AgentConfig::load(self.vars(), agent).map(Rc::new)
    }
    /// Runs the alarm as soon as possible.
    async fn wake(&self) -> Result<(), StorageError>;
    /// Runs the alarm at `at_ms` (ms since the epoch), unless it is already
    /// set to run earlier (a wake, a sooner reminder).
    async fn wake_at(&self, at_ms: i64) -> Result<(), StorageError>;
    /// Waits (between attempts of dreaming's LLM call).
    async fn sleep(&self, ms: u64);
    fn now_ms(&self) -> i64;
    /// A fresh random UUID (the codes of `crate::people` are drawn from it).
    fn new_uuid(&self) -> String;
    /// A clock the memory keeps (it counts recall events per day).
    fn clock(&self) -> Box<dyn Fn() -> i64>;
    fn log(&self, level: LogLevel, msg: &str);
}

/// The object's runtime as the channels' clients want it (the network, the
/// clock, waits between retries, logs).
pub struct AgentIo<'a, R>(pub &'a R);

impl<R: AgentRuntime> crate::ports::Io for AgentIo<'_, R> {
    type Http = R::Http;
    fn http(&self) -> &R::Http {
        self.0.http()
    }
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
    async fn sleep(&self, ms: u64) {
        self.0.sleep(ms).await
    }
    fn log(&self, level: LogLevel, msg: &str) {
        self.0.log(level, msg)
    }
}

/// A refused call: the HTTP status and what to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

impl Refusal {
    fn new(status: u16, message: impl std::fmt::Display) -> Self {
        Refusal { status, message: message.to_string() }
    }
}

impl From<StorageError> for Refusal {
    fn from(e: StorageError) -> Self {
        Refusal::new(503, e)
    }
}

/// Which pins call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinsCall {
    /// The pins (taken on first use).
    Get,
    /// Take the pins now (idempotent).
    Init,
    /// Pinned vs current template content per file.
    Status,
    /// Advance a pin.
    Accept,
}

/// What a pins call answers.
#[derive(Debug, Clone, PartialEq)]
pub enum PinsAnswer {
    Pins(Pins),
    Status(PinStatusReply),
    Accepted(AcceptReply),
}

/// The clock and the session count the memory reports in `my_stats`.
struct MemoryClock<S: Sql> {
    sql: Rc<S>,
    now: Box<dyn Fn() -> i64>,
}

impl<S: Sql> HubHost for MemoryClock<S> {
    fn now_ms(&self) -> i64 {
        (self.now)()
    }

    /// Conversations in the session registry (one per chat, kept across
    /// resets). None before the first one registers.
    fn sessions_total(&self) -> Option<u64> {
        Registry::new(&*self.sql).count().ok().filter(|n| *n > 0)
    }

    /// Dreaming's figures (None before the first sweep ran).
    fn dreams(&self) -> (Option<u64>, Option<i64>) {
        let d = crate::dreaming::state::DreamStore::new(&*self.sql);
        if d.init().is_err() {
            return (None, None);
        }
        let last = d.last_dream_ts().ok().flatten();
        (last.and_then(|_| d.promoted_total().ok()), last)
    }
}

/// The Agent object's state and logic.
pub struct AgentHost<R: AgentRuntime> {
    runtime: R,
    hub: RefCell<Option<MemoryHub<R::Sql>>>,
    /// The usage ledger of the agent this object serves ([`super::usage`]).
    pub(super) usage: RefCell<Option<(String, crate::usage::book::UsageBook)>>,
    /// The notification feed's live clients (shared with its keep-alive loop).
    feed: Rc<Feed>,
    /// The workspace composed for the agent's sessions ([`super::workspace`]).
    pub(super) workspace: RefCell<Option<(AgentId, crate::workspace::WorkspaceCache)>>,
}

impl<R: AgentRuntime> AgentHost<R>
where
    R: 'static,
{
    pub fn new(runtime: R) -> Self {
        AgentHost {
            runtime,
            hub: RefCell::new(None),
            usage: RefCell::new(None),
            feed: Rc::default(),
            workspace: RefCell::new(None),
        }
    }

    /// Creates an API thread (`None`: it exists).
    pub fn create_thread(
        &self,
        req: &crate::protocol::agent::ThreadCreate,
    ) -> Result<Option<crate::protocol::agent::ThreadRow>, StorageError> {
        super::threads::create(&**self.runtime.sql(), req)
    }

    /// The API threads and the main session.
    pub fn threads(&self) -> Result<Vec<crate::protocol::agent::ThreadRow>, StorageError> {
        super::threads::list(&**self.runtime.sql())
    }

    /// The notification feed (what heartbeats and jobs said).
    pub fn feed(&self) -> Rc<Feed> {
        self.feed.clone()
    }

    /// A session's notices: kept, and sent to the feed's clients.
    pub fn publish(&self, req: &crate::protocol::agent::PublishRequest) -> Result<usize, StorageError> {
        self.feed.publish(&**self.runtime.sql(), &req.session_key, &req.notices, self.runtime.now_ms())
    }

    /// A feed client: what came after `after`, then each new notification.
    pub fn attach_feed(
        &self,
        client: Box<dyn crate::ports::EventSink>,
        after: Option<i64>,
    ) -> Result<(), StorageError> {
        self.feed.attach(&**self.runtime.sql(), client, after, self.runtime.now_ms())
    }

    pub fn runtime(&self) -> &R {
        &self.runtime
    }

    pub(super) fn with_hub<T>(&self, f: impl FnOnce(&mut MemoryHub<R::Sql>) -> T) -> T {
        let mut slot = self.hub.borrow_mut();
        let hub = slot.get_or_insert_with(|| {
            let sql = self.runtime.sql().clone();
            let clock = MemoryClock { sql: sql.clone(), now: self.runtime.clock() };
            MemoryHub::new(sql).with_host(Box::new(clock))
        });
        f(hub)
    }

    // ------------------------------------------------------------ memory

    /// Applies `agent`'s `MEMORY_BM25_K1` / `MEMORY_BM25_B` and
    /// `MEMORY_CONVERSATION_RANKING` (the object does not know which agent
    /// it serves otherwise). Err: the invalid setting, named (and logged).
    pub fn apply_memory_settings(&self, agent: &str) -> Result<(), MemoryCallError> {
        let unavailable = |e: &dyn std::fmt::Display| MemoryCallError::Unavailable(e.to_string());
        let params = memory_bm25(self.runtime.vars(), agent).map_err(|e| unavailable(&e))?;
        let ranking = memory_conversation_ranking(self.runtime.vars(), agent).map_err(|e| unavailable(&e))?;
        self.with_hub(|hub| {
            hub.set_conversation_ranking(ranking);
            hub.set_bm25(params)
        })
        .map_err(|e| unavailable(&e))
        .inspect_err(|e| self.runtime.log(LogLevel::Error, &format!("memory settings: {e}")))
    }

    /// A memory call (`POST /memory/call`, what Session objects send).
    pub fn memory_call(&self, call: MemoryCall) -> Result<MemoryReply, MemoryCallError> {
        let result = self.with_hub(|hub| hub.call(call));
        if let Err(e @ MemoryCallError::Unavailable(_)) = &result {
            self.runtime.log(LogLevel::Error, &format!("memory call failed: {e}"));
        }
        result
    }

    /// After a memory write: when it ended the emptiness a recall told the
    /// main session of, tells `agent`'s main session (one call, only then;
    /// a failed one is tried again by the next write).
    pub async fn tell_main_of_memory(&self, agent: &str) {
        if !self.with_hub(|hub| hub.take_main_tell()) {
            return;
        }
        let told = match AgentId::parse(agent) {
            Ok(id) => {
                let key = crate::inbound::SessionKey::Main(id);
                self.runtime.queue().memory_stored(&key).await
            }
            Err(e) => Err(StorageError(e.to_string())),
        };
        if let Err(e) = told {
            self.runtime.log(LogLevel::Warn, &format!("main session not told of its memory: {e}"));
            self.with_hub(|hub| hub.main_tell_failed());
        }
    }

    /// The stores loaded in the object's memory.
    pub fn loaded_stores(&self) -> Vec<String> {
        self.with_hub(|hub| hub.loaded())
    }

    /// Checkpoints the loaded stores that have a log (cheap to call often).
    fn memory_maintenance(&self) {
        match self.with_hub(|hub| hub.maintenance()) {
            Ok(done) if !done.is_empty() => {
                self.runtime.log(LogLevel::Info, &format!("memory checkpointed: {}", done.join(", ")))
            }
            Ok(_) => {}
            Err(e) => self.runtime.log(LogLevel::Error, &format!("memory checkpoint failed: {e}")),
        }
    }

    // ------------------------------------------------------------ sessions

    pub fn touch(&self, touch: &SessionTouch) -> Result<(), StorageError> {
        let registry = Registry::new(&**self.runtime.sql());
        registry.init()?;
        registry.touch(touch)
    }

    pub fn sessions(&self) -> Result<Vec<SessionEntry>, StorageError> {
        let registry = Registry::new(&**self.runtime.sql());
        registry.init()?;
        registry.list()
    }

    /// May this stranger be told their id now? (See [`super::strangers`].)
    pub fn stranger_notice(&self, req: &StrangerNoticeRequest) -> Result<StrangerNoticeReply, StorageError> {
        super::strangers::claim(&**self.runtime.sql(), req, self.runtime.now_ms())
    }

    // ------------------------------------------------------------ pins

    /// A pins call for `req.agent` (a configured agent). Without a template
    /// nothing is pinned: the overlay is agent → defaults.
    pub async fn pins(&self, call: PinsCall, req: &PinsRequest) -> Result<PinsAnswer, Refusal> {
        let vars = self.runtime.vars();
        if !agent_ids(vars).contains(&req.agent) {
            return Err(Refusal::new(404, format!("unknown agent {:?}", req.agent)));
        }
        let id = AgentId::parse(&req.agent).map_err(|e| Refusal::new(400, e))?;
        let template = crate::settings::overlay::template(vars, &req.agent).map_err(|e| Refusal::new(500, e))?;
        let sql = &**self.runtime.sql();
        let pins = PinStore::new(sql);
        pins.init().map_err(|e| self.pin_refusal(e.into()))?;
        let Some(template) = template else {
            return match call {
                PinsCall::Get | PinsCall::Init => Ok(PinsAnswer::Pins(Pins::default())),
                PinsCall::Status => {
                    Ok(PinsAnswer::Status(PinStatusReply { agent: req.agent.clone(), template: None, files: vec![] }))
                }
                PinsCall::Accept => Err(Refusal::new(409, format!("agent {:?} has no TEMPLATE", req.agent))),
            };
        };
        let r2 = self.runtime.store()?;
        let now = self.runtime.now_ms();
        let taken = pin_ops::initialize_pins(&r2, &pins, &template, now).await.map_err(|e| self.pin_refusal(e))?;
        match call {
            PinsCall::Get | PinsCall::Init => Ok(PinsAnswer::Pins(taken)),
            PinsCall::Status => {
                let files = pin_ops::pin_status(&r2, &taken, &template).await.map_err(|e| self.pin_refusal(e))?;
                Ok(PinsAnswer::Status(PinStatusReply { agent: req.agent.clone(), template: Some(template), files }))
            }
            PinsCall::Accept => {
                let Some(file) = req.file.clone() else {
                    return Err(Refusal::new(400, "accept needs {agent, file}"));
                };
                let keep =
                    crate::settings::dreaming::history_keep(vars, &req.agent).map_err(|e| Refusal::new(500, e))?;
                let result = match req.sha256.clone() {
                    Some(sha256) => {
                        let accepted = Accepted { file: file.clone(), sha256: sha256.clone() };
                        pin_ops::apply_accept(&r2, &pins, &id, &template, &accepted, now, keep)
                            .await
                            .map(|previous| AcceptOutcome { file, sha256, previous_sha256: previous })
                    }
                    None => pin_ops::accept_update(&r2, &pins, &id, &template, &file, now, keep).await,
                };
                let accepted = result.map_err(|e| self.pin_refusal(e))?;
                Ok(PinsAnswer::Accepted(AcceptReply { ok: true, agent: req.agent.clone(), template, accepted }))
            }
        }
    }

    fn pin_refusal(&self, e: PinError) -> Refusal {
        let status = match &e {
            PinError::Storage(_) => 503,
            PinError::NoTemplateFile { .. } | PinError::VersionMissing(_) => 404,
            PinError::Key(_) | PinError::NotPinnable(_) => 400,
        };
        if status == 503 {
            self.runtime.log(LogLevel::Error, &format!("pins: {e}"));
        }
        Refusal::new(status, e)
    }

    // ------------------------------------------------------------ MCP

    /// The agent's MCP servers and their tools for a session that starts:
    /// cached lists, and a listing for each server whose cache is cold.
    /// `cached_only`: what the cache holds, listing nothing (the admin view).
    pub async fn mcp_catalog(&self, req: &McpToolsRequest, cached_only: bool) -> Result<McpCatalog, Refusal> {
        let vars = self.runtime.vars();
        if !agent_ids(vars).contains(&req.agent) {
            return Err(Refusal::new(404, format!("unknown agent {:?}", req.agent)));
        }
        let store = self.runtime.store()?;
        self.catalog_for(&req.agent, cached_only, false, &store).await
    }

    /// [`Self::mcp_catalog`] of a configured agent; `absent`: a listing made
    /// just now found no `mcp.json` (it is not read).
    pub(super) async fn catalog_for<S: ObjectStore>(
        &self,
        agent_name: &str,
        cached_only: bool,
        absent: bool,
        store: &S,
    ) -> Result<McpCatalog, Refusal> {
        let vars = self.runtime.vars();
        let agent = AgentId::parse(agent_name).map_err(|e| Refusal::new(400, e))?;
        let settings = crate::settings::web::McpSettings::load(vars, agent_name).map_err(|e| Refusal::new(500, e))?;
        let secret = |name: &str| crate::settings::setting(vars, agent_name, name);
        let src = crate::mcp::catalog::Source {
            store,
            http: self.runtime.http(),
            sql: &**self.runtime.sql(),
            agent: &agent,
            settings: &settings,
            secret: &secret,
            now_ms: self.runtime.now_ms(),
            absent,
        };
        let catalog = crate::mcp::catalog::catalog(&src, cached_only).await?;
        if catalog.listed_now > 0 {
            let failed: Vec<&str> = catalog.servers.iter().filter_map(|s| s.error.as_deref()).collect();
            let msg = format!("mcp: listed {} server(s) for {agent_name}; problems: {failed:?}", catalog.listed_now);
            self.runtime.log(if failed.is_empty() { LogLevel::Info } else { LogLevel::Warn }, &msg);
        }
        Ok(catalog)
    }

    // ------------------------------------------------------------ schedule

    /// Time passed (the cron trigger): recorded, and run in the alarm.
    pub async fn tick(&self, req: &TickRequest) -> Result<TickReply, StorageError> {
        view::record_trigger(&**self.runtime.sql(), &req.agent, req.scheduled_time)?;
        self.runtime.wake().await?;
        // Time passed: a conversation a budget held may go on now.
        self.wake_held_sessions(&req.agent).await;
        Ok(TickReply { pending: req.scheduled_time })
    }

    /// The alarm: the reminders that are due first (their time is the one
    /// that matters to the second), then memory checkpoints, the pending
    /// ticks, what dreaming does with time (tonight's sweep, proposals), and
    /// archives the conversation memory lacks; last, the alarm is set for
    /// the next reminder, whatever happened before. A failed tick fails the
    /// alarm (the runtime retries; claims keep runs exactly once).
    pub async fn alarm(&self) -> Result<TicksRun, StorageError> {
        let fired = self.fire_reminders().await;
        let ran = self.scheduled_work().await;
        self.rearm_reminders(fired).await?;
        ran
    }

    /// The alarm's work besides reminders.
    async fn scheduled_work(&self) -> Result<TicksRun, StorageError> {
        self.memory_maintenance();
        let r2 = self.runtime.store()?;
        let log = |level: LogLevel, msg: &str| self.runtime.log(level, msg);
        let sql = &**self.runtime.sql();
        let ran = view::run_pending_ticks(&r2, sql, self.runtime.queue(), self.runtime.vars(), &log).await?;
        if let TicksRun::Ran { ticks, more } = ran {
            if ticks > 0 {
                self.after_ticks().await;
            }
            if more {
                self.runtime.wake().await?;
            }
        }
        // Archives the conversation memory lacks, a few per alarm (one SQLite read
        // when there are none); another alarm soon while some remain.
        let agent = crate::scheduled::store::ScheduleStore::new(sql).get("agent").ok().flatten();
        if let Some(agent) = agent {
            let more = self.backfill_conversations(&agent).await;
            self.tell_main_of_memory(&agent).await;
            if more {
                self.runtime.wake().await?;
            }
        }
        // Background tasks: results to post, tasks to start, late sub-agents.
        if let Err(e) = self.tasks_alarm().await {
            self.runtime.log(LogLevel::Error, &format!("tasks: {e}"));
        }
        Ok(ran)
    }

    /// The admin view of heartbeat and job state (`None`: no trigger yet).
    pub async fn schedule_status(&self) -> Result<Option<ScheduleStatus>, Refusal> {
        let r2 = self.runtime.store()?;
        let log = |level: LogLevel, msg: &str| self.runtime.log(level, msg);
        let sql = &**self.runtime.sql();
        let now = self.runtime.now_ms();
        view::status(&r2, sql, self.runtime.queue(), self.runtime.vars(), now, &log)
            .await
            .map_err(|e| Refusal::new(500, e))
    }
}

#[cfg(test)]
pub(super) mod tests;
