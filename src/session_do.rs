//! The `Session` Durable Object: one per session key. A thin wrapper: its
//! requests and its alarm go to [`SessionHost`], which holds the logic and
//! is tested natively; this file only maps HTTP to the host's typed calls.

use crate::adapters::{self, DoSql, EnvVars};
use crate::platform::DoPlatform;
use durable::inbound::SessionKey;
use durable::ports::{LogLevel, StorageError};
use durable::protocol::agent::{PublishRequest, NOTIFY_PUBLISH_PATH};
use durable::protocol::api::{ApiOutcome, ApiTurnRequest, StopRequest, STOP_PATH, TURN_PATH};
use durable::protocol::session::{
    Admission, EnqueueRequest, PostRequest, SessionTouch, ADMISSION_PATH, ANSWER_PATH, ENQUEUE_PATH, POST_PATH,
    RESET_PATH, STATUS_PATH, WAKE_PATH,
};
use durable::protocol::AGENT_BINDING;
use durable::session::host::{AlarmOutcome, ApiStart, PostError, SessionHost, SessionRuntime};
use durable::session::watch::Attach;
use durable::settings::stream::{StreamConfig, DEFAULT_KEEPALIVE_MS};
use durable::settings::AgentConfig;
use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, State};

/// What the host gets from workerd.
pub struct DoRuntime {
    state: State,
    env: Env,
    sql: DoSql,
    vars: EnvVars,
}

fn storage_err(e: worker::Error) -> StorageError {
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
        let agent = touch.session_key.agent().as_str();
        crate::objects::call::<_, serde_json::Value>(
            &self.env,
            AGENT_BINDING,
            agent,
            Method::Post,
            "/sessions/touch",
            Some(touch),
        )
        .await
        .map(|_| ())
        .map_err(storage_err)
    }
    async fn publish(&self, key: &SessionKey, notices: &[String]) -> std::result::Result<(), StorageError> {
        let req = PublishRequest { session_key: key.clone(), notices: notices.to_vec() };
        let agent = key.agent().as_str();
        crate::objects::call::<_, serde_json::Value>(
            &self.env,
            AGENT_BINDING,
            agent,
            Method::Post,
            NOTIFY_PUBLISH_PATH,
            Some(&req),
        )
        .await
        .map(|_| ())
        .map_err(storage_err)
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

/// Headers every API answer carries: the thread, and the idempotency key a
/// client repeats to join the same turn (also one the Worker made up).
fn api_headers(body: &ApiTurnRequest, content_type: &str) -> Result<worker::Headers> {
    let headers = worker::Headers::new();
    headers.set("content-type", content_type)?;
    headers.set("x-thread-id", &body.thread_id)?;
    headers.set("idempotency-key", durable::api::idempotency_of(&body.inbound.dedupe_key))?;
    Ok(headers)
}

impl Session {
    /// An API message: a stream of its turn's events, or its answer once done.
    /// `as_outcome`: answered with the [`ApiOutcome`] itself (another
    /// session's `delegate` call), not the HTTP API's reply.
    async fn api_turn(&self, body: ApiTurnRequest, as_outcome: bool) -> Result<Response> {
        let outcome = |o: ApiOutcome| -> Result<Response> {
            if as_outcome {
                return Response::from_json(&o);
            }
            let (status, json) = o.http(&body.thread_id);
            Ok(Response::ok(json)?.with_status(status).with_headers(api_headers(&body, "application/json")?))
        };
        let forgotten = || {
            Response::error(
                "this Idempotency-Key was used for a message more than a day ago and its answer is no longer kept: use a new key",
                409,
            )
        };
        if body.stream {
            let (stream, sink) = crate::js::event_stream()?;
            let how = Attach::Stream(Box::new(sink), body.last_event_id.clone());
            return match self.0.api_turn(&body, how).await.map_err(failed)? {
                ApiStart::Forgotten => forgotten(),
                _ => {
                    self.keep_streams_alive(body.session_key.agent().as_str());
                    let headers = api_headers(&body, "text/event-stream; charset=utf-8")?;
                    headers.set("cache-control", "no-cache")?;
                    Ok(Response::from_body(worker::ResponseBody::Stream(stream))?.with_headers(headers))
                }
            };
        }
        match self.0.api_turn(&body, Attach::Wait).await.map_err(failed)? {
            ApiStart::Waiting(rx) => match rx.await {
                Ok(o) => outcome(o),
                Err(_) => Response::error("the turn's watcher went away; ask again with the same Idempotency-Key", 503),
            },
            ApiStart::Answered(o) => outcome(o),
            ApiStart::Forgotten => forgotten(),
            ApiStart::Streaming => Response::error("a waiting request got a stream", 500),
        }
    }
}

impl Session {
    /// While a `/stream` client is attached, a loop sends an SSE comment to
    /// the ones that heard nothing for `STREAM_KEEPALIVE_MS` (one loop per
    /// object; it ends with the last client).
    fn keep_streams_alive(&self, agent: &str) {
        let watch = self.0.watch();
        if !watch.claim_pinger() {
            return;
        }
        // An invalid value is reported by the turn's own settings.
        let every = StreamConfig::load(&self.0.runtime().vars, agent).map_or(DEFAULT_KEEPALIVE_MS, |c| c.keepalive_ms);
        wasm_bindgen_futures::spawn_local(async move {
            loop {
                adapters::sleep(every).await;
                if !watch.ping() {
                    break;
                }
            }
        });
    }
}

fn failed(e: StorageError) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

impl DurableObject for Session {
    fn new(state: State, env: Env) -> Self {
        let sql = DoSql::new(&state);
        let vars = EnvVars::of(&env);
        Session(SessionHost::new(DoRuntime { state, env, sql, vars }))
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match (req.method(), req.path().as_str()) {
            (Method::Post, ENQUEUE_PATH) => {
                let body: EnqueueRequest = match adapters::request_json(&mut req).await {
                    Ok(b) => b,
                    Err(e) => return Response::error(format!("bad enqueue body: {e}"), 400),
                };
                Response::from_json(&self.0.enqueue(&body).await.map_err(failed)?)
            }
            (Method::Post, POST_PATH) => {
                let body: PostRequest = match adapters::request_json(&mut req).await {
                    Ok(b) => b,
                    Err(e) => return Response::error(format!("bad post body: {e}"), 400),
                };
                match self.0.post(&body).await {
                    Ok(reply) => Response::from_json(&reply),
                    Err(PostError::Refused(why)) => Response::error(why, 400),
                    Err(PostError::Storage(e)) => Err(failed(e)),
                }
            }
            (Method::Get, STATUS_PATH) => {
                let brief = crate::http::query(&req, "brief").is_some();
                Response::from_json(&self.0.status(brief).map_err(failed)?)
            }
            (Method::Post, TURN_PATH) => {
                let as_outcome = crate::http::query(&req, "as").as_deref() == Some("outcome");
                let body: ApiTurnRequest = match adapters::request_json(&mut req).await {
                    Ok(b) => b,
                    Err(e) => return Response::error(format!("bad turn body: {e}"), 400),
                };
                self.api_turn(body, as_outcome).await
            }
            (Method::Post, STOP_PATH) => {
                let body: StopRequest = match adapters::request_json(&mut req).await {
                    Ok(b) => b,
                    Err(e) => return Response::error(format!("bad stop body: {e}"), 400),
                };
                Response::from_json(&self.0.stop(&body))
            }
            (Method::Post, ADMISSION_PATH) => {
                let body: Admission = match adapters::request_json(&mut req).await {
                    Ok(b) => b,
                    Err(e) => return Response::error(format!("bad admission body: {e}"), 400),
                };
                self.0.admission(body.open).map_err(failed)?;
                Response::from_json(&serde_json::json!({"ok": true}))
            }
            (Method::Post, WAKE_PATH) => {
                self.0.wake().await.map_err(failed)?;
                Response::from_json(&serde_json::json!({"ok": true}))
            }
            (Method::Get, ANSWER_PATH) => {
                let request = crate::http::query(&req, "request");
                match request {
                    Some(r) => Response::from_json(&self.0.answer(&r).map_err(failed)?),
                    None => Response::error("answer needs ?request=", 400),
                }
            }
            (Method::Post, RESET_PATH) => match self.0.admin_reset().await.map_err(failed)? {
                Some(reply) => Ok(Response::from_json(&reply)?.with_status(202)),
                None => Response::error("no such session", 404),
            },
            _ => Response::error("not found", 404),
        }
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
