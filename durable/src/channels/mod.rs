//! The chat platforms, one folder each: `telegram/`, `discord/` (and the
//! channels this issue adds). A folder owns everything about its platform:
//! its wire types, the signature check of its webhook, the reader that turns
//! what it sends into an [`crate::inbound::Inbound`], its client (generic
//! over the [`crate::ports::Http`] port, so it is tested natively with
//! recorded requests) and how replies are cut and marked up for it.
//!
//! Why here and not in the Worker: deciding what an update means, what to
//! answer and how to send is logic, tested natively against every real
//! payload in `tests/fixtures/real-world/`. The Worker only hands requests
//! over and carries out what it is told.
//!
//! This file is the table the rest of the runtime asks about a channel
//! without knowing which one it is: how long a piece may be and how it is
//! marked up.

pub mod access;
pub mod buttons;
pub mod discord;
pub mod email;
pub mod groups;
pub mod later;
pub mod multipart;
pub mod outbound;
pub mod slack;
pub mod telegram;
pub mod webhook;
pub mod whatsapp;

pub use outbound::{AgentChannels, Channels};

use crate::inbound::ChannelKind;
use crate::ports::{ChannelError, Http, HttpRequest, Io, LogLevel, OutgoingChunk};
use crate::retry::Backoff;

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

/// Downloads an attachment with `req` (its URL and whatever authorisation
/// the platform wants): 429 and 5xx are retried with `backoff`, a body over
/// `max_bytes` is refused. `what` names it in logs and errors.
pub async fn download<I: Io>(
    io: &I,
    backoff: &Backoff,
    what: &str,
    req: HttpRequest,
    max_bytes: u64,
) -> Result<Vec<u8>, ChannelError> {
    let mut made = 0;
    loop {
        made += 1;
        let why = match io.http().send(req.clone()).await {
            Ok(resp) if resp.status == 200 => {
                if resp.body.len() as u64 > max_bytes {
                    return Err(ChannelError::TooLarge(resp.body.len() as u64));
                }
                return Ok(resp.body);
            }
            Ok(resp) if resp.status == 429 || resp.status >= 500 => format!("HTTP {}", resp.status),
            Ok(resp) => return Err(ChannelError::Failed(format!("{what} download: HTTP {}", resp.status))),
            Err(e) => e.to_string(),
        };
        match backoff.delay(made, None) {
            Some(ms) => {
                io.log(LogLevel::Warn, &format!("{what} download failed ({why}); retry in {ms} ms"));
                io.sleep(ms).await;
            }
            None => return Err(ChannelError::Failed(format!("{what} download: {why}"))),
        }
    }
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
