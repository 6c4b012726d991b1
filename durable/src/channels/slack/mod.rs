//! Slack, through the Events API (`POST /slack/{agentId}`): the request's
//! signature ([`verify`]), the envelope read ([`read`] → [`Envelope`]), the
//! event as an [`Inbound`] ([`to_inbound`]), the webhook's flow
//! ([`webhook`]), the Web API client ([`client`]: `chat.postMessage`,
//! `chat.update` for previews, file downloads), senders' names ([`names`]:
//! `users.info`) and `mrkdwn` ([`format`]).
//!
//! What starts a turn: `app_mention` in a channel (only mentions, so a
//! channel's chatter costs nothing) and `message` in the app's DMs
//! (`message.im`). In a channel the answer goes to the thread of the
//! mention (a new thread under a top-level mention), and each thread is its
//! own conversation; in a DM the answer follows the message (in its thread,
//! if the user wrote in one).
//!
//! The envelope is read field by field from JSON (no derived structs: a few
//! fields are read, and each derived struct costs upload size).

pub mod buttons;
pub mod classify;
pub mod client;
pub mod format;
pub mod names;
pub mod verify;
pub mod webhook;

#[cfg(test)]
mod tests;

use crate::inbound::{ChannelKind, ChatKind, Inbound, InboundMedia, ReplyTarget, SendOrder};
use serde_json::Value;

/// What Slack POSTed.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    /// The Request URL check: answer with the challenge.
    UrlVerification { challenge: String },
    /// An event: its id (the same on every retry), its team, and the event.
    Event { event_id: String, bot_user: Option<String>, event: Value },
    /// Anything else (`app_rate_limited`, a type newer than Hearth).
    Other(String),
}

/// Why an event starts no turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ignored {
    #[error("not a message event ({0})")]
    NotAMessage(String),
    /// A channel's ordinary message: only mentions reach the agent there
    /// (they come as `app_mention`, whether or not `message.channels` is on).
    #[error("a channel message without a mention")]
    ChannelMessage,
    /// A bot's (Hearth's own replies included): answering bots loops.
    #[error("written by a bot")]
    Bot,
    /// An edit, a deletion, a join, a topic change...
    #[error("a {0} message")]
    Subtype(String),
    #[error("an empty message")]
    Empty,
    #[error("a message without a {0}")]
    Missing(&'static str),
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Reads an Events API body.
pub fn read(body: &[u8]) -> Result<Envelope, String> {
    let v: Value = hearth_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    match str_of(&v, "type") {
        Some("url_verification") => Ok(Envelope::UrlVerification {
            challenge: str_of(&v, "challenge").ok_or("url_verification without a challenge")?.to_owned(),
        }),
        Some("event_callback") => {
            let event_id = str_of(&v, "event_id").ok_or("event_callback without an event_id")?.to_owned();
            // The app's bot user, to know its own mention and messages.
            let bot_user = v
                .get("authorizations")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|x| x.get("is_bot") == Some(&Value::Bool(true))))
                .and_then(|x| str_of(x, "user_id"))
                .map(str::to_owned);
            let event = v.get("event").filter(|e| e.is_object()).cloned().ok_or("event_callback without an event")?;
            Ok(Envelope::Event { event_id, bot_user, event })
        }
        Some(other) => Ok(Envelope::Other(other.to_owned())),
        None => Err("no type".into()),
    }
}

/// Message subtypes that are something a person said.
const SPOKEN_SUBTYPES: &[&str] = &["file_share", "thread_broadcast", "me_message"];

/// The event as the runtime sees it, or why there is none. `bot_user`: the
/// app's bot user id (the envelope's `authorizations`, or `SLACK_BOT_USER_ID`).
pub fn to_inbound(event: &Value, bot_user: Option<&str>, now_ms: i64) -> Result<Inbound, Ignored> {
    let kind = str_of(event, "type").unwrap_or("");
    if !matches!(kind, "app_mention" | "message") {
        return Err(Ignored::NotAMessage(kind.to_owned()));
    }
    if event.get("bot_id").is_some_and(|b| !b.is_null()) || str_of(event, "subtype") == Some("bot_message") {
        return Err(Ignored::Bot);
    }
    let chat_kind = match (kind, str_of(event, "channel_type")) {
        ("app_mention", _) => ChatKind::Group,
        (_, Some("im")) => ChatKind::Direct,
        _ => return Err(Ignored::ChannelMessage),
    };
    if let Some(sub) = str_of(event, "subtype").filter(|s| !SPOKEN_SUBTYPES.contains(s)) {
        return Err(Ignored::Subtype(sub.to_owned()));
    }
    let user = str_of(event, "user").ok_or(Ignored::Missing("user"))?;
    if bot_user == Some(user) {
        return Err(Ignored::Bot);
    }
    let channel = str_of(event, "channel").ok_or(Ignored::Missing("channel"))?;
    let ts = str_of(event, "ts").ok_or(Ignored::Missing("ts"))?;
    let raw = str_of(event, "text").unwrap_or("");
    // The mention that addressed the app is not part of what was said.
    let raw = match bot_user {
        Some(b) => raw.replace(&format!("<@{b}>"), ""),
        None if chat_kind == ChatKind::Group => strip_leading_mention(raw).to_owned(),
        None => raw.to_owned(),
    };
    let text = format::to_plain(raw.trim());
    let media = files(event);
    if text.trim().is_empty() && media.is_empty() {
        return Err(Ignored::Empty);
    }
    let thread = str_of(event, "thread_ts");
    // In a channel every mention is answered in its thread (a new one under a
    // top-level mention), and the thread is the conversation.
    let thread_id = match chat_kind {
        ChatKind::Group => Some(thread.unwrap_or(ts).to_owned()),
        ChatKind::Direct => thread.map(str::to_owned),
    };
    Ok(Inbound {
        // The message itself (the same on every retry, and whichever of
        // `app_mention` and `message` brought it).
        dedupe_key: format!("slack:{channel}:{ts}"),
        channel: ChannelKind::Slack,
        kind: chat_kind,
        chat_id: channel.to_owned(),
        sender_id: user.to_owned(),
        // The id until the webhook learns the name (`names::sender_name`).
        sender_name: user.to_owned(),
        text,
        addressed: true,
        thread_id: if chat_kind == ChatKind::Group { thread_id.clone() } else { None },
        reply_target: ReplyTarget {
            channel: ChannelKind::Slack,
            chat_id: channel.to_owned(),
            reply_to: Some(ts.to_owned()),
            thread_id,
            ..Default::default()
        },
        received_at: now_ms,
        media,
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: SendOrder::slack(ts),
    })
}

/// `<@U…> rest` → `rest` (an `app_mention` whose bot user is unknown).
fn strip_leading_mention(text: &str) -> &str {
    let t = text.trim_start();
    match (t.strip_prefix("<@"), t.find('>')) {
        (Some(_), Some(end)) => &t[end + 1..],
        _ => t,
    }
}

/// The files of a message, as media to download (with the bot token).
fn files(event: &Value) -> Vec<InboundMedia> {
    let Some(files) = event.get("files").and_then(Value::as_array) else { return vec![] };
    files
        .iter()
        .filter_map(|f| {
            let url = str_of(f, "url_private_download").or_else(|| str_of(f, "url_private"))?;
            let mime = str_of(f, "mimetype").unwrap_or("application/octet-stream");
            Some(InboundMedia {
                handle: url.to_owned(),
                mime_type: mime.to_owned(),
                filename: str_of(f, "name").map(str::to_owned),
                size: f.get("size").and_then(Value::as_u64),
                kind: if mime.starts_with("audio/") { "audio" } else { "attachment" }.into(),
            })
        })
        .collect()
}
