//! The `Session` Durable Object: one per session key. A thin wrapper: its
//! requests and its alarm go to [`SessionHost`], which holds the logic and
//! is tested natively, and its routes are `durable::session::serve`'s.

use crate::adapters::{self, DoSql, EnvVars};
use crate::platform::DoPlatform;
use durable::inbound::SessionKey;
use durable::ports::{LogLevel, StorageError};
use durable::protocol::agent::PublishRequest;
use durable::protocol::session::SessionTouch;
use durable::session::host::{AlarmOutcome, SessionHost, SessionRuntime};
use durable::settings::AgentConfig;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

/// What the host gets from workerd.
pub struct DoRuntime {
    state: State,
    env: Env,
    sql: DoSql,
    vars: EnvVars,
}

fn storage_err(e: impl std::fmt::Display) -> StorageError {
    StorageError(e.to_string())
}

impl SessionRuntime for DoRuntime {
    type Sql = DoSql;
    type Vars = EnvVars;
    type Platform = DoPlatform;

    fn sql(&self) -> &DoSql {
        &self.sql
    }
    fn vars(&self) -> &EnvVars {
        &self.vars
    }
    fn platform(&self, config: &AgentConfig, key: &SessionKey) -> std::result::Result<DoPlatform, StorageError> {
        DoPlatform::for_session(&self.sql, &self.env, config, key).map_err(storage_err)
    }
    fn agent_config(
        &self,
        agent: &str,
    ) -> std::result::Result<std::rc::Rc<AgentConfig>, durable::settings::ConfigError> {
        crate::access::load(&self.vars, agent)
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
    async fn register(&self, touch: &SessionTouch) -> std::result::Result<(), StorageError> {
        crate::objects::call(&self.env, touch).await.map(drop).map_err(storage_err)
    }
    async fn publish(&self, key: &SessionKey, notices: &[String]) -> std::result::Result<(), StorageError> {
        let req = PublishRequest { session_key: key.clone(), notices: notices.to_vec() };
        crate::objects::call(&self.env, &req).await.map(drop).map_err(storage_err)
    }
    fn now_ms(&self) -> i64 {
        adapters::now_ms()
    }
    fn new_uuid(&self) -> String {
        adapters::new_uuid()
    }
    fn log(&self, level: LogLevel, msg: &str) {
        adapters::log(level, msg)
    }
}

#[durable_object(alarm)]
pub struct Session(SessionHost<DoRuntime>);

impl DurableObject for Session {
    fn new(state: State, env: Env) -> Self {
        let sql = DoSql::new(&state);
        let vars = EnvVars::of(&env);
        Session(SessionHost::new(DoRuntime { state, env, sql, vars }))
    }

    /// The routes are `durable::session::serve`'s.
    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let incoming = crate::http::incoming(&mut req).await?;
        let streams = crate::http::JsStreams::default();
        crate::http::respond(durable::session::serve::serve(&self.0, &incoming, &streams).await, streams)
    }

    async fn alarm(&self) -> Result<Response> {
        match self.0.alarm().await {
            Ok(AlarmOutcome::Drained(report)) => Response::ok(format!("{} turns", report.turns)),
            Ok(other) => Response::ok(format!("{other:?}")),
            // Storage trouble: fail the alarm so the runtime retries it.
            Err(e) => Err(worker::Error::RustError(format!("drain failed: {e}"))),
        }
    }
}
