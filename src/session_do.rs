//! The `Session` Durable Object: one per session key. A thin wrapper: it
//! queues what the Worker hands it and lets its alarm drain the queue through
//! [`durable::session`].

use crate::adapters::{self, DoSql, EnvVars, R2};
use crate::platform::{Channels, DoPlatform};
use crate::telegram;
use durable::inbound::ADMIN_CHANNEL;
use durable::inbound::{Inbound, SessionKey};
use durable::media::MediaCache;
use durable::ports::LogLevel;
use durable::session::{drain, SessionDeps, SessionStore};
use durable::settings::AgentConfig;
use durable::workspace::WorkspaceCache;
use serde::Deserialize;
use serde_json::json;
use std::cell::{Cell, RefCell};
use wasm_bindgen::JsValue;
use worker::{durable_object, DurableObject, Env, Method, Request, RequestInit, Response, Result, State};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnqueueBody {
    session_key: String,
    inbound: Inbound,
    /// Heartbeat/job options (`ifIdle`, `fresh`), see `durable::scheduled`.
    #[serde(default)]
    if_idle: bool,
    #[serde(default)]
    fresh: bool,
}

/// Hands a message to its session's object. `Ok(false)`: a repeat, already queued.
pub async fn enqueue(env: &Env, key: &SessionKey, inbound: &Inbound) -> Result<bool> {
    let v = enqueue_with(env, key, inbound, Default::default()).await?;
    Ok(v["queued"].as_bool().unwrap_or(false))
}

/// [`enqueue`] with options; answers the object's JSON (`queued`, `busy`).
pub async fn enqueue_with(
    env: &Env,
    key: &SessionKey,
    inbound: &Inbound,
    opts: durable::scheduled::EnqueueOptions,
) -> Result<serde_json::Value> {
    let name = key.render();
    let stub = env.durable_object("SESSION")?.id_from_name(&name)?.get_stub()?;
    let body = json!({"sessionKey": name, "inbound": inbound, "ifIdle": opts.if_idle, "fresh": opts.fresh}).to_string();
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(JsValue::from_str(&body)));
    let mut resp = stub.fetch_with_request(Request::new_with_init("https://session/enqueue", &init)?).await?;
    if resp.status_code() != 200 {
        return Err(worker::Error::RustError(format!(
            "session answered {}: {}",
            resp.status_code(),
            resp.text().await?
        )));
    }
    resp.json().await
}

/// A session object's brief `/status`: counts and usage, not the history
/// (the schedule view reads its usage, Discord `/status` its counts).
pub async fn status(env: &Env, key: &SessionKey) -> Result<serde_json::Value> {
    let stub = env.durable_object("SESSION")?.id_from_name(&key.render())?.get_stub()?;
    let mut resp = stub.fetch_with_str(BRIEF_STATUS_URL).await?;
    if resp.status_code() != 200 {
        return Err(worker::Error::RustError(format!(
            "session answered {}: {}",
            resp.status_code(),
            resp.text().await?
        )));
    }
    let mut status: serde_json::Value = resp.json().await?;
    // A session that never had a message has not stored its key yet.
    if status["sessionKey"].is_null() {
        status["sessionKey"] = serde_json::Value::String(key.render());
    }
    Ok(status)
}

/// `GET /status` without the messages.
pub const BRIEF_STATUS_URL: &str = "https://session/status?brief=1";

#[durable_object]
pub struct Session {
    state: State,
    env: Env,
    workspace_cache: RefCell<WorkspaceCache>,
    /// R2 operations of the last workspace load (None while one runs).
    workspace_load_ops: Cell<Option<u32>>,
    media_cache: RefCell<MediaCache>,
    schema_ready: Cell<bool>,
}

impl Session {
    fn sql(&self) -> DoSql {
        DoSql::new(&self.state)
    }

    fn ready_store<'a>(&self, sql: &'a DoSql) -> Result<SessionStore<'a, DoSql>> {
        let store = SessionStore::new(sql);
        if !self.schema_ready.get() {
            store.init().map_err(|e| worker::Error::RustError(e.to_string()))?;
            self.schema_ready.set(true);
        }
        Ok(store)
    }

    async fn handle_enqueue(&self, mut req: Request) -> Result<Response> {
        let body: EnqueueBody = match req.json().await {
            Ok(b) => b,
            Err(e) => return Response::error(format!("bad enqueue body: {e}"), 400),
        };
        if SessionKey::parse(&body.session_key).is_none() {
            return Response::error("bad session key", 400);
        }
        let sql = self.sql();
        let store = self.ready_store(&sql)?;
        let err = |e: durable::ports::StorageError| worker::Error::RustError(e.to_string());
        if store.meta("session_key").map_err(err)?.is_none() {
            store.set_meta("session_key", &body.session_key).map_err(err)?;
        }
        if body.if_idle || body.fresh {
            // Heartbeat/job runs: skip when mid-turn, start from an empty history.
            let open = store.open_count().map_err(err)?;
            if body.if_idle && open > 0 {
                return Response::from_json(&json!({"queued": false, "busy": true}));
            }
            if body.fresh && open == 0 {
                if let Some(id) = store.meta("session_id").map_err(err)? {
                    store.clear_history(&id).map_err(err)?;
                }
            }
        }
        let payload = serde_json::to_string(&body.inbound)?;
        let queued = store.enqueue(&body.inbound.dedupe_key, &payload, adapters::now_ms()).map_err(err)?;
        if queued {
            // The alarm runs the turn; a running alarm picks this up in its loop.
            self.state.storage().set_alarm(0i64).await?;
        }
        Response::from_json(&json!({"queued": queued}))
    }

    /// An admin reset goes through the queue like a `/reset` command, so it
    /// runs after any message already waiting and never during a turn.
    async fn admin_reset(&self) -> Result<Response> {
        let sql = self.sql();
        let store = self.ready_store(&sql)?;
        let err = |e: durable::ports::StorageError| worker::Error::RustError(e.to_string());
        let Some(key) = store.meta("session_key").map_err(err)? else {
            return Response::error("no such session", 404);
        };
        let inbound = Inbound {
            dedupe_key: format!("admin:reset:{}", adapters::new_uuid()),
            channel: ADMIN_CHANNEL.into(),
            kind: durable::inbound::ChatKind::Direct,
            chat_id: String::new(),
            sender_id: "admin".into(),
            sender_name: "admin".into(),
            text: "/reset".into(),
            addressed: true,
            thread_id: None,
            // No chat: the outcome is logged (and visible in the session's status).
            reply_target: durable::inbound::ReplyTarget { channel: ADMIN_CHANNEL.into(), ..Default::default() },
            received_at: adapters::now_ms(),
            media: vec![],
        };
        store.enqueue(&inbound.dedupe_key, &serde_json::to_string(&inbound)?, adapters::now_ms()).map_err(err)?;
        self.state.storage().set_alarm(0i64).await?;
        Ok(Response::from_json(&json!({"queued": true, "sessionKey": key}))?.with_status(202))
    }

    /// Tells the Agent object this session exists (for listing); best effort.
    async fn touch_registry(&self, key: &SessionKey) {
        let sql = self.sql();
        let store = SessionStore::new(&sql);
        let body = json!({
            "sessionKey": key.render(),
            "sessionId": store.meta("session_id").ok().flatten(),
            "updatedAt": store.meta("updated_at").ok().flatten().and_then(|v| v.parse::<i64>().ok()),
        });
        if let Err(e) = crate::http::call_object(
            &self.env,
            "AGENT",
            key.agent().as_str(),
            Method::Post,
            "/sessions/touch",
            Some(&body),
        )
        .await
        {
            adapters::log(LogLevel::Warn, &format!("session registry not updated: {e}"));
        }
    }

    /// The session's state; `brief` leaves out the messages (counts only).
    fn status(&self, brief: bool) -> Result<Response> {
        let sql = self.sql();
        let store = self.ready_store(&sql)?;
        let err = |e: durable::ports::StorageError| worker::Error::RustError(e.to_string());
        let session_id = store.meta("session_id").map_err(err)?;
        let message_count = match &session_id {
            Some(id) => store.message_count(id).map_err(err)?,
            None => 0,
        };
        let usage = match &session_id {
            Some(id) => store.usage_totals(id).map_err(err)?,
            None => Default::default(),
        };
        let mut body = json!({
            "sessionKey": store.meta("session_key").map_err(err)?,
            "sessionId": session_id,
            "open": store.open_count().map_err(err)?,
            "messageCount": message_count,
            "compactions": match &session_id {
                Some(id) => store.compaction_count(id).map_err(err)?,
                None => 0,
            },
            "usage": usage,
            // Null while a turn loads the workspace (the scheduler's usage
            // ledger asks during runs) and before the first load.
            "workspaceR2Ops": self.workspace_load_ops.get(),
            "media": media_status(&self.media_cache.borrow()),
            "usageAll": store.usage_totals_all().map_err(err)?,
        });
        if !brief {
            body["messages"] = match &session_id {
                Some(id) => json!(store.history(id).map_err(err)?),
                None => json!([]),
            };
        }
        Response::from_json(&body)
    }
}

impl DurableObject for Session {
    fn new(state: State, env: Env) -> Self {
        Session {
            state,
            env,
            workspace_cache: RefCell::default(),
            workspace_load_ops: Cell::default(),
            media_cache: RefCell::default(),
            schema_ready: Cell::new(false),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/enqueue") => self.handle_enqueue(req).await,
            (Method::Get, "/status") => {
                let brief = req.url().map(|u| u.query_pairs().any(|(k, _)| k == "brief")).unwrap_or(false);
                self.status(brief)
            }
            (Method::Post, "/reset") => self.admin_reset().await,
            _ => Response::error("not found", 404),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let sql = self.sql();
        let store = self.ready_store(&sql)?;
        let Some(raw_key) = store.meta("session_key").ok().flatten() else {
            return Response::ok("empty session");
        };
        let Some(key) = SessionKey::parse(&raw_key) else {
            adapters::log(LogLevel::Error, &format!("session has a bad key {raw_key:?}"));
            return Response::ok("bad key");
        };
        let config = match AgentConfig::load(&EnvVars(&self.env), key.agent().as_str()) {
            Ok(c) => c,
            Err(e) => {
                // Messages stay queued; the next message or a fixed config drains them.
                adapters::log(LogLevel::Error, &format!("cannot run turns for {raw_key}: {e}"));
                return Response::ok("misconfigured");
            }
        };
        let platform = DoPlatform {
            store: R2::from_env(&self.env)?,
            sql,
            channels: Channels {
                telegram: telegram::api_for(&config),
                notify: crate::platform::Notify { owner: config.owners.first().cloned(), sql: self.sql() },
                discord: Some(crate::discord::api_for(&EnvVars(&self.env), &config)),
            },
            memory: crate::platform::AgentMemory { env: self.env.clone(), agent: key.agent().as_str().to_owned() },
        };
        let deps = SessionDeps {
            config: &config,
            key: &key,
            workspace_cache: &self.workspace_cache,
            workspace_load_ops: &self.workspace_load_ops,
            media_cache: &self.media_cache,
        };
        match drain(&platform, &deps).await {
            Ok(report) => {
                self.touch_registry(&key).await;
                Response::ok(format!("{} turns", report.turns))
            }
            // Storage trouble: fail the alarm so the runtime retries it.
            Err(e) => Err(worker::Error::RustError(format!("drain failed: {e}"))),
        }
    }
}

/// The media cache's counters since this object started (for tests and ops).
fn media_status(c: &MediaCache) -> serde_json::Value {
    json!({"r2Reads": c.stats.r2_reads, "cacheHits": c.stats.hits, "evictions": c.stats.evictions,
           "cachedBytes": c.bytes(), "cachedItems": c.len()})
}
