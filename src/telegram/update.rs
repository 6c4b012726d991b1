//! Telegram's `Update` JSON (Bot API), parsed leniently into an [`Inbound`].
//!
//! Only the fields Hearth uses are declared; unknown ones are ignored, so a
//! new Bot API field never breaks the webhook. Anything that is not a message
//! (callback queries, member updates, ...) parses and is acknowledged.

use durable::inbound::ReplyTarget;
use durable::inbound::{ChatKind, Inbound, InboundMedia};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<TgMessage>,
    #[serde(default)]
    pub edited_message: Option<TgMessage>,
}

#[derive(Debug, Deserialize)]
pub struct TgMessage {
    pub message_id: i64,
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: Option<bool>,
    #[serde(default)]
    pub from: Option<User>,
    pub chat: Chat,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub entities: Vec<Entity>,
    #[serde(default)]
    pub caption_entities: Vec<Entity>,
    #[serde(default)]
    pub reply_to_message: Option<Box<TgMessage>>,
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
    #[serde(default)]
    pub document: Option<FileRef>,
    #[serde(default)]
    pub voice: Option<FileRef>,
    #[serde(default)]
    pub audio: Option<FileRef>,
    #[serde(default)]
    pub video: Option<FileRef>,
    #[serde(default)]
    pub video_note: Option<FileRef>,
    #[serde(default)]
    pub sticker: Option<Sticker>,
}

#[derive(Debug, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Chat {
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Deserialize)]
pub struct Entity {
    #[serde(rename = "type")]
    pub kind: String,
    pub offset: usize,
    pub length: usize,
    #[serde(default)]
    pub user: Option<User>,
}

#[derive(Debug, Deserialize)]
pub struct PhotoSize {
    pub file_id: String,
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
}

#[derive(Debug, Deserialize)]
pub struct FileRef {
    pub file_id: String,
    #[serde(default)]
    pub file_name: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub file_size: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct Sticker {
    pub file_id: String,
    #[serde(default)]
    pub is_animated: bool,
    #[serde(default)]
    pub is_video: bool,
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub emoji: Option<String>,
}

/// The bot's own id (from its token) and username (from `getMe`, when needed).
#[derive(Debug, Clone, Default)]
pub struct BotIdentity {
    pub id: i64,
    pub username: Option<String>,
}

/// Largest file the Bot API's getFile serves (20 MB).
pub const TELEGRAM_DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;

impl Update {
    /// The new message carried. An edit (`edited_message`) is not one: see
    /// [`to_inbound`].
    pub fn message(&self) -> Option<&TgMessage> {
        self.message.as_ref()
    }
}

impl TgMessage {
    fn body(&self) -> (&str, &[Entity]) {
        match (&self.text, &self.caption) {
            (Some(t), _) => (t, &self.entities),
            (None, Some(c)) => (c, &self.caption_entities),
            _ => ("", &[]),
        }
    }

    fn is_group(&self) -> bool {
        matches!(self.chat.kind.as_str(), "group" | "supergroup")
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

    fn media(&self) -> Vec<InboundMedia> {
        let mut out = Vec::new();
        // The largest photo size Telegram will let us download.
        if let Some(p) = self
            .photo
            .iter()
            .filter(|p| p.file_size.unwrap_or(0) <= TELEGRAM_DOWNLOAD_LIMIT)
            .max_by_key(|p| (p.width as u64) * (p.height as u64))
            .or_else(|| self.photo.iter().min_by_key(|p| p.file_size.unwrap_or(0)))
        {
            out.push(InboundMedia {
                handle: p.file_id.clone(),
                mime_type: "image/jpeg".into(),
                filename: None,
                size: p.file_size,
                kind: "photo".into(),
            });
        }
        let files = [
            (&self.document, "document", "application/octet-stream"),
            (&self.voice, "voice", "audio/ogg"),
            (&self.audio, "audio", "audio/mpeg"),
            (&self.video, "video", "video/mp4"),
            (&self.video_note, "video_note", "video/mp4"),
        ];
        for (file, kind, default_mime) in files {
            if let Some(f) = file {
                out.push(InboundMedia {
                    handle: f.file_id.clone(),
                    mime_type: f.mime_type.clone().unwrap_or_else(|| default_mime.into()),
                    filename: f.file_name.clone(),
                    size: f.file_size,
                    kind: kind.into(),
                });
            }
        }
        if let Some(s) = &self.sticker {
            let mime = if s.is_video {
                "video/webm"
            } else if s.is_animated {
                "application/x-tgsticker"
            } else {
                "image/webp"
            };
            out.push(InboundMedia {
                handle: s.file_id.clone(),
                mime_type: mime.into(),
                filename: s.emoji.clone(),
                size: s.file_size,
                kind: "sticker".into(),
            });
        }
        out
    }
}

/// The message as the runtime sees it. `None` for chats Hearth does not
/// serve (channels), messages with no sender, and edits: correcting a typo
/// after the answer should not buy a second answer (nor download the media
/// again), and an edit of a message still waiting in the queue is answered
/// as first sent. Send a new message to ask again.
pub fn to_inbound(update: &Update, bot: &BotIdentity, now_ms: i64) -> Option<Inbound> {
    let msg = update.message()?;
    let kind = match msg.chat.kind.as_str() {
        "private" => ChatKind::Direct,
        "group" | "supergroup" => ChatKind::Group,
        _ => return None,
    };
    let from = msg.from.as_ref()?;
    let text = msg.body().0.to_owned();
    let thread_id = match (msg.is_topic_message, msg.message_thread_id) {
        (Some(true), Some(t)) => Some(t.to_string()),
        _ => None,
    };
    let sender_name = match (&from.username, &from.last_name) {
        (Some(u), _) => format!("{} (@{u})", from.first_name),
        (None, Some(l)) => format!("{} {l}", from.first_name),
        (None, None) => from.first_name.clone(),
    };
    Some(Inbound {
        dedupe_key: format!("telegram:update:{}", update.update_id),
        channel: "telegram".into(),
        kind,
        chat_id: msg.chat.id.to_string(),
        sender_id: from.id.to_string(),
        sender_name,
        text,
        addressed: kind == ChatKind::Direct || msg.addresses(bot),
        thread_id: thread_id.clone(),
        reply_target: ReplyTarget {
            channel: "telegram".into(),
            chat_id: msg.chat.id.to_string(),
            reply_to: (kind == ChatKind::Group).then(|| msg.message_id.to_string()),
            thread_id,
            ..Default::default()
        },
        received_at: now_ms,
        media: msg.media(),
    })
}

/// Telegram entity offsets count UTF-16 code units.
pub fn utf16_slice(text: &str, offset: usize, length: usize) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let end = offset.checked_add(length)?;
    String::from_utf16(units.get(offset..end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Update {
        serde_json::from_str(json).unwrap()
    }

    fn bot() -> BotIdentity {
        BotIdentity { id: 999, username: Some("hearth_bot".into()) }
    }

    #[test]
    fn private_text() {
        let u = parse(
            r#"{"update_id":1,"message":{"message_id":5,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Ana"},"text":"hi"}}"#,
        );
        let m = to_inbound(&u, &bot(), 0).unwrap();
        assert_eq!((m.kind, m.text.as_str(), m.addressed), (ChatKind::Direct, "hi", true));
        assert_eq!(m.dedupe_key, "telegram:update:1");
        assert_eq!(m.reply_target.reply_to, None);
    }

    #[test]
    fn group_addressing() {
        let base = |extra: &str| {
            parse(&format!(
                r#"{{"update_id":2,"message":{{"message_id":6,"date":1,"chat":{{"id":-100,"type":"supergroup"}},"from":{{"id":7,"first_name":"Bo"}},{extra}}}}}"#
            ))
        };
        let plain = base(r#""text":"hello all""#);
        assert!(!to_inbound(&plain, &bot(), 0).unwrap().addressed);
        let mention = base(r#""text":"héllo @hearth_bot","entities":[{"type":"mention","offset":6,"length":11}]"#);
        assert!(mention.message.as_ref().unwrap().needs_username());
        let m = to_inbound(&mention, &bot(), 0).unwrap();
        assert!(m.addressed);
        assert_eq!(m.reply_target.reply_to.as_deref(), Some("6"));
        let other = base(r#""text":"@someone_else","entities":[{"type":"mention","offset":0,"length":13}]"#);
        assert!(!to_inbound(&other, &bot(), 0).unwrap().addressed);
        let cmd = base(r#""text":"/help","entities":[{"type":"bot_command","offset":0,"length":5}]"#);
        assert!(to_inbound(&cmd, &bot(), 0).unwrap().addressed);
        let cmd_other = base(r#""text":"/help@other_bot","entities":[{"type":"bot_command","offset":0,"length":15}]"#);
        assert!(!to_inbound(&cmd_other, &bot(), 0).unwrap().addressed);
        let reply = base(
            r#""text":"yes","reply_to_message":{"message_id":3,"date":1,"chat":{"id":-100,"type":"supergroup"},"from":{"id":999,"first_name":"H","is_bot":true}}"#,
        );
        assert!(to_inbound(&reply, &bot(), 0).unwrap().addressed);
    }

    #[test]
    fn topics_captions_and_media() {
        let u = parse(
            r#"{"update_id":3,"message":{"message_id":8,"date":1,"message_thread_id":77,"is_topic_message":true,"chat":{"id":-100,"type":"supergroup"},"from":{"id":7,"first_name":"Bo","username":"bo"},"caption":"look","photo":[{"file_id":"s","file_size":10,"width":90,"height":90},{"file_id":"b","file_size":900,"width":800,"height":800}]}}"#,
        );
        let m = to_inbound(&u, &bot(), 0).unwrap();
        assert_eq!(m.text, "look");
        assert_eq!(m.thread_id.as_deref(), Some("77"));
        assert_eq!(m.media[0].handle, "b");
        assert_eq!(m.sender_name, "Bo (@bo)");
    }

    #[test]
    fn edits_start_no_turn() {
        let edit = parse(
            r#"{"update_id":9,"edited_message":{"message_id":8,"date":1,"edit_date":2,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ana"},"text":"hi (fixed)","photo":[{"file_id":"p","file_size":10,"width":9,"height":9}]}}"#,
        );
        assert!(edit.edited_message.is_some(), "an edit still parses");
        assert!(to_inbound(&edit, &bot(), 0).is_none());
    }

    #[test]
    fn non_messages_and_channels_are_not_inbound() {
        let u = parse(r#"{"update_id":4,"callback_query":{"id":"x"}}"#);
        assert!(to_inbound(&u, &bot(), 0).is_none());
        let c = parse(
            r#"{"update_id":5,"message":{"message_id":1,"date":1,"chat":{"id":-1,"type":"channel"},"text":"x"}}"#,
        );
        assert!(to_inbound(&c, &bot(), 0).is_none());
        assert!(serde_json::from_str::<Update>(r#"{"message":{}}"#).is_err());
        assert_eq!(utf16_slice("ab", 1, 5), None);
    }
}
