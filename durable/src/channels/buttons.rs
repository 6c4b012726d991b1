//! Asking the owner with buttons, on whichever platform they are: a
//! message with two buttons in their private chat, the buttons settled
//! once they decided (one that says how), and a tap's answer where the
//! platform wants one outside the webhook's reply (Telegram). Each
//! platform's folder speaks its own wire format; this is the dispatch.
//! Used by dreaming's proposals and by tool calls waiting for approval.

pub use super::shared::button::{Button, Posted};

use super::outbound::Channels;
use crate::inbound::ChannelKind;
use crate::ports::Io;
use crate::settings::Principal;

/// The platforms an owner can be asked on with buttons.
pub fn can_ask(channels: &Channels, channel: ChannelKind) -> bool {
    match channel {
        ChannelKind::Telegram => channels.telegram.is_some(),
        ChannelKind::Discord => channels.discord.bot_token.is_some(),
        ChannelKind::Slack => channels.slack.is_some(),
        _ => false,
    }
}

/// Sends `text` with `buttons` to `owner`'s private chat with the bot.
pub async fn post<I: Io>(
    io: &I,
    channels: &Channels,
    owner: &Principal,
    text: &str,
    buttons: &[Button],
) -> Result<Posted, String> {
    let posted = |chat: String, message: String| Posted { channel: owner.channel, chat, message };
    match owner.channel {
        ChannelKind::Telegram => {
            let api = channels.telegram.as_ref().ok_or("TELEGRAM_BOT_TOKEN is not set")?;
            // A private chat's id is the user's id.
            let m = api.post_buttons(io, &owner.id, text, buttons).await.map_err(|e| e.to_string())?;
            Ok(posted(owner.id.clone(), m))
        }
        ChannelKind::Discord => {
            let (chat, m) = channels.discord.post_buttons(io, &owner.id, text, buttons).await?;
            Ok(posted(chat, m))
        }
        ChannelKind::Slack => {
            let api = channels.slack.as_ref().ok_or("SLACK_BOT_TOKEN is not set")?;
            let (chat, m) = api.post_buttons(io, &owner.id, text, buttons).await?;
            Ok(posted(chat, m))
        }
        other => Err(format!("no buttons on {other}")),
    }
}

/// The message's buttons become one, `settled`; on Discord and Slack the
/// message is replaced, so `text` is what it says then.
pub async fn settle<I: Io>(
    io: &I,
    channels: &Channels,
    at: &Posted,
    text: &str,
    settled: &Button,
) -> Result<(), String> {
    match at.channel {
        ChannelKind::Telegram => {
            let api = channels.telegram.as_ref().ok_or("TELEGRAM_BOT_TOKEN is not set")?;
            api.settle_buttons(io, &at.chat, &at.message, settled).await.map_err(|e| e.to_string())
        }
        ChannelKind::Discord => channels.discord.settle_buttons(io, &at.chat, &at.message, text, &settled.label).await,
        ChannelKind::Slack => {
            let api = channels.slack.as_ref().ok_or("SLACK_BOT_TOKEN is not set")?;
            api.settle_buttons(io, &at.chat, &at.message, text, &settled.label).await
        }
        other => Err(format!("no buttons on {other}")),
    }
}

/// Answers a Telegram tap with `note` (Discord and Slack taps are answered
/// by their webhooks' replies).
pub async fn answer_tap<I: Io>(
    io: &I,
    channels: &Channels,
    channel: ChannelKind,
    callback_id: &str,
    note: &str,
) -> Result<(), String> {
    match (channel, &channels.telegram) {
        (ChannelKind::Telegram, Some(api)) => api.answer_tap(io, callback_id, note).await.map_err(|e| e.to_string()),
        (ChannelKind::Telegram, None) => Err("TELEGRAM_BOT_TOKEN is not set".into()),
        _ => Ok(()),
    }
}
