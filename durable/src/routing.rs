//! Who may talk to the agent, and which session a message belongs to.
//!
//! Channels parse their wire formats into an [`Inbound`]; everything after
//! that is decided here, the same way for every channel:
//! - the owner's direct messages form the main session `agent:{id}:main`;
//! - other people named in `ALLOW_FROM` get `agent:{id}:{channel}:dm:{peer}`;
//! - a group named in `ALLOW_FROM` (or where the owner speaks) gets
//!   `agent:{id}:{channel}:group:{chat}` (a forum topic adds `:topic:{n}`),
//!   and only messages that address the agent start a turn;
//! - anyone else gets no LLM call.

pub mod group;

use crate::inbound::{ChannelKind, ChatKind, Inbound, SessionKey};
use crate::settings::AgentConfig;

/// What to do with an inbound message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Queue it for a turn in this session.
    Turn(SessionKey),
    /// A group message that does not address the agent: no turn.
    NotAddressed,
    /// Someone not in `OWNER_IDS`/`ALLOW_FROM`, in a direct chat: no LLM call;
    /// the channel may tell them their id so an owner can allow them.
    Stranger,
    /// A group that is not allowed: ignored silently.
    GroupNotAllowed,
}

pub fn route(cfg: &AgentConfig, msg: &Inbound) -> Route {
    let agent = cfg.agent.clone();
    let channel = msg.channel;
    match msg.kind {
        ChatKind::Direct => {
            if cfg.is_owner(channel, &msg.sender_id) {
                Route::Turn(SessionKey::Main(agent))
            } else if cfg.is_allowed(channel, &msg.sender_id) {
                Route::Turn(SessionKey::Direct { agent, channel, peer: msg.sender_id.clone() })
            } else {
                Route::Stranger
            }
        }
        ChatKind::Group => {
            // An email thread has no id anyone could list in ALLOW_FROM: it
            // is allowed by who writes in it.
            let by_sender = channel == ChannelKind::Email && cfg.is_allowed(channel, &msg.sender_id);
            let group_ok = cfg.is_allowed(channel, &msg.chat_id) || cfg.is_owner(channel, &msg.sender_id) || by_sender;
            if !group_ok {
                Route::GroupNotAllowed
            } else if !msg.addressed {
                Route::NotAddressed
            } else {
                Route::Turn(SessionKey::Group {
                    agent,
                    channel,
                    chat: msg.chat_id.clone(),
                    topic: msg.thread_id.clone(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ReplyTarget;
    use r2_layout::Scope;
    use std::collections::HashMap;

    fn cfg() -> AgentConfig {
        let vars: HashMap<String, String> =
            [("OWNER_IDS", "telegram:1"), ("ALLOW_FROM", "telegram:2,telegram:-100500")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        AgentConfig::load(&vars, "main").unwrap()
    }

    fn msg(kind: ChatKind, chat: &str, sender: &str, addressed: bool) -> Inbound {
        Inbound {
            dedupe_key: "k".into(),
            channel: ChannelKind::Telegram,
            kind,
            chat_id: chat.into(),
            sender_id: sender.into(),
            sender_name: "n".into(),
            text: "hi".into(),
            addressed,
            thread_id: None,
            reply_target: ReplyTarget::default(),
            received_at: 0,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        }
    }

    #[test]
    fn direct_messages() {
        let c = cfg();
        let r = route(&c, &msg(ChatKind::Direct, "1", "1", false));
        assert_eq!(r, Route::Turn(SessionKey::parse("agent:main:main").unwrap()));
        let r = route(&c, &msg(ChatKind::Direct, "2", "2", false));
        match r {
            Route::Turn(k) => {
                assert_eq!(k.render(), "agent:main:telegram:dm:2");
                assert_eq!(k.scope(), Scope::Shared);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(route(&c, &msg(ChatKind::Direct, "3", "3", true)), Route::Stranger);
    }

    #[test]
    fn groups_need_permission_and_address() {
        let c = cfg();
        assert_eq!(route(&c, &msg(ChatKind::Group, "-100500", "9", false)), Route::NotAddressed);
        match route(&c, &msg(ChatKind::Group, "-100500", "9", true)) {
            Route::Turn(k) => assert_eq!(k.render(), "agent:main:telegram:group:-100500"),
            other => panic!("{other:?}"),
        }
        assert_eq!(route(&c, &msg(ChatKind::Group, "-100999", "9", true)), Route::GroupNotAllowed);
        // The owner may bring the agent into any group; it is still a shared scope.
        match route(&c, &msg(ChatKind::Group, "-100999", "1", true)) {
            Route::Turn(k) => assert_eq!(k.scope(), Scope::Shared),
            other => panic!("{other:?}"),
        }
    }
}
