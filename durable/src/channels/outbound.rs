//! The way out: an agent's clients, one per platform it has credentials
//! for, and the dispatch on a reply target's channel. A Session object's
//! replies go through [`AgentChannels`] (the [`Channel`] port), a webhook's
//! notes through [`Channels::send_text`]. A relay between agents' sessions
//! is queued in the other session through the [`Front`].

use super::discord::client::DiscordApi;
use super::email::client::EmailApi;
use super::facts::{pieces, render};
use super::slack::client::SlackApi;
use super::telegram::client::TelegramApi;
use super::whatsapp::client::WhatsAppApi;
use crate::apart::apart;
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Channel, ChannelError, Front, OutgoingChunk, Preview, PreviewOutcome, SendOutcome};
use crate::settings::{AgentConfig, Vars};

/// An agent's clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channels {
    pub telegram: Option<TelegramApi>,
    pub discord: DiscordApi,
    pub slack: Option<SlackApi>,
    pub whatsapp: Option<WhatsAppApi>,
    pub email: Option<EmailApi>,
}

impl Channels {
    /// The clients `cfg`'s agent has credentials for.
    pub fn for_agent(vars: &impl Vars, cfg: &AgentConfig) -> Channels {
        Channels {
            telegram: TelegramApi::for_agent(cfg),
            discord: DiscordApi::for_agent(vars, cfg),
            slack: SlackApi::for_agent(vars, cfg),
            whatsapp: WhatsAppApi::for_agent(vars, cfg),
            email: EmailApi::for_agent(vars, cfg),
        }
    }

    fn email(&self) -> Result<&EmailApi, String> {
        self.email.as_ref().ok_or_else(|| "EMAIL_ADDRESS is not set".to_owned())
    }

    fn whatsapp(&self) -> Result<&WhatsAppApi, String> {
        self.whatsapp.as_ref().ok_or_else(|| "WHATSAPP_ACCESS_TOKEN is not set".to_owned())
    }

    fn slack(&self) -> Result<&SlackApi, String> {
        self.slack.as_ref().ok_or_else(|| "SLACK_BOT_TOKEN is not set".to_owned())
    }

    fn telegram(&self) -> Result<&TelegramApi, String> {
        self.telegram.as_ref().ok_or_else(|| "TELEGRAM_BOT_TOKEN is not set".to_owned())
    }

    /// One attempt at one piece of a reply (never retried here: the outbox does).
    pub async fn send_chunk<F: Front>(&self, front: &F, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        // Each platform's sending apart: an agent on one platform compiles only its own.
        match target.channel {
            ChannelKind::Relay => apart(relay(front, target, piece)).await,
            ChannelKind::Telegram => match self.telegram() {
                Ok(api) => apart(api.send_chunk(front, target, piece)).await,
                Err(why) => SendOutcome::Unreachable(why),
            },
            ChannelKind::Discord => apart(self.discord.send_chunk(front, target, piece)).await,
            ChannelKind::Slack => match self.slack() {
                Ok(api) => apart(api.send_chunk(front, target, piece)).await,
                Err(why) => SendOutcome::Unreachable(why),
            },
            ChannelKind::Whatsapp => match self.whatsapp() {
                Ok(api) => apart(api.send_chunk(front, target, piece)).await,
                Err(why) => SendOutcome::Unreachable(why),
            },
            ChannelKind::Email => match self.email() {
                Ok(api) => apart(api.send_chunk(front, target, piece)).await,
                Err(why) => SendOutcome::Unreachable(why),
            },
            other => SendOutcome::Unreachable(format!("no channel {other:?}")),
        }
    }

    /// A short text outside any session (the note to a stranger), sent now.
    pub async fn send_text<F: Front>(&self, front: &F, target: &ReplyTarget, text: &str) -> Result<(), String> {
        match target.channel {
            ChannelKind::Telegram => self.telegram()?.send_reply(front, target, text).await.map_err(|e| e.to_string()),
            channel => {
                for (i, piece) in pieces(channel, text).iter().enumerate() {
                    let piece = render(channel, piece, false, i == 0, i == 0);
                    match self.send_chunk(front, target, &piece).await {
                        SendOutcome::Delivered => {}
                        other => return Err(format!("{other:?}")),
                    }
                }
                Ok(())
            }
        }
    }

    pub async fn preview<F: Front>(&self, front: &F, target: &ReplyTarget, p: &Preview<'_>) -> PreviewOutcome {
        match (target.channel, &self.telegram, &self.slack) {
            (ChannelKind::Telegram, Some(api), _) => apart(api.preview(front, target, p)).await,
            (ChannelKind::Discord, _, _) => apart(self.discord.preview(front, target, p)).await,
            (ChannelKind::Slack, _, Some(api)) => apart(api.preview(front, target, p)).await,
            (other, _, _) => PreviewOutcome::Unsupported(format!("no previews on {other:?}")),
        }
    }

    pub async fn end_preview<F: Front>(&self, front: &F, target: &ReplyTarget, handle: &str) {
        match (target.channel, &self.telegram, &self.slack) {
            (ChannelKind::Telegram, Some(api), _) => api.end_preview(front, target, handle).await,
            (ChannelKind::Slack, _, Some(api)) => api.end_preview(front, target, handle).await,
            _ => {}
        }
    }

    pub async fn typing<F: Front>(&self, front: &F, target: &ReplyTarget) {
        match (target.channel, &self.telegram) {
            (ChannelKind::Telegram, Some(api)) => api.typing(front, target).await,
            (ChannelKind::Discord, _) => self.discord.typing(front, target).await,
            (ChannelKind::Whatsapp, _) => {
                if let Some(api) = &self.whatsapp {
                    api.typing(front, target).await
                }
            }
            _ => {}
        }
    }

    pub async fn send_voice<F: Front>(&self, front: &F, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        match (target.channel, &self.telegram) {
            (ChannelKind::Telegram, Some(api)) => api.send_voice(front, target, audio).await,
            (ChannelKind::Discord, _) => self.discord.send_voice(front, target, audio).await,
            (other, _) => SendOutcome::Unreachable(format!("no voice notes on {other:?}")),
        }
    }

    pub async fn fetch_media<F: Front>(
        &self,
        front: &F,
        channel: ChannelKind,
        handle: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ChannelError> {
        match channel {
            ChannelKind::Telegram => match self.telegram() {
                Ok(api) => api.download_file(front, handle, max_bytes).await,
                Err(why) => Err(ChannelError::Failed(why)),
            },
            ChannelKind::Discord => self.discord.download_attachment(front, handle, max_bytes).await,
            ChannelKind::Slack => match self.slack() {
                Ok(api) => api.download(front, handle, max_bytes).await,
                Err(why) => Err(ChannelError::Failed(why)),
            },
            ChannelKind::Whatsapp => match self.whatsapp() {
                Ok(api) => api.download(front, handle, max_bytes).await,
                Err(why) => Err(ChannelError::Failed(why)),
            },
            ChannelKind::Email => match self.email() {
                Ok(api) => api.attachment(front, handle, max_bytes).await,
                Err(why) => Err(ChannelError::Failed(why)),
            },
            other => Err(ChannelError::Failed(format!("no channel {other:?}"))),
        }
    }
}

/// An agent's reply to the other agents of its group: queued in their
/// sessions (a repeat is a duplicate there, not a second message).
async fn relay<F: Front>(front: &F, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
    let Some((key, msg)) = crate::routing::group::relay_message(target, &piece.text, front.now_ms()) else {
        return SendOutcome::Unreachable("an unreadable relay".into());
    };
    match front.enqueue(&key, &msg).await {
        Ok(_) => SendOutcome::Delivered,
        Err(e) => SendOutcome::Retry { after_ms: None, why: format!("relay to {key}: {e}") },
    }
}

/// A session's reply channel: its agent's clients and the runtime.
pub struct AgentChannels<F> {
    pub front: F,
    pub channels: Channels,
}

impl<F: Front> Channel for AgentChannels<F> {
    async fn send_chunk(&self, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        self.channels.send_chunk(&self.front, target, piece).await
    }
    async fn preview(&self, target: &ReplyTarget, preview: &Preview<'_>) -> PreviewOutcome {
        self.channels.preview(&self.front, target, preview).await
    }
    async fn end_preview(&self, target: &ReplyTarget, handle: &str) {
        self.channels.end_preview(&self.front, target, handle).await
    }
    async fn typing(&self, target: &ReplyTarget) {
        self.channels.typing(&self.front, target).await
    }
    async fn send_voice(&self, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        self.channels.send_voice(&self.front, target, audio).await
    }
    async fn fetch_media(&self, channel: ChannelKind, handle: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        self.channels.fetch_media(&self.front, channel, handle, max_bytes).await
    }
}
