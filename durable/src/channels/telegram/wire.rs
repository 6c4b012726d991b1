//! Telegram's `Update` JSON (Bot API), only the fields Hearth reads.
//!
//! Unknown fields are ignored, so a new Bot API field never breaks the
//! webhook; their names are kept ([`Update::other`], [`TgMessage::other`])
//! to say what an ignored update was, and to tell service messages and kinds
//! of message Hearth cannot read apart from empty ones. An `external_reply`
//! (Bot API 7.0 `ExternalReplyInfo`) carries a message's content fields
//! under the same names, so it is read as a [`TgMessage`] too.
//!
//! The content Hearth only describes (a location, a poll, a contact, ...)
//! stays JSON in [`TgMessage::other`] and is read field by field where it is
//! described: a typed struct per kind cost ~100 kB of the Worker's upload
//! (serde's code per struct and per field type), and a part Telegram leaves
//! out or changes only leaves that part out of the description.

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// Read through [`hearth_json::with_rest`] (its `Deserialize` below): `other`
/// is filled there, not by serde's `flatten`.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<TgMessage>,
    /// An edit is never parsed: it starts no turn (see [`super::to_inbound`]).
    #[serde(default)]
    pub edited_message: Option<IgnoredAny>,
    /// The other fields, by name: what kind of update this is when it is not a message.
    #[serde(skip)]
    pub other: Map<String, Value>,
}

/// Read like [`Update`].
#[derive(Debug, Deserialize)]
#[serde(remote = "Self")]
pub struct TgMessage {
    /// Always sent for a message; absent in an `external_reply`.
    #[serde(default)]
    pub message_id: i64,
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: Option<bool>,
    #[serde(default)]
    pub from: Option<Party>,
    /// Sent on behalf of a chat (an anonymous group admin, a channel).
    #[serde(default)]
    pub sender_chat: Option<Party>,
    /// Always sent for a message (an absent one has no type, and is ignored);
    /// optional in an `external_reply`.
    #[serde(default)]
    pub chat: Party,
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
    /// A reply to a message in another chat (Bot API 7.0), read as a message.
    #[serde(default)]
    pub external_reply: Option<Box<TgMessage>>,
    /// An `external_reply`'s origin: whose message it was.
    #[serde(default)]
    pub origin: Option<Origin>,
    /// The part of the replied-to message the user quoted (Bot API 7.0).
    #[serde(default)]
    pub quote: Option<TextQuote>,
    /// Who first sent a forwarded message (Bot API 7.0).
    #[serde(default)]
    pub forward_origin: Option<Origin>,
    /// Before Bot API 7.0: the forward's sender (a user; the docs' example
    /// shows a channel here too), its chat, a hidden sender's name.
    #[serde(default)]
    pub forward_from: Option<Party>,
    #[serde(default)]
    pub forward_from_chat: Option<Party>,
    #[serde(default)]
    pub forward_sender_name: Option<String>,
    #[serde(default)]
    pub forward_signature: Option<String>,
    // What the message carries besides text.
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
    #[serde(default)]
    pub document: Option<FileRef>,
    #[serde(default)]
    pub animation: Option<FileRef>,
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
    /// Every other field, by name: what the message carries when it is not
    /// text or a file (`location`, `poll`, `contact`, ... read by
    /// [`super::describe`]), service events, and kinds newer than Hearth.
    #[serde(skip)]
    pub other: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Update {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (mut update, other) = hearth_json::with_rest(d, |d| Update::deserialize(d))?;
        update.other = other;
        Ok(update)
    }
}

impl<'de> Deserialize<'de> for TgMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (mut message, other) = hearth_json::with_rest(d, |d| TgMessage::deserialize(d))?;
        message.other = other;
        Ok(message)
    }
}

/// A user or a chat: the Bot API's `User` and `Chat` share what Hearth needs
/// (an id and a name), and old updates put a chat where a user belongs.
#[derive(Debug, Clone, Default, hearth_json::Deserialize)]
pub struct Party {
    pub id: i64,
    /// Chats: `private`, `group`, `supergroup`, `channel`. Absent on users
    /// (and on chats of the docs' oldest examples).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub first_name: Option<String>,
    #[serde(default)]
    pub last_name: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

#[derive(Debug, hearth_json::Deserialize)]
pub struct Entity {
    #[serde(rename = "type")]
    pub kind: String,
    pub offset: usize,
    pub length: usize,
    #[serde(default)]
    pub user: Option<Party>,
}

/// Bot API 7.0 `TextQuote`.
#[derive(Debug, hearth_json::Deserialize)]
pub struct TextQuote {
    #[serde(default)]
    pub text: String,
}

/// Bot API 7.0 `MessageOrigin`: `user`, `hidden_user`, `chat`, `channel`.
#[derive(Debug, hearth_json::Deserialize)]
pub struct Origin {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub sender_user: Option<Party>,
    #[serde(default)]
    pub sender_user_name: Option<String>,
    #[serde(default)]
    pub sender_chat: Option<Party>,
    #[serde(default)]
    pub chat: Option<Party>,
    #[serde(default)]
    pub author_signature: Option<String>,
}

#[derive(Debug, hearth_json::Deserialize)]
pub struct PhotoSize {
    pub file_id: String,
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
}

#[derive(Debug, hearth_json::Deserialize)]
pub struct FileRef {
    pub file_id: String,
    #[serde(default)]
    pub file_name: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub file_size: Option<u64>,
}

#[derive(Debug, hearth_json::Deserialize)]
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
    #[serde(default)]
    pub set_name: Option<String>,
    /// `thumbnail` since Bot API 6.6, `thumb` before.
    #[serde(default, alias = "thumb")]
    pub thumbnail: Option<PhotoSize>,
}
