//! An agent's settings as a whole ([`AgentConfig`]), loaded once per
//! isolate from each settings file, and the few settings that stand alone
//! (the Discord Gateway switch, the memory's ranking parameters).

use super::llm::LlmConfig;
use super::principal::{parse_principals, Principal};
use super::read::{agent_ids, number, on_off, parse_hhmm, setting, switch, ConfigError, Vars};
use super::{approval, code, delivery, dreaming, groups, media, overlay, stream, tasks, usage, voice, web};
use crate::inbound::ChannelKind;
use r2_layout::AgentId;

/// When sessions reset on their own, and how much context they may use.
#[derive(Debug, Clone, PartialEq)]
pub struct LifecycleConfig {
    /// `RESET_DAILY_AT` (`HH:MM` in the agent's time zone, or `off`): reset
    /// when the last activity was before the latest such time. Default 04:00.
    pub daily_at: Option<(i8, i8)>,
    /// `RESET_IDLE_HOURS`: reset after this long without activity. Off unless set.
    pub idle_hours: Option<u32>,
    /// `CONTEXT_WINDOW` (tokens, default 200,000).
    pub context_window: u64,
    /// `CONTEXT_RESERVE` (tokens kept free for the answer, default 16,000).
    pub context_reserve: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub agent: AgentId,
    pub llm: LlmConfig,
    pub owners: Vec<Principal>,
    pub allow_from: Vec<Principal>,
    /// IANA time zone for daily notes and schedules (`TIMEZONE`, default UTC).
    pub timezone: String,
    /// `TELEGRAM_API_BASE`: a Bot API server other than Telegram's own (a
    /// local `telegram-bot-api`, a stand-in in tests). `None` means
    /// Telegram's, whose address only `channels::telegram` knows.
    pub telegram_api_base: Option<String>,
    pub telegram_bot_token: Option<String>,
    pub telegram_webhook_secret: Option<String>,
    pub discord_api_base: String,
    pub lifecycle: LifecycleConfig,
    /// Vision and transcription settings (`LLM_VISION`, `TRANSCRIBE_*`).
    pub media: media::MediaConfig,
    /// Workspace overlay: `TEMPLATE` and the placeholder values (seed 001).
    pub overlay: overlay::OverlayConfig,
    /// BM25 parameters of the agent's memory (`MEMORY_BM25_K1`, `MEMORY_BM25_B`).
    pub memory_bm25: hearth_memory::Bm25Params,
    /// `web_fetch` and web search (`WEB_*`).
    pub web: web::WebConfig,
    /// MCP client and server limits (`MCP_*`).
    pub mcp: web::McpSettings,
    /// Code mode: who gets `run_code`, and its limits (`CODE_MODE*`).
    pub code: code::CodeConfig,
    /// How long undelivered replies are retried (`DELIVERY_GIVE_UP_MINUTES`).
    pub delivery: delivery::DeliveryConfig,
    /// Changes kept per workspace file (`HISTORY_KEEP_VERSIONS`).
    pub history_keep: usize,
    /// Budgets, price overrides and the usage footer (`BUDGET_*`, `LLM_PRICES`, `USAGE_FOOTER`).
    pub usage: usage::UsageSettings,
    /// `STRANGER_COOLDOWN_MINUTES` (default 60) in ms: a stranger writing on
    /// a channel that costs a send per answer (Telegram) is told their id at
    /// most once per this long. 0: every time.
    pub stranger_cooldown_ms: i64,
    /// Groups of agents (`GROUPS`, shared by all agents).
    pub groups: Vec<groups::AgentGroup>,
    /// Voice replies (`TTS_*`, `VOICE_REPLY_TO_VOICE`).
    pub voice: voice::VoiceConfig,
    /// How chats see an answer while it is written (`STREAM_REPLIES…`).
    pub stream: stream::StreamConfig,
    /// Tool calls that wait for the owner (`APPROVE_TOOLS`, `APPROVAL_TIMEOUT_MINUTES`).
    pub approval: approval::ApprovalConfig,
    /// `ORDER_HOLD_MS`: how long a message that reaches an idle session
    /// waits for one sent before it that may still be on its way
    /// (`session::sequence`). 0: none.
    pub order_hold_ms: i64,
    /// Peers to delegate to and background sub-agents (`ALLOWED_DELEGATES`, `SUBAGENT_*`).
    pub tasks: tasks::TasksConfig,
}

/// How long a message reaching an idle session waits for one sent just
/// before it, unless `ORDER_HOLD_MS` says otherwise.
pub const DEFAULT_ORDER_HOLD_MS: u32 = 100;

/// How long a stranger waits before being told their id again, unless
/// `STRANGER_COOLDOWN_MINUTES` says otherwise.
pub const DEFAULT_STRANGER_COOLDOWN_MINUTES: u32 = 60;

/// When sessions reset each day unless `RESET_DAILY_AT` says otherwise (issue 4).
pub const DEFAULT_DAILY_RESET: (i8, i8) = (4, 0);

/// `DISCORD_GATEWAY` for `agent`: whether its bot keeps a Gateway
/// connection, a switch (see [`super::read::ON_WORDS`]); unset is off. The one reading of it: the cron tick, the admin
/// API and the Gateway object must agree on what a value means.
pub fn discord_gateway(vars: &impl Vars, agent: &str) -> Result<bool, ConfigError> {
    switch(vars, agent, "DISCORD_GATEWAY", false)
}

/// The BM25 parameters of `agent`'s memory: `MEMORY_BM25_K1` (term-frequency
/// saturation, finite and ≥ 0, default 1.2) and `MEMORY_BM25_B` (length
/// normalisation, 0 to 1, default 0.75), each per agent as `{NAME}__{AGENT}`.
/// They only change how matches are scored, so changing them needs no re-index.
pub fn memory_bm25(vars: &impl Vars, agent: &str) -> Result<hearth_memory::Bm25Params, ConfigError> {
    let read = |name: &str, default: f32, valid: fn(f32) -> bool, rule: &str| match setting(vars, agent, name) {
        None => Ok(default),
        // Read as f64, then narrowed: as the setting always has been.
        Some(raw) => match hearth_decimal::read_f64(&raw).map(|v| v as f32) {
            Some(v) if valid(v) => Ok(v),
            _ => Err(ConfigError::Invalid { name: name.to_owned(), why: format!("{raw:?} is not {rule}") }),
        },
    };
    Ok(hearth_memory::Bm25Params {
        k1: read(
            "MEMORY_BM25_K1",
            hearth_memory::DEFAULT_K1,
            |v| v.is_finite() && v >= 0.0,
            "a number ≥ 0 (default 1.2)",
        )?,
        b: read(
            "MEMORY_BM25_B",
            hearth_memory::DEFAULT_B,
            |v| (0.0..=1.0).contains(&v),
            "a number from 0 to 1 (default 0.75)",
        )?,
    })
}

/// How `agent`'s conversation memory ranks and recalls: `MEMORY_CONVERSATION_RANKING`
/// (`window=0.5,session=0.5,next_in_session=0.9,recall_floor=0.25`, any subset; per
/// agent as `{NAME}__{AGENT}`). Unset: the defaults, which the LoCoMo bench chose by
/// leave-one-conversation-out; the bench sets it to run each fold with its own picks.
pub fn memory_conversation_ranking(
    vars: &impl Vars,
    agent: &str,
) -> Result<hearth_memory::conversation::Ranking, ConfigError> {
    const NAME: &str = "MEMORY_CONVERSATION_RANKING";
    match setting(vars, agent, NAME) {
        None => Ok(hearth_memory::conversation::Ranking::default()),
        Some(raw) => hearth_memory::conversation::Ranking::parse(&raw)
            .map_err(|e| ConfigError::Invalid { name: NAME.to_owned(), why: e.to_string() }),
    }
}

impl AgentConfig {
    /// Loads the settings of `agent`, checking that it is a configured agent.
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let ids = agent_ids(vars);
        if !ids.iter().any(|a| a == agent) {
            return Err(ConfigError::UnknownAgent(agent.to_owned(), ids.join(",")));
        }
        let agent_id =
            AgentId::parse(agent).map_err(|e| ConfigError::Invalid { name: "AGENTS".into(), why: e.to_string() })?;
        let get = |name: &str| setting(vars, agent, name);
        let llm = LlmConfig::load(vars, agent)?;
        let provider = llm.provider;
        let timezone = get("TIMEZONE").unwrap_or_else(|| "UTC".into());
        if !crate::clock::is_valid_zone(&timezone) {
            return Err(ConfigError::Invalid {
                name: "TIMEZONE".into(),
                why: format!("{timezone:?} is not an IANA time zone"),
            });
        }
        let delivery = delivery::DeliveryConfig::load(vars, agent, llm.retry_base_ms)?;
        Ok(AgentConfig {
            agent: agent_id,
            llm,
            owners: parse_principals("OWNER_IDS", &get("OWNER_IDS").unwrap_or_default())?,
            allow_from: parse_principals("ALLOW_FROM", &get("ALLOW_FROM").unwrap_or_default())?,
            timezone,
            telegram_api_base: get("TELEGRAM_API_BASE").map(|b| b.trim_end_matches('/').to_owned()),
            telegram_bot_token: get("TELEGRAM_BOT_TOKEN"),
            telegram_webhook_secret: get("TELEGRAM_WEBHOOK_SECRET"),
            discord_api_base: get("DISCORD_API_BASE")
                .unwrap_or_else(|| "https://discord.com/api/v10".into())
                .trim_end_matches('/')
                .to_owned(),
            lifecycle: LifecycleConfig {
                daily_at: match get("RESET_DAILY_AT") {
                    None => Some(DEFAULT_DAILY_RESET),
                    Some(v) if on_off(&v) == Some(false) => None,
                    Some(v) => Some(parse_hhmm("RESET_DAILY_AT", &v)?),
                },
                idle_hours: match get("RESET_IDLE_HOURS") {
                    None => None,
                    Some(_) => Some(number::<u32>(vars, agent, "RESET_IDLE_HOURS", 0)?).filter(|h| *h > 0),
                },
                context_window: number(vars, agent, "CONTEXT_WINDOW", 200_000)?,
                context_reserve: number(vars, agent, "CONTEXT_RESERVE", 16_000)?,
            },
            media: media::MediaConfig::load(vars, agent)?,
            overlay: overlay::OverlayConfig::load(vars, agent)?,
            memory_bm25: memory_bm25(vars, agent)?,
            web: web::WebConfig::load(vars, agent, provider)?,
            mcp: web::McpSettings::load(vars, agent)?,
            code: code::CodeConfig::load(vars, agent)?,
            delivery,
            history_keep: dreaming::history_keep(vars, agent)?,
            usage: usage::UsageSettings::load(vars, agent)?,
            stranger_cooldown_ms: i64::from(number::<u32>(
                vars,
                agent,
                "STRANGER_COOLDOWN_MINUTES",
                DEFAULT_STRANGER_COOLDOWN_MINUTES,
            )?) * 60_000,
            groups: groups::load(vars, &agent_ids(vars))?,
            voice: voice::VoiceConfig::load(vars, agent)?,
            stream: stream::StreamConfig::load(vars, agent)?,
            approval: approval::ApprovalConfig::load(vars, agent)?,
            order_hold_ms: i64::from(number::<u32>(vars, agent, "ORDER_HOLD_MS", DEFAULT_ORDER_HOLD_MS)?),
            tasks: tasks::TasksConfig::load(vars, agent)?,
        })
    }

    pub fn is_owner(&self, channel: ChannelKind, id: &str) -> bool {
        self.owners.iter().any(|p| p.channel == channel && p.id == id)
    }

    pub fn is_allowed(&self, channel: ChannelKind, id: &str) -> bool {
        self.allow_from.iter().any(|p| p.channel == channel && p.id == id)
    }

    /// The owner's id on a channel, for proactive messages (heartbeats).
    pub fn owner_on(&self, channel: ChannelKind) -> Option<&str> {
        self.owners.iter().find(|p| p.channel == channel).map(|p| p.id.as_str())
    }
}
