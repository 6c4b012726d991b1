//! The `Agent` Durable Object: one per agent id (`AGENT.idFromName(agentId)`).
//! It hosts what belongs to the agent rather than to one conversation: the
//! BM25 memory ([`memory`]), heartbeat and job state ([`schedule`]) and the
//! usage ledger. Thin: each feature module delegates to the `durable` crates.
//!
//! Requests are routed by path prefix: `/memory/...`, `/schedule/...` and
//! `/pins/...` (pinned guardrail files, [`pins`]).

mod memory;
pub(crate) mod pins;
pub(crate) mod schedule;
mod sessions;

use crate::adapters::DoSql;
use serde_json::json;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

#[durable_object]
#[allow(dead_code)] // fields are used by the feature modules as they land
pub struct Agent {
    state: State,
    env: Env,
    memory: memory::MemoryHost,
    schedule: schedule::ScheduleHost,
}

#[allow(dead_code)]
impl Agent {
    pub(crate) fn sql(&self) -> DoSql {
        DoSql::new(&self.state)
    }
}

impl DurableObject for Agent {
    fn new(state: State, env: Env) -> Self {
        Agent { state, env, memory: Default::default(), schedule: Default::default() }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let path = req.path();
        if path == "/health" {
            return Response::from_json(&json!({"ok": true}));
        }
        if path.starts_with("/memory/") {
            return memory::handle(self, req).await;
        }
        if path.starts_with("/sessions/") {
            return sessions::handle(self, req).await;
        }
        if path.starts_with("/pins/") {
            return pins::handle(self, req).await;
        }
        if path.starts_with("/schedule/") {
            return schedule::handle(self, req).await;
        }
        Response::error("not found", 404)
    }

    async fn alarm(&self) -> Result<Response> {
        schedule::alarm(self).await
    }
}
