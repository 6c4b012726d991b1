//! WhatsApp, through Meta's WhatsApp Cloud API (`GET|POST /whatsapp/{agentId}`):
//! the subscription check and the `X-Hub-Signature-256` of every POST
//! ([`verify`]), the notification read into [`Inbound`] messages ([`read`],
//! [`to_inbound`]), the webhook's flow ([`webhook`]), the Graph API client
//! ([`client`]: `/{phone-number-id}/messages`, media by id) and WhatsApp's
//! text formatting ([`format`]).
//!
//! A WhatsApp conversation is one person and one business number, so every
//! message is a direct one; the owner's (`OWNER_IDS=whatsapp:+…`) reach the
//! main session. Text, images, audio (voice notes are transcribed as on
//! Telegram), documents, videos and stickers, locations and contacts are
//! read; a reaction is noted and starts no turn (a 👍 needs no answer);
//! delivery statuses start nothing (a failed one is logged).
//!
//! Replies may be sent only within 24 hours of the person's last message
//! (the customer-service window): each message's reply target carries when
//! its window closes, and a reply due after that is not sent but reported
//! (see [`client`]).
//!
//! Notifications are read field by field from JSON (no derived structs: a
//! few fields are read, and each derived struct costs upload size).

pub mod classify;
pub mod client;
pub mod format;
pub mod verify;
pub mod webhook;

#[cfg(test)]
mod tests;

use crate::inbound::{ChannelKind, ChatKind, Inbound, InboundMedia, MessageContext, ReplyTarget, SendOrder};
use serde_json::Value;

/// The customer-service window: replies within 24 hours of the person's message.
pub const WINDOW_MS: i64 = 24 * 3600 * 1000;

/// One message of a notification, with what it needs from around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    pub message: Value,
    /// The sender's profile name (the notification's `contacts`).
    pub name: Option<String>,
    /// The business number that received it (replies go from it).
    pub phone_number_id: String,
    /// That number as people see it (a reply to "your" message names it).
    pub display_number: String,
}

/// A delivery status Meta reported (`sent`, `delivered`, `read`, `failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub status: String,
    pub recipient: String,
    /// Why it failed (code, title, details), for the log.
    pub error: Option<String>,
}

/// What a notification held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notification {
    pub messages: Vec<Incoming>,
    pub statuses: Vec<Status>,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// Reads a webhook notification (`object: whatsapp_business_account`).
pub fn read(body: &[u8]) -> Result<Notification, String> {
    let v: Value = hearth_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    if str_of(&v, "object") != Some("whatsapp_business_account") {
        return Err(format!("not a WhatsApp Business Account notification (object {:?})", v.get("object")));
    }
    let mut out = Notification::default();
    for entry in array(&v, "entry") {
        for change in array(entry, "changes") {
            let value = change.get("value").unwrap_or(&Value::Null);
            if str_of(change, "field").is_some_and(|f| f != "messages") {
                continue;
            }
            let meta = value.get("metadata").unwrap_or(&Value::Null);
            let phone_number_id = str_of(meta, "phone_number_id").unwrap_or("").to_owned();
            let display_number = str_of(meta, "display_phone_number").unwrap_or("").to_owned();
            for m in array(value, "messages") {
                let from = str_of(m, "from");
                let name = array(value, "contacts")
                    .iter()
                    .find(|c| str_of(c, "wa_id") == from)
                    .or_else(|| array(value, "contacts").first())
                    .and_then(|c| c.get("profile"))
                    .and_then(|p| str_of(p, "name"))
                    .map(str::to_owned);
                out.messages.push(Incoming {
                    message: m.clone(),
                    name,
                    phone_number_id: phone_number_id.clone(),
                    display_number: display_number.clone(),
                });
            }
            for s in array(value, "statuses") {
                let error = array(s, "errors").first().map(|e| {
                    let details = e.get("error_data").and_then(|d| str_of(d, "details")).unwrap_or("");
                    format!("{} {}: {details}", e.get("code").unwrap_or(&Value::Null), str_of(e, "title").unwrap_or(""))
                });
                out.statuses.push(Status {
                    status: str_of(s, "status").unwrap_or("").to_owned(),
                    recipient: str_of(s, "recipient_id").unwrap_or("").to_owned(),
                    error,
                });
            }
        }
    }
    Ok(out)
}

/// Why a message starts no turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ignored {
    /// A reaction (or its removal): noted, no answer needed.
    #[error("a reaction ({0})")]
    Reaction(String),
    #[error("a message without a {0}")]
    Missing(&'static str),
    #[error("an empty message")]
    Empty,
}

/// What a reply target carries for WhatsApp ([`ReplyTarget::extra`], as
/// `{from} {until}`: two fields need no JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyExtra {
    /// The business number to answer from.
    pub from: String,
    /// When the customer-service window of this message closes (ms).
    pub until: i64,
}

impl ReplyExtra {
    pub fn of(target: &ReplyTarget) -> Option<ReplyExtra> {
        let (from, until) = target.extra.as_deref()?.split_once(' ')?;
        Some(ReplyExtra { from: from.to_owned(), until: until.parse().ok()? })
    }

    pub fn render(&self) -> String {
        format!("{} {}", self.from, self.until)
    }
}

/// The media kinds Hearth downloads (by id) and what each is to the runtime.
const MEDIA: &[(&str, &str)] =
    &[("image", "photo"), ("audio", "audio"), ("document", "document"), ("video", "video"), ("sticker", "sticker")];

/// The message as the runtime sees it, or why there is none.
pub fn to_inbound(incoming: &Incoming, now_ms: i64) -> Result<Inbound, Ignored> {
    let m = &incoming.message;
    let from = str_of(m, "from").ok_or(Ignored::Missing("sender"))?;
    let id = str_of(m, "id").ok_or(Ignored::Missing("id"))?;
    let kind = str_of(m, "type").unwrap_or("");
    if kind == "reaction" {
        let emoji = m.get("reaction").and_then(|r| str_of(r, "emoji")).unwrap_or("removed");
        return Err(Ignored::Reaction(emoji.to_owned()));
    }
    let (text, media) = content(m, kind);
    if text.trim().is_empty() && media.is_empty() {
        return Err(Ignored::Empty);
    }
    // Meta's timestamp (seconds) is when the person wrote: the window counts from it.
    let sent_secs = str_of(m, "timestamp").and_then(|t| t.parse::<i64>().ok());
    let sent_ms = sent_secs.map_or(now_ms, |s| s.saturating_mul(1000));
    let extra = ReplyExtra { from: incoming.phone_number_id.clone(), until: sent_ms.min(now_ms) + WINDOW_MS };
    Ok(Inbound {
        dedupe_key: format!("whatsapp:{id}"),
        channel: ChannelKind::Whatsapp,
        kind: ChatKind::Direct,
        chat_id: from.to_owned(),
        sender_id: from.to_owned(),
        sender_name: incoming.name.clone().unwrap_or_else(|| format!("+{from}")),
        text,
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Whatsapp,
            chat_id: from.to_owned(),
            reply_to: Some(id.to_owned()),
            extra: Some(extra.render()),
            ..Default::default()
        },
        received_at: now_ms,
        media,
        context: context(m, &incoming.display_number),
        group: None,
        mentions: vec![],
        batch: None,
        // Meta counts whole seconds: messages of one second keep their order of arrival.
        order: sent_secs.map(|s| SendOrder::new("whatsapp", s)),
    })
}

/// The text of a message (or a description of what it carries) and its media.
fn content(m: &Value, kind: &str) -> (String, Vec<InboundMedia>) {
    let part = m.get(kind).unwrap_or(&Value::Null);
    if let Some((_, media_kind)) = MEDIA.iter().find(|(k, _)| *k == kind) {
        let Some(id) = str_of(part, "id") else { return (String::new(), vec![]) };
        let mime = str_of(part, "mime_type").unwrap_or("application/octet-stream");
        // A voice note (`voice: true`) is transcribed like Telegram's.
        let voice = kind == "audio" && part.get("voice") == Some(&Value::Bool(true));
        let media = InboundMedia {
            handle: id.to_owned(),
            mime_type: mime.to_owned(),
            filename: str_of(part, "filename").map(str::to_owned),
            size: part.get("file_size").and_then(Value::as_u64),
            kind: if voice { "voice" } else { media_kind }.to_owned(),
        };
        return (str_of(part, "caption").unwrap_or("").to_owned(), vec![media]);
    }
    let text = match kind {
        "text" => str_of(part, "body").unwrap_or("").to_owned(),
        "location" => location(part),
        "contacts" => {
            let people: Vec<String> = part
                .as_array()
                .or_else(|| m.get("contacts").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .map(|c| {
                    let name = c.get("name").and_then(|n| str_of(n, "formatted_name")).unwrap_or("someone");
                    let phones: Vec<&str> = array(c, "phones").iter().filter_map(|p| str_of(p, "phone")).collect();
                    if phones.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{name} ({})", phones.join(", "))
                    }
                })
                .collect();
            format!("[contact: {}]", people.join("; "))
        }
        "interactive" => {
            let reply = part.get("button_reply").or_else(|| part.get("list_reply")).unwrap_or(&Value::Null);
            str_of(reply, "title").map(|t| format!("[chose: {t}]")).unwrap_or_default()
        }
        "button" => str_of(part, "text").unwrap_or("").to_owned(),
        "order" => "[an order from the catalog]".to_owned(),
        other => {
            let why = array(m, "errors").first().and_then(|e| str_of(e, "title")).unwrap_or("");
            let what = if other.is_empty() { "unknown" } else { other };
            format!(
                "[a kind of WhatsApp message I cannot read: {what}{}]",
                if why.is_empty() { String::new() } else { format!(", {why}") }
            )
        }
    };
    (text, vec![])
}

fn location(part: &Value) -> String {
    let lat = part.get("latitude").and_then(Value::as_f64).unwrap_or(0.0);
    let lon = part.get("longitude").and_then(Value::as_f64).unwrap_or(0.0);
    let named: Vec<&str> = [str_of(part, "name"), str_of(part, "address")].into_iter().flatten().collect();
    match named.is_empty() {
        true => format!("[location: {lat}, {lon}]"),
        false => format!("[location: {lat}, {lon} ({})]", named.join(", ")),
    }
}

/// What the message refers to: a reply to one of the conversation's
/// messages (its text is not in the notification), or a forward.
fn context(m: &Value, display_number: &str) -> Vec<MessageContext> {
    let Some(c) = m.get("context") else { return vec![] };
    if c.get("forwarded") == Some(&Value::Bool(true)) || c.get("frequently_forwarded") == Some(&Value::Bool(true)) {
        return vec![MessageContext::Forward { origin: "someone (forwarded on WhatsApp)".into() }];
    }
    if str_of(c, "id").is_some() {
        let yours = !display_number.is_empty() && str_of(c, "from") == Some(display_number);
        return vec![MessageContext::Reply { author: None, yours, place: None, text: String::new(), quote: None }];
    }
    vec![]
}
