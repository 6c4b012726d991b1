//! What arrives, and where its answer goes: the message types every channel
//! parses its wire format into, the session a message belongs to, and the
//! channels that are not chat platforms.
//!
//! Ground floor: channels, the session, the scheduler and the memory all speak
//! these types, so none of them needs another feature to name a message.

pub mod channel;
pub mod context;
pub mod order;

use r2_layout::{AgentId, Scope};
use serde::{Deserialize, Serialize};

pub use channel::ChannelKind;
pub use context::MessageContext;
pub use order::{Earlier, SendOrder};

/// The API thread that is the owner's main session.
pub const MAIN_THREAD: &str = "main";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    Direct,
    Group,
}

/// Media attached to an inbound message, not yet fetched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Inbound {
    /// Repeats of one delivery share this key (e.g. `telegram:update:123`).
    pub dedupe_key: String,
    pub channel: ChannelKind,
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
    /// What the message refers to (a reply, a quote, a forward's origin),
    /// rendered before its text in the stored user message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<MessageContext>,
    /// In a group of agents: where this message stands in the exchange one
    /// human message started (see `routing::group`). `None`: an ordinary message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupHop>,
    /// The user ids the message @mentions, as the platform lists them
    /// (Discord's `mentions`): who a group message is for, read from the
    /// message itself, never from a text a bot may have rewritten.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<String>,
    /// Messages that belong together (a Telegram album: one update per
    /// photo, one `media_group_id`) share this; their session answers them
    /// in one turn (`session::batch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// Where the message stands in the order its person sent it, by the
    /// platform's ids: its session answers by this, not by arrival
    /// (`session::sequence`). `None` (HTTP, heartbeats, relays): arrival order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<SendOrder>,
}

/// A message's place in a group of agents' exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize, Default)]
pub struct GroupHop {
    /// Only for the history: another agent's turn, or a message addressed to
    /// someone else. Stored so this agent reads the whole thread; no turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub listen: bool,
    /// The human message the exchange started with (its dedupe key).
    pub origin: String,
    /// Agent replies with content so far (the `maxAgentTurns` count).
    #[serde(default)]
    pub turns: u32,
    /// Agent replies of any kind so far (bare @mentions included): a hard bound.
    #[serde(default)]
    pub hops: u32,
    /// The agent that wrote it, when an agent did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_agent: Option<String>,
    /// What each agent is @mentioned by besides its id and the group's
    /// `handles`: its bot's Telegram username, its Discord bot's user id.
    /// Only the Worker can learn them (a `getMe`, the tokens); they travel
    /// with the exchange so an agent's reply that names a bot hands over too.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub bot_handles: std::collections::BTreeMap<String, Vec<String>>,
}

impl Inbound {
    /// The text the history keeps for this message: in a group the sender's
    /// name first (`[Ana]: hi`, or `[Ana]` alone for a bare attachment), and
    /// before that the context's preface.
    pub fn user_text(&self) -> String {
        let text = if self.kind == ChatKind::Group && !self.sender_name.is_empty() {
            if self.text.trim().is_empty() {
                format!("[{}]", self.sender_name)
            } else {
                format!("[{}]: {}", self.sender_name, self.text)
            }
        } else {
            self.text.clone()
        };
        context::with_preface(&self.context, text)
    }

    /// Who wrote it, as the history keeps it (none when the channel gave no name).
    pub fn sender(&self) -> Option<String> {
        let name = self.sender_name.trim();
        (!name.is_empty()).then(|| crate::text::truncate_chars(name, SENDER_MAX_CHARS))
    }
}

/// A sender's name is kept to this many characters.
pub const SENDER_MAX_CHARS: usize = 64;

/// A parsed session key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SessionKey {
    Main(AgentId),
    Heartbeat(AgentId),
    Direct {
        agent: AgentId,
        channel: ChannelKind,
        peer: String,
    },
    Group {
        agent: AgentId,
        channel: ChannelKind,
        chat: String,
        topic: Option<String>,
    },
    /// An isolated scheduled job's session.
    Job {
        agent: AgentId,
        job: String,
    },
    /// A conversation thread over HTTP (`agent:{id}:api:{thread}`). The
    /// thread `main` is not one of these: it is the owner's [`SessionKey::Main`]
    /// (see [`SessionKey::api_thread`]).
    Api {
        agent: AgentId,
        thread: String,
    },
    /// Where a peer answers what another agent of the Worker delegated to it
    /// (`agent:{agent}:from:{from}:{depth}:{thread}`): one per asking
    /// session (`thread` is a digest of its key), so what one of the asker's
    /// chats handed over never reaches another's. `depth` counts the hops
    /// (1: asked by an agent that was not itself asked).
    Delegated {
        agent: AgentId,
        from: AgentId,
        depth: u8,
        thread: String,
    },
    /// A background sub-agent's run (`agent:{agent}:task:{main|shared}:{id}`):
    /// its own history, the scope of the chat that started it.
    Task {
        agent: AgentId,
        id: String,
        scope: Scope,
    },
}

impl SessionKey {
    pub fn agent(&self) -> &AgentId {
        match self {
            SessionKey::Main(a) | SessionKey::Heartbeat(a) => a,
            SessionKey::Direct { agent, .. }
            | SessionKey::Group { agent, .. }
            | SessionKey::Job { agent, .. }
            | SessionKey::Api { agent, .. }
            | SessionKey::Delegated { agent, .. }
            | SessionKey::Task { agent, .. } => agent,
        }
    }

    /// The session of an HTTP thread: `main` is the owner's main session
    /// (only an owner's credentials may ask for it), any other well-formed
    /// thread id its own shared-scope session. `None`: not a usable thread id.
    pub fn api_thread(agent: &AgentId, thread: &str) -> Option<SessionKey> {
        if thread == MAIN_THREAD {
            return Some(SessionKey::Main(agent.clone()));
        }
        let ok = !thread.is_empty()
            && thread.len() <= 128
            && thread.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
        ok.then(|| SessionKey::Api { agent: agent.clone(), thread: thread.to_owned() })
    }

    /// Only the owner's main and heartbeat sessions see private files, and
    /// the sub-agents the owner's main session started.
    pub fn scope(&self) -> Scope {
        match self {
            SessionKey::Main(_) | SessionKey::Heartbeat(_) => Scope::Main,
            SessionKey::Task { scope, .. } => *scope,
            _ => Scope::Shared,
        }
    }

    /// How many delegations deep this session is (0: nobody delegated to it).
    pub fn delegation_depth(&self) -> u8 {
        match self {
            SessionKey::Delegated { depth, .. } => *depth,
            _ => 0,
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
            SessionKey::Api { agent, thread } => format!("agent:{agent}:api:{thread}"),
            SessionKey::Delegated { agent, from, depth, thread } => {
                format!("agent:{agent}:from:{from}:{depth}:{thread}")
            }
            SessionKey::Task { agent, id, scope } => {
                format!("agent:{agent}:task:{}:{id}", if *scope == Scope::Main { "main" } else { "shared" })
            }
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
            ["api", thread] => SessionKey::api_thread(&agent, thread).filter(|k| matches!(k, SessionKey::Api { .. })),
            ["from", from, depth, thread] if ok_id(thread) => Some(SessionKey::Delegated {
                agent,
                from: AgentId::parse(from).ok()?,
                depth: depth.parse().ok().filter(|d| *d > 0)?,
                thread: thread.to_string(),
            }),
            ["task", scope, id] if ok_id(id) => Some(SessionKey::Task {
                agent,
                id: id.to_string(),
                scope: match *scope {
                    "main" => Scope::Main,
                    "shared" => Scope::Shared,
                    _ => return None,
                },
            }),
            [channel, "dm", peer] if ok_id(peer) => {
                Some(SessionKey::Direct { agent, channel: ChannelKind::parse(channel)?, peer: peer.to_string() })
            }
            [channel, "group", chat] if ok_id(chat) => Some(SessionKey::Group {
                agent,
                channel: ChannelKind::parse(channel)?,
                chat: chat.to_string(),
                topic: None,
            }),
            [channel, "group", chat, "topic", t] if ok_id(chat) && ok_id(t) => Some(SessionKey::Group {
                agent,
                channel: ChannelKind::parse(channel)?,
                chat: chat.to_string(),
                topic: Some(t.to_string()),
            }),
            _ => None,
        }
    }
}

/// Where a reply goes: the channel and the chat, plus whatever the channel
/// needs to thread it (reply-to message, forum topic, interaction token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize, Default)]
pub struct ReplyTarget {
    pub channel: ChannelKind,
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Channel-specific data the core never reads (e.g. a Discord interaction token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
    /// Latest time (ms since the epoch) a model call for this message may
    /// start, set by channels whose way to answer expires (a Discord
    /// interaction token). Past it the turn spends no LLM call and tells the
    /// user while the reply can still reach them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
}

impl ReplyTarget {
    /// Whether the deadline (if any) has passed at `now_ms`.
    pub fn past_deadline(&self, now_ms: i64) -> bool {
        self.deadline_ms.is_some_and(|d| now_ms >= d)
    }
}

impl Serialize for SessionKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.render())
    }
}

impl<'de> Deserialize<'de> for SessionKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = std::borrow::Cow::<str>::deserialize(d)?;
        SessionKey::parse(&raw).ok_or_else(|| serde::de::Error::custom(format!("bad session key {raw:?}")))
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_round_trip() {
        for k in [
            "agent:main:main",
            "agent:main:heartbeat",
            "agent:main:telegram:dm:42",
            "agent:main:telegram:group:-100123",
            "agent:main:telegram:group:-100123:topic:7",
            "agent:main:job:morning",
            "agent:main:api:work-notes",
            "agent:research:from:main:1:3fa2c9e1b0d4a7f2",
            "agent:main:task:main:t3",
            "agent:main:task:shared:t4",
        ] {
            assert_eq!(SessionKey::parse(k).unwrap().render(), k);
        }
        for bad in [
            "",
            "agent:Main:main",
            "agent:main",
            "agent:main:x",
            "user:main:main",
            "agent:main:telegram:dm:",
            // The thread `main` is the owner's main session, never an API key of its own.
            "agent:main:api:main",
            "agent:main:api:",
            "agent:main:api:a b",
            "agent:research:from:main:0:x",
            "agent:research:from:Main:1:x",
            "agent:research:from:main:1:",
            "agent:main:task:group:t1",
            "agent:main:task:main:",
        ] {
            assert!(SessionKey::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn api_threads_are_shared_sessions_except_main() {
        let agent = AgentId::parse("main").unwrap();
        assert_eq!(SessionKey::api_thread(&agent, "main"), Some(SessionKey::Main(agent.clone())));
        let work = SessionKey::api_thread(&agent, "work").unwrap();
        assert_eq!(work.render(), "agent:main:api:work");
        assert_eq!(work.scope(), Scope::Shared, "another thread never sees the owner's private files");
        for bad in ["", "a/b", "a:b", "..", "a b", &"x".repeat(129)] {
            assert!(SessionKey::api_thread(&agent, bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn session_keys_travel_as_their_strings() {
        let k = SessionKey::parse("agent:main:telegram:group:-1:topic:7").unwrap();
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(json, "\"agent:main:telegram:group:-1:topic:7\"");
        assert_eq!(hearth_json::from_str::<SessionKey>(&json).unwrap(), k);
        assert!(hearth_json::from_str::<SessionKey>("\"agent:main\"").is_err());
    }
}
