//! The [`durable::ports::Platform`] a Durable Object hands to the runtime,
//! and the reply channel that dispatches on the target's channel.

use crate::adapters::{self, DoSql, FetchHttp, R2};
use crate::discord::client::DiscordApi;
use crate::telegram::client::TelegramApi;
use durable::inbound::ReplyTarget;
use durable::ports::{
    Channel, ChannelError, LogLevel, MemoryService, OutgoingChunk, Platform, Preview, PreviewOutcome, SendOutcome,
};
use durable::protocol::memory::{decode_reply, MemoryCall, MemoryCallError, MemoryReply};
use durable::protocol::AGENT_BINDING;
use worker::{Env, Method};

/// Replies go back on the channel the message came from, one piece per call
/// (the session's outbox decides what is sent when).
pub struct Channels {
    pub telegram: Option<TelegramApi>,
    pub discord: Option<DiscordApi>,
    /// For relays to other agents' sessions.
    pub env: Env,
}

impl Channel for Channels {
    async fn send_chunk(&self, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        match (target.channel.as_str(), &self.telegram, &self.discord) {
            (durable::routing::group::RELAY_CHANNEL, _, _) => self.relay(target, piece).await,
            ("telegram", Some(api), _) => api.send_chunk(target, piece).await,
            ("telegram", None, _) => SendOutcome::Unreachable("TELEGRAM_BOT_TOKEN is not set".into()),
            ("discord", _, Some(api)) => api.send_chunk(target, piece).await,
            ("discord", _, None) => SendOutcome::Unreachable("discord is not configured".into()),
            (other, _, _) => SendOutcome::Unreachable(format!("no channel {other:?}")),
        }
    }

    async fn preview(&self, target: &ReplyTarget, preview: &Preview<'_>) -> PreviewOutcome {
        match (target.channel.as_str(), &self.telegram, &self.discord) {
            ("telegram", Some(api), _) => api.preview(target, preview).await,
            ("discord", _, Some(api)) => api.preview(target, preview).await,
            (other, _, _) => PreviewOutcome::Unsupported(format!("no previews on {other:?}")),
        }
    }

    async fn end_preview(&self, target: &ReplyTarget, handle: &str) {
        if let ("telegram", Some(api)) = (target.channel.as_str(), &self.telegram) {
            api.end_preview(target, handle).await;
        }
    }

    async fn typing(&self, target: &ReplyTarget) {
        match (target.channel.as_str(), &self.telegram, &self.discord) {
            ("telegram", Some(api), _) => api.typing(target).await,
            ("discord", _, Some(api)) => api.typing(target).await,
            _ => {}
        }
    }

    async fn send_voice(&self, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        match (target.channel.as_str(), &self.telegram, &self.discord) {
            ("telegram", Some(api), _) => api.send_voice(target, audio).await,
            ("discord", _, Some(api)) => api.send_voice(target, audio).await,
            (other, _, _) => SendOutcome::Unreachable(format!("no voice notes on {other:?}")),
        }
    }

    async fn fetch_media(&self, channel: &str, handle: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        match (channel, &self.telegram) {
            ("telegram", Some(api)) => api.download_file(handle, max_bytes).await,
            ("telegram", None) => Err(ChannelError::Failed("TELEGRAM_BOT_TOKEN is not set".into())),
            ("discord", _) => match &self.discord {
                Some(api) => api.download_attachment(handle, max_bytes).await,
                None => Err(ChannelError::Failed("discord is not configured".into())),
            },
            (other, _) => Err(ChannelError::Failed(format!("no channel {other:?}"))),
        }
    }
}

impl Channels {
    /// An agent's reply to the other agents of its group: queued in their
    /// sessions (a repeat is a duplicate there, not a second message).
    async fn relay(&self, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let Some((key, msg)) = durable::routing::group::relay_message(target, &piece.text, adapters::now_ms()) else {
            return SendOutcome::Unreachable("an unreadable relay".into());
        };
        match crate::objects::enqueue(&self.env, &key, &msg).await {
            Ok(_) => SendOutcome::Delivered,
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("relay to {key}: {e}") },
        }
    }
}

/// The agent's memory: calls go to its Agent object (`AGENT.idFromName(agent)`).
pub struct AgentMemory {
    pub env: Env,
    pub agent: String,
}

impl MemoryService for AgentMemory {
    async fn call(&self, call: &MemoryCall) -> Result<MemoryReply, MemoryCallError> {
        let down = |e: worker::Error| MemoryCallError::Unavailable(e.to_string());
        let body = serde_json::to_string(call).map_err(|e| MemoryCallError::Unavailable(e.to_string()))?;
        // The agent id lets the object apply the agent's memory settings (BM25 k1, b).
        let path = format!("{}?agent={}", durable::protocol::memory::CALL_PATH, self.agent);
        let (status, text) =
            crate::objects::call_raw(&self.env, AGENT_BINDING, &self.agent, Method::Post, &path, Some(body))
                .await
                .map_err(down)?;
        decode_reply(status, text.as_bytes())
    }
}

pub struct DoPlatform {
    pub store: R2,
    pub sql: DoSql,
    pub channels: Channels,
    pub memory: AgentMemory,
}

impl DoPlatform {
    /// The platform of a Session object's turns: its agent's bucket, bots
    /// and memory.
    pub fn for_session(
        sql: &DoSql,
        env: &Env,
        config: &durable::settings::AgentConfig,
        key: &durable::inbound::SessionKey,
    ) -> worker::Result<Self> {
        Ok(DoPlatform {
            store: R2::from_env(env)?,
            sql: sql.clone(),
            channels: Channels {
                telegram: TelegramApi::for_agent(config),
                discord: Some(DiscordApi::for_agent(&crate::adapters::EnvVars::of(env), config)),
                env: env.clone(),
            },
            memory: AgentMemory { env: env.clone(), agent: key.agent().as_str().to_owned() },
        })
    }
}

impl Platform for DoPlatform {
    type Store = R2;
    type Http = FetchHttp;
    type Sql = DoSql;
    type Channel = Channels;
    type Memory = AgentMemory;
    fn memory(&self) -> &AgentMemory {
        &self.memory
    }
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
    async fn pins(&self) -> Result<durable::protocol::pins::Pins, durable::ports::StorageError> {
        crate::agent_do::pins_of(&self.memory.env, &self.memory.agent).await
    }
    async fn meter(
        &self,
        req: &durable::protocol::usage::MeterRequest,
    ) -> Result<durable::protocol::usage::MeterReply, durable::ports::StorageError> {
        crate::agent_do::meter(&self.memory.env, req).await
    }
    async fn session_start(
        &self,
        req: &durable::protocol::workspace::SessionStartRequest,
    ) -> Result<durable::protocol::workspace::SessionStartReply, durable::ports::StorageError> {
        crate::agent_do::session_start(&self.memory.env, req).await
    }
    async fn mcp_catalog(&self) -> Result<durable::protocol::mcp::McpCatalog, durable::ports::StorageError> {
        crate::agent_do::mcp_catalog_of(&self.memory.env, &self.memory.agent).await
    }
    fn secret(&self, name: &str) -> Option<String> {
        durable::settings::setting(&crate::adapters::EnvVars::of(&self.memory.env), &self.memory.agent, name)
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
