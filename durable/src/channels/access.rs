//! What the channels answer before a message reaches an agent: who is
//! refused, in what words, and how often (the stranger cooldown). Shared by
//! every channel, so all of them say the same thing.

use super::outbound::Channels;
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Front, LogLevel};
use crate::protocol::agent::{StrangerNoticeReply, StrangerNoticeRequest};
use crate::settings::AgentConfig;
use std::cell::RefCell;
use std::collections::HashMap;

/// What a person who may not talk to the agent is told: their id, in the
/// form `OWNER_IDS`/`ALLOW_FROM` take. With no owner configured yet this is
/// the first-contact step of the quick start, so it says exactly what to set.
pub fn stranger_text(channel: ChannelKind, user_id: &str, has_owner: bool) -> String {
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
/// the agent's object across isolates (see `crate::agent::strangers`).
/// If the object cannot be reached the stranger is told, and this isolate
/// stays quiet for the cooldown, so an outage cannot turn a flood into sends.
pub async fn may_tell_stranger<F: Front>(front: &F, cfg: &AgentConfig, channel: ChannelKind, sender: &str) -> bool {
    if cfg.stranger_cooldown_ms <= 0 {
        return true;
    }
    let now = front.now_ms();
    let key = format!("{}:{channel}:{sender}", cfg.agent);
    if QUIET.with(|q| q.borrow().is_quiet(&key, now)) {
        return false;
    }
    let req = StrangerNoticeRequest { channel, sender: sender.to_owned(), cooldown_ms: cfg.stranger_cooldown_ms };
    let agent = cfg.agent.as_str();
    let reply = front.stranger_notice(agent, &req).await.unwrap_or_else(|e| {
        front.log(LogLevel::Warn, &format!("stranger cooldown of agent {agent} unavailable: {e}"));
        StrangerNoticeReply { notify: true, quiet_until: now.saturating_add(cfg.stranger_cooldown_ms) }
    });
    QUIET.with(|q| q.borrow_mut().remember(key, reply.quiet_until, now));
    reply.notify
}

/// Tells a stranger their id on `channel` (at most once per cooldown), as a
/// message from the agent's bot. Its failure is only logged.
pub async fn tell_stranger<F: Front>(front: &F, agent: &str, channel: ChannelKind, sender: &str, target: &ReplyTarget) {
    let Ok(cfg) = front.config(agent) else { return };
    if !may_tell_stranger(front, &cfg, channel, sender).await {
        return;
    }
    front.log(LogLevel::Info, &format!("stranger {channel}:{sender} wrote to agent {agent}: told their id"));
    let text = stranger_text(channel, sender, !cfg.owners.is_empty());
    let channels = Channels::for_agent(front.vars(), &cfg);
    if let Err(e) = channels.send_text(front, target, &text).await {
        front.log(LogLevel::Warn, &format!("the note to stranger {channel}:{sender} was not sent: {e}"));
    }
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
        let owned = stranger_text(ChannelKind::Telegram, "31337", true);
        assert!(owned.contains("Your id is telegram:31337") && owned.contains("ALLOW_FROM"), "{owned}");
        let first = stranger_text(ChannelKind::Discord, "42", false);
        assert!(first.contains("Your id is discord:42") && first.contains("OWNER_IDS=discord:42"), "{first}");
    }
}
