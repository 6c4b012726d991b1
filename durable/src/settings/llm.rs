//! The model an agent talks to: its provider, address, limits and retries
//! (`LLM_*`, `RETRY_*`, `MAX_TOOL_ROUNDS`).

use super::read::{number, setting, ConfigError, Vars};

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

impl LlmConfig {
    /// `agent`'s model settings.
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
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
        Ok(LlmConfig {
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
        })
    }
}
