//! The table the rest of the runtime asks about a channel without knowing
//! which one it is: how long a piece may be and how it is marked up, how a
//! chat sees an answer being written, what may be downloaded from it, and
//! whether it takes voice notes. Each fact reads its platform's folder, so
//! a new channel is its folder plus a row here.

use super::{discord, slack, telegram, whatsapp};
use crate::inbound::{ChannelKind, ChatKind};
use crate::ports::OutgoingChunk;
use crate::settings::stream::{StreamConfig, StreamMode};

/// A relay to another agent's session (not a chat platform) is not cut.
pub const RELAY_MAX_CHARS: usize = 200_000;
/// An email is one message, however long the reply.
pub const EMAIL_MAX_CHARS: usize = 100_000;

/// The longest piece `channel` takes, in UTF-16 units.
pub fn max_chars(channel: ChannelKind) -> usize {
    match channel {
        ChannelKind::Discord => discord::MAX_CHARS,
        ChannelKind::Slack => slack::format::MAX_CHARS,
        ChannelKind::Whatsapp => whatsapp::format::MAX_CHARS,
        // A relay to another agent's session is one message, whole.
        ChannelKind::Relay => RELAY_MAX_CHARS,
        ChannelKind::Email => EMAIL_MAX_CHARS,
        _ => telegram::format::MAX_CHARS,
    }
}

/// Whether `channel`'s pieces go out in its own markup, rendered from the
/// model's Markdown (Telegram HTML, Slack `mrkdwn`, WhatsApp's `*bold*`).
/// Discord renders Markdown itself.
pub fn has_markup(channel: ChannelKind) -> bool {
    matches!(channel, ChannelKind::Telegram | ChannelKind::Slack | ChannelKind::Whatsapp)
}

/// Whether an answer's preview on `channel` is a message of its own that
/// goes once the answer is sent (Telegram's and Slack's edit mode).
pub fn preview_is_a_message(channel: ChannelKind) -> bool {
    matches!(channel, ChannelKind::Telegram | ChannelKind::Slack)
}

/// How a `kind` chat on `channel` sees its answer being written, given the
/// agent's `STREAM_REPLIES…` settings.
pub fn preview_mode(channel: ChannelKind, kind: ChatKind, stream: &StreamConfig) -> StreamMode {
    match (channel, kind) {
        (ChannelKind::Telegram, ChatKind::Direct) => stream.private,
        (ChannelKind::Telegram, ChatKind::Group) => stream.groups,
        // Discord edits its deferred answer (no drafts there).
        (ChannelKind::Discord, _) if stream.private != StreamMode::Off => StreamMode::Edit,
        // Slack has no drafts: one message edited with chat.update.
        (ChannelKind::Slack, ChatKind::Direct) if stream.private != StreamMode::Off => StreamMode::Edit,
        (ChannelKind::Slack, ChatKind::Group) => stream.groups,
        _ => StreamMode::Off,
    }
}

/// The most `channel` lets a bot download of one attachment, where it has
/// a limit of its own (Telegram's Bot API serves files up to 20 MB).
pub fn download_limit(channel: ChannelKind) -> Option<u64> {
    match channel {
        ChannelKind::Telegram => Some(telegram::TELEGRAM_DOWNLOAD_LIMIT),
        _ => None,
    }
}

/// Whether `channel` takes voice notes from the agent.
pub fn sends_voice(channel: ChannelKind) -> bool {
    matches!(channel, ChannelKind::Telegram | ChannelKind::Discord)
}

/// The pieces of `text` for `channel`, in order.
pub fn pieces(channel: ChannelKind, text: &str) -> Vec<String> {
    crate::text::split_message(text, max_chars(channel))
}

/// A piece as the client sends it: in the channel's markup when `markup`
/// (the outbox turns it off for a piece whose markup was refused).
pub fn render(channel: ChannelKind, text: &str, markup: bool, first: bool, opens: bool) -> OutgoingChunk {
    let formatted = match channel {
        ChannelKind::Telegram if markup => Some(telegram::format::to_html(text)),
        ChannelKind::Slack if markup => Some(slack::format::to_mrkdwn(text)),
        ChannelKind::Whatsapp if markup => Some(whatsapp::format::to_whatsapp(text)),
        _ => None,
    };
    OutgoingChunk { text: text.to_owned(), formatted, first, opens }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_channel_gets_its_limit_and_only_telegram_html() {
        let text = format!("{}\n\n{}", "a".repeat(1500), "b".repeat(1500));
        assert_eq!(pieces(ChannelKind::Telegram, &text).len(), 1);
        assert_eq!(pieces(ChannelKind::Discord, &text).len(), 2);
        assert!(has_markup(ChannelKind::Telegram) && !has_markup(ChannelKind::Discord));
        assert_eq!(render(ChannelKind::Slack, "**x**", true, true, true).formatted.as_deref(), Some("*x*"));
        let long = "word ".repeat(1000);
        assert!(pieces(ChannelKind::Slack, &long).iter().all(|p| p.chars().count() <= 4000));
        let c = render(ChannelKind::Telegram, "a < **b**", true, true, false);
        assert_eq!(c.formatted.as_deref(), Some("a &lt; <b>b</b>"));
        assert_eq!(render(ChannelKind::Telegram, "x", false, false, false).formatted, None);
        assert_eq!(render(ChannelKind::Discord, "**x**", true, false, false).formatted, None);
    }
}
