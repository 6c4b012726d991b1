//! The [`durable::ports::Platform`] a Durable Object hands to the runtime,
//! and the reply channel that dispatches on the target's channel.

use crate::adapters::{self, DoSql, FetchHttp, R2};
use crate::discord::client::DiscordApi;
use crate::telegram::client::{channel_error, TelegramApi};
use durable::inbound::ReplyTarget;
use durable::ports::{Channel, ChannelError, LogLevel, MemoryService, Platform};
use durable::protocol::memory::{decode_reply, MemoryCall, MemoryCallError, MemoryReply};
use durable::protocol::AGENT_BINDING;
use worker::{Env, Method};

/// Replies go back on the channel the message came from.
pub struct Channels {
    pub telegram: Option<TelegramApi>,
    pub notify: Notify,
    pub discord: Option<DiscordApi>,
}

/// The `notify` channel (heartbeat and job output): to the first owner,
/// without `HEARTBEAT_OK` and repeats (`durable::scheduled::notify`).
pub struct Notify {
    pub owner: Option<durable::settings::Principal>,
    /// The replying session's SQLite (remembers what was sent).
    pub sql: DoSql,
}

impl Channel for Channels {
    async fn send_text(&self, target: &ReplyTarget, text: &str) -> Result<(), ChannelError> {
        let owner_target;
        let notify = target.channel == durable::inbound::NOTIFY_CHANNEL;
        let target = if notify {
            use durable::scheduled::notify::{decide, NotifyDecision};
            let now = adapters::now_ms();
            let failed = |e: durable::ports::StorageError| ChannelError::Failed(e.to_string());
            match decide(&self.notify.sql, self.notify.owner.as_ref(), text, now).map_err(failed)? {
                NotifyDecision::Send(t) => {
                    owner_target = t;
                    &owner_target
                }
                NotifyDecision::NoOwner => {
                    return Err(ChannelError::Failed("OWNER_IDS is empty: no one to notify".into()))
                }
                other => {
                    adapters::log(LogLevel::Info, &format!("notification not sent ({other:?}): {} chars", text.len()));
                    return Ok(());
                }
            }
        } else {
            target
        };
        let sent = match (target.channel.as_str(), &self.telegram) {
            ("telegram", Some(api)) => api.send_reply(target, text).await.map_err(channel_error),
            ("telegram", None) => Err(ChannelError::Failed("TELEGRAM_BOT_TOKEN is not set".into())),
            // Admin-initiated work (an API reset) has no chat to answer in.
            ("admin", _) => {
                adapters::log(LogLevel::Info, &format!("admin: {text}"));
                Ok(())
            }
            ("discord", _) => match &self.discord {
                Some(api) => api.send_reply(target, text).await.map_err(|e| ChannelError::Failed(e.to_string())),
                None => Err(ChannelError::Failed("discord is not configured".into())),
            },
            (other, _) => Err(ChannelError::Failed(format!("no channel {other:?}"))),
        };
        if notify && sent.is_ok() {
            let _ = durable::scheduled::notify::record(&self.notify.sql, text, adapters::now_ms());
        }
        sent
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
            ("discord", _) => match &self.discord {
                Some(api) => api.download_attachment(handle, max_bytes).await,
                None => Err(ChannelError::Failed("discord is not configured".into())),
            },
            (other, _) => Err(ChannelError::Failed(format!("no channel {other:?}"))),
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
        state: &worker::State,
        env: &Env,
        config: &durable::settings::AgentConfig,
        key: &durable::inbound::SessionKey,
    ) -> worker::Result<Self> {
        Ok(DoPlatform {
            store: R2::from_env(env)?,
            sql: DoSql::new(state),
            channels: Channels {
                telegram: TelegramApi::for_agent(config),
                notify: Notify { owner: config.owners.first().cloned(), sql: DoSql::new(state) },
                discord: Some(DiscordApi::for_agent(&crate::adapters::EnvVars::of(env), config)),
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
