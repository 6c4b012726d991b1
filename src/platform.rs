//! The [`durable::ports::Platform`] a Durable Object hands to the runtime,
//! and the reply channel that dispatches on the target's channel.

use crate::adapters::{self, DoSql, FetchHttp, R2};
use crate::telegram::client::{channel_error, TelegramApi};
use durable::ports::{Channel, ChannelError, LogLevel, Platform, ReplyTarget};

/// Replies go back on the channel the message came from.
pub struct Channels {
    pub telegram: Option<TelegramApi>,
}

impl Channel for Channels {
    async fn send_text(&self, target: &ReplyTarget, text: &str) -> Result<(), ChannelError> {
        match (target.channel.as_str(), &self.telegram) {
            ("telegram", Some(api)) => api.send_reply(target, text).await.map_err(channel_error),
            ("telegram", None) => Err(ChannelError::Failed("TELEGRAM_BOT_TOKEN is not set".into())),
            (other, _) => Err(ChannelError::Failed(format!("no channel {other:?}"))),
        }
    }

    async fn typing(&self, target: &ReplyTarget) {
        if let ("telegram", Some(api)) = (target.channel.as_str(), &self.telegram) {
            api.typing(target).await;
        }
    }

    async fn fetch_media(&self, channel: &str, handle: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        match (channel, &self.telegram) {
            ("telegram", Some(api)) => api.download_file(handle, max_bytes).await,
            ("telegram", None) => Err(ChannelError::Failed("TELEGRAM_BOT_TOKEN is not set".into())),
            (other, _) => Err(ChannelError::Failed(format!("no channel {other:?}"))),
        }
    }
}

pub struct DoPlatform {
    pub store: R2,
    pub sql: DoSql,
    pub channels: Channels,
}

impl Platform for DoPlatform {
    type Store = R2;
    type Http = FetchHttp;
    type Sql = DoSql;
    type Channel = Channels;
    fn store(&self) -> &R2 {
        &self.store
    }
    fn http(&self) -> &FetchHttp {
        &FetchHttp
    }
    fn sql(&self) -> &DoSql {
        &self.sql
    }
    fn channel(&self) -> &Channels {
        &self.channels
    }
    fn now_ms(&self) -> i64 {
        adapters::now_ms()
    }
    async fn sleep(&self, ms: u64) {
        adapters::sleep(ms).await
    }
    fn new_uuid(&self) -> String {
        adapters::new_uuid()
    }
    fn log(&self, level: LogLevel, msg: &str) {
        adapters::log(level, msg)
    }
}
