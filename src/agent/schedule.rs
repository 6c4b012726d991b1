//! Heartbeats and scheduled jobs, driven by the Agent object's alarm.
//!
//! `POST /schedule/tick {"agent", "scheduledTime"}` (from the Worker's
//! `scheduled` handler) only records the trigger's time and sets an alarm; the
//! alarm runs [`durable::scheduled::tick`] with that time as "now", which
//! claims slots and queues messages in Session objects. No LLM call happens
//! here or in `scheduled`: the Session objects run the turns.
//! `GET /schedule/status` is the admin view (`GET /api/agents/{id}/schedule`);
//! it first records the usage of runs that finished since the last tick.

use super::Agent;
use crate::adapters::{self, EnvVars, R2};
use crate::session_do;
use durable::inbound::{Inbound, SessionKey};
use durable::ports::{LogLevel, StorageError};
use durable::scheduled::{
    ledger, next_heartbeat, read_cron, tick, EnqueueOptions, EnqueueOutcome, ScheduleConfig, ScheduleStore,
    SessionCounters, SessionQueue,
};
use serde::Deserialize;
use serde_json::{json, Value};
use worker::{Env, Method, Request, Response, Result};

/// In-object state of the schedule feature.
#[derive(Default)]
pub struct ScheduleHost {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TickBody {
    agent: String,
    scheduled_time: i64,
}

fn rust_err(e: impl std::fmt::Display) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

/// Reaches Session objects through their `/enqueue` and `/status` routes.
struct DoQueue<'a>(&'a Env);

fn storage_err(e: impl std::fmt::Display) -> StorageError {
    StorageError(e.to_string())
}

impl SessionQueue for DoQueue<'_> {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        opts: EnqueueOptions,
    ) -> std::result::Result<EnqueueOutcome, StorageError> {
        let v = session_do::enqueue_with(self.0, key, inbound, opts).await.map_err(storage_err)?;
        Ok(if v["busy"].as_bool() == Some(true) {
            EnqueueOutcome::Busy
        } else if v["queued"].as_bool() == Some(true) {
            EnqueueOutcome::Queued
        } else {
            EnqueueOutcome::Repeat
        })
    }

    async fn usage(&self, key: &SessionKey) -> std::result::Result<SessionCounters, StorageError> {
        let v = session_do::status(self.0, key).await.map_err(storage_err)?;
        let open =
            v["open"].as_i64().ok_or_else(|| storage_err(format!("{}: status without \"open\"", key.render())))?;
        let total = serde_json::from_value(v["usageAll"].clone()).map_err(storage_err)?;
        Ok(SessionCounters { open, total })
    }
}

pub async fn handle(agent: &Agent, mut req: Request) -> Result<Response> {
    let sql = agent.sql();
    let store = ScheduleStore::new(&sql);
    store.init().map_err(rust_err)?;
    match (req.method(), req.path().as_str()) {
        (Method::Post, "/schedule/tick") => {
            let body: TickBody = match req.json().await {
                Ok(b) => b,
                Err(e) => return Response::error(format!("bad tick body: {e}"), 400),
            };
            store.set("agent", &body.agent).map_err(rust_err)?;
            store.add_pending_tick(body.scheduled_time).map_err(rust_err)?;
            agent.state.storage().set_alarm(0i64).await?;
            Response::from_json(&json!({"pending": body.scheduled_time}))
        }
        (Method::Get, "/schedule/status") => status(agent, &store).await,
        _ => Response::error("not found", 404),
    }
}

/// Runs the pending ticks, newest first (one tick covers the ones before it).
pub async fn alarm(agent: &Agent) -> Result<Response> {
    super::memory::maintenance(agent).await;
    let sql = agent.sql();
    let store = ScheduleStore::new(&sql);
    store.init().map_err(rust_err)?;
    let Some(name) = store.get("agent").map_err(rust_err)? else {
        return Response::ok("nothing scheduled");
    };
    let cfg = match ScheduleConfig::load(&EnvVars(&agent.env), &name) {
        Ok(c) => c,
        Err(e) => {
            adapters::log(LogLevel::Error, &format!("schedule of agent {name}: {e}"));
            return Response::ok("misconfigured");
        }
    };
    let r2 = R2::from_env(&agent.env)?;
    let queue = DoQueue(&agent.env);
    let mut runs = 0;
    while let Some(now) = store.pending_tick().map_err(rust_err)? {
        let report = tick(&r2, &sql, &queue, &cfg, now, &adapters::log)
            .await
            // Fail the alarm: the runtime retries it, claims keep it exactly once.
            .map_err(|e| rust_err(format!("tick failed: {e}")))?;
        adapters::log(
            LogLevel::Info,
            &format!("agent {name} tick {now}: heartbeat {}, jobs {:?}", report.heartbeat.label(), report.jobs_queued),
        );
        store.done_pending_tick(now).map_err(rust_err)?;
        runs += 1;
        if runs >= 10 {
            // Triggers keep arriving faster than ticks finish: continue in a new alarm.
            agent.state.storage().set_alarm(0i64).await?;
            break;
        }
    }
    Response::ok(format!("{runs} ticks"))
}

async fn status(agent: &Agent, store: &ScheduleStore<'_, adapters::DoSql>) -> Result<Response> {
    let Some(name) = store.get("agent").map_err(rust_err)? else {
        return Response::from_json(&json!({"ticks": 0, "note": "no cron trigger reached this agent yet"}));
    };
    let cfg = match ScheduleConfig::load(&EnvVars(&agent.env), &name) {
        Ok(c) => c,
        Err(e) => return Response::error(e.to_string(), 500),
    };
    let now = store.last_processed_tick().map_err(rust_err)?.unwrap_or_else(adapters::now_ms);
    let r2 = R2::from_env(&agent.env)?;
    let (file, file_error) = read_cron(&r2, &cfg).await.map_err(rust_err)?;
    let last_slots = store.last_job_slots().map_err(rust_err)?;
    let last_of = |n: &str| last_slots.iter().find(|(j, _)| j == n).map(|(_, s)| *s);
    let jobs: Vec<Value> = file
        .jobs
        .iter()
        .map(|j| {
            json!({"name": j.name, "cron": j.cron, "timezone": j.timezone, "message": j.message,
                   "nextRun": j.next_slot_after(now), "lastSlot": last_of(&j.name)})
        })
        .collect();
    let mut errors: Vec<String> = file.errors.iter().map(|e| e.to_string()).collect();
    if let Some(e) = file_error {
        errors.insert(0, e);
    }
    let heartbeat_last: Value = store
        .get("heartbeat_last")
        .map_err(rust_err)?
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or(Value::Null);
    let (hb_settings, next_hb) = match &cfg.heartbeat {
        Ok(c) => (
            json!({"intervalMinutes": c.interval_minutes(), "activeHours": c.active_hours().map(|a| a.to_string()),
                   "timezone": cfg.timezone, "enabled": cfg.heartbeat_enabled,
                   "runProse": cfg.prose == durable::scheduled::ProseRule::Run, "template": cfg.overlay.template}),
            if cfg.heartbeat_enabled { next_heartbeat(now, c) } else { None },
        ),
        Err(e) => (json!({"error": e, "enabled": false}), None),
    };
    // Tokens: one ledger row per heartbeat/job run, recorded here when the
    // run finished after the last tick (a Session that cannot be asked now
    // is asked again next time).
    let now_ms = adapters::now_ms();
    ledger::sync(store, &DoQueue(&agent.env), &cfg.agent, now_ms, &adapters::log).await.map_err(rust_err)?;
    let tokens = ledger::report(store).map_err(rust_err)?;
    let pending: Vec<String> = store.pending().map_err(rust_err)?.into_iter().map(|c| c.slot_id).collect();
    Response::from_json(&json!({
        "agent": name,
        "lastTick": store.last_tick().map_err(rust_err)?,
        "pendingTick": store.pending_tick().map_err(rust_err)?,
        "lastProcessedTick": store.last_processed_tick().map_err(rust_err)?,
        "lastTickR2Ops": store.get_i64("last_tick_r2_ops").map_err(rust_err)?,
        "heartbeat": {
            "settings": hb_settings,
            "last": heartbeat_last,
            "lastRunTick": store.get_i64("heartbeat_last_run").map_err(rust_err)?,
            "lastSlot": store.last_heartbeat_slot().map_err(rust_err)?,
            "nextSlot": next_hb,
        },
        "jobs": jobs,
        "errors": errors,
        "warnings": cfg.warnings,
        "pendingRuns": pending,
        "failedRuns": store.failed().map_err(rust_err)?,
        "tokens": tokens,
    }))
}

/// The Worker's `scheduled` handler: tells each configured agent's object
/// that time passed. Quick: a DO fetch per agent, no LLM.
pub async fn fan_out(env: &Env, scheduled_time: i64) {
    let agents = durable::settings::agent_ids(&EnvVars(env));
    let calls = agents.iter().map(|a| async move {
        let r = async {
            let stub = env.durable_object("AGENT")?.id_from_name(a)?.get_stub()?;
            let body = json!({"agent": a, "scheduledTime": scheduled_time}).to_string();
            let mut init = worker::RequestInit::new();
            init.with_method(Method::Post).with_body(Some(wasm_bindgen::JsValue::from_str(&body)));
            let resp = stub.fetch_with_request(Request::new_with_init("https://agent/schedule/tick", &init)?).await?;
            if resp.status_code() != 200 {
                return Err(rust_err(format!("agent object answered {}", resp.status_code())));
            }
            Ok::<_, worker::Error>(())
        }
        .await;
        if let Err(e) = r {
            adapters::log(LogLevel::Error, &format!("tick for agent {a} failed: {e}"));
        }
    });
    futures::future::join_all(calls).await;
}

/// `GET /api/agents/{id}/schedule`: jobs, next runs, errors, last heartbeat, tokens.
pub async fn admin_status(env: &Env, agent: &str) -> Result<Response> {
    if !durable::settings::agent_ids(&EnvVars(env)).iter().any(|a| a == agent) {
        return Response::error(format!("unknown agent {agent:?}"), 404);
    }
    let stub = env.durable_object("AGENT")?.id_from_name(agent)?.get_stub()?;
    stub.fetch_with_str("https://agent/schedule/status").await
}
