//! The `Agent` Durable Object: one per agent id (`AGENT.idFromName(agentId)`).
//! A thin wrapper: its requests and its alarm go to [`AgentHost`], which
//! holds the logic (memory, session registry, pins, schedule) and is tested
//! natively; this file only maps HTTP to the host's typed calls.
//!
//! Requests name the agent where it matters (`?agent=`, or in the body): an
//! object does not know its own name. Routes (reached only through the
//! `AGENT` binding) are the paths of [`durable::protocol::agent`], plus the
//! memory's `/memory/call?agent=` (what Session objects send) and, for the
//! admin API and the bench, `/memory/op|search|get` and `GET /memory/stats`.

use crate::adapters::{self, DoSql, EnvVars, FetchHttp, R2};
use crate::objects;
use durable::agent::approvals::ApprovalAnswer;
use durable::agent::host::{AgentHost, AgentRuntime, PinsAnswer, PinsCall, Refusal};
use durable::agent::people::PeopleAnswer;
use durable::apart::apart;
use durable::inbound::{Inbound, SessionKey};
use durable::ports::{LogLevel, StorageError};
use durable::protocol::agent::*;
use durable::protocol::approvals::{ApprovalCall, APPROVALS_PATH};
use durable::protocol::dreams::{Tap, DREAMS_STATUS_PATH, DREAMS_TAP_PATH};
use durable::protocol::mcp::{McpCatalog, McpToolsRequest, MCP_STATUS_PATH, MCP_TOOLS_PATH};
use durable::protocol::people::{PeopleCall, PEOPLE_PATH};
use durable::protocol::session::{EnqueueRequest, SessionTouch};
use durable::protocol::tasks::{TaskReply, TaskRequest, TASKS_PATH};
use durable::protocol::usage::{MeterRequest, ReportRequest, METER_PATH, REPORT_PATH};
use durable::protocol::workspace::{SessionStartRequest, SESSION_START_PATH};
use durable::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
use serde_json::json;
use std::rc::Rc;
use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, State};

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
        let reply = objects::enqueue_request(&self.0, &req).await.map_err(storage_err)?;
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
        objects::wake(&self.0, key).await.map_err(storage_err)
    }

    async fn admit(&self, key: &SessionKey, open: bool) -> std::result::Result<(), StorageError> {
        objects::admission(&self.0, key, open).await.map_err(storage_err)
    }

    async fn post(
        &self,
        req: &durable::protocol::session::PostRequest,
    ) -> std::result::Result<durable::protocol::session::PostReply, StorageError> {
        objects::post(&self.0, req).await.map_err(storage_err)
    }

    async fn stop(
        &self,
        key: &SessionKey,
        req: &durable::protocol::api::StopRequest,
    ) -> std::result::Result<(), StorageError> {
        objects::stop_session(&self.0, key, req).await.map_err(storage_err)
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

fn failed(e: StorageError) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

fn json(status: u16, body: &serde_json::Value) -> Result<Response> {
    Ok(Response::from_json(body)?.with_status(status))
}

fn refused(r: Refusal) -> Result<Response> {
    json(r.status, &json!({"ok": false, "error": r.message}))
}

/// The `?name=` of a request.
fn query(req: &Request, name: &str) -> Option<String> {
    crate::http::query(req, name)
}

impl DurableObject for Agent {
    fn new(state: State, env: Env) -> Self {
        let sql = Rc::new(DoSql::new(&state));
        let runtime = DoRuntime {
            sql,
            vars: EnvVars::of(&env),
            queue: DoQueue(env.clone()),
            state,
            env: env.clone(),
            http: FetchHttp,
        };
        Agent(AgentHost::new(runtime))
    }

    /// Each route runs as a function of its own ([`apart`]): a request
    /// compiles only its route's code.
    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let path = req.path();
        let host = &self.0;
        match (req.method(), path.as_str()) {
            (_, "/health") => json(200, &json!({"ok": true})),
            (Method::Post, "/memory/call") => {
                apart(async move {
                    let agent = query(&req, "agent");
                    let (status, reply) = host.memory_call(agent.as_deref(), &req.bytes().await?);
                    json(status, &reply)
                })
                .await
            }
            (Method::Post, "/memory/op" | "/memory/search" | "/memory/get") => {
                let path = path.clone();
                apart(async move {
                    let agent = query(&req, "agent");
                    let name = path.trim_start_matches("/memory/").to_owned();
                    let (status, reply) = host.memory_named(agent.as_deref(), &name, &req.bytes().await?);
                    json(status, &reply)
                })
                .await
            }
            (Method::Get, "/memory/stats") => {
                let (status, reply) =
                    host.memory_stats(query(&req, "agent").as_deref(), query(&req, "store").as_deref());
                json(status, &reply)
            }
            (Method::Post, TOUCH_PATH) => {
                apart(async move {
                    let touch: SessionTouch = match adapters::request_json(&mut req).await {
                        Ok(t) => t,
                        Err(e) => return Response::error(format!("bad touch: {e}"), 400),
                    };
                    host.touch(&touch).map_err(failed)?;
                    json(200, &json!({"ok": true}))
                })
                .await
            }
            (Method::Post, SESSION_START_PATH) => {
                apart(async move {
                    let body: SessionStartRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad session start: {e}") }),
                    };
                    match host.session_start(&body).await {
                        Ok(reply) => Response::from_json(&reply),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Post, PEOPLE_PATH) => {
                apart(async move {
                    let call: PeopleCall = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad people call: {e}") }),
                    };
                    match host.people(&call).await {
                        Ok(PeopleAnswer::Door(reply)) => Response::from_json(&reply),
                        Ok(PeopleAnswer::Reply(reply)) => Response::from_json(&reply),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Post, APPROVALS_PATH) => {
                apart(async move {
                    let call: ApprovalCall = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad approvals call: {e}") }),
                    };
                    match host.approvals(&call).await {
                        Ok(ApprovalAnswer::State(s)) => Response::from_json(&s),
                        Ok(ApprovalAnswer::List(rows)) => Response::from_json(&rows),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Get, SESSIONS_PATH) => Response::from_json(&host.sessions().map_err(failed)?),
            (Method::Get, PINS_GET_PATH | PINS_STATUS_PATH) => {
                let path = path.clone();
                apart(async move {
                    let call = if path == PINS_GET_PATH { PinsCall::Get } else { PinsCall::Status };
                    let req = PinsRequest { agent: query(&req, "agent").unwrap_or_default(), ..Default::default() };
                    pins_response(host.pins(call, &req).await)
                })
                .await
            }
            (Method::Post, PINS_INIT_PATH | PINS_ACCEPT_PATH) => {
                let path = path.clone();
                apart(async move {
                    let call = if path == PINS_INIT_PATH { PinsCall::Init } else { PinsCall::Accept };
                    let body: PinsRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad body: {e}") }),
                    };
                    pins_response(host.pins(call, &body).await)
                })
                .await
            }
            (Method::Post, TICK_PATH) => {
                apart(async move {
                    let body: TickRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return Response::error(format!("bad tick body: {e}"), 400),
                    };
                    Response::from_json(&host.tick(&body).await.map_err(failed)?)
                })
                .await
            }
            (Method::Post, MCP_TOOLS_PATH) => {
                apart(async move {
                    let body: McpToolsRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad body: {e}") }),
                    };
                    match host.mcp_catalog(&body, false).await {
                        Ok(c) => Response::from_json(&c),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Get, MCP_STATUS_PATH) => {
                apart(async move {
                    let body = McpToolsRequest { agent: query(&req, "agent").unwrap_or_default() };
                    match host.mcp_catalog(&body, true).await {
                        Ok(c) => Response::from_json(&c),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Post, DREAMS_TAP_PATH) => {
                apart(async move {
                    let tap: Tap = match adapters::request_json(&mut req).await {
                        Ok(t) => t,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad tap: {e}") }),
                    };
                    match host.tap(&tap).await {
                        Ok(outcome) => Response::from_json(&outcome),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Get, DREAMS_STATUS_PATH) => match host.dream_status(&query(&req, "agent").unwrap_or_default()) {
                Ok(v) => Response::from_json(&v),
                Err(r) => refused(r),
            },
            (Method::Post, METER_PATH) => {
                apart(async move {
                    let body: MeterRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad meter body: {e}") }),
                    };
                    match host.meter(&body) {
                        Ok(reply) => Response::from_json(&reply),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Post, REPORT_PATH) => {
                apart(async move {
                    let body: ReportRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad report body: {e}") }),
                    };
                    match host.usage_report(&body.agent, &body.period, body.thread.as_deref()) {
                        Ok(report) => Response::from_json(&report),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Post, NOTIFY_PUBLISH_PATH) => {
                apart(async move {
                    let body: PublishRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return Response::error(format!("bad publish body: {e}"), 400),
                    };
                    json(200, &json!({"added": host.publish(&body).map_err(failed)?}))
                })
                .await
            }
            (Method::Get, NOTIFY_STREAM_PATH) => self.feed_stream(query(&req, "after").as_deref()),
            (Method::Post, TASKS_PATH) => {
                apart(async move {
                    let body: TaskRequest = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad tasks body: {e}") }),
                    };
                    match host.tasks(&body).await {
                        Ok(reply) => Response::from_json(&reply),
                        Err(r) => refused(r),
                    }
                })
                .await
            }
            (Method::Post, THREADS_CREATE_PATH) => {
                apart(async move {
                    let body: ThreadCreate = match adapters::request_json(&mut req).await {
                        Ok(b) => b,
                        Err(e) => return Response::error(format!("bad thread body: {e}"), 400),
                    };
                    match host.create_thread(&body).map_err(failed)? {
                        Some(row) => Ok(Response::from_json(&row)?.with_status(201)),
                        None => Response::error("the thread exists", 409),
                    }
                })
                .await
            }
            (Method::Get, THREADS_LIST_PATH) => Response::from_json(&host.threads().map_err(failed)?),
            (Method::Post, durable::protocol::reminders::REMINDERS_PATH) => {
                apart(async move {
                    let call: durable::protocol::reminders::ReminderCall = match adapters::request_json(&mut req).await
                    {
                        Ok(c) => c,
                        Err(e) => return refused(Refusal { status: 400, message: format!("bad reminders call: {e}") }),
                    };
                    Response::from_json(&host.reminders(&call).await.map_err(failed)?)
                })
                .await
            }
            (Method::Get, SCHEDULE_STATUS_PATH) => match host.schedule_status().await {
                Ok(Some(status)) => Response::from_json(&status),
                Ok(None) => json(200, &json!({"ticks": 0, "note": "no cron trigger reached this agent yet"})),
                Err(r) => Response::error(r.message, r.status),
            },
            _ => Response::error("not found", 404),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        match self.0.alarm().await {
            Ok(ran) => Response::ok(format!("{ran:?}")),
            // Fail the alarm: the runtime retries it, claims keep runs exactly once.
            Err(e) => Err(worker::Error::RustError(e.to_string())),
        }
    }
}

/// How often an idle notification stream gets a keep-alive comment.
const FEED_PING_MS: u64 = 25_000;

impl Agent {
    /// `GET /notifications/stream?after=`: the feed as server-sent events,
    /// kept alive while anyone listens.
    fn feed_stream(&self, after: Option<&str>) -> Result<Response> {
        let (stream, sink) = crate::js::event_stream()?;
        let after = durable::agent::notifications::parse_after(after);
        self.0.attach_feed(Box::new(sink), after).map_err(failed)?;
        let feed = self.0.feed();
        if feed.claim_pinger() {
            wasm_bindgen_futures::spawn_local(async move {
                loop {
                    adapters::sleep(FEED_PING_MS).await;
                    if !feed.ping() {
                        break;
                    }
                }
            });
        }
        let headers = worker::Headers::new();
        headers.set("content-type", "text/event-stream; charset=utf-8")?;
        headers.set("cache-control", "no-cache")?;
        Ok(Response::from_body(worker::ResponseBody::Stream(stream))?.with_headers(headers))
    }
}

fn pins_response(answer: std::result::Result<PinsAnswer, Refusal>) -> Result<Response> {
    match answer {
        Ok(PinsAnswer::Pins(p)) => Response::from_json(&p),
        Ok(PinsAnswer::Status(s)) => Response::from_json(&s),
        Ok(PinsAnswer::Accepted(a)) => Response::from_json(&a),
        Err(r) => refused(r),
    }
}

/// The Worker's `scheduled` handler: tells each configured agent's object
/// that time passed. Quick: a call per agent, no LLM.
pub async fn fan_out(env: &Env, scheduled_time: i64) {
    let agents = durable::settings::agent_ids(&EnvVars::of(env));
    let calls = agents.iter().map(|a| async move {
        let req = TickRequest { agent: a.clone(), scheduled_time };
        let r: Result<TickReply> =
            objects::call(env, durable::protocol::AGENT_BINDING, a, Method::Post, TICK_PATH, Some(&req)).await;
        if let Err(e) = r {
            adapters::log(LogLevel::Error, &format!("tick for agent {a} failed: {e}"));
        }
    });
    futures::future::join_all(calls).await;
    crate::gateway_ensure::ensure_all(env).await;
}

/// The pins of `agent`, from its Agent object (what a Session asks once per
/// turn when the agent has a template).
pub async fn pins_of(env: &Env, agent: &str) -> std::result::Result<durable::protocol::pins::Pins, StorageError> {
    let path = format!("{PINS_GET_PATH}?agent={agent}");
    objects::call::<(), _>(env, durable::protocol::AGENT_BINDING, agent, Method::Get, &path, None)
        .await
        .map_err(|e| StorageError(format!("pins: {e}")))
}

/// The agent's MCP servers and tools from its Agent object (what a Session
/// asks when a session starts; the object lists servers whose cache is cold).
pub async fn mcp_catalog_of(env: &Env, agent: &str) -> std::result::Result<McpCatalog, StorageError> {
    let req = McpToolsRequest { agent: agent.to_owned() };
    objects::call(env, durable::protocol::AGENT_BINDING, agent, Method::Post, MCP_TOOLS_PATH, Some(&req))
        .await
        .map_err(|e| StorageError(format!("mcp catalog: {e}")))
}

/// A session's start from its Agent object: workspace, pins, MCP servers.
pub async fn session_start(
    env: &Env,
    req: &SessionStartRequest,
) -> std::result::Result<durable::protocol::workspace::SessionStartReply, StorageError> {
    let agent = req.session_key.agent().as_str();
    objects::call(env, durable::protocol::AGENT_BINDING, agent, Method::Post, SESSION_START_PATH, Some(req))
        .await
        .map_err(|e| StorageError(format!("session start: {e}")))
}

/// A call to `agent`'s reminders (what a Session's `remind` tool and
/// `/reminders` send, and the admin API).
pub async fn reminders(
    env: &Env,
    agent: &str,
    call: &durable::protocol::reminders::ReminderCall,
) -> std::result::Result<durable::protocol::reminders::ReminderReply, StorageError> {
    let path = durable::protocol::reminders::REMINDERS_PATH;
    objects::call(env, durable::protocol::AGENT_BINDING, agent, Method::Post, path, Some(call))
        .await
        .map_err(|e| StorageError(format!("reminders: {e}")))
}

/// A call to `agent`'s usage ledger (what a Session sends, and Discord's `/usage`).
pub async fn meter(
    env: &Env,
    req: &MeterRequest,
) -> std::result::Result<durable::protocol::usage::MeterReply, StorageError> {
    objects::call(env, durable::protocol::AGENT_BINDING, &req.agent, Method::Post, METER_PATH, Some(req))
        .await
        .map_err(|e| StorageError(format!("usage ledger: {e}")))
}

/// A call about `req.agent`'s background tasks (what a Session sends, and
/// the admin API's task routes).
pub async fn tasks(env: &Env, req: &TaskRequest) -> std::result::Result<TaskReply, StorageError> {
    objects::call(env, durable::protocol::AGENT_BINDING, &req.agent, Method::Post, TASKS_PATH, Some(req))
        .await
        .map_err(|e| StorageError(format!("tasks: {e}")))
}
