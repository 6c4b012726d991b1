//! The agent's settings, read from the Worker's vars and secrets.
//!
//! The default agent `main` uses the names of the architecture page
//! (`LLM_PROVIDER`, `TELEGRAM_BOT_TOKEN`, ...). More agents are listed in
//! `AGENTS` (comma-separated, default `main`); each setting can be given per
//! agent as `{NAME}__{AGENT}` (agent id upper-cased, `-` as `_`), e.g.
//! `TELEGRAM_BOT_TOKEN__WORK`, and falls back to the plain name. A missing or
//! malformed setting is a [`ConfigError`] naming it: the Worker turns that into
//! a clear HTTP error, never a panic.
//!
//! The files go one way: [`read`] (where settings come from, one setting,
//! numbers, the on/off words) at the bottom, one file per group of settings
//! above it, and [`agent`] (all of an agent's settings) on top.

pub mod read;

pub mod api;
pub mod approval;
pub mod code;
pub mod delivery;
pub mod dreaming;
pub mod groups;
pub mod llm;
pub mod media;
pub mod overlay;
pub mod principal;
pub mod schedule;
pub mod stream;
pub mod tasks;
pub mod usage;
pub mod voice;
pub mod web;

pub mod agent;

#[cfg(test)]
mod tests;

pub use agent::{
    discord_gateway, memory_bm25, memory_conversation_ranking, AgentConfig, LifecycleConfig, DEFAULT_DAILY_RESET,
    DEFAULT_ORDER_HOLD_MS, DEFAULT_STRANGER_COOLDOWN_MINUTES,
};
pub use llm::{CachePolicy, LlmConfig, MaxTokensParam, Provider};
pub use principal::{parse_principals, principal_id, Principal};
pub use read::{agent_ids, setting, ConfigError, Vars};
