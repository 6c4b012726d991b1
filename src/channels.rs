//! The chat platforms' entry points: each route reads its request (bounded),
//! hands it to its channel's handler in `durable::channels`, answers what
//! the handler says, and leaves the handler's later work to `waitUntil`.
//! Everything a platform means lives in its folder there.

use crate::front::WorkerFront;
use crate::http::read_body_limited;
use durable::channels::webhook::{run_later, WebReply, WebRequest};
use durable::channels::{discord, email, slack, telegram, whatsapp};
use worker::{Context, Env, Request, Response, Result};

/// The request as the channels read it: method, headers, query and body
/// (at most `limit` bytes; more is a 413).
pub(crate) async fn web_request(req: &mut Request, limit: usize) -> std::result::Result<WebRequest, Result<Response>> {
    let headers = req.headers().entries().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let query = crate::http::query_pairs(req);
    let method = req.method().to_string();
    let body = if method == "GET" { vec![] } else { read_body_limited(req, limit).await? };
    Ok(WebRequest { method, headers, query, body })
}

/// The handler's answer, and its later work handed to `waitUntil`.
fn answer(reply: WebReply, env: &Env, ctx: &Context) -> Result<Response> {
    if let Some(later) = reply.later {
        let env = env.clone();
        ctx.wait_until(async move { run_later(&WorkerFront::new(&env), *later).await });
    }
    let headers = worker::Headers::new();
    headers.set("content-type", reply.content_type)?;
    Ok(Response::ok(reply.body)?.with_status(reply.status).with_headers(headers))
}

/// `POST /telegram/{agentId}`.
pub async fn telegram(mut req: Request, env: &Env, ctx: &Context, agent: &str) -> Result<Response> {
    let request = match web_request(&mut req, telegram::webhook::MAX_UPDATE_BYTES).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    answer(telegram::webhook::handle(&WorkerFront::new(env), agent, &request).await, env, ctx)
}

/// `POST /discord/{agentId}`.
pub async fn discord(mut req: Request, env: &Env, ctx: &Context, agent: &str) -> Result<Response> {
    let request = match web_request(&mut req, discord::webhook::MAX_INTERACTION_BYTES).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    answer(discord::webhook::handle(&WorkerFront::new(env), agent, &request).await, env, ctx)
}

/// `POST /slack/{agentId}` (the Events API's Request URL).
pub async fn slack(mut req: Request, env: &Env, ctx: &Context, agent: &str) -> Result<Response> {
    let request = match web_request(&mut req, slack::webhook::MAX_EVENT_BYTES).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    answer(slack::webhook::handle(&WorkerFront::new(env), agent, &request).await, env, ctx)
}

/// `GET /whatsapp/{agentId}` (Meta's subscription check) and `POST` (notifications).
pub async fn whatsapp(mut req: Request, env: &Env, ctx: &Context, agent: &str) -> Result<Response> {
    let request = match web_request(&mut req, whatsapp::webhook::MAX_NOTIFICATION_BYTES).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let front = WorkerFront::new(env);
    let reply = match request.method.as_str() {
        "GET" => whatsapp::webhook::subscribe(&front, agent, &request),
        _ => whatsapp::webhook::handle(&front, agent, &request).await,
    };
    answer(reply, env, ctx)
}

/// The `email` handler: a message Email Routing delivers. Never an `Err`
/// (the runtime would abort the instance): a refusal is `setReject`, which
/// the sending server reports to the sender.
pub async fn email(message: worker::ForwardableEmailMessage, env: &Env) {
    let raw = match crate::js::stream_bytes(&message.raw()).await {
        Ok(r) => r,
        Err(e) => {
            crate::adapters::log(
                durable::ports::LogLevel::Error,
                &format!("email from {} unreadable: {e}", message.from()),
            );
            crate::js::reject_email(&message, "the message could not be read; please try again later").await;
            return;
        }
    };
    let front = WorkerFront::new(env);
    match email::inbound::handle(&front, &message.from(), &message.to(), &raw).await {
        email::inbound::Verdict::Accepted(note) => {
            crate::adapters::log(durable::ports::LogLevel::Info, &format!("email from {}: {note}", message.from()))
        }
        email::inbound::Verdict::Rejected(reason) => crate::js::reject_email(&message, &reason).await,
    }
}
