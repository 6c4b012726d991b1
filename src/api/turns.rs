//! `POST /api/agents/{id}/generate` and `/stream`: a message for a thread.
//!
//! The Worker checks and translates the request (`durable::api`), then hands
//! it to the thread's Session object, which queues it like any message. The
//! alarm runs the turn; the request only waits on the object's answer: for
//! `/stream` the object's response body is the event stream, passed through
//! untouched (no per-event work here); for `/generate`, its JSON once the
//! turn is done. If the object is reset while a `/generate` waits (a deploy,
//! an eviction), the Worker asks again with the same idempotency key and so
//! joins the same turn, which the alarm resumes: nothing is asked twice.

use super::{api_error, json_error};
use crate::access;
use crate::adapters::{self, EnvVars};
use crate::http::read_body_limited;
use durable::api::{idempotency_key, new_thread_id, parse_ask, thread_session, turn_request, MAX_BODY_BYTES};
use durable::ports::LogLevel;
use durable::settings::api::Caller;
use worker::{Env, Request, Response, Result};

/// Attempts at reaching the Session object for a `/generate`.
const GENERATE_ATTEMPTS: u32 = 3;

pub async fn turn(mut req: Request, env: &Env, agent: &str, caller: &Caller, stream: bool) -> Result<Response> {
    let vars = EnvVars::of(env);
    let cfg = match access::config_after_auth(&vars, agent, true) {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    let body = match read_body_limited(&mut req, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let ask = match parse_ask(&body) {
        Ok(a) => a,
        Err(e) => return api_error(e),
    };
    let header = |name: &str| req.headers().get(name).ok().flatten();
    let idem = match idempotency_key(header("idempotency-key").as_deref(), adapters::new_uuid) {
        Ok(k) => k,
        Err(e) => return api_error(e),
    };
    let thread = ask.thread.clone().unwrap_or_else(|| new_thread_id(&adapters::new_uuid()));
    let key = match thread_session(&cfg.agent, caller, &thread) {
        Ok(k) => k,
        Err(e) => return api_error(e),
    };
    let turn =
        turn_request(key.clone(), caller, &thread, &ask, &idem, stream, header("last-event-id"), adapters::now_ms());
    let attempts = if stream { 1 } else { GENERATE_ATTEMPTS };
    let mut last = String::new();
    for attempt in 1..=attempts {
        match crate::objects::open(env, &turn).await {
            // The event stream, passed through as the object writes it.
            Ok(resp) if stream => return Ok(Response::from(resp)),
            // A small JSON answer: read whole and sent with its length (a
            // passed-through body reaches the client as a second write).
            Ok(resp) => return whole(&resp).await,
            Err(e) => {
                adapters::log(LogLevel::Warn, &format!("api turn for {key}: attempt {attempt} failed: {e}"));
                last = e.to_string();
            }
        }
    }
    json_error(
        503,
        &format!("the thread's session could not be reached ({last}); ask again with the same Idempotency-Key"),
    )
}

/// A Session object's JSON answer as a response of known length.
async fn whole(resp: &worker::worker_sys::web_sys::Response) -> Result<Response> {
    let body = crate::js::body_bytes(resp).await?;
    let headers = worker::Headers::new();
    for (name, value) in crate::js::headers(resp) {
        if matches!(name.as_str(), "content-type" | "x-thread-id" | "idempotency-key") {
            headers.set(&name, &value)?;
        }
    }
    Ok(Response::from_bytes(body)?.with_status(resp.status()).with_headers(headers))
}
