//! The `Agent` Durable Object: one per agent id (`AGENT.idFromName(agentId)`).
//! A thin wrapper: its requests and its alarm go to [`AgentHost`], which
//! holds the logic (memory, session registry, pins, schedule) and is tested
//! natively, and its routes are [`durable::agent::serve`]'s; this file only
//! gives the host workerd (storage, alarms, the Session objects).

use crate::adapters::{self, DoSql, EnvVars, FetchHttp, R2};
use crate::objects;
use durable::agent::host::{AgentHost, AgentRuntime};
use durable::inbound::{Inbound, SessionKey};
use durable::ports::{LogLevel, StorageError};
use durable::protocol::agent::TickRequest;
use durable::protocol::api::{StopRequest, StopSession};
use durable::protocol::session::{Admission, AdmitSession, EnqueueRequest, PostReply, PostRequest, WakeSession};
use durable::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
use std::rc::Rc;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

/// Reaches Session objects through their typed calls.
pub struct DoQueue(Env);

fn storage_err(e: impl std::fmt::Display) -> StorageError {
    StorageError(e.to_string())
}

impl SessionQueue for DoQueue {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        opts: EnqueueOptions,
    ) -> std::result::Result<EnqueueOutcome, StorageError> {
        let req = EnqueueRequest {
            session_key: key.clone(),
            inbound: inbound.clone(),
            if_idle: opts.if_idle,
            fresh: opts.fresh,
            next_run_in_ms: opts.next_run_in_ms,
        };
        let reply = objects::call(&self.0, &req).await.map_err(storage_err)?;
        Ok(match (reply.busy, reply.queued) {
            (true, _) => EnqueueOutcome::Busy,
            (_, true) => EnqueueOutcome::Queued,
            _ => EnqueueOutcome::Repeat,
        })
    }

    async fn usage(&self, key: &SessionKey) -> std::result::Result<SessionCounters, StorageError> {
        let status = objects::status(&self.0, key).await.map_err(storage_err)?;
        Ok(SessionCounters { open: status.open, total: status.usage_all })
    }

    async fn wake(&self, key: &SessionKey) -> std::result::Result<(), StorageError> {
        objects::call(&self.0, &WakeSession { session_key: key.clone() }).await.map(drop).map_err(storage_err)
    }

    async fn memory_stored(&self, key: &SessionKey) -> std::result::Result<(), StorageError> {
        let told = durable::protocol::session::MemoryStored { session_key: key.clone() };
        objects::call(&self.0, &told).await.map(drop).map_err(storage_err)
    }

    async fn admit(&self, key: &SessionKey, open: bool) -> std::result::Result<(), StorageError> {
        let admit = AdmitSession { session_key: key.clone(), admission: Admission { open } };
        objects::call(&self.0, &admit).await.map(drop).map_err(storage_err)
    }

    async fn post(&self, req: &PostRequest) -> std::result::Result<PostReply, StorageError> {
        objects::call(&self.0, req).await.map_err(storage_err)
    }

    async fn stop(&self, key: &SessionKey, req: &StopRequest) -> std::result::Result<(), StorageError> {
        let stop = StopSession { session_key: key.clone(), stop: req.clone() };
        objects::call(&self.0, &stop).await.map(drop).map_err(storage_err)
    }
}

/// What the host gets from workerd.
pub struct DoRuntime {
    state: State,
    env: Env,
    sql: Rc<DoSql>,
    vars: EnvVars,
    queue: DoQueue,
    http: FetchHttp,
}

impl AgentRuntime for DoRuntime {
    type Sql = DoSql;
    type Store = R2;
    type Vars = EnvVars;
    type Queue = DoQueue;
    type Http = FetchHttp;

    fn http(&self) -> &FetchHttp {
        &self.http
    }
    fn sql(&self) -> &Rc<DoSql> {
        &self.sql
    }
    fn store(&self) -> std::result::Result<R2, StorageError> {
        R2::from_env(&self.env).map_err(storage_err)
    }
    fn vars(&self) -> &EnvVars {
        &self.vars
    }
    fn agent_config(
        &self,
        agent: &str,
    ) -> std::result::Result<Rc<durable::settings::AgentConfig>, durable::settings::ConfigError> {
        crate::access::load(&self.vars, agent)
    }
    fn queue(&self) -> &DoQueue {
        &self.queue
    }
    async fn wake(&self) -> std::result::Result<(), StorageError> {
        self.state.storage().set_alarm(0i64).await.map_err(storage_err)
    }
    async fn wake_at(&self, at_ms: i64) -> std::result::Result<(), StorageError> {
        // While the alarm runs, getAlarm is null unless set since it started.
        let storage = self.state.storage();
        match storage.get_alarm().await.map_err(storage_err)? {
            Some(current) if current <= at_ms => Ok(()),
            // An i64 is an offset from now.
            _ => storage.set_alarm((at_ms - adapters::now_ms()).max(0)).await.map_err(storage_err),
        }
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
    fn clock(&self) -> Box<dyn Fn() -> i64> {
        Box::new(adapters::now_ms)
    }
    fn log(&self, level: LogLevel, msg: &str) {
        adapters::log(level, msg)
    }
}

#[durable_object(alarm)]
pub struct Agent(AgentHost<DoRuntime>);

impl DurableObject for Agent {
    fn new(state: State, env: Env) -> Self {
        let sql = Rc::new(DoSql::new(&state));
        let vars = EnvVars::of(&env);
        let runtime = DoRuntime { sql, vars, queue: DoQueue(env.clone()), state, env, http: FetchHttp };
        Agent(AgentHost::new(runtime))
    }

    /// The routes are `durable::agent::serve`'s.
    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let incoming = crate::http::incoming(&mut req).await?;
        let streams = crate::http::JsStreams::default();
        crate::http::respond(durable::agent::serve::serve(&self.0, &incoming, &streams).await, streams)
    }

    async fn alarm(&self) -> Result<Response> {
        match self.0.alarm().await {
            Ok(ran) => Response::ok(format!("{ran:?}")),
            // Fail the alarm: the runtime retries it, claims keep runs exactly once.
            Err(e) => Err(worker::Error::RustError(e.to_string())),
        }
    }
}

/// The Worker's `scheduled` handler: tells each configured agent's object
/// that time passed. Quick: a call per agent, no LLM.
pub async fn fan_out(env: &Env, scheduled_time: i64) {
    let agents = durable::settings::agent_ids(&EnvVars::of(env));
    let calls = agents.iter().map(|a| async move {
        if let Err(e) = objects::call(env, &TickRequest { agent: a.clone(), scheduled_time }).await {
            adapters::log(LogLevel::Error, &format!("tick for agent {a} failed: {e}"));
        }
    });
    futures::future::join_all(calls).await;
    crate::gateway_ensure::ensure_all(env).await;
}
