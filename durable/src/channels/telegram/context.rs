//! What a Telegram message refers to, as [`MessageContext`]: the message it
//! replies to (`reply_to_message`, or `external_reply` for one in another
//! chat), the part of it the user quoted (`quote`), and a forward's origin
//! (`forward_origin`, or the older `forward_from` / `forward_from_chat` /
//! `forward_sender_name`).

use super::describe::{display_name, summary};
use super::wire::{Origin, Party, TgMessage};
use super::BotIdentity;
use crate::inbound::MessageContext;

/// The context of `msg`, replies first, then the forward's origin.
pub fn of(msg: &TgMessage, bot: &BotIdentity) -> Vec<MessageContext> {
    let mut out = Vec::new();
    let quote = msg.quote.as_ref().map(|q| q.text.clone()).filter(|q| !q.trim().is_empty());
    if let Some(r) = msg.reply_to_message.as_deref().filter(|r| !is_topic_start(msg, r)) {
        let yours = r.from.as_ref().is_some_and(|f| f.id == bot.id);
        out.push(MessageContext::Reply {
            author: if yours { None } else { author(r.sender_chat.as_ref(), r.from.as_ref()) },
            yours,
            place: None,
            text: summary(r.body().0, r),
            quote,
        });
    } else if let Some(x) = &msg.external_reply {
        // Its text is not sent (only the quote, when there is one); its origin says whose it was.
        let author = x.origin.as_ref().map(origin_name);
        let chat = Some(&x.chat).filter(|c| c.id != 0 || c.title.is_some());
        let place = chat
            .map(|c| format!("\"{}\"", display_name(c)))
            .filter(|p| !author.as_deref().is_some_and(|a| a.contains(p.as_str())));
        out.push(MessageContext::Reply { author, yours: false, place, text: summary("", x), quote });
    } else if let Some(q) = quote {
        out.push(MessageContext::Reply {
            author: None,
            yours: false,
            place: None,
            text: String::new(),
            quote: Some(q),
        });
    }
    if let Some(origin) = forward_origin(msg) {
        out.push(MessageContext::Forward { origin });
    }
    out
}

/// In a forum topic every message that replies to nothing "replies" to the
/// topic's first (service) message: that is not a reply the user made.
fn is_topic_start(msg: &TgMessage, reply: &TgMessage) -> bool {
    reply.other.contains_key("forum_topic_created")
        || (msg.is_topic_message == Some(true)
            && msg.message_thread_id == Some(reply.message_id)
            && reply.body().0.is_empty()
            && super::describe::content(reply).is_none()
            && super::describe::file_noun(reply).is_none())
}

/// Who wrote a message: the chat it was sent on behalf of (an anonymous
/// admin, a channel), else its sender.
fn author(sender_chat: Option<&Party>, from: Option<&Party>) -> Option<String> {
    sender_chat.or(from).map(display_name)
}

fn signed(name: String, signature: Option<&str>) -> String {
    match signature.map(str::trim).filter(|s| !s.is_empty()) {
        Some(s) => format!("{name} (signed {s})"),
        None => name,
    }
}

fn origin_name(o: &Origin) -> String {
    let chat = |c: &Option<Party>, what: &str| match c {
        Some(c) => format!("the {what} \"{}\"", display_name(c)),
        None => format!("a {what}"),
    };
    match o.kind.as_str() {
        "user" => o.sender_user.as_ref().map(display_name).unwrap_or_else(|| "a user".into()),
        "hidden_user" => {
            o.sender_user_name.clone().filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "a hidden user".into())
        }
        "chat" => signed(chat(&o.sender_chat, "chat"), o.author_signature.as_deref()),
        "channel" => signed(chat(&o.chat, "channel"), o.author_signature.as_deref()),
        _ => "someone".into(),
    }
}

/// The forward's origin: `forward_origin` (Bot API 7.0), else the older
/// fields. The docs' own example puts a channel (a chat) in `forward_from`.
fn forward_origin(msg: &TgMessage) -> Option<String> {
    if let Some(o) = &msg.forward_origin {
        return Some(origin_name(o));
    }
    if let Some(c) = &msg.forward_from_chat {
        let what = if c.kind.as_deref() == Some("channel") { "channel" } else { "chat" };
        return Some(signed(format!("the {what} \"{}\"", display_name(c)), msg.forward_signature.as_deref()));
    }
    if let Some(f) = &msg.forward_from {
        return Some(match f.kind.as_deref() {
            Some("channel") => format!("the channel \"{}\"", display_name(f)),
            Some(_) => format!("the chat \"{}\"", display_name(f)),
            None => display_name(f),
        });
    }
    msg.forward_sender_name.clone().filter(|n| !n.trim().is_empty())
}
