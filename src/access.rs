//! The agents' settings at the Worker's door: whether an agent exists, and
//! its settings loaded once per isolate (what the API, the MCP server and
//! the channels' front read). Refusing strangers is the channels' business
//! (`durable::channels::access`).

use crate::adapters::{self, EnvVars};
use crate::http::error_response;
use durable::ports::LogLevel;
use durable::settings::{agent_ids, AgentConfig, ConfigError};
use std::rc::Rc;
use worker::{Response, Result};

/// Whether `agent` is one of `AGENTS`.
pub fn is_configured(vars: &EnvVars, agent: &str) -> bool {
    agent_ids(vars).iter().any(|a| a == agent)
}

/// An agent id that is not configured: a plain 404. The configured ids are
/// never listed to the caller (they could be anyone on the internet).
pub fn unknown_agent() -> Result<Response> {
    Response::error("not found", 404)
}

/// Once the caller is authenticated: the agent's settings, or the answer to
/// give (unknown agent: 404; a broken setting: 500 naming it, also logged so
/// `wrangler dev` and `wrangler tail` show it).
pub fn config_after_auth(
    vars: &EnvVars,
    agent: &str,
    known: bool,
) -> std::result::Result<Rc<AgentConfig>, Result<Response>> {
    if !known {
        return Err(unknown_agent());
    }
    load(vars, agent).map_err(|e| {
        adapters::log(LogLevel::Error, &format!("agent {agent}: {e}"));
        error_response(&e)
    })
}

/// `agent`'s settings, read once per isolate and shared by the Worker and
/// the objects in it (a new Session object reads none).
pub fn load(vars: &EnvVars, agent: &str) -> std::result::Result<Rc<AgentConfig>, ConfigError> {
    if let Some(cfg) = CONFIGS.with(|c| c.borrow().get(agent).cloned()) {
        return Ok(cfg);
    }
    let cfg = Rc::new(AgentConfig::load(vars, agent)?);
    CONFIGS.with(|c| c.borrow_mut().insert(agent.to_owned(), cfg.clone()));
    Ok(cfg)
}

thread_local! {
    /// Agents' settings, loaded once per isolate: its vars are fixed for its
    /// life (changing one deploys new isolates). An invalid setting is not
    /// cached, so every request reports it.
    static CONFIGS: std::cell::RefCell<std::collections::HashMap<String, Rc<AgentConfig>>> = Default::default();
}
