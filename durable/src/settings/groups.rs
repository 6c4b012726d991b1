//! Groups of agents (`GROUPS`): chats where several agents share one thread.
//!
//! `GROUPS` is JSON, one entry per chat, keyed like `ALLOW_FROM`
//! (`telegram:-100123`, `discord:{channelId}`):
//!
//! ```json
//! {"telegram:-100123": {"agents": ["mod", "perf", "sec"], "moderator": "mod",
//!                       "mode": "moderator", "maxAgentTurns": 4,
//!                       "handles": {"perf": ["perfbot"]}}}
//! ```
//!
//! A listed chat is allowed for its agents (no `ALLOW_FROM` entry needed).
//! `mode`: `moderator` (the default when there is a moderator), `broadcast`
//! (the default without), or `mention` (only @mentioned agents answer).
//! `handles`: names people may @mention an agent by, besides its id and its
//! bot's own username (Telegram) or mention (Discord).

use super::read::{ConfigError, Vars};
use crate::inbound::ChannelKind;
use std::collections::BTreeMap;

/// Agent turns with content after one human message, unless a group says.
pub const DEFAULT_MAX_AGENT_TURNS: u32 = 4;

/// How a human message that mentions no agent is routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The moderator answers (and @mentions whom it wants to involve).
    Moderator,
    /// Every agent answers.
    Broadcast,
    /// Nobody: only @mentioned agents answer.
    Mention,
}

/// One group of agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentGroup {
    /// `channel:chat` (`telegram:-100123`).
    pub channel: ChannelKind,
    pub chat: String,
    pub agents: Vec<String>,
    pub moderator: Option<String>,
    pub mode: Mode,
    pub max_agent_turns: u32,
    /// Extra @names by agent (lower case, without `@`).
    pub handles: BTreeMap<String, Vec<String>>,
}

#[derive(hearth_json::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawGroup {
    agents: Vec<String>,
    #[serde(default)]
    moderator: Option<String>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    max_agent_turns: Option<u32>,
    #[serde(default)]
    handles: BTreeMap<String, Vec<String>>,
}

/// `GROUPS`, checked: every agent is one of `AGENTS`, the moderator is one
/// of the group's agents, a moderator mode has a moderator.
pub fn load(vars: &impl Vars, known_agents: &[String]) -> Result<Vec<AgentGroup>, ConfigError> {
    let Some(raw) = vars.get("GROUPS").filter(|v| !v.trim().is_empty()) else { return Ok(vec![]) };
    let bad = |why: String| ConfigError::Invalid { name: "GROUPS".into(), why };
    let parsed: BTreeMap<String, RawGroup> =
        hearth_json::from_slice(raw.as_bytes()).map_err(|e| bad(format!("not the JSON of a groups map: {e}")))?;
    let mut groups = Vec::new();
    for (key, g) in parsed {
        let (channel, chat) = key
            .split_once(':')
            .filter(|(c, id)| !c.is_empty() && !id.is_empty())
            .ok_or_else(|| bad(format!("{key:?} is not channel:chatId")))?;
        let channel = ChannelKind::parse(channel)
            .filter(|c| c.is_platform())
            .ok_or_else(|| bad(format!("{key}: {channel:?} is not a chat platform")))?;
        if g.agents.len() < 2 {
            return Err(bad(format!("{key}: a group needs at least two agents")));
        }
        for a in g.agents.iter().chain(&g.moderator) {
            if !known_agents.contains(a) {
                return Err(bad(format!("{key}: {a:?} is not one of AGENTS")));
            }
        }
        if let Some(m) = &g.moderator {
            if !g.agents.contains(m) {
                return Err(bad(format!("{key}: the moderator {m:?} is not in the group's agents")));
            }
        }
        let mode = g.mode.unwrap_or(if g.moderator.is_some() { Mode::Moderator } else { Mode::Broadcast });
        if mode == Mode::Moderator && g.moderator.is_none() {
            return Err(bad(format!("{key}: mode \"moderator\" needs a moderator")));
        }
        let handles = crate::order::btree_map(
            g.handles
                .into_iter()
                .map(|(a, names)| (a, names.iter().map(|n| n.trim_start_matches('@').to_lowercase()).collect())),
        );
        groups.push(AgentGroup {
            channel,
            chat: chat.to_owned(),
            agents: g.agents,
            moderator: g.moderator,
            mode,
            max_agent_turns: g.max_agent_turns.unwrap_or(DEFAULT_MAX_AGENT_TURNS),
            handles,
        });
    }
    Ok(groups)
}

/// The group of `channel` chat `chat` that `agent` belongs to.
pub fn find<'a>(groups: &'a [AgentGroup], channel: ChannelKind, chat: &str, agent: &str) -> Option<&'a AgentGroup> {
    groups.iter().find(|g| g.channel == channel && g.chat == chat && g.agents.iter().any(|a| a == agent))
}
