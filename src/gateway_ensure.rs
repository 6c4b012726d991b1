//! Starting the agents' `Gateway` objects: the cron tick asks each agent's
//! object to be connected (a no-op when it is, and for a bot stopped on a
//! bad token or a missing intent). The admin API's status and reconnect
//! routes are `durable::http_api`'s.

use crate::adapters::{self, EnvVars};
use durable::ports::LogLevel;
use durable::protocol::gateway::EnsureRequest;
use durable::settings::{agent_ids, discord_gateway};
use worker::Env;

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
