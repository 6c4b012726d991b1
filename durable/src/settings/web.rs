//! Settings of the tools that reach past the workspace: `web_fetch`, web
//! search, and the agent's MCP servers.

use super::llm::Provider;
use super::read::{number, on_off, setting, switch, ConfigError, Vars};

/// How the agent searches the web (`WEB_SEARCH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebSearch {
    /// No search tool (the default).
    Off,
    /// Anthropic's server-side `web_search` tool: the provider searches, and
    /// its results and citations stay in the history.
    Anthropic { max_uses: u32 },
    /// Brave Search as an ordinary tool Hearth calls (any provider).
    Brave { base_url: String, api_key: String },
}

/// `web_fetch` and web search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    /// `WEB_FETCH` (default on): whether the agent has `web_fetch`.
    pub fetch: bool,
    /// `WEB_FETCH_ALLOW_HOSTS`, **for tests**: `host[:port]` entries fetched
    /// even though they are loopback or private addresses.
    pub allow_hosts: Vec<String>,
    /// `WEB_FETCH_MAX_BYTES` (default 2 MB): body bytes downloaded at most.
    pub max_bytes: u64,
    /// `WEB_FETCH_MAX_CHARS` (default 20,000): characters of text the model gets.
    pub max_chars: usize,
    /// `WEB_FETCH_TIMEOUT_MS` (default 15,000) per request (each redirect hop).
    pub timeout_ms: u32,
    pub search: WebSearch,
}

/// Hearth's own MCP client and server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// `MCP_TIMEOUT_MS` (default 30,000): one call to a server, unless its
    /// `mcp.json` entry says `timeoutMs`.
    pub timeout_ms: u32,
    /// `MCP_TOOLS_TTL_MINUTES` (default 60): how long the Agent object keeps
    /// a server's tool list before a new session lists it again.
    pub tools_ttl_ms: i64,
    /// `MCP_MAX_RESULT_CHARS` (default 20,000): characters of one tool result.
    pub max_result_chars: usize,
    /// `MCP_ASK_TIMEOUT_MS` (default 55,000, inside the 60 s MCP clients wait by default): how long Hearth's own MCP
    /// server waits for the agent's answer before telling the caller it is
    /// still working.
    pub ask_timeout_ms: u32,
}

impl WebConfig {
    pub fn load(vars: &impl Vars, agent: &str, provider: Provider) -> Result<Self, ConfigError> {
        let get = |name: &str| setting(vars, agent, name);
        let search = match get("WEB_SEARCH").map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("none") => WebSearch::Off,
            Some(v) if on_off(v) == Some(false) => WebSearch::Off,
            Some("anthropic") if provider != Provider::Anthropic => {
                return Err(ConfigError::Invalid {
                    name: "WEB_SEARCH".into(),
                    why: "anthropic is Anthropic's own search and needs LLM_PROVIDER=anthropic; \
use brave (with WEB_SEARCH_API_KEY) for other providers"
                        .into(),
                })
            }
            Some("anthropic") => WebSearch::Anthropic { max_uses: number(vars, agent, "WEB_SEARCH_MAX_USES", 5)? },
            Some("brave") => WebSearch::Brave {
                base_url: get("WEB_SEARCH_BASE_URL")
                    .unwrap_or_else(|| "https://api.search.brave.com".into())
                    .trim_end_matches('/')
                    .to_owned(),
                api_key: get("WEB_SEARCH_API_KEY").ok_or_else(|| ConfigError::Missing {
                    name: "WEB_SEARCH_API_KEY (a Brave Search API key, for WEB_SEARCH=brave)".into(),
                })?,
            },
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "WEB_SEARCH".into(),
                    why: format!("{other:?}: use off, anthropic or brave"),
                })
            }
        };
        let allow_hosts = get("WEB_FETCH_ALLOW_HOSTS")
            .map(|v| v.split(',').map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect())
            .unwrap_or_default();
        Ok(WebConfig {
            fetch: switch(vars, agent, "WEB_FETCH", true)?,
            allow_hosts,
            max_bytes: number(vars, agent, "WEB_FETCH_MAX_BYTES", 2_000_000)?,
            max_chars: number(vars, agent, "WEB_FETCH_MAX_CHARS", 20_000)?,
            timeout_ms: number(vars, agent, "WEB_FETCH_TIMEOUT_MS", 15_000)?,
            search,
        })
    }
}

impl McpSettings {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        Ok(McpSettings {
            timeout_ms: number(vars, agent, "MCP_TIMEOUT_MS", 30_000)?,
            tools_ttl_ms: number::<i64>(vars, agent, "MCP_TOOLS_TTL_MINUTES", 60)?.max(0).saturating_mul(60_000),
            max_result_chars: number(vars, agent, "MCP_MAX_RESULT_CHARS", 20_000)?,
            ask_timeout_ms: number(vars, agent, "MCP_ASK_TIMEOUT_MS", 55_000)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::AgentConfig;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<AgentConfig, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        AgentConfig::load(&vars, "main")
    }

    #[test]
    fn web_fetch_is_on_and_search_off_by_default() {
        let c = load(&[]).unwrap();
        assert!(c.web.fetch && c.web.allow_hosts.is_empty());
        assert_eq!(c.web.search, WebSearch::Off);
        assert!(!load(&[("WEB_FETCH", "off")]).unwrap().web.fetch);
    }

    #[test]
    fn search_settings_name_what_is_wrong() {
        assert_eq!(load(&[("WEB_SEARCH", "anthropic")]).unwrap().web.search, WebSearch::Anthropic { max_uses: 5 });
        let e = load(&[("WEB_SEARCH", "anthropic"), ("LLM_PROVIDER", "openai")]).unwrap_err();
        assert!(e.to_string().contains("WEB_SEARCH") && e.to_string().contains("brave"), "{e}");
        let e = load(&[("WEB_SEARCH", "brave")]).unwrap_err();
        assert!(e.to_string().contains("WEB_SEARCH_API_KEY"), "{e}");
        let brave = load(&[("WEB_SEARCH", "brave"), ("WEB_SEARCH_API_KEY", "k")]).unwrap().web.search;
        assert_eq!(brave, WebSearch::Brave { base_url: "https://api.search.brave.com".into(), api_key: "k".into() });
        assert!(load(&[("WEB_SEARCH", "google")]).unwrap_err().to_string().contains("WEB_SEARCH"));
        assert!(load(&[("WEB_FETCH", "maybe")]).unwrap_err().to_string().contains("WEB_FETCH"));
    }

    #[test]
    fn mcp_settings() {
        let c = load(&[("MCP_TOOLS_TTL_MINUTES", "5")]).unwrap();
        assert_eq!(c.mcp.tools_ttl_ms, 300_000);
        assert_eq!(c.mcp.timeout_ms, 30_000);
        assert!(load(&[("MCP_TIMEOUT_MS", "soon")]).unwrap_err().to_string().contains("MCP_TIMEOUT_MS"));
    }
}
