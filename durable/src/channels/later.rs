//! A reply target made fit for a message sent later, unasked: a reminder
//! that is due, a background task's result ([`crate::protocol::session::PostRequest`]).
//!
//! A target is written for the answer to one message, at once. Some of what
//! it carries does not last: a Discord interaction's token dies after 15
//! minutes (the message is then posted to the channel with the bot token),
//! WhatsApp takes free-form messages only within 24 hours of the person's
//! last one (the newest window the session knows is used), and an answer
//! asked over HTTP waited for its caller (later, it goes to the agent's
//! notification feed instead). What stays: the chat, its thread or topic,
//! an email's thread, the message it follows up (quoted where the channel
//! quotes).

use super::whatsapp::ReplyExtra;
use crate::inbound::{ChannelKind, ReplyTarget};

/// `target` as a message sent later uses it. `known`: the latest target the
/// session has for its chat (what a person's last message there carried).
pub fn later(target: &ReplyTarget, known: Option<&ReplyTarget>) -> ReplyTarget {
    let mut t = target.clone();
    // Nothing waits for a later message: no deadline for its model call.
    t.deadline_ms = None;
    match t.channel {
        ChannelKind::Discord => t.extra = None,
        ChannelKind::Api => t.extra = None,
        ChannelKind::Whatsapp => {
            let same_chat = |k: &&ReplyTarget| k.channel == t.channel && k.chat_id == t.chat_id;
            if let Some(k) = known.filter(same_chat) {
                let until = |x: &ReplyTarget| ReplyExtra::of(x).map(|e| e.until);
                if until(k) > until(&t) {
                    t.extra = k.extra.clone();
                }
            }
        }
        _ => {}
    }
    t
}

/// What a session keeps of a person's message for later posts that name no
/// target: [`later`], without the message it answered.
pub fn remembered(target: &ReplyTarget) -> ReplyTarget {
    let mut t = later(target, None);
    t.reply_to = None;
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(channel: ChannelKind, chat: &str) -> ReplyTarget {
        ReplyTarget { channel, chat_id: chat.into(), ..Default::default() }
    }

    #[test]
    fn a_later_message_keeps_the_chat_and_drops_what_expires() {
        // Telegram: the chat, the topic and the message it follows up stay.
        let tg = ReplyTarget {
            reply_to: Some("55".into()),
            thread_id: Some("7".into()),
            deadline_ms: Some(1),
            ..target(ChannelKind::Telegram, "-100123")
        };
        let later_tg = later(&tg, None);
        assert_eq!(later_tg, ReplyTarget { deadline_ms: None, ..tg.clone() });
        assert_eq!(remembered(&tg).reply_to, None);
        // Discord: the interaction's token and its deadline go; the channel stays.
        let dc = ReplyTarget {
            extra: Some(r#"{"token":"tok","app":"1"}"#.into()),
            deadline_ms: Some(5),
            ..target(ChannelKind::Discord, "chan-1")
        };
        assert_eq!(later(&dc, None), target(ChannelKind::Discord, "chan-1"));
        // HTTP: the request id goes (the feed gets it).
        let api = ReplyTarget { extra: Some("req-1".into()), ..target(ChannelKind::Api, "work") };
        assert_eq!(later(&api, None).extra, None);
        // Email: the thread's headers stay.
        let mail = ReplyTarget { extra: Some(r#"{"subject":"Re: x"}"#.into()), ..target(ChannelKind::Email, "a@b.c") };
        assert_eq!(later(&mail, None), mail);
    }

    #[test]
    fn whatsapp_uses_the_newest_window_of_the_same_chat() {
        let at = |until: i64| ReplyTarget {
            extra: Some(ReplyExtra { from: "111".into(), until }.render()),
            reply_to: Some("wamid.1".into()),
            ..target(ChannelKind::Whatsapp, "4915")
        };
        let asked = at(1_000);
        assert_eq!(later(&asked, Some(&at(5_000))).extra, at(5_000).extra, "the person wrote since");
        assert_eq!(later(&asked, Some(&at(500))).extra, asked.extra, "an older window is not taken");
        let other = ReplyTarget { chat_id: "4916".into(), ..at(9_000) };
        assert_eq!(later(&asked, Some(&other)).extra, asked.extra, "another chat's window is not this one's");
        assert_eq!(later(&asked, Some(&at(5_000))).reply_to.as_deref(), Some("wamid.1"));
    }
}
