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

use crate::config::AgentConfig;
use crate::ports::ReplyTarget;
use r2_layout::{AgentId, Scope};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    Direct,
    Group,
}

/// Media attached to an inbound message, not yet fetched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundMedia {
    /// Channel-specific handle (a Telegram `file_id`, a Discord attachment URL).
    pub handle: String,
    pub mime_type: String,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    /// `photo`, `document`, `voice`, `audio`, `video`, `video_note`, `sticker`, `attachment`.
    pub kind: String,
}

/// A message from any channel, in the runtime's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    /// Repeats of one delivery share this key (e.g. `telegram:update:123`).
    pub dedupe_key: String,
    pub channel: String,
    pub kind: ChatKind,
    pub chat_id: String,
    pub sender_id: String,
    pub sender_name: String,
    pub text: String,
    /// In a group: the agent was mentioned, replied to, or given a command.
    pub addressed: bool,
    /// Forum topic / thread id, when there is one.
    #[serde(default)]
    pub thread_id: Option<String>,
    pub reply_target: ReplyTarget,
    pub received_at: i64,
    #[serde(default)]
    pub media: Vec<InboundMedia>,
}

/// A parsed session key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SessionKey {
    Main(AgentId),
    Heartbeat(AgentId),
    Direct {
        agent: AgentId,
        channel: String,
        peer: String,
    },
    Group {
        agent: AgentId,
        channel: String,
        chat: String,
        topic: Option<String>,
    },
    /// An isolated scheduled job's session.
    Job {
        agent: AgentId,
        job: String,
    },
}

impl SessionKey {
    pub fn agent(&self) -> &AgentId {
        match self {
            SessionKey::Main(a) | SessionKey::Heartbeat(a) => a,
            SessionKey::Direct { agent, .. } | SessionKey::Group { agent, .. } | SessionKey::Job { agent, .. } => agent,
        }
    }

    /// Only the owner's main and heartbeat sessions see private files.
    pub fn scope(&self) -> Scope {
        match self {
            SessionKey::Main(_) | SessionKey::Heartbeat(_) => Scope::Main,
            _ => Scope::Shared,
        }
    }

    pub fn render(&self) -> String {
        match self {
            SessionKey::Main(a) => format!("agent:{a}:main"),
            SessionKey::Heartbeat(a) => format!("agent:{a}:heartbeat"),
            SessionKey::Direct { agent, channel, peer } => format!("agent:{agent}:{channel}:dm:{peer}"),
            SessionKey::Group { agent, channel, chat, topic: None } => format!("agent:{agent}:{channel}:group:{chat}"),
            SessionKey::Group { agent, channel, chat, topic: Some(t) } => {
                format!("agent:{agent}:{channel}:group:{chat}:topic:{t}")
            }
            SessionKey::Job { agent, job } => format!("agent:{agent}:job:{job}"),
        }
    }

    pub fn parse(raw: &str) -> Option<SessionKey> {
        let parts: Vec<&str> = raw.split(':').collect();
        if parts.len() < 3 || parts[0] != "agent" {
            return None;
        }
        let agent = AgentId::parse(parts[1]).ok()?;
        let ok_id = |s: &str| !s.is_empty() && s.len() <= 128 && !s.chars().any(|c| c.is_control() || c == '/');
        match &parts[2..] {
            ["main"] => Some(SessionKey::Main(agent)),
            ["heartbeat"] => Some(SessionKey::Heartbeat(agent)),
            ["job", job] if ok_id(job) => Some(SessionKey::Job { agent, job: job.to_string() }),
            [channel, "dm", peer] if ok_id(peer) => {
                Some(SessionKey::Direct { agent, channel: channel.to_string(), peer: peer.to_string() })
            }
            [channel, "group", chat] if ok_id(chat) => {
                Some(SessionKey::Group { agent, channel: channel.to_string(), chat: chat.to_string(), topic: None })
            }
            [channel, "group", chat, "topic", t] if ok_id(chat) && ok_id(t) => Some(SessionKey::Group {
                agent,
                channel: channel.to_string(),
                chat: chat.to_string(),
                topic: Some(t.to_string()),
            }),
            _ => None,
        }
    }
}

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
    let channel = msg.channel.clone();
    match msg.kind {
        ChatKind::Direct => {
            if cfg.is_owner(&channel, &msg.sender_id) {
                Route::Turn(SessionKey::Main(agent))
            } else if cfg.is_allowed(&channel, &msg.sender_id) {
                Route::Turn(SessionKey::Direct { agent, channel, peer: msg.sender_id.clone() })
            } else {
                Route::Stranger
            }
        }
        ChatKind::Group => {
            let group_ok = cfg.is_allowed(&channel, &msg.chat_id) || cfg.is_owner(&channel, &msg.sender_id);
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
            channel: "telegram".into(),
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

    #[test]
    fn session_keys_round_trip() {
        for k in [
            "agent:main:main",
            "agent:main:heartbeat",
            "agent:main:telegram:dm:42",
            "agent:main:telegram:group:-100123",
            "agent:main:telegram:group:-100123:topic:7",
            "agent:main:job:morning",
        ] {
            assert_eq!(SessionKey::parse(k).unwrap().render(), k);
        }
        for bad in ["", "agent:Main:main", "agent:main", "agent:main:x", "user:main:main", "agent:main:telegram:dm:"] {
            assert!(SessionKey::parse(bad).is_none(), "{bad:?}");
        }
    }
}
