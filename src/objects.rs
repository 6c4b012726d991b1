//! Calls to Durable Objects: one stub-call helper, and typed clients for the
//! Session objects' calls ([`durable::protocol::session`]). Every caller (the
//! webhooks, the admin API, the scheduler) goes through here, so a request
//! and its reply are the shared protocol structs, never `v["field"]`.

use durable::inbound::{Inbound, SessionKey};
use durable::protocol::api::{ApiOutcome, ApiTurnRequest, StopRequest, STOP_PATH, TURN_PATH};
use durable::protocol::session::{
    EnqueueReply, EnqueueRequest, PostReply, PostRequest, SessionStatus, ADMISSION_PATH, BRIEF_STATUS_PATH,
    ENQUEUE_PATH, POST_PATH, WAKE_PATH,
};
use durable::protocol::SESSION_BINDING;
use serde::de::DeserializeOwned;
use serde::Serialize;
use worker::{Env, Method};

/// Calls the object `name` of `binding` (`idFromName`) with `method path` and
/// an optional JSON body. Returns the status and the body as text.
pub async fn call_raw(
    env: &Env,
    binding: &str,
    name: &str,
    method: Method,
    path: &str,
    body: Option<String>,
) -> worker::Result<(u16, String)> {
    let url = format!("https://object{path}");
    let req = crate::js::request(method.as_ref(), &url, &[], body.as_deref().map(str::as_bytes), None)?;
    let resp = crate::js::stub_fetch(env, binding, name, &req).await?;
    let bytes = crate::js::body_bytes(&resp).await?;
    Ok((resp.status(), String::from_utf8(bytes).map_err(|e| worker::Error::RustError(e.to_string()))?))
}

/// [`call_raw`] with typed request and reply: a non-2xx answer or a reply
/// that does not decode is an error naming the object and what it said.
pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
    env: &Env,
    binding: &str,
    name: &str,
    method: Method,
    path: &str,
    body: Option<&Req>,
) -> worker::Result<Resp> {
    let body = body.map(serde_json::to_string).transpose()?;
    let (status, text) = call_raw(env, binding, name, method, path, body).await?;
    if !(200..300).contains(&status) {
        return Err(worker::Error::RustError(format!("{binding} {name} answered {status}: {text}")));
    }
    hearth_json::from_slice(text.as_bytes())
        .map_err(|e| worker::Error::RustError(format!("{binding} {name}: unreadable reply ({e}): {text}")))
}

/// Queues a message in its session's object. `Ok(false)`: a repeat, already queued.
pub async fn enqueue(env: &Env, key: &SessionKey, inbound: &Inbound) -> worker::Result<bool> {
    let req = EnqueueRequest {
        session_key: key.clone(),
        inbound: inbound.clone(),
        if_idle: false,
        fresh: false,
        next_run_in_ms: None,
    };
    Ok(enqueue_request(env, &req).await?.queued)
}

/// Queues with the heartbeat/job options.
pub async fn enqueue_request(env: &Env, req: &EnqueueRequest) -> worker::Result<EnqueueReply> {
    call(env, SESSION_BINDING, &req.session_key.render(), Method::Post, ENQUEUE_PATH, Some(req)).await
}

/// Posts into a session's chat (a text said as it is, or a turn): queued in
/// its object, run by its alarm. A repeat of the id does nothing
/// (`queued: false`); a refusal (`400`) is an error with the reason.
pub async fn post(env: &Env, req: &PostRequest) -> worker::Result<PostReply> {
    call(env, SESSION_BINDING, &req.session_key.render(), Method::Post, POST_PATH, Some(req)).await
}

/// A session's brief status: counts and usage, not the history.
pub async fn status(env: &Env, key: &SessionKey) -> worker::Result<SessionStatus> {
    let mut status: SessionStatus =
        call::<(), _>(env, SESSION_BINDING, &key.render(), Method::Get, BRIEF_STATUS_PATH, None).await?;
    // A session that never had a message has not stored its key yet.
    status.session_key.get_or_insert_with(|| key.clone());
    Ok(status)
}

/// Opens or closes a session to its chat's messages (`durable::people`).
pub async fn admission(env: &Env, key: &SessionKey, open: bool) -> worker::Result<()> {
    let body = durable::protocol::session::Admission { open };
    let _: serde_json::Value =
        call(env, SESSION_BINDING, &key.render(), Method::Post, ADMISSION_PATH, Some(&body)).await?;
    Ok(())
}

/// Runs a session's queue now (a message a budget held may go on).
pub async fn wake(env: &Env, key: &SessionKey) -> worker::Result<()> {
    let _: serde_json::Value =
        call::<(), _>(env, SESSION_BINDING, &key.render(), Method::Post, WAKE_PATH, None).await?;
    Ok(())
}

/// Attempts at reaching a peer's Session object for a delegated message (a
/// reset object drops the waiting request; asking again joins the turn).
const ASK_ATTEMPTS: u32 = 3;

/// Queues `req` in its Session object and waits for the outcome of its
/// turn, which that object's alarm runs (see `Platform::ask_session`).
pub async fn ask_session(env: &Env, req: &ApiTurnRequest) -> worker::Result<ApiOutcome> {
    let body = serde_json::to_string(req)?;
    let name = req.session_key.render();
    let path = format!("{TURN_PATH}?as=outcome");
    let mut last = String::new();
    for attempt in 1..=ASK_ATTEMPTS {
        match call_raw(env, SESSION_BINDING, &name, Method::Post, &path, Some(body.clone())).await {
            Ok((200, text)) => {
                return hearth_json::from_slice(text.as_bytes())
                    .map_err(|e| worker::Error::RustError(format!("{name}: {e}: {text}")));
            }
            Ok((503, text)) => last = text,
            Ok((status, text)) => return Err(worker::Error::RustError(format!("{name} answered {status}: {text}"))),
            Err(e) => last = e.to_string(),
        }
        crate::adapters::log(durable::ports::LogLevel::Warn, &format!("ask {name}: attempt {attempt} failed: {last}"));
    }
    Err(worker::Error::RustError(last))
}

/// Stops the answer a session is writing.
pub async fn stop_session(env: &Env, key: &SessionKey, req: &StopRequest) -> worker::Result<()> {
    let body = serde_json::to_string(req)?;
    let (status, text) = call_raw(env, SESSION_BINDING, &key.render(), Method::Post, STOP_PATH, Some(body)).await?;
    if status != 200 {
        return Err(worker::Error::RustError(format!("{key} answered {status}: {text}")));
    }
    Ok(())
}
