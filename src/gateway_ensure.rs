//! Starting and watching the agents' `Gateway` objects: the cron tick asks
//! each agent's object to be connected (a no-op when it is, and for a bot
//! stopped on a bad token or a missing intent); the admin API reads its
//! status and may force a reconnect once the owner fixed the cause.

use crate::adapters::{self, EnvVars};
use crate::objects::relay;
use durable::ports::LogLevel;
use durable::protocol::gateway::{EnsureRequest, GatewayStatusRequest};
use durable::settings::{agent_ids, discord_gateway};
use worker::{Env, Response, Result};

/// `DISCORD_GATEWAY` for `agent`; an invalid value is an answer naming it.
fn enabled(vars: &EnvVars, agent: &str) -> std::result::Result<bool, String> {
    discord_gateway(vars, agent).map_err(|e| format!("agent {agent}: {e}"))
}

fn ensure(agent: &str, force: bool) -> EnsureRequest {
    EnsureRequest { agent: agent.to_owned(), force }
}

/// The cron tick: every agent with `DISCORD_GATEWAY=on` connected.
pub async fn ensure_all(env: &Env) {
    let vars = EnvVars::of(env);
    for agent in agent_ids(&vars) {
        match enabled(&vars, &agent) {
            Ok(false) => {}
            Ok(true) => {
                if let Err(e) = crate::objects::call(env, &ensure(&agent, false)).await {
                    adapters::log(LogLevel::Error, &format!("discord gateway of agent {agent}: {e}"));
                }
            }
            Err(e) => adapters::log(LogLevel::Error, &format!("discord gateway not started: {e}")),
        }
    }
}

/// `GET /api/agents/{id}/gateway`: the connection's state (and why it
/// stopped, if it did). Asking also makes sure it runs when enabled.
pub async fn status(env: &Env, agent: &str) -> Result<Response> {
    match enabled(&EnvVars::of(env), agent) {
        Ok(true) => return relay(env, &ensure(agent, false)).await,
        Ok(false) => {}
        Err(e) => return Response::error(e, 500),
    }
    relay(env, &GatewayStatusRequest { agent: agent.to_owned() }).await
}

/// `POST /api/agents/{id}/gateway/connect`: connect now, also after a fatal close.
pub async fn connect(env: &Env, agent: &str) -> Result<Response> {
    match enabled(&EnvVars::of(env), agent) {
        Ok(true) => {}
        Ok(false) => return Response::error(format!("DISCORD_GATEWAY is not on for agent {agent:?}"), 409),
        Err(e) => return Response::error(e, 500),
    }
    relay(env, &ensure(agent, true)).await
}
