//! Discord interactions in Hearth's terms: the payload (only the fields we
//! use), the slash commands, the [`Inbound`] a command becomes, the responses
//! we answer with, and the interaction-token lifetime. Pure, tested natively.

pub use super::wire::{Attachment, Member, User};
use crate::inbound::{ChannelKind, ChatKind, Inbound, InboundMedia, MessageContext, ReplyTarget, SendOrder};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;

pub const PING: u8 = 1;
pub const APPLICATION_COMMAND: u8 = 2;
/// A button press or a select menu choice on a message.
pub const MESSAGE_COMPONENT: u8 = 3;
/// A user typing in a command option that offers suggestions.
pub const APPLICATION_COMMAND_AUTOCOMPLETE: u8 = 4;
/// A form (modal) sent back.
pub const MODAL_SUBMIT: u8 = 5;
/// `data.type` of a command run from a message's menu (Apps → ...).
pub const MESSAGE_COMMAND: u8 = 3;
/// At most this many attachments of a message asked about are fetched.
pub const MAX_ABOUT_ATTACHMENTS: usize = 4;
/// Message flag: only the invoking user sees it.
pub const EPHEMERAL: u64 = 64;
/// An interaction token is valid this long after the interaction was created.
pub const TOKEN_LIFETIME_MS: i64 = 15 * 60 * 1000;
/// Safety margin: a reply of several chunks must finish before the token dies.
pub const TOKEN_MARGIN_MS: i64 = 30 * 1000;
/// How long after the interaction a model call may still start (the turn's
/// [`ReplyTarget::deadline_ms`]): two minutes before the token dies, so the
/// answer of a call started in time, or the note that the turn stopped,
/// still reaches the user through the token.
pub const TURN_WINDOW_MS: i64 = TOKEN_LIFETIME_MS - 2 * 60 * 1000;
/// Channel types of threads (announcement, public, private): they have a parent channel.
const THREAD_TYPES: [u8; 3] = [10, 11, 12];
/// Discord's epoch (2015-01-01) for snowflake timestamps.
const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

#[derive(Debug, Clone, hearth_json::Deserialize, Default)]
pub struct PartialChannel {
    pub id: String,
    #[serde(default, rename = "type")]
    pub kind: Option<u8>,
    /// A thread's parent channel (for other channels: their category).
    #[serde(default)]
    pub parent_id: Option<String>,
}

#[derive(Debug, Clone, hearth_json::Deserialize, Default)]
pub struct Resolved {
    #[serde(default)]
    pub attachments: HashMap<String, Attachment>,
    /// The message a message command was run on.
    #[serde(default)]
    pub messages: HashMap<String, ResolvedMessage>,
}

/// A message as Discord resolves it for a message command. Apps get its
/// content here even without the message content intent.
#[derive(Debug, Clone, hearth_json::Deserialize, Default)]
pub struct ResolvedMessage {
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub author: Option<User>,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
}

#[derive(Debug, Clone, hearth_json::Deserialize)]
pub struct CommandOption {
    pub name: String,
    #[serde(default)]
    pub value: Option<Value>,
}

/// The `data` of an interaction: a command's (name, options, resolved
/// objects), or a component's or modal's (`custom_id`; no name).
#[derive(Debug, Clone, hearth_json::Deserialize)]
pub struct CommandData {
    #[serde(default)]
    pub name: String,
    /// 1 slash command, 2 user command, 3 message command.
    #[serde(default, rename = "type")]
    pub kind: Option<u8>,
    #[serde(default)]
    pub options: Vec<CommandOption>,
    #[serde(default)]
    pub resolved: Option<Resolved>,
    /// The message (or user) a context-menu command was run on.
    #[serde(default)]
    pub target_id: Option<String>,
    /// A component's own id (a button's `custom_id`).
    #[serde(default)]
    pub custom_id: Option<String>,
}

/// An interaction as Discord POSTs it (fields Hearth does not use are ignored).
#[derive(Debug, Clone, hearth_json::Deserialize)]
pub struct Interaction {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: u8,
    #[serde(default)]
    pub application_id: Option<String>,
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub guild_id: Option<String>,
    #[serde(default)]
    pub channel_id: Option<String>,
    #[serde(default)]
    pub channel: Option<PartialChannel>,
    #[serde(default)]
    pub member: Option<Member>,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub data: Option<CommandData>,
    /// 0 guild, 1 the bot's DM, 2 a private channel (user-installed apps).
    #[serde(default)]
    pub context: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Ask {
        prompt: String,
        attachment: Option<Attachment>,
    },
    /// A message command ("Ask Hearth" in a message's Apps menu): ask about
    /// that message, its text as context and its attachments as media.
    AskAbout {
        attachments: Vec<Attachment>,
    },
    Reset,
    Status,
    /// `/undo`: revert the agent's last workspace change (the owner's DM only).
    Undo,
    /// `/memory query`: search the memory store of this conversation's scope.
    Memory {
        query: String,
    },
    /// `/usage`: what the agent cost today and this month (owner only).
    Usage,
    Unknown(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InteractionError {
    #[error("malformed interaction: {0}")]
    Malformed(String),
    #[error("interaction has no {0}")]
    Missing(&'static str),
}

pub fn parse(body: &[u8]) -> Result<Interaction, InteractionError> {
    hearth_json::from_slice(body).map_err(|e| InteractionError::Malformed(e.to_string()))
}

impl Interaction {
    /// Who ran the command: `member.user` in a guild, `user` elsewhere.
    pub fn invoker(&self) -> Option<&User> {
        self.member.as_ref().and_then(|m| m.user.as_ref()).or(self.user.as_ref())
    }

    pub fn channel_id(&self) -> Option<&str> {
        self.channel_id.as_deref().or(self.channel.as_ref().map(|c| c.id.as_str()))
    }

    /// When the command was run in a thread: the thread's parent channel.
    /// A thread follows its parent's permission (`ALLOW_FROM`) and is its own
    /// conversation in the parent's scope, like a Telegram forum topic.
    pub fn thread_parent(&self) -> Option<&str> {
        let ch = self.channel.as_ref()?;
        let is_thread = self.guild_id.is_some() && ch.kind.is_some_and(|k| THREAD_TYPES.contains(&k));
        ch.parent_id.as_deref().filter(|p| is_thread && !p.is_empty())
    }

    /// A guild channel, or a private channel a user-installed app was used in
    /// (other people read the answer there): group scope. The bot's own DM: direct.
    pub fn chat_kind(&self) -> ChatKind {
        if self.guild_id.is_some() || self.context == Some(2) {
            ChatKind::Group
        } else {
            ChatKind::Direct
        }
    }

    pub fn command(&self) -> Option<Command> {
        let data = self.data.as_ref()?;
        if data.kind == Some(MESSAGE_COMMAND) {
            let attachments = self.target_message().map(|m| m.attachments.clone()).unwrap_or_default();
            return Some(Command::AskAbout {
                attachments: attachments.into_iter().take(MAX_ABOUT_ATTACHMENTS).collect(),
            });
        }
        let opt = |name: &str| data.options.iter().find(|o| o.name == name).and_then(|o| o.value.as_ref());
        Some(match data.name.as_str() {
            "ask" => {
                let prompt = opt("prompt").and_then(Value::as_str).unwrap_or("").to_owned();
                let attachment = opt("attachment")
                    .and_then(Value::as_str)
                    .and_then(|id| data.resolved.as_ref()?.attachments.get(id).cloned());
                Command::Ask { prompt, attachment }
            }
            "reset" => Command::Reset,
            "status" => Command::Status,
            "undo" => Command::Undo,
            "usage" => Command::Usage,
            "memory" => Command::Memory { query: opt("query").and_then(Value::as_str).unwrap_or("").to_owned() },
            other => Command::Unknown(other.to_owned()),
        })
    }

    /// The message a message command was run on.
    pub fn target_message(&self) -> Option<&ResolvedMessage> {
        let data = self.data.as_ref()?;
        data.resolved.as_ref()?.messages.get(data.target_id.as_deref()?)
    }

    /// What the interaction refers to. A slash command carries no reply
    /// (Discord offers none); a message command carries its message.
    pub fn context(&self) -> Vec<MessageContext> {
        let Some(m) = self.target_message() else { return vec![] };
        let mut text: Vec<String> = m
            .attachments
            .iter()
            .map(|a| if a.filename.is_empty() { "[attachment]".to_owned() } else { format!("[{}]", a.filename) })
            .collect();
        if !m.content.trim().is_empty() {
            text.push(m.content.trim().to_owned());
        }
        let author = m.author.as_ref().map(super::wire::User::display);
        vec![MessageContext::About { author, text: text.join(" ") }]
    }

    /// When Discord created the interaction (its token's lifetime starts
    /// then), from the snowflake id; `now` when the id is not a snowflake or
    /// claims the future.
    pub fn created_ms(&self, now_ms: i64) -> i64 {
        snowflake_ms(&self.id).filter(|&t| t <= now_ms).unwrap_or(now_ms)
    }
}

pub fn snowflake_ms(id: &str) -> Option<i64> {
    let n: u64 = id.parse().ok()?;
    Some((n >> 22) as i64 + DISCORD_EPOCH_MS)
}

/// What the reply channel needs beyond the chat id, kept in [`ReplyTarget::extra`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct ReplyExtra {
    /// The interaction token (valid 15 minutes).
    pub token: String,
    /// The application the token belongs to (the interaction's `application_id`).
    #[serde(default)]
    pub app: Option<String>,
    /// When the interaction was created, ms since the epoch.
    pub created: i64,
}

impl ReplyExtra {
    pub fn from_target(target: &ReplyTarget) -> Option<ReplyExtra> {
        hearth_json::from_slice(target.extra.as_deref()?.as_bytes()).ok()
    }

    /// Whether the token is (about to be) dead: past its 15 minutes minus a margin.
    pub fn token_expired(&self, now_ms: i64) -> bool {
        now_ms >= self.created.saturating_add(TOKEN_LIFETIME_MS - TOKEN_MARGIN_MS)
    }
}

/// The message a command becomes. Commands always address the agent. In a
/// thread the conversation is `chat` = parent, `thread` = the thread, and
/// replies go to the thread. A model call may start up to `turn_window_ms`
/// after the interaction was created ([`TURN_WINDOW_MS`] unless a test says
/// otherwise).
pub fn to_inbound(
    i: &Interaction,
    text: String,
    media: Vec<InboundMedia>,
    now_ms: i64,
    turn_window_ms: i64,
) -> Result<Inbound, InteractionError> {
    let user = i.invoker().ok_or(InteractionError::Missing("user"))?;
    let channel_id = i.channel_id().ok_or(InteractionError::Missing("channel"))?;
    let token = i.token.clone().ok_or(InteractionError::Missing("token"))?;
    let created = i.created_ms(now_ms);
    let extra = ReplyExtra { token, app: i.application_id.clone(), created };
    let sender_name = user.display();
    let (chat, thread) = match i.thread_parent() {
        Some(parent) => (parent, Some(channel_id.to_owned())),
        None => (channel_id, None),
    };
    Ok(Inbound {
        dedupe_key: format!("discord:interaction:{}", i.id),
        channel: ChannelKind::Discord,
        kind: i.chat_kind(),
        chat_id: chat.to_owned(),
        sender_id: user.id.clone(),
        sender_name,
        text,
        addressed: true,
        thread_id: thread,
        reply_target: ReplyTarget {
            channel: ChannelKind::Discord,
            // Where a late answer is posted with the bot token: the thread itself.
            chat_id: channel_id.to_owned(),
            extra: serde_json::to_string(&extra).ok(),
            deadline_ms: Some(created.saturating_add(turn_window_ms)),
            ..Default::default()
        },
        received_at: now_ms,
        media,
        context: i.context(),
        group: None,
        mentions: vec![],
        batch: None,
        order: SendOrder::discord(&i.id),
    })
}

pub fn attachment_media(a: &Attachment) -> InboundMedia {
    InboundMedia {
        handle: a.url.clone(),
        mime_type: a.content_type.clone().unwrap_or_else(|| "application/octet-stream".into()),
        filename: Some(a.filename.clone()).filter(|f| !f.is_empty()),
        size: a.size,
        kind: "attachment".into(),
    }
}

pub fn pong() -> Value {
    json!({"type": 1})
}

/// "Thinking…": the answer follows by editing this message.
pub fn deferred() -> Value {
    json!({"type": 5})
}

/// The answer to an autocomplete request: no suggestions (Hearth's options
/// offer none; Discord wants a type 8 answer all the same).
pub fn no_choices() -> Value {
    json!({"type": 8, "data": {"choices": []}})
}

/// What a button, a select menu or a form sent to Hearth is told: Hearth
/// sends none of its own, so these belong to something else.
pub fn not_handled_text(kind: u8) -> String {
    let what = match kind {
        MESSAGE_COMPONENT => "Buttons and menus",
        MODAL_SUBMIT => "Forms",
        _ => "This kind of interaction",
    };
    format!("{what} are not something I handle. Use /ask to talk to me.")
}

/// An immediate answer only the invoking user sees.
pub fn ephemeral(text: &str) -> Value {
    json!({"type": 4, "data": {"content": text, "flags": EPHEMERAL, "allowed_mentions": {"parse": []}}})
}

pub fn channel_not_allowed_text(channel_id: &str) -> String {
    format!("I don't answer in this channel. To allow it, add discord:{channel_id} to ALLOW_FROM.")
}

/// `/status`, from the Session object's `GET /status` answer.
pub fn status_text(status: &crate::protocol::session::SessionStatus) -> String {
    let key = status.session_key.as_ref().map(|k| k.render()).unwrap_or_else(|| "(new session)".into());
    let messages = status.message_count;
    let queued = status.open;
    let u = &status.usage;
    if status.session_id.is_none() && messages == 0 {
        return format!("Session `{key}`: no conversation yet ({queued} queued).");
    }
    let mut text = format!(
        "**Session** `{key}`\nMessages: {messages} ({queued} queued)\nTokens: {} in, {} out, {} cache read, {} cache write ({} total)",
        u.input, u.output, u.cache_read, u.cache_write, u.total_tokens,
    );
    let (waiting, lost) = (status.outbox.waiting.len(), status.outbox.undelivered.len());
    if waiting > 0 {
        text.push_str(&format!("\nReplies waiting to be delivered: {waiting}"));
    }
    if lost > 0 {
        text.push_str(&format!("\nReplies not delivered (last week): {lost}"));
    }
    text
}

#[cfg(test)]
mod tests;
