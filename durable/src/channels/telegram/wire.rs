//! Telegram's `Update` JSON (Bot API), only the fields Hearth reads.
//!
//! Unknown fields are ignored, so a new Bot API field never breaks the
//! webhook; their names are kept ([`Update::other`], [`TgMessage::other`])
//! to say what an ignored update was, and to tell service messages and kinds
//! of message Hearth cannot read apart from empty ones. The content a
//! message carries besides text ([`Content`]) is also what an
//! `external_reply` carries, so both share one struct. Descriptive content
//! (a poll, a contact, ...) that does not have the documented shape is
//! dropped rather than failing the whole update.

use serde::de::{DeserializeOwned, Deserializer, IgnoredAny};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<TgMessage>,
    /// An edit is never parsed: it starts no turn (see [`super::to_inbound`]).
    #[serde(default)]
    pub edited_message: Option<IgnoredAny>,
    /// The other fields, by name: what kind of update this is when it is not a message.
    #[serde(flatten)]
    pub other: BTreeMap<String, IgnoredAny>,
}

#[derive(Debug, Deserialize)]
pub struct TgMessage {
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
    /// A reply to a message in another chat (Bot API 7.0).
    #[serde(default)]
    pub external_reply: Option<Box<ExternalReply>>,
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
    #[serde(flatten)]
    pub content: Content,
    /// Every other field, by name (declared last: the flattened content takes its own first).
    #[serde(flatten)]
    pub other: BTreeMap<String, IgnoredAny>,
}

/// A user or a chat: the Bot API's `User` and `Chat` share what Hearth needs
/// (an id and a name), and old updates put a chat where a user belongs.
#[derive(Debug, Clone, Default, Deserialize)]
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

#[derive(Debug, Deserialize)]
pub struct Entity {
    #[serde(rename = "type")]
    pub kind: String,
    pub offset: usize,
    pub length: usize,
    #[serde(default)]
    pub user: Option<Party>,
}

/// What a message carries besides its text (shared with [`ExternalReply`]).
#[derive(Debug, Default, Deserialize)]
pub struct Content {
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
    #[serde(default, deserialize_with = "lenient")]
    pub location: Option<Location>,
    #[serde(default, deserialize_with = "lenient")]
    pub venue: Option<Venue>,
    #[serde(default, deserialize_with = "lenient")]
    pub contact: Option<Contact>,
    #[serde(default, deserialize_with = "lenient")]
    pub dice: Option<Dice>,
    #[serde(default, deserialize_with = "lenient")]
    pub poll: Option<Poll>,
    #[serde(default, deserialize_with = "lenient")]
    pub story: Option<Story>,
    #[serde(default, deserialize_with = "lenient")]
    pub game: Option<Game>,
    #[serde(default, deserialize_with = "lenient")]
    pub checklist: Option<Checklist>,
    #[serde(default, deserialize_with = "lenient")]
    pub invoice: Option<Invoice>,
    #[serde(default, deserialize_with = "lenient")]
    pub web_app_data: Option<WebAppData>,
    #[serde(default, deserialize_with = "lenient")]
    pub users_shared: Option<UsersShared>,
    #[serde(default, deserialize_with = "lenient")]
    pub chat_shared: Option<ChatShared>,
    #[serde(default)]
    pub giveaway: Option<IgnoredAny>,
    #[serde(default)]
    pub paid_media: Option<IgnoredAny>,
}

/// `Some` when the value has the documented shape, `None` otherwise.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// Bot API 7.0 `ExternalReplyInfo`: a message in another chat (or a channel).
#[derive(Debug, Deserialize)]
pub struct ExternalReply {
    #[serde(default, deserialize_with = "lenient")]
    pub origin: Option<Origin>,
    #[serde(default)]
    pub chat: Option<Party>,
    #[serde(flatten)]
    pub content: Content,
}

/// Bot API 7.0 `TextQuote`.
#[derive(Debug, Deserialize)]
pub struct TextQuote {
    #[serde(default)]
    pub text: String,
}

/// Bot API 7.0 `MessageOrigin`: `user`, `hidden_user`, `chat`, `channel`.
#[derive(Debug, Deserialize)]
pub struct Origin {
    #[serde(rename = "type")]
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
    #[serde(default)]
    pub set_name: Option<String>,
    /// `thumbnail` since Bot API 6.6, `thumb` before.
    #[serde(default, alias = "thumb")]
    pub thumbnail: Option<PhotoSize>,
}

#[derive(Debug, Deserialize)]
pub struct Location {
    pub latitude: f64,
    pub longitude: f64,
    #[serde(default)]
    pub horizontal_accuracy: Option<f64>,
    /// Set while the location is live (updated for this many seconds).
    #[serde(default)]
    pub live_period: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub struct Venue {
    pub location: Location,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub address: String,
}

#[derive(Debug, Deserialize)]
pub struct Contact {
    #[serde(default)]
    pub phone_number: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: Option<String>,
    #[serde(default)]
    pub user_id: Option<i64>,
    #[serde(default)]
    pub vcard: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Dice {
    pub emoji: String,
    pub value: i64,
}

#[derive(Debug, Deserialize)]
pub struct Poll {
    pub question: String,
    #[serde(default)]
    pub options: Vec<PollOption>,
    #[serde(default)]
    pub total_voter_count: u64,
    /// `regular` or `quiz`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub is_closed: bool,
}

#[derive(Debug, Deserialize)]
pub struct PollOption {
    pub text: String,
    #[serde(default)]
    pub voter_count: u64,
}

#[derive(Debug, Deserialize)]
pub struct Story {
    #[serde(default)]
    pub chat: Option<Party>,
}

#[derive(Debug, Deserialize)]
pub struct Game {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
pub struct Checklist {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub tasks: Vec<ChecklistTask>,
}

#[derive(Debug, Deserialize)]
pub struct ChecklistTask {
    #[serde(default)]
    pub text: String,
    /// Set once the task is done.
    #[serde(default)]
    pub completion_date: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub struct Invoice {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
pub struct WebAppData {
    #[serde(default)]
    pub data: String,
    #[serde(default)]
    pub button_text: String,
}

#[derive(Debug, Deserialize)]
pub struct UsersShared {
    #[serde(default)]
    pub user_ids: Vec<i64>,
    #[serde(default)]
    pub users: Vec<SharedUser>,
}

#[derive(Debug, Deserialize)]
pub struct SharedUser {
    pub user_id: i64,
    #[serde(default)]
    pub first_name: Option<String>,
    #[serde(default)]
    pub last_name: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ChatShared {
    pub chat_id: i64,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
}
