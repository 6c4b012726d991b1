//! The agent's BM25 memory, hosted in the Agent object (memory issue).
//!
//! The stores (one per scope: `main`, each group, each DM peer; see
//! [`durable::memory`]) are opened lazily from the object's SQLite and kept in
//! RAM across requests (the 16 most recently used). Routes (reached only through the `AGENT` binding):
//! - `POST /memory/call?agent={id}`: a [`durable::protocol::memory::MemoryCall`] as JSON
//!   (what the Session objects send through [`crate::platform::AgentMemory`]); the
//!   agent id selects its `MEMORY_BM25_K1` / `MEMORY_BM25_B`;
//! - `POST /memory/op` `{store, op}`, `POST /memory/search` `{store, query, k}`,
//!   `POST /memory/get` `{store, name}`, `GET /memory/stats?store=`: the same calls
//!   by name, for the admin API and the bench.
//!
//! Checkpoints happen in [`maintenance`], which the Agent object's alarm calls,
//! so requests only ever write one log row (a request checkpoints inline only
//! after [`durable::memory::INLINE_CHECKPOINT_AFTER`] rows, if no alarm ran).

use super::Agent;
use crate::adapters::{self, DoSql, EnvVars};
use durable::memory::{HubHost, MemoryHub};
use durable::ports::{LogLevel, Sql, SqlValue};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use worker::{Method, Request, Response, Result};

/// In-object state of the memory feature: the loaded stores.
#[derive(Default)]
pub struct MemoryHost {
    hub: RefCell<Option<MemoryHub<DoSql>>>,
}

/// The clock and the session count the hub reports in `my_stats`.
struct AgentHost {
    sql: DoSql,
}

impl HubHost for AgentHost {
    fn now_ms(&self) -> i64 {
        adapters::now_ms()
    }

    /// Conversations in the object's session registry (`sessions.rs`; one per chat,
    /// kept across resets). None before the first one registers.
    fn sessions_total(&self) -> Option<u64> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM sessions", &[]).ok()?;
        rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).map(|n| n.max(0) as u64)
    }
}

fn with_hub<T>(agent: &Agent, f: impl FnOnce(&mut MemoryHub<DoSql>) -> T) -> T {
    let mut slot = agent.memory.hub.borrow_mut();
    let hub = slot.get_or_insert_with(|| {
        MemoryHub::new(Rc::new(DoSql::new(&agent.state))).with_host(Box::new(AgentHost { sql: agent.sql() }))
    });
    f(hub)
}

fn respond(status: u16, body: Value) -> Result<Response> {
    Ok(Response::from_json(&body)?.with_status(status))
}

/// Applies the agent's `MEMORY_BM25_K1` / `MEMORY_BM25_B` when a request names the
/// agent (`?agent=`, as the Session objects' calls do): the object does not know
/// which agent it serves otherwise. Err: a reply naming the invalid setting.
fn apply_agent_settings(agent: &Agent, url: &worker::Url) -> std::result::Result<(), Value> {
    let Some(id) = url.query_pairs().find(|(k, _)| k == "agent").map(|(_, v)| v.into_owned()) else { return Ok(()) };
    let unavailable = |message: String| json!({"ok": false, "error": "unavailable", "message": message});
    let params = durable::settings::memory_bm25(&EnvVars(&agent.env), &id).map_err(|e| unavailable(e.to_string()))?;
    with_hub(agent, |hub| hub.set_bm25(params)).map_err(|e| unavailable(e.to_string()))
}

pub async fn handle(agent: &Agent, mut req: Request) -> Result<Response> {
    let path = req.path();
    let call = path.trim_start_matches("/memory/").to_owned();
    if let Err(reply) = apply_agent_settings(agent, &req.url()?) {
        adapters::log(LogLevel::Error, &format!("memory settings: {reply}"));
        return respond(500, reply);
    }
    let body: Vec<u8> = match (req.method(), call.as_str()) {
        (Method::Post, "call") => req.bytes().await?,
        (Method::Post, "op" | "search" | "get") => {
            let mut v: Value = match req.json().await {
                Ok(v) => v,
                Err(e) => return respond(400, json!({"ok": false, "error": "rejected", "message": e.to_string()})),
            };
            if let Some(o) = v.as_object_mut() {
                o.insert("call".into(), Value::String(call.clone()));
                if call == "search" && !o.contains_key("k") {
                    o.insert("k".into(), json!(10));
                }
            }
            serde_json::to_vec(&v)?
        }
        (Method::Get, "stats") => {
            let url = req.url()?;
            let store = url.query_pairs().find(|(k, _)| k == "store").map(|(_, v)| v.into_owned());
            let Some(store) = store else {
                let loaded = with_hub(agent, |hub| hub.loaded());
                return respond(200, json!({"ok": true, "loaded": loaded}));
            };
            serde_json::to_vec(&json!({"call": "stats", "store": store}))?
        }
        _ => return Response::error("not found", 404),
    };
    let (status, reply) = with_hub(agent, |hub| hub.call_json(&body));
    if status == 503 {
        adapters::log(LogLevel::Error, &format!("memory call failed: {reply}"));
    }
    respond(status, reply)
}

/// Checkpoints the loaded stores that have a log: cheap to call often. The
/// Agent object's alarm (owned by `schedule.rs`) calls this.
pub async fn maintenance(agent: &Agent) {
    match with_hub(agent, |hub| hub.maintenance()) {
        Ok(done) if !done.is_empty() => {
            adapters::log(LogLevel::Info, &format!("memory checkpointed: {}", done.join(", ")))
        }
        Ok(_) => {}
        Err(e) => adapters::log(LogLevel::Error, &format!("memory checkpoint failed: {e}")),
    }
}
