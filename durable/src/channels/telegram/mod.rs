//! Telegram updates as [`Inbound`] messages: [`to_inbound`] decides, for
//! every update the webhook receives, either the message the runtime sees
//! (its text, or a description of what it carries when it has none, its
//! attachments, and what it replies to or was forwarded from) or why it is
//! ignored ([`Ignored`]). Pure: `tests.rs` runs it on every real update in
//! `tests/fixtures/real-world/telegram/`.

pub mod arrivals;
pub mod buttons;
pub mod callback;
pub mod classify;
pub mod client;
pub mod context;
pub mod describe;
pub mod format;
pub mod preview;
pub mod username;
pub mod webhook;
pub mod wire;

#[cfg(test)]
mod tests;

use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SendOrder};
pub use callback::{button_tap, ButtonTap};
pub use describe::TELEGRAM_DOWNLOAD_LIMIT;
pub use wire::{Entity, TgMessage, Update};

/// The bot's own id (from its token) and username (from `getMe`, when needed).
#[derive(Debug, Clone, Default)]
pub struct BotIdentity {
    pub id: i64,
    pub username: Option<String>,
}

/// Why an update starts no turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ignored {
    /// Not a new message (`callback_query`, `poll`, `my_chat_member`,
    /// `channel_post`, `business_message`, ...): named by its field.
    #[error("not a message ({0})")]
    NotAMessage(String),
    /// An edit. Correcting a typo after the answer should not buy a second
    /// answer (nor download the media again), and an edit of a message
    /// still waiting in the queue is answered as first sent.
    #[error("an edit")]
    Edit,
    /// A chat Hearth does not serve (a channel), or one it cannot tell.
    #[error("a {0} chat")]
    Chat(String),
    /// A message with no sender (`from`).
    #[error("a message without a sender")]
    NoSender,
    /// A service message: someone joined or left, a message was pinned, a
    /// topic was created... Nobody wrote to the agent.
    #[error("a service message ({0})")]
    Service(String),
    /// Nothing in it: no text, no attachment, nothing to describe.
    #[error("an empty message")]
    Empty,
}

/// Fields of service messages: events in a chat, not something said.
const SERVICE_FIELDS: &[&str] = &[
    "new_chat_members",
    "left_chat_member",
    "new_chat_title",
    "new_chat_photo",
    "delete_chat_photo",
    "group_chat_created",
    "supergroup_chat_created",
    "channel_chat_created",
    "message_auto_delete_timer_changed",
    "migrate_to_chat_id",
    "migrate_from_chat_id",
    "pinned_message",
    "successful_payment",
    "refunded_payment",
    "connected_website",
    "write_access_allowed",
    "passport_data",
    "proximity_alert_triggered",
    "boost_added",
    "chat_background_set",
    "checklist_tasks_done",
    "checklist_tasks_added",
    "direct_message_price_changed",
    "forum_topic_created",
    "forum_topic_edited",
    "forum_topic_closed",
    "forum_topic_reopened",
    "general_forum_topic_hidden",
    "general_forum_topic_unhidden",
    "giveaway_created",
    "giveaway_completed",
    "giveaway_winners",
    "paid_message_price_changed",
    "video_chat_scheduled",
    "video_chat_started",
    "video_chat_ended",
    "video_chat_participants_invited",
    "gift",
    "unique_gift",
];

/// Fields about a message rather than in it: when a message has nothing
/// else, these do not make it a kind Hearth cannot read.
const METADATA_FIELDS: &[&str] = &[
    "date",
    "edit_date",
    "business_connection_id",
    "sender_boost_count",
    "sender_business_bot",
    "sender_tag",
    "forward_date",
    "is_automatic_forward",
    "is_from_offline",
    "is_paid_post",
    "has_protected_content",
    "has_media_spoiler",
    "show_caption_above_media",
    "media_group_id",
    "author_signature",
    "paid_star_count",
    "via_bot",
    "reply_markup",
    "reply_to_story",
    "reply_to_checklist_task_id",
    "link_preview_options",
    "effect_id",
    "direct_messages_topic",
    "suggested_post_info",
    "guest_query_id",
    // Bot API 6.5's single-user form, sent beside `users_shared`.
    "user_shared",
];

impl TgMessage {
    /// The text and its entities (or the caption and its entities).
    pub fn body(&self) -> (&str, &[Entity]) {
        match (&self.text, &self.caption) {
            (Some(t), _) => (t, &self.entities),
            (None, Some(c)) => (c, &self.caption_entities),
            _ => ("", &[]),
        }
    }

    fn is_group(&self) -> bool {
        matches!(self.chat.kind.as_deref(), Some("group" | "supergroup"))
    }

    /// Whether resolving "addressed to us" needs the bot's username: a group
    /// message with a mention, or a command with an `@bot` suffix.
    pub fn needs_username(&self) -> bool {
        let (text, entities) = self.body();
        self.is_group()
            && entities.iter().any(|e| {
                e.kind == "mention"
                    || (e.kind == "bot_command"
                        && utf16_slice(text, e.offset, e.length).is_some_and(|c| c.contains('@')))
            })
    }

    /// Mentioned by @username or text mention, replied to, or commanded.
    fn addresses(&self, bot: &BotIdentity) -> bool {
        let (text, entities) = self.body();
        let named =
            |s: &str| bot.username.as_deref().is_some_and(|u| s.trim_start_matches('@').eq_ignore_ascii_case(u));
        let by_entity = entities.iter().any(|e| match e.kind.as_str() {
            "mention" => utf16_slice(text, e.offset, e.length).is_some_and(|m| named(&m)),
            "text_mention" => e.user.as_ref().is_some_and(|u| u.id == bot.id),
            "bot_command" if e.offset == 0 => match utf16_slice(text, e.offset, e.length) {
                Some(cmd) => match cmd.split_once('@') {
                    Some((_, target)) => named(target),
                    None => true,
                },
                None => false,
            },
            _ => false,
        });
        let replied = self.reply_to_message.as_ref().and_then(|r| r.from.as_ref()).is_some_and(|u| u.id == bot.id);
        by_entity || replied
    }

    /// The message's text: what the user wrote, else a description of what
    /// it carries in brackets (`[location: …]`), else a note naming a kind
    /// of message Hearth cannot read. Empty for a bare attachment (the media
    /// path shows it).
    fn text(&self) -> String {
        let body = self.body().0;
        if !body.trim().is_empty() {
            return body.to_owned();
        }
        if let Some(d) = describe::content(self) {
            return format!("[{d}]");
        }
        if describe::file_noun(self).is_some() {
            return String::new();
        }
        let unknown: Vec<&str> = self
            .other
            .keys()
            .map(String::as_str)
            .filter(|k| !METADATA_FIELDS.contains(k) && !describe::DESCRIBED_FIELDS.contains(k))
            .collect();
        if unknown.is_empty() {
            String::new()
        } else {
            format!("[a kind of Telegram message I cannot read: {}]", unknown.join(", "))
        }
    }
}

/// The message as the runtime sees it, or why there is none.
pub fn to_inbound(update: &Update, bot: &BotIdentity, now_ms: i64) -> Result<Inbound, Ignored> {
    let Some(msg) = update.message.as_ref() else {
        if update.edited_message.is_some() {
            return Err(Ignored::Edit);
        }
        let kind = update.other.keys().next().cloned().unwrap_or_else(|| "nothing".into());
        return Err(Ignored::NotAMessage(kind));
    };
    let kind = match msg.chat.kind.as_deref() {
        Some("private") => ChatKind::Direct,
        Some("group" | "supergroup") => ChatKind::Group,
        // The docs' oldest examples omit the type; a user's id (a private chat) is positive.
        None if msg.chat.id > 0 => ChatKind::Direct,
        Some(other) => return Err(Ignored::Chat(other.to_owned())),
        None => return Err(Ignored::Chat("untyped".into())),
    };
    let from = msg.from.as_ref().ok_or(Ignored::NoSender)?;
    if let Some(field) = SERVICE_FIELDS.iter().find(|f| msg.other.contains_key(**f)) {
        return Err(Ignored::Service((*field).to_owned()));
    }
    let text = msg.text();
    let media = describe::media(msg);
    let context = context::of(msg, bot);
    if text.trim().is_empty() && media.is_empty() && context.is_empty() {
        return Err(Ignored::Empty);
    }
    let thread_id = match (msg.is_topic_message, msg.message_thread_id) {
        (Some(true), Some(t)) => Some(t.to_string()),
        _ => None,
    };
    let first = from.first_name.clone().unwrap_or_default();
    let sender_name = match (&from.username, &from.last_name) {
        (Some(u), _) => format!("{first} (@{u})"),
        (None, Some(l)) => format!("{first} {l}"),
        (None, None) => first,
    };
    Ok(Inbound {
        dedupe_key: format!("telegram:update:{}", update.update_id),
        channel: ChannelKind::Telegram,
        kind,
        chat_id: msg.chat.id.to_string(),
        sender_id: from.id.to_string(),
        sender_name,
        text,
        addressed: kind == ChatKind::Direct || msg.addresses(bot),
        thread_id: thread_id.clone(),
        reply_target: ReplyTarget {
            channel: ChannelKind::Telegram,
            chat_id: msg.chat.id.to_string(),
            // The message answered: text replies quote it in groups only
            // (see `client`), a voice note replies to it everywhere.
            reply_to: Some(msg.message_id.to_string()),
            thread_id,
            ..Default::default()
        },
        received_at: now_ms,
        media,
        context,
        group: None,
        mentions: vec![],
        // The photos of an album: one update each, answered in one turn.
        batch: msg.other.get("media_group_id").and_then(|v| v.as_str()).map(|id| format!("telegram:album:{id}")),
        order: Some(SendOrder::telegram(msg.chat.id, msg.message_id, update.update_id)),
    })
}

/// Telegram entity offsets count UTF-16 code units.
pub fn utf16_slice(text: &str, offset: usize, length: usize) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let end = offset.checked_add(length)?;
    String::from_utf16(units.get(offset..end)?).ok()
}
