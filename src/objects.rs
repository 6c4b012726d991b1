//! Calls to Durable Objects. Every call is typed: the request type knows
//! its object, method, path and reply ([`durable::protocol::call::Call`]).
//! [`call`] reads the reply; [`send`] hands back the answer as it came (the
//! admin API's pass-through relays it, a button tap reads its status);
//! [`open`] leaves a stream unread. All send through [`call_raw`].

use durable::inbound::SessionKey;
use durable::protocol::api::{ApiOutcome, ApiTurnRequest, AskSession};
use durable::protocol::call::{Call, CallError, Outgoing};
use durable::protocol::session::{SessionStatus, StatusRequest};
use worker::worker_sys::web_sys;
use worker::Env;

/// Sends `out` to its object (`idFromName`): the object's response.
async fn fetch(env: &Env, out: &Outgoing) -> worker::Result<web_sys::Response> {
    let url = format!("https://object{}", out.target);
    let req = crate::js::request(out.method.as_str(), &url, &[], out.body.as_deref(), None)?;
    crate::js::stub_fetch(env, out.object.binding(), &out.name, &req).await
}

/// Sends `out` to its object. Returns the status and the body.
async fn call_raw(env: &Env, out: &Outgoing) -> worker::Result<(u16, Vec<u8>)> {
    let resp = fetch(env, out).await?;
    let bytes = crate::js::body_bytes(&resp).await?;
    Ok((resp.status(), bytes))
}

/// `call`'s response unread: an event stream the client reads as the
/// object writes it (a turn's `/stream`, the notification feed).
pub async fn open<C: Call>(env: &Env, call: &C) -> worker::Result<web_sys::Response> {
    let out = Outgoing::of(call).map_err(|e| worker::Error::RustError(e.to_string()))?;
    fetch(env, &out).await
}

/// The one typed call: the object's reply, or its refusal (`{"error"}`
/// with its status), or `status: 0` when it was not reached.
pub async fn call<C: Call>(env: &Env, call: &C) -> Result<C::Reply, CallError> {
    let (status, body) = deliver(env, Outgoing::of(call)?).await?;
    CallError::read(status, &body)
}

/// The part of [`call`] that does not depend on the call's type: one state
/// machine, not one per call type (issue 37 item 4).
async fn deliver(env: &Env, out: Outgoing) -> Result<(u16, Vec<u8>), CallError> {
    call_raw(env, &out).await.map_err(|e| CallError::unreachable(format!("{} {}: {e}", out.object.binding(), out.name)))
}

/// `call`'s answer as it came (status and body), for a caller that reads
/// a refusal's status itself (a button tap).
pub async fn send<C: Call>(env: &Env, call: &C) -> worker::Result<(u16, Vec<u8>)> {
    let out = Outgoing::of(call).map_err(|e| worker::Error::RustError(e.to_string()))?;
    call_raw(env, &out).await
}

/// A session's brief status: counts and usage, not the history.
pub async fn status(env: &Env, key: &SessionKey) -> Result<SessionStatus, CallError> {
    let mut status = call(env, &StatusRequest { session_key: key.clone(), brief: true }).await?;
    // A session that never had a message has not stored its key yet.
    status.session_key.get_or_insert_with(|| key.clone());
    Ok(status)
}

/// Attempts at reaching a peer's Session object for a delegated message (a
/// reset object drops the waiting request; asking again joins the turn).
const ASK_ATTEMPTS: u32 = 3;

/// Queues `req` in its Session object and waits for the outcome of its
/// turn, which that object's alarm runs (see `Platform::ask_session`).
pub async fn ask_session(env: &Env, req: &ApiTurnRequest) -> Result<ApiOutcome, CallError> {
    let ask = AskSession(req.clone());
    let mut last = CallError::unreachable("not asked");
    for attempt in 1..=ASK_ATTEMPTS {
        match call(env, &ask).await {
            Ok(outcome) => return Ok(outcome),
            Err(e) if matches!(e.status, 0 | 503) => last = e,
            Err(e) => return Err(e),
        }
        let name = req.session_key.render();
        crate::adapters::log(durable::ports::LogLevel::Warn, &format!("ask {name}: attempt {attempt} failed: {last}"));
    }
    Err(last)
}
