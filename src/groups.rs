//! Groups of agents on the Worker's side: a human message in a chat listed
//! in `GROUPS` is routed once for the whole group (durable's
//! `routing::group`): every agent's session of that chat gets it, the ones
//! that answer as a turn and the rest to listen. Every bot of the group may
//! receive the same message (Telegram sends it to each bot that sees it, and
//! each bot's Gateway gets its `MESSAGE_CREATE`); the decision depends only
//! on the message, and the sessions dedupe it on the chat's message id, so
//! it is queued once per agent however many bots saw it.
//!
//! Mentions are matched on the agent id, the group's `handles`, each
//! agent's Telegram bot username (`getMe` with its token, once per isolate)
//! and each Discord bot's user id (the first part of its token).

use crate::adapters::{self, EnvVars};
use durable::inbound::{ChannelKind, ChatKind, Inbound};
use durable::ports::LogLevel;
use durable::routing::group;
use durable::settings::{groups as groups_cfg, setting, AgentConfig};
use worker::Env;

/// Handles a group message when its chat is a group of agents that `cfg`'s
/// agent belongs to: `None` when it is not one; else whether every agent's
/// session got its copy (`Err` names the ones that did not). `reliably`:
/// retry each enqueue briefly (for a Gateway event, never delivered again);
/// a webhook answers the error instead, and the platform delivers again.
pub async fn route_group(
    env: &Env,
    vars: &EnvVars,
    cfg: &AgentConfig,
    inbound: &Inbound,
    reliably: bool,
) -> Option<Result<(), String>> {
    if inbound.kind != ChatKind::Group {
        return None;
    }
    let g = groups_cfg::find(&cfg.groups, inbound.channel, &inbound.chat_id, cfg.agent.as_str())?;
    let mut extra: Vec<(String, Vec<String>)> = Vec::new();
    for a in &g.agents {
        extra.push((a.clone(), handles_of(vars, inbound.channel, a).await));
    }
    let members =
        group::members(g, &|a| extra.iter().find(|(x, _)| x == a).map(|(_, h)| h.clone()).unwrap_or_default());
    let deliveries = group::human_deliveries(g, &members, inbound);
    let out = group::deliver(deliveries, |key, msg| async move {
        if reliably {
            crate::objects::enqueue_reliably(env, &key, &msg).await
        } else {
            crate::objects::enqueue(env, &key, &msg).await
        }
    })
    .await;
    let place = format!("group {}:{}", inbound.channel, inbound.chat_id);
    match &out {
        Ok(()) => adapters::log(LogLevel::Info, &format!("{place}: message routed")),
        Err(e) => adapters::log(LogLevel::Error, &format!("{place}: message {}: {e}", inbound.dedupe_key)),
    }
    Some(out)
}

/// What else `agent` is @mentioned by on `channel`: its Telegram bot's
/// username, or its Discord bot's user id (a mention reads `<@id>`).
async fn handles_of(vars: &EnvVars, channel: ChannelKind, agent: &str) -> Vec<String> {
    match channel {
        ChannelKind::Telegram => {
            let Ok(cfg) = crate::access::config_after_auth(vars, agent, true) else { return vec![] };
            crate::telegram::username::bot_username(&cfg).await.into_iter().collect()
        }
        ChannelKind::Discord => setting(vars, agent, "DISCORD_BOT_TOKEN")
            .and_then(|t| durable::channels::discord::bot_id_of_token(&t))
            .into_iter()
            .collect(),
        _ => vec![],
    }
}
