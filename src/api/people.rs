//! The people and approvals views the console uses (`ADMIN_TOKEN` only):
//! - `GET /api/agents/{id}/people`: `{text, list}`: owners, guests, pending
//!   requests, the claim code while there is no owner, the audit lines;
//! - `POST /api/agents/{id}/people`: `{"approve": CODE}`, `{"deny": CODE}`
//!   or `{"revoke": "channel:id"}`;
//! - `GET /api/agents/{id}/approvals`: tool calls waiting for the owner and
//!   the recent answers;
//! - `POST /api/agents/{id}/approvals/{n}`: `{"approve": true|false}`.

use super::json_error;
use crate::objects::relay;
use durable::protocol::approvals::ApprovalCall;
use durable::protocol::people::{PeopleAction, PeopleCall};
use worker::{Env, Request, Response, Result};

/// `GET /api/agents/{id}/people`: the Agent object's answer as it is (its
/// `list`, and `/people`'s `text`).
pub async fn list(env: &Env, agent: &str) -> Result<Response> {
    relay(env, &PeopleCall::List { agent: agent.to_owned() }).await
}

/// `POST /api/agents/{id}/people`.
pub async fn act(mut req: Request, env: &Env, agent: &str) -> Result<Response> {
    let body = match crate::http::read_body_limited(&mut req, durable::api::MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let action: PeopleAction = match hearth_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => return json_error(400, &format!("not a people action: {e}")),
    };
    match action.call(agent, "console") {
        Ok(call) => relay(env, &call).await,
        Err(e) => json_error(400, &e),
    }
}

/// `GET /api/agents/{id}/approvals`.
pub async fn approvals(env: &Env, agent: &str) -> Result<Response> {
    relay(env, &ApprovalCall::List { agent: agent.to_owned() }).await
}

/// `POST /api/agents/{id}/approvals/{n}`.
pub async fn decide(mut req: Request, env: &Env, agent: &str, id: &str) -> Result<Response> {
    let Ok(id) = id.parse::<i64>() else { return json_error(400, &format!("{id:?} is not a request number")) };
    let body = match crate::http::read_body_limited(&mut req, durable::api::MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let approve = match hearth_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v["approve"].as_bool()) {
        Some(a) => a,
        None => return json_error(400, "send {\"approve\": true} or {\"approve\": false}"),
    };
    let call = ApprovalCall::Decide { agent: agent.to_owned(), id, approve, by: "console".into() };
    relay(env, &call).await
}
