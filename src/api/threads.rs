//! `GET /api/agents/{id}/notifications/stream`: the owner's notifications,
//! the Agent object's event stream passed through. (The threads routes are
//! `durable::http_api`'s.)

use super::json_error;
use durable::protocol::agent::FeedRequest;
use durable::settings::api::Caller;
use worker::{Env, Request, Response, Result};

/// `GET`: the owner's notifications as server-sent events, from after the
/// client's `Last-Event-ID` (or `?after=`; neither: only new ones).
pub async fn notifications(req: &Request, env: &Env, agent: &str, caller: &Caller) -> Result<Response> {
    if !caller.is_owner() {
        return json_error(403, "notifications are the owner's: use ADMIN_TOKEN or an API_TOKENS key marked owner");
    }
    let after = req.headers().get("last-event-id").ok().flatten().or_else(|| crate::http::query(req, "after"));
    let after = match after {
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) if n >= 0 => Some(n),
            _ => return json_error(400, &format!("Last-Event-ID / after {a:?} must be a notification id (a number)")),
        },
        None => None,
    };
    let resp = crate::objects::open(env, &FeedRequest { agent: agent.to_owned(), after }).await?;
    Ok(Response::from(resp))
}
