//! The agent's settings, read from the Worker's vars and secrets.
//!
//! The default agent `main` uses the names of the architecture page
//! (`LLM_PROVIDER`, `TELEGRAM_BOT_TOKEN`, ...). More agents are listed in
//! `AGENTS` (comma-separated, default `main`); each setting can be given per
//! agent as `{NAME}__{AGENT}` (agent id upper-cased, `-` as `_`), e.g.
//! `TELEGRAM_BOT_TOKEN__WORK`, and falls back to the plain name. A missing or
//! malformed setting is a [`ConfigError`] naming it: the Worker turns that into
//! a clear HTTP error, never a panic.

pub mod api;
pub mod approval;
pub mod code;
pub mod delivery;
pub mod dreaming;
pub mod groups;
pub mod media;
pub mod overlay;
pub mod stream;
pub mod tasks;
pub mod usage;
pub mod voice;
pub mod web;

use crate::inbound::ChannelKind;
use r2_layout::AgentId;

/// Where settings come from (the Worker's `Env`, or a map in tests).
pub trait Vars {
    fn get(&self, name: &str) -> Option<String>;
}

impl Vars for std::collections::HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        std::collections::HashMap::get(self, name).cloned()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown agent {0:?} (configured agents: {1})")]
    UnknownAgent(String, String),
    #[error("{name} is not set (see .dev.vars.example)")]
    Missing { name: String },
    #[error("{name} is invalid: {why}")]
    Invalid { name: String, why: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Anthropic,
    OpenAi,
}

/// How an OpenAI-compatible request names its output limit
/// (`LLM_MAX_TOKENS_PARAM`). Newer OpenAI models (gpt-5.x, the o-series)
/// refuse `max_tokens` with a 400 and want `max_completion_tokens`; many
/// OpenAI-compatible servers know only `max_tokens`. Anthropic always takes
/// `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensParam {
    MaxTokens,
    MaxCompletionTokens,
}

impl MaxTokensParam {
    /// The JSON field name.
    pub fn name(self) -> &'static str {
        match self {
            MaxTokensParam::MaxTokens => "max_tokens",
            MaxTokensParam::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// The other name (tried once when a model refuses this one).
    pub fn other(self) -> Self {
        match self {
            MaxTokensParam::MaxTokens => MaxTokensParam::MaxCompletionTokens,
            MaxTokensParam::MaxCompletionTokens => MaxTokensParam::MaxTokens,
        }
    }

    /// The default for a model: `max_completion_tokens` for OpenAI's
    /// reasoning models (`gpt-5…`, `o1…`, `o3…`, `o4…`, also behind a
    /// `vendor/` prefix), else `max_tokens`.
    pub fn default_for(provider: Provider, model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model).trim().to_ascii_lowercase();
        let reasoning =
            name.starts_with("gpt-5") || (name.starts_with('o') && name[1..].starts_with(|c: char| c.is_ascii_digit()));
        if provider == Provider::OpenAi && reasoning {
            MaxTokensParam::MaxCompletionTokens
        } else {
            MaxTokensParam::MaxTokens
        }
    }
}

/// Which lifetime the prompt cache is asked for (`LLM_CACHE_TTL`; Anthropic
/// only, see `crate::llm::cache_ttl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CachePolicy {
    /// `auto` (default): an hour for heartbeats and jobs that run again
    /// within it, 5 minutes for everything else.
    #[default]
    Auto,
    /// `5m`: never an hour (a proxy or platform without the 1-hour cache).
    FiveMinutes,
    /// `1h`: also conversations' tools and system prompt, for someone who
    /// writes every 5 to 60 minutes.
    OneHour,
}

/// A `channel:id` pair from `OWNER_IDS` / `ALLOW_FROM`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    pub channel: ChannelKind,
    pub id: String,
}

impl Principal {
    pub fn new(channel: ChannelKind, id: impl Into<String>) -> Self {
        Principal { channel, id: id.into() }
    }

    /// `telegram:12345` as `OWNER_IDS` takes it (`None`: not one), the id
    /// in the form messages carry it.
    pub fn parse(raw: &str) -> Option<Principal> {
        let (channel, id) = raw.trim().split_once(':')?;
        let channel = ChannelKind::parse(&channel.trim().to_ascii_lowercase()).filter(|c| c.is_platform())?;
        Some(Principal { channel, id: principal_id(channel, id.trim())? })
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.channel, self.id)
    }
}

/// A principal travels as its `channel:id` text.
impl serde::Serialize for Principal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Principal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = std::borrow::Cow::<str>::deserialize(d)?;
        Principal::parse(&raw).ok_or_else(|| serde::de::Error::custom(format!("not a channel:id: {raw:?}")))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    pub provider: Provider,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub max_tokens: u32,
    /// How OpenAI-compatible requests name `max_tokens` (Anthropic ignores it).
    pub max_tokens_param: MaxTokensParam,
    pub timeout_ms: u32,
    pub max_attempts: u32,
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    pub max_tool_rounds: u32,
    /// `LLM_CACHE_TTL`: `auto`, `5m` or `1h`.
    pub cache_policy: CachePolicy,
}

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
    pub telegram_api_base: String,
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

fn parse_hhmm(name: &str, raw: &str) -> Result<(i8, i8), ConfigError> {
    let bad = || ConfigError::Invalid { name: name.to_owned(), why: format!("{raw:?} is not HH:MM") };
    let (h, m) = raw.split_once(':').ok_or_else(bad)?;
    let (h, m): (i8, i8) = (h.trim().parse().map_err(|_| bad())?, m.trim().parse().map_err(|_| bad())?);
    if (0..24).contains(&h) && (0..60).contains(&m) {
        Ok((h, m))
    } else {
        Err(bad())
    }
}

/// The list of configured agent ids (`AGENTS`, default `main`).
pub fn agent_ids(vars: &impl Vars) -> Vec<String> {
    match vars.get("AGENTS") {
        Some(list) if !list.trim().is_empty() => {
            list.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
        }
        _ => vec!["main".to_owned()],
    }
}

/// Reads one setting for one agent: `{NAME}__{AGENT}` first, then `{NAME}`.
pub fn setting(vars: &impl Vars, agent: &str, name: &str) -> Option<String> {
    let suffix: String = agent.chars().map(|c| if c == '-' { '_' } else { c.to_ascii_uppercase() }).collect();
    vars.get(&format!("{name}__{suffix}"))
        .or_else(|| vars.get(name))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `DISCORD_GATEWAY` for `agent`: whether its bot keeps a Gateway
/// connection. `on`/`true`/`1` or `off`/`false`/`0` (any case, spaces
/// trimmed); unset is off. The one reading of it: the cron tick, the admin
/// API and the Gateway object must agree on what a value means.
pub fn discord_gateway(vars: &impl Vars, agent: &str) -> Result<bool, ConfigError> {
    match setting(vars, agent, "DISCORD_GATEWAY").map(|v| v.to_ascii_lowercase()).as_deref() {
        None | Some("off" | "false" | "0") => Ok(false),
        Some("on" | "true" | "1") => Ok(true),
        Some(other) => {
            Err(ConfigError::Invalid { name: "DISCORD_GATEWAY".into(), why: format!("{other:?} is not on or off") })
        }
    }
}

fn number<T: std::str::FromStr>(vars: &impl Vars, agent: &str, name: &str, default: T) -> Result<T, ConfigError> {
    match setting(vars, agent, name) {
        None => Ok(default),
        Some(v) => {
            v.parse().map_err(|_| ConfigError::Invalid { name: name.to_owned(), why: format!("{v:?} is not a number") })
        }
    }
}

/// The BM25 parameters of `agent`'s memory: `MEMORY_BM25_K1` (term-frequency
/// saturation, finite and ≥ 0, default 1.2) and `MEMORY_BM25_B` (length
/// normalisation, 0 to 1, default 0.75), each per agent as `{NAME}__{AGENT}`.
/// They only change how matches are scored, so changing them needs no re-index.
pub fn memory_bm25(vars: &impl Vars, agent: &str) -> Result<hearth_memory::Bm25Params, ConfigError> {
    let read = |name: &str, default: f32, valid: fn(f32) -> bool, rule: &str| match setting(vars, agent, name) {
        None => Ok(default),
        // Parsed as f64: the Worker already links that parser (an f32 one costs ~10 kB).
        Some(raw) => match raw.parse::<f64>().map(|v| v as f32) {
            Ok(v) if valid(v) => Ok(v),
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

/// Parses `telegram:123,discord:456,slack:U012AB3CD,whatsapp:+15551234567,email:ana@example.com`.
/// Each id has its platform's form (Telegram and Discord ids are numbers, a
/// Telegram group's negative; Slack's are like `U012AB3CD` or `C0123…` for a
/// channel; a WhatsApp number in international form, the `+` optional; an
/// email address), so a username or a typo is an error naming the entry
/// rather than an id that silently never matches. A channel with nothing
/// after the colon (`telegram:`, the unfilled form people copy from
/// examples) counts as no entry: the agent then tells whoever writes to it
/// their id.
pub fn parse_principals(name: &str, raw: &str) -> Result<Vec<Principal>, ConfigError> {
    let invalid = |why: String| ConfigError::Invalid { name: name.to_owned(), why };
    let mut out = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (channel, id) =
            item.split_once(':').ok_or_else(|| invalid(format!("{item:?} is not channel:id (e.g. telegram:12345)")))?;
        let channel =
            ChannelKind::parse(&channel.trim().to_ascii_lowercase()).filter(|c| c.is_platform()).ok_or_else(|| {
                invalid(format!("{item:?}: the channel must be telegram, discord, slack, whatsapp or email"))
            })?;
        let id = id.trim();
        if id.is_empty() {
            continue;
        }
        let id = principal_id(channel, id).ok_or_else(|| {
            invalid(format!("{item:?}: {} (message the bot once: it tells you yours)", id_form(channel)))
        })?;
        out.push(Principal { channel, id });
    }
    Ok(out)
}

/// What an id on `channel` looks like, for the error about one that does not.
fn id_form(channel: ChannelKind) -> &'static str {
    match channel {
        ChannelKind::Slack => "a Slack id is letters and digits like U012AB3CD (a member) or C0123ABCD (a channel)",
        ChannelKind::Whatsapp => "a WhatsApp id is the phone number in international form, like +15551234567",
        ChannelKind::Email => "an email id is an address, like ana@example.com",
        _ => "the id must be the numeric id",
    }
}

/// An id of `channel` in the form messages carry it (`None`: not an id):
/// Slack's upper case, a WhatsApp number's digits (WhatsApp sends `wa_id`s
/// without the `+`), an email address in lower case.
pub fn principal_id(channel: ChannelKind, id: &str) -> Option<String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match channel {
        ChannelKind::Telegram => digits(id.strip_prefix('-').unwrap_or(id)).then(|| id.to_owned()),
        ChannelKind::Discord => digits(id).then(|| id.to_owned()),
        ChannelKind::Slack => {
            let up = id.to_ascii_uppercase();
            (up.len() >= 2
                && up.starts_with(|c: char| c.is_ascii_uppercase())
                && up.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then_some(up)
        }
        ChannelKind::Whatsapp => {
            let n = id.strip_prefix('+').unwrap_or(id);
            (digits(n) && (7..=15).contains(&n.len())).then(|| n.to_owned())
        }
        ChannelKind::Email => {
            let a = id.to_ascii_lowercase();
            let (local, domain) = a.split_once('@')?;
            let ok = !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !a.contains(|c: char| c.is_whitespace() || matches!(c, ',' | '<' | '>' | '"'))
                && a.matches('@').count() == 1;
            ok.then_some(a)
        }
        _ => None,
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
        let provider = match get("LLM_PROVIDER").as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("anthropic") => Provider::Anthropic,
            Some("openai") => Provider::OpenAi,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "LLM_PROVIDER".into(),
                    why: format!("{other:?}: use anthropic or openai"),
                })
            }
        };
        let (default_base, default_model) = match provider {
            Provider::Anthropic => ("https://api.anthropic.com", "claude-sonnet-4-5"),
            Provider::OpenAi => ("https://api.openai.com/v1", "gpt-4o-mini"),
        };
        let model = get("LLM_MODEL").unwrap_or_else(|| default_model.into());
        let max_tokens_param = match get("LLM_MAX_TOKENS_PARAM").as_deref() {
            None => MaxTokensParam::default_for(provider, &model),
            Some("max_tokens") => MaxTokensParam::MaxTokens,
            Some("max_completion_tokens") => MaxTokensParam::MaxCompletionTokens,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "LLM_MAX_TOKENS_PARAM".into(),
                    why: format!("{other:?}: use max_tokens or max_completion_tokens"),
                })
            }
        };
        let cache_policy = match get("LLM_CACHE_TTL").map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("auto" | "") => CachePolicy::Auto,
            Some("5m") => CachePolicy::FiveMinutes,
            Some("1h") => CachePolicy::OneHour,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "LLM_CACHE_TTL".into(),
                    why: format!("{other:?}: use auto, 5m or 1h"),
                })
            }
        };
        let llm = LlmConfig {
            provider,
            base_url: get("LLM_BASE_URL").unwrap_or_else(|| default_base.into()).trim_end_matches('/').to_owned(),
            model,
            api_key: get("LLM_API_KEY"),
            max_tokens: number(vars, agent, "LLM_MAX_TOKENS", 4096)?,
            max_tokens_param,
            timeout_ms: number(vars, agent, "LLM_TIMEOUT_MS", 90_000)?,
            max_attempts: number::<u32>(vars, agent, "LLM_MAX_ATTEMPTS", 4)?.max(1),
            retry_base_ms: number(vars, agent, "RETRY_BASE_MS", 1_000)?,
            retry_max_ms: number(vars, agent, "RETRY_MAX_MS", 30_000)?,
            max_tool_rounds: number::<u32>(vars, agent, "MAX_TOOL_ROUNDS", 8)?.max(1),
            cache_policy,
        };
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
            telegram_api_base: get("TELEGRAM_API_BASE")
                .unwrap_or_else(|| "https://api.telegram.org".into())
                .trim_end_matches('/')
                .to_owned(),
            telegram_bot_token: get("TELEGRAM_BOT_TOKEN"),
            telegram_webhook_secret: get("TELEGRAM_WEBHOOK_SECRET"),
            discord_api_base: get("DISCORD_API_BASE")
                .unwrap_or_else(|| "https://discord.com/api/v10".into())
                .trim_end_matches('/')
                .to_owned(),
            lifecycle: LifecycleConfig {
                daily_at: match get("RESET_DAILY_AT") {
                    None => Some(DEFAULT_DAILY_RESET),
                    Some(v) if v.eq_ignore_ascii_case("off") => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_for_main() {
        let c = AgentConfig::load(&vars(&[("OWNER_IDS", "telegram:42")]), "main").unwrap();
        assert_eq!(c.llm.provider, Provider::Anthropic);
        assert_eq!(c.llm.base_url, "https://api.anthropic.com");
        assert!(c.is_owner(ChannelKind::Telegram, "42"));
        assert!(!c.is_owner(ChannelKind::Discord, "42"));
        assert_eq!(c.telegram_api_base, "https://api.telegram.org");
    }

    #[test]
    fn discord_gateway_is_on_or_off_and_anything_else_is_an_error_naming_it() {
        assert_eq!(discord_gateway(&vars(&[]), "main"), Ok(false));
        assert_eq!(discord_gateway(&vars(&[("DISCORD_GATEWAY", " On ")]), "main"), Ok(true));
        assert_eq!(
            discord_gateway(&vars(&[("DISCORD_GATEWAY", "on"), ("DISCORD_GATEWAY__WORK", "off")]), "work"),
            Ok(false)
        );
        let e = discord_gateway(&vars(&[("DISCORD_GATEWAY", "yes please")]), "main").unwrap_err();
        assert!(e.to_string().contains("DISCORD_GATEWAY") && e.to_string().contains("yes please"), "{e}");
    }

    #[test]
    fn unknown_agents_and_bad_values_are_errors() {
        assert!(matches!(AgentConfig::load(&vars(&[]), "work"), Err(ConfigError::UnknownAgent(..))));
        let e = AgentConfig::load(&vars(&[("OWNER_IDS", "12345")]), "main").unwrap_err();
        assert!(e.to_string().contains("OWNER_IDS"), "{e}");
        let e = AgentConfig::load(&vars(&[("LLM_PROVIDER", "gemini")]), "main").unwrap_err();
        assert!(e.to_string().contains("LLM_PROVIDER"));
        let e = AgentConfig::load(&vars(&[("LLM_TIMEOUT_MS", "soon")]), "main").unwrap_err();
        assert!(e.to_string().contains("LLM_TIMEOUT_MS"));
    }

    #[test]
    fn the_stranger_cooldown_is_an_hour_unless_set() {
        let cooldown = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.stranger_cooldown_ms);
        assert_eq!(cooldown(&[]).unwrap(), 3_600_000);
        assert_eq!(cooldown(&[("STRANGER_COOLDOWN_MINUTES", "0")]).unwrap(), 0);
        assert_eq!(cooldown(&[("STRANGER_COOLDOWN_MINUTES", "1440")]).unwrap(), 86_400_000);
        for bad in ["-5", "an hour", "1.5"] {
            let e = cooldown(&[("STRANGER_COOLDOWN_MINUTES", bad)]).unwrap_err();
            assert!(e.to_string().contains("STRANGER_COOLDOWN_MINUTES"), "{e}");
        }
    }

    #[test]
    fn the_order_hold_is_a_tenth_of_a_second_unless_set() {
        let hold = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.order_hold_ms);
        assert_eq!(hold(&[]).unwrap(), 100);
        assert_eq!(hold(&[("ORDER_HOLD_MS", "0")]).unwrap(), 0);
        assert_eq!(hold(&[("ORDER_HOLD_MS", "400")]).unwrap(), 400);
        for bad in ["-1", "soon", "0.5"] {
            let e = hold(&[("ORDER_HOLD_MS", bad)]).unwrap_err();
            assert!(e.to_string().contains("ORDER_HOLD_MS"), "{e}");
        }
    }

    #[test]
    fn daily_reset_is_on_at_four_unless_turned_off() {
        let daily = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.lifecycle.daily_at);
        assert_eq!(daily(&[]).unwrap(), Some((4, 0)));
        assert_eq!(daily(&[("RESET_DAILY_AT", "06:30")]).unwrap(), Some((6, 30)));
        assert_eq!(daily(&[("RESET_DAILY_AT", "off")]).unwrap(), None);
        assert_eq!(daily(&[("RESET_DAILY_AT", "OFF")]).unwrap(), None);
        assert!(daily(&[("RESET_DAILY_AT", "25:00")]).unwrap_err().to_string().contains("RESET_DAILY_AT"));
        let c = AgentConfig::load(&vars(&[]), "main").unwrap();
        assert_eq!(c.lifecycle.idle_hours, None, "idle resets stay opt-in");
    }

    #[test]
    fn owners_on_every_platform_in_the_form_messages_carry() {
        let c = AgentConfig::load(
            &vars(&[
                ("OWNER_IDS", "slack:u012ab3cd, whatsapp:+15551234567, email:Ana@Example.com"),
                ("ALLOW_FROM", "slack:C0123ABCD,whatsapp:447700900123,email:pat@example.org"),
            ]),
            "main",
        )
        .unwrap();
        assert!(c.is_owner(ChannelKind::Slack, "U012AB3CD"));
        assert!(c.is_owner(ChannelKind::Whatsapp, "15551234567"), "WhatsApp's wa_id has no +");
        assert!(c.is_owner(ChannelKind::Email, "ana@example.com"));
        assert!(!c.is_owner(ChannelKind::Email, "pat@example.org"));
        assert!(c.is_allowed(ChannelKind::Slack, "C0123ABCD"));
        assert!(c.is_allowed(ChannelKind::Whatsapp, "447700900123"));
        assert!(c.is_allowed(ChannelKind::Email, "pat@example.org"));
        let e = AgentConfig::load(&vars(&[("OWNER_IDS", "whatsapp:555")]), "main").unwrap_err();
        assert!(e.to_string().contains("+15551234567"), "{e}");
    }

    #[test]
    fn owner_ids_empty_unfilled_or_invalid() {
        // Empty (the shipped example) and an unfilled `telegram:` mean "no owner yet".
        for raw in ["", " ", "telegram:", "telegram: , discord:"] {
            let c = AgentConfig::load(&vars(&[("OWNER_IDS", raw)]), "main").unwrap();
            assert!(c.owners.is_empty(), "{raw:?}");
        }
        let c = AgentConfig::load(
            &vars(&[("OWNER_IDS", "telegram:, discord:123"), ("ALLOW_FROM", "telegram:-100123")]),
            "main",
        )
        .unwrap();
        assert_eq!(c.owners, vec![Principal { channel: ChannelKind::Discord, id: "123".into() }]);
        assert!(c.is_allowed(ChannelKind::Telegram, "-100123"));
        for bad in [
            "12345",
            "telegram:@olga",
            "slack:1",
            "slack:@olga",
            "telegram:12a",
            "discord:-5",
            "telegram:-",
            "whatsapp:+1 555",
            "whatsapp:12",
            "email:olga",
            "email:olga@localhost",
            "irc:olga",
            "notify:1",
        ] {
            let e = AgentConfig::load(&vars(&[("OWNER_IDS", bad)]), "main").unwrap_err();
            assert!(matches!(&e, ConfigError::Invalid { name, .. } if name == "OWNER_IDS"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn memory_conversation_ranking_reads_its_setting() {
        let r = memory_conversation_ranking(&vars(&[]), "main").unwrap();
        assert_eq!(r, hearth_memory::conversation::Ranking::default());
        let v = vars(&[("MEMORY_CONVERSATION_RANKING__WORK", "session=0,recall_floor=0.4")]);
        let work = memory_conversation_ranking(&v, "work").unwrap();
        assert_eq!((work.session, work.recall_floor, work.window), (0.0, 0.4, r.window));
        let bad = vars(&[("MEMORY_CONVERSATION_RANKING", "window=-1")]);
        assert!(memory_conversation_ranking(&bad, "main")
            .unwrap_err()
            .to_string()
            .contains("MEMORY_CONVERSATION_RANKING"));
    }

    #[test]
    fn memory_bm25_parameters() {
        let defaults = AgentConfig::load(&vars(&[]), "main").unwrap().memory_bm25;
        assert_eq!(defaults, hearth_memory::Bm25Params { k1: 1.2, b: 0.75 });
        let v = vars(&[("AGENTS", "main,work"), ("MEMORY_BM25_K1", "0.9"), ("MEMORY_BM25_B__WORK", "0.4")]);
        assert_eq!(AgentConfig::load(&v, "main").unwrap().memory_bm25, hearth_memory::Bm25Params { k1: 0.9, b: 0.75 });
        assert_eq!(AgentConfig::load(&v, "work").unwrap().memory_bm25, hearth_memory::Bm25Params { k1: 0.9, b: 0.4 });
        for (name, bad) in [
            ("MEMORY_BM25_K1", "fast"),
            ("MEMORY_BM25_K1", "-1"),
            ("MEMORY_BM25_K1", "inf"),
            ("MEMORY_BM25_B", "1.5"),
            ("MEMORY_BM25_B", "NaN"),
        ] {
            let e = AgentConfig::load(&vars(&[(name, bad)]), "main").unwrap_err();
            assert!(matches!(&e, ConfigError::Invalid { name: n, .. } if n == name), "{name}={bad}: {e}");
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn the_cache_lifetime_setting() {
        let policy = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.llm.cache_policy);
        assert_eq!(policy(&[]).unwrap(), CachePolicy::Auto);
        assert_eq!(policy(&[("LLM_CACHE_TTL", "5M")]).unwrap(), CachePolicy::FiveMinutes);
        assert_eq!(policy(&[("LLM_CACHE_TTL__MAIN", "1h")]).unwrap(), CachePolicy::OneHour);
        let e = policy(&[("LLM_CACHE_TTL", "3600")]).unwrap_err();
        assert!(e.to_string().contains("LLM_CACHE_TTL") && e.to_string().contains("auto, 5m or 1h"), "{e}");
    }

    #[test]
    fn the_output_limit_is_named_as_the_model_wants() {
        let param = |v: &[(&str, &str)]| AgentConfig::load(&vars(v), "main").map(|c| c.llm.max_tokens_param);
        let openai = |model: &'static str| [("LLM_PROVIDER", "openai"), ("LLM_MODEL", model)];
        for model in ["gpt-5", "gpt-5.1-mini", "o1", "o3-mini", "o4-mini", "openai/gpt-5-nano", "O3"] {
            assert_eq!(param(&openai(model)).unwrap(), MaxTokensParam::MaxCompletionTokens, "{model}");
        }
        for model in ["gpt-4o-mini", "gpt-4.1", "llama3.1:8b", "openchat", "omni-moderation"] {
            assert_eq!(param(&openai(model)).unwrap(), MaxTokensParam::MaxTokens, "{model}");
        }
        assert_eq!(param(&[("LLM_MODEL", "o3")]).unwrap(), MaxTokensParam::MaxTokens, "Anthropic: max_tokens");
        let chosen = [("LLM_PROVIDER", "openai"), ("LLM_MODEL", "gpt-5"), ("LLM_MAX_TOKENS_PARAM", "max_tokens")];
        assert_eq!(param(&chosen).unwrap(), MaxTokensParam::MaxTokens, "the setting wins");
        let e = param(&[("LLM_MAX_TOKENS_PARAM", "max_output_tokens")]).unwrap_err();
        assert!(matches!(&e, ConfigError::Invalid { name, .. } if name == "LLM_MAX_TOKENS_PARAM"), "{e}");
    }

    #[test]
    fn per_agent_overrides() {
        let v = vars(&[
            ("AGENTS", "main, work-2"),
            ("LLM_MODEL", "m-main"),
            ("LLM_MODEL__WORK_2", "m-work"),
            ("LLM_PROVIDER", "openai"),
        ]);
        assert_eq!(AgentConfig::load(&v, "main").unwrap().llm.model, "m-main");
        let w = AgentConfig::load(&v, "work-2").unwrap();
        assert_eq!(w.llm.model, "m-work");
        assert_eq!(w.llm.base_url, "https://api.openai.com/v1");
    }
}
