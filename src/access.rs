//! What the channels answer before a message reaches an agent: who is
//! refused, and with what words. Shared by Telegram and Discord so both say
//! the same thing.

use crate::adapters::{self, EnvVars};
use crate::http::error_response;
use durable::ports::LogLevel;
use durable::settings::{agent_ids, AgentConfig};
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
    if let Some(cfg) = CONFIGS.with(|c| c.borrow().get(agent).cloned()) {
        return Ok(cfg);
    }
    let cfg = AgentConfig::load(vars, agent).map_err(|e| {
        adapters::log(LogLevel::Error, &format!("agent {agent}: {e}"));
        error_response(&e)
    })?;
    let cfg = Rc::new(cfg);
    CONFIGS.with(|c| c.borrow_mut().insert(agent.to_owned(), cfg.clone()));
    Ok(cfg)
}

thread_local! {
    /// Agents' settings, loaded once per isolate: its vars are fixed for its
    /// life (changing one deploys new isolates). An invalid setting is not
    /// cached, so every request reports it.
    static CONFIGS: std::cell::RefCell<std::collections::HashMap<String, Rc<AgentConfig>>> = Default::default();
}

/// What a person who may not talk to the agent is told: their id, in the
/// form `OWNER_IDS`/`ALLOW_FROM` take. With no owner configured yet this is
/// the first-contact step of the quick start, so it says exactly what to set.
pub fn stranger_text(channel: &str, user_id: &str, has_owner: bool) -> String {
    if has_owner {
        format!(
            "I'm a private assistant and only talk to people my owner allows. \
Your id is {channel}:{user_id}. If you are my owner, add it to OWNER_IDS (or ask them to add it to ALLOW_FROM)."
        )
    } else {
        format!(
            "Hello! I have no owner yet. Your id is {channel}:{user_id}. If this is your agent, set \
OWNER_IDS={channel}:{user_id} (in .dev.vars, or with `wrangler secret put OWNER_IDS`), restart, and write to me again."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::stranger_text;

    #[test]
    fn strangers_learn_their_id_in_config_form() {
        let owned = stranger_text("telegram", "31337", true);
        assert!(owned.contains("Your id is telegram:31337") && owned.contains("ALLOW_FROM"), "{owned}");
        let first = stranger_text("discord", "42", false);
        assert!(first.contains("Your id is discord:42") && first.contains("OWNER_IDS=discord:42"), "{first}");
    }
}
