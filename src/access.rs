//! What the channels answer before a message reaches an agent: who is
//! refused, and with what words, and how often (the stranger cooldown).
//! Shared by Telegram and Discord so both say the same thing.

use crate::adapters::{self, EnvVars};
use crate::http::error_response;
use durable::ports::LogLevel;
use durable::protocol::agent::{StrangerNoticeReply, StrangerNoticeRequest, STRANGER_NOTICE_PATH};
use durable::protocol::AGENT_BINDING;
use durable::settings::{agent_ids, AgentConfig};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use worker::{Env, Method, Response, Result};

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
    cached_config(vars, agent).map_err(|e| {
        adapters::log(LogLevel::Error, &format!("agent {agent}: {e}"));
        error_response(&e)
    })
}

/// `agent`'s settings, read once per isolate and shared by the Worker and
/// the objects in it (a new Session object reads none).
pub fn cached_config(
    vars: &EnvVars,
    agent: &str,
) -> std::result::Result<Rc<AgentConfig>, durable::settings::ConfigError> {
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

/// Strangers remembered per isolate; past this the expired ones are
/// dropped (all of them, if a flood of distinct ids filled it).
const MAX_QUIET_ENTRIES: usize = 4096;

/// Per isolate: until when (ms) each stranger is told nothing, from the
/// Agent object's answers. It spares a flood the object calls: after the
/// first answer, the rest of one stranger's messages cost no call at all.
#[derive(Default)]
pub struct QuietMemo {
    until: HashMap<String, i64>,
}

impl QuietMemo {
    pub fn is_quiet(&self, key: &str, now: i64) -> bool {
        self.until.get(key).is_some_and(|u| now < *u)
    }

    pub fn remember(&mut self, key: String, until: i64, now: i64) {
        if self.until.len() >= MAX_QUIET_ENTRIES && !self.until.contains_key(&key) {
            self.until.retain(|_, u| *u > now);
            if self.until.len() >= MAX_QUIET_ENTRIES {
                self.until.clear();
            }
        }
        self.until.insert(key, until);
    }
}

thread_local! {
    static QUIET: RefCell<QuietMemo> = RefCell::new(QuietMemo::default());
}

/// Whether a stranger writing on `channel` may be told their id now: at most
/// once per `STRANGER_COOLDOWN_MINUTES` per channel and sender, decided by
/// the agent's object across isolates (see `durable::agent::strangers`).
/// If the object cannot be reached the stranger is told, and this isolate
/// stays quiet for the cooldown, so an outage cannot turn a flood into sends.
pub async fn may_tell_stranger(env: &Env, cfg: &AgentConfig, channel: &str, sender: &str) -> bool {
    if cfg.stranger_cooldown_ms <= 0 {
        return true;
    }
    let now = adapters::now_ms();
    let key = format!("{}:{channel}:{sender}", cfg.agent);
    if QUIET.with(|q| q.borrow().is_quiet(&key, now)) {
        return false;
    }
    let req = StrangerNoticeRequest {
        channel: channel.to_owned(),
        sender: sender.to_owned(),
        cooldown_ms: cfg.stranger_cooldown_ms,
    };
    let agent = cfg.agent.as_str();
    let reply: Result<StrangerNoticeReply> =
        crate::objects::call(env, AGENT_BINDING, agent, Method::Post, STRANGER_NOTICE_PATH, Some(&req)).await;
    let reply = reply.unwrap_or_else(|e| {
        adapters::log(LogLevel::Warn, &format!("stranger cooldown of agent {agent} unavailable: {e}"));
        StrangerNoticeReply { notify: true, quiet_until: now.saturating_add(cfg.stranger_cooldown_ms) }
    });
    QUIET.with(|q| q.borrow_mut().remember(key, reply.quiet_until, now));
    reply.notify
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_stays_quiet_until_the_cooldown_ends_and_stays_bounded() {
        let mut m = QuietMemo::default();
        assert!(!m.is_quiet("main:telegram:9", 0));
        m.remember("main:telegram:9".into(), 1_000, 0);
        assert!(m.is_quiet("main:telegram:9", 999));
        assert!(!m.is_quiet("main:telegram:9", 1_000));
        assert!(!m.is_quiet("main:telegram:10", 500));
        for i in 0..MAX_QUIET_ENTRIES * 2 {
            m.remember(format!("main:telegram:{i}"), 5_000, 2_000);
        }
        assert!(m.until.len() <= MAX_QUIET_ENTRIES);
        // Expired entries go first: a live one survives a sweep.
        let mut m = QuietMemo::default();
        m.remember("live".into(), 10_000, 0);
        for i in 0..MAX_QUIET_ENTRIES - 1 {
            m.remember(format!("old{i}"), 10, 0);
        }
        m.remember("new".into(), 10_000, 100);
        assert!(m.is_quiet("live", 100) && m.is_quiet("new", 100));
        assert_eq!(m.until.len(), 2);
    }

    #[test]
    fn strangers_learn_their_id_in_config_form() {
        let owned = stranger_text("telegram", "31337", true);
        assert!(owned.contains("Your id is telegram:31337") && owned.contains("ALLOW_FROM"), "{owned}");
        let first = stranger_text("discord", "42", false);
        assert!(first.contains("Your id is discord:42") && first.contains("OWNER_IDS=discord:42"), "{first}");
    }
}
