//! Handing work off (`docs/delegation.md`): which peers an agent may ask
//! (`ALLOWED_DELEGATES`), how long it waits and how deep a chain of askings
//! may go (`DELEGATE_*`), and what its background sub-agents may use
//! (`SUBAGENT_MODEL`, `SUBAGENTS_MAX`, `SUBAGENT_*`). Each per agent as
//! `{NAME}__{AGENT}`, like every setting.

use super::read::{number, setting, ConfigError, Vars};
use r2_layout::AgentId;

#[derive(Debug, Clone, PartialEq)]
pub struct TasksConfig {
    /// `ALLOWED_DELEGATES`: the agents this one may ask (`delegate`); none
    /// by default. An id that is not in `AGENTS` stays listed: asking it is
    /// a tool error saying so, with no call made.
    pub delegates: Vec<String>,
    /// The Worker's agents (`AGENTS`), to tell an unknown peer from one that
    /// is not allowed.
    pub known_agents: Vec<String>,
    /// `DELEGATE_TIMEOUT_SECONDS` (default 120, at most 600) in ms: a peer
    /// that has not answered by then is stopped, and the asker told so.
    pub delegate_timeout_ms: u64,
    /// `DELEGATE_DEPTH` (default 1, at most 4): how many askings a chain may
    /// have. At 1 a session that was asked may not ask further.
    pub delegate_depth: u8,
    /// `DELEGATE_CALLS_PER_TURN` (default 3): peers asked while answering
    /// one message, at most; past it the model is told to answer.
    pub delegate_calls_per_turn: u32,
    /// `SUBAGENT_MODEL`: the model of background sub-agents (default: the
    /// agent's own `LLM_MODEL`).
    pub subagent_model: Option<String>,
    /// `SUBAGENTS_MAX` (default 3): sub-agents running at once; the rest
    /// wait. 0: no sub-agents (`spawn_task` and `tasks` are not offered).
    pub subagents_max: u32,
    /// `SUBAGENT_MAX_ROUNDS` (default 12): model calls a sub-agent may make.
    pub subagent_rounds: u32,
    /// `SUBAGENT_TIMEOUT_MINUTES` (default 15, at most 60) in ms, from when
    /// it starts (checked between its model calls).
    pub subagent_timeout_ms: i64,
    /// `SUBAGENT_MAX_COST_USD` (default 0.50): what one sub-agent may spend.
    pub subagent_max_cost_usd: f64,
}

pub const DEFAULT_DELEGATE_TIMEOUT_SECONDS: u32 = 120;
pub const DEFAULT_SUBAGENTS_MAX: u32 = 3;
pub const DEFAULT_SUBAGENT_ROUNDS: u32 = 12;
pub const DEFAULT_SUBAGENT_TIMEOUT_MINUTES: u32 = 15;
pub const DEFAULT_SUBAGENT_MAX_COST_USD: f64 = 0.5;

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            delegates: Vec::new(),
            known_agents: vec!["main".into()],
            delegate_timeout_ms: u64::from(DEFAULT_DELEGATE_TIMEOUT_SECONDS) * 1000,
            delegate_depth: 1,
            delegate_calls_per_turn: 3,
            subagent_model: None,
            subagents_max: DEFAULT_SUBAGENTS_MAX,
            subagent_rounds: DEFAULT_SUBAGENT_ROUNDS,
            subagent_timeout_ms: i64::from(DEFAULT_SUBAGENT_TIMEOUT_MINUTES) * 60_000,
            subagent_max_cost_usd: DEFAULT_SUBAGENT_MAX_COST_USD,
        }
    }
}

impl TasksConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let invalid = |name: &str, why: String| ConfigError::Invalid { name: name.to_owned(), why };
        let mut delegates = Vec::new();
        for id in setting(vars, agent, "ALLOWED_DELEGATES").unwrap_or_default().split(',').map(str::trim) {
            if id.is_empty() || id == agent || delegates.iter().any(|d| d == id) {
                continue;
            }
            AgentId::parse(id).map_err(|e| invalid("ALLOWED_DELEGATES", format!("{id:?}: {e}")))?;
            delegates.push(id.to_owned());
        }
        let positive = |name: &str, default: u32, max: u32| -> Result<u32, ConfigError> {
            let n = number::<u32>(vars, agent, name, default)?;
            if n == 0 || n > max {
                return Err(invalid(name, format!("{n} is not from 1 to {max}")));
            }
            Ok(n)
        };
        let cost = match setting(vars, agent, "SUBAGENT_MAX_COST_USD") {
            None => DEFAULT_SUBAGENT_MAX_COST_USD,
            Some(raw) => hearth_decimal::read_f64(&raw)
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| invalid("SUBAGENT_MAX_COST_USD", format!("{raw:?} is not an amount above 0")))?,
        };
        Ok(TasksConfig {
            delegates,
            known_agents: super::read::agent_ids(vars),
            delegate_timeout_ms: u64::from(positive(
                "DELEGATE_TIMEOUT_SECONDS",
                DEFAULT_DELEGATE_TIMEOUT_SECONDS,
                // The asking turn runs in its object's alarm, which may run 15 minutes.
                600,
            )?) * 1000,
            delegate_depth: positive("DELEGATE_DEPTH", 1, 4)? as u8,
            delegate_calls_per_turn: positive("DELEGATE_CALLS_PER_TURN", 3, 20)?,
            subagent_model: setting(vars, agent, "SUBAGENT_MODEL"),
            subagents_max: match number::<u32>(vars, agent, "SUBAGENTS_MAX", DEFAULT_SUBAGENTS_MAX)? {
                n @ 0..=20 => n,
                n => return Err(invalid("SUBAGENTS_MAX", format!("{n} is not from 0 to 20"))),
            },
            subagent_rounds: positive("SUBAGENT_MAX_ROUNDS", DEFAULT_SUBAGENT_ROUNDS, 100)?,
            subagent_timeout_ms: i64::from(positive("SUBAGENT_TIMEOUT_MINUTES", DEFAULT_SUBAGENT_TIMEOUT_MINUTES, 60)?)
                * 60_000,
            subagent_max_cost_usd: cost,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)], agent: &str) -> Result<TasksConfig, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TasksConfig::load(&vars, agent)
    }

    #[test]
    fn nobody_to_ask_and_three_sub_agents_unless_set() {
        let c = load(&[], "main").unwrap();
        assert!(c.delegates.is_empty());
        assert_eq!((c.delegate_timeout_ms, c.delegate_depth, c.subagents_max), (120_000, 1, 3));
        assert_eq!(c.subagent_model, None);
        assert_eq!(c, TasksConfig::default());
    }

    #[test]
    fn peers_per_agent_without_itself_or_repeats() {
        let vars = [
            ("AGENTS", "main,research,work"),
            ("ALLOWED_DELEGATES__MAIN", " research, work ,research,main"),
            ("SUBAGENT_MODEL", "claude-haiku-4-5"),
        ];
        let c = load(&vars, "main").unwrap();
        assert_eq!(c.delegates, ["research", "work"]);
        assert_eq!(c.known_agents, ["main", "research", "work"]);
        assert_eq!(c.subagent_model.as_deref(), Some("claude-haiku-4-5"));
        assert!(load(&vars, "research").unwrap().delegates.is_empty(), "each agent its own list");
        assert_eq!(load(&[("SUBAGENTS_MAX", "0")], "main").unwrap().subagents_max, 0, "0: no sub-agents");
    }

    #[test]
    fn bad_values_name_their_setting() {
        for (name, bad) in [
            ("ALLOWED_DELEGATES", "Research"),
            ("DELEGATE_TIMEOUT_SECONDS", "0"),
            ("DELEGATE_DEPTH", "9"),
            ("SUBAGENTS_MAX", "three"),
            ("SUBAGENTS_MAX", "21"),
            ("SUBAGENT_MAX_COST_USD", "-1"),
            ("SUBAGENT_TIMEOUT_MINUTES", "0"),
        ] {
            let e = load(&[(name, bad)], "main").unwrap_err();
            assert!(matches!(&e, ConfigError::Invalid { name: n, .. } if n == name), "{name}={bad}: {e}");
        }
    }
}
