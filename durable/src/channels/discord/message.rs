//! A Gateway `MESSAGE_CREATE` as an [`Inbound`] message: who wrote, where,
//! whether it addresses the bot (a mention, a reply to one of its messages,
//! a DM), what it replies to, and its attachments. Typed fields only: a
//! frame is read once into these structs, never into a JSON tree.

pub use super::wire::{Attachment, Member, User};
use crate::inbound::{ChannelKind, ChatKind, Inbound, InboundMedia, MessageContext, ReplyTarget, SendOrder};

/// The fields of a Discord message Hearth reads.
#[derive(Debug, Clone, PartialEq, hearth_json::Deserialize)]
pub struct GatewayMessage {
    pub id: String,
    pub channel_id: String,
    #[serde(default)]
    pub guild_id: Option<String>,
    pub author: User,
    #[serde(default)]
    pub content: String,
    /// 0 DEFAULT, 19 REPLY; others (joins, pins, boosts…) are events, not speech.
    #[serde(default, rename = "type")]
    pub kind: u8,
    #[serde(default)]
    pub mentions: Vec<User>,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// The message replied to (null when deleted; absent when not a reply).
    #[serde(default)]
    pub referenced_message: Option<Box<GatewayMessage>>,
    #[serde(default)]
    pub message_reference: Option<Reference>,
    #[serde(default)]
    pub member: Option<Member>,
    /// Set when the message is a webhook's (no person behind it).
    #[serde(default)]
    pub webhook_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, hearth_json::Deserialize)]
pub struct Reference {
    #[serde(default)]
    pub message_id: Option<String>,
    /// 0 DEFAULT (a reply), 1 FORWARD.
    #[serde(default, rename = "type")]
    pub kind: u8,
}

/// Why a message starts nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skipped {
    /// A bot's (Hearth's own included) or a webhook's: answering bots loops.
    #[error("written by a bot")]
    Bot,
    /// A system message (a join, a pin, a boost).
    #[error("a system message (type {0})")]
    System(u8),
    #[error("an empty message")]
    Empty,
}

impl GatewayMessage {
    /// Whether the bot `bot_id` is mentioned.
    pub fn mentions_user(&self, bot_id: &str) -> bool {
        self.mentions.iter().any(|m| m.id == bot_id)
            || self.content.contains(&format!("<@{bot_id}>"))
            || self.content.contains(&format!("<@!{bot_id}>"))
    }

    /// Whether it replies to a message of the bot `bot_id`.
    pub fn replies_to(&self, bot_id: &str) -> bool {
        self.referenced_message.as_ref().is_some_and(|r| r.author.id == bot_id)
    }
}

/// The message as the runtime sees it. `bot_id`: the bot's user id (from
/// READY); `None` before READY (nothing is addressed then).
pub fn to_inbound(msg: &GatewayMessage, bot_id: Option<&str>, now_ms: i64) -> Result<Inbound, Skipped> {
    if msg.author.bot || msg.webhook_id.is_some() || bot_id == Some(msg.author.id.as_str()) {
        return Err(Skipped::Bot);
    }
    if !matches!(msg.kind, 0 | 19) {
        return Err(Skipped::System(msg.kind));
    }
    let kind = if msg.guild_id.is_some() { ChatKind::Group } else { ChatKind::Direct };
    // The text as written: in a group of agents every bot receives the same
    // message, and who it is for must not depend on which bot read it first
    // (see `without_mention` for a session of this bot alone).
    let text = msg.content.trim().to_owned();
    let media: Vec<InboundMedia> = msg
        .attachments
        .iter()
        .map(|a| InboundMedia {
            handle: a.url.clone(),
            mime_type: a.content_type.clone().unwrap_or_else(|| "application/octet-stream".into()),
            filename: Some(a.filename.clone()).filter(|f| !f.is_empty()),
            size: a.size,
            kind: if a.content_type.as_deref().is_some_and(|c| c.starts_with("audio/ogg")) {
                "voice".into()
            } else {
                "attachment".into()
            },
        })
        .collect();
    let context = reply_context(msg, bot_id);
    let said = bot_id.map_or_else(|| text.clone(), |b| without_mention(&text, b));
    if said.is_empty() && media.is_empty() {
        return Err(Skipped::Empty);
    }
    let mut mentions: Vec<String> = Vec::new();
    for m in &msg.mentions {
        if !mentions.contains(&m.id) {
            mentions.push(m.id.clone());
        }
    }
    let addressed = kind == ChatKind::Direct || bot_id.is_some_and(|b| msg.mentions_user(b) || msg.replies_to(b));
    let sender_name = match msg.member.as_ref().and_then(|m| m.nick.clone()).filter(|n| !n.is_empty()) {
        Some(nick) => nick,
        None => msg.author.display(),
    };
    Ok(Inbound {
        dedupe_key: format!("discord:message:{}", msg.id),
        channel: ChannelKind::Discord,
        kind,
        chat_id: msg.channel_id.clone(),
        sender_id: msg.author.id.clone(),
        sender_name,
        text,
        addressed,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Discord,
            chat_id: msg.channel_id.clone(),
            reply_to: Some(msg.id.clone()),
            ..Default::default()
        },
        received_at: now_ms,
        media,
        context,
        group: None,
        mentions,
        batch: None,
        order: SendOrder::discord(&msg.id),
    })
}

/// `text` without the @mention of the bot `bot_id`: the mention that
/// addressed the bot is not part of what was said to it (a session of this
/// bot alone; a group of agents spells mentions out instead).
pub fn without_mention(text: &str, bot_id: &str) -> String {
    text.replace(&format!("<@{bot_id}>"), "").replace(&format!("<@!{bot_id}>"), "").trim().to_owned()
}

/// A reply's context (module docs of [`crate::inbound::context`]).
fn reply_context(msg: &GatewayMessage, bot_id: Option<&str>) -> Vec<MessageContext> {
    let is_reply = msg.kind == 19 || msg.message_reference.as_ref().is_some_and(|r| r.kind == 0);
    if !is_reply {
        return vec![];
    }
    match &msg.referenced_message {
        Some(r) => {
            let names: Vec<String> = r.attachments.iter().map(|a| format!("[{}]", a.filename)).collect();
            let text = [names.join(" "), r.content.clone()].join(" ").trim().to_owned();
            let yours = bot_id == Some(r.author.id.as_str());
            vec![MessageContext::Reply {
                author: (!yours).then(|| r.author.display()),
                yours,
                place: None,
                text,
                quote: None,
            }]
        }
        // Deleted before we saw it.
        None if msg.kind == 19 => {
            vec![MessageContext::Reply { author: None, yours: false, place: None, text: String::new(), quote: None }]
        }
        None => vec![],
    }
}
