//! `GET /api/agents/{id}/usage?period=today|month|all|YYYY-MM-DD|YYYY-MM`
//! (default `all`) and `GET /api/agents/{id}/usage/threads/{threadId}`
//! (a session key, URL-encoded or not, `main`, or an API thread id): the
//! agent's usage ledger in its Agent object ([`durable::usage`]), seed 004
//! §10's format with the cache fields of §18. A bad period or thread is a
//! 400 naming it.

use durable::protocol::usage::ReportRequest;
use worker::{Env, Request, Response, Result};

pub async fn report(req: &Request, env: &Env, agent: &str, thread: Option<&str>) -> Result<Response> {
    let period = crate::http::query(req, "period").unwrap_or_else(|| "all".into());
    let body = ReportRequest { agent: agent.to_owned(), period, thread: thread.map(crate::http::percent_decode) };
    crate::objects::relay(env, &body).await
}
