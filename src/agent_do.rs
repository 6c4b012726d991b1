//! The `Agent` Durable Object: one per agent id. It will hold the agent's
//! BM25 memory, heartbeat state and usage ledger; for now it answers its
//! health check so the binding and migration are in place.

use serde_json::json;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

#[durable_object]
pub struct Agent {
    #[allow(dead_code)]
    state: State,
    #[allow(dead_code)]
    env: Env,
}

impl DurableObject for Agent {
    fn new(state: State, env: Env) -> Self {
        Agent { state, env }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        match req.path().as_str() {
            "/health" => Response::from_json(&json!({"ok": true})),
            _ => Response::error("not found", 404),
        }
    }
}
