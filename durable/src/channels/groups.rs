//! Groups of agents at the door: a human message in a chat listed in
//! `GROUPS` is routed once for the whole group (`crate::routing::group`):
//! every agent's session of that chat gets it, the ones that answer as a
//! turn and the rest to listen. Every bot of the group may receive the same
//! message (Telegram sends it to each bot that sees it, and each bot's
//! Gateway gets its `MESSAGE_CREATE`); the decision depends only on the
//! message, and the sessions dedupe it on the chat's message id, so it is
//! queued once per agent however many bots saw it.
//!
//! Mentions are matched on the agent id, the group's `handles`, each
//! agent's Telegram bot username (`getMe` with its token, once per isolate)
//! and each Discord bot's user id (the first part of its token).

use super::telegram::client::TelegramApi;
use crate::inbound::{ChannelKind, ChatKind, Inbound};
use crate::ports::{Front, LogLevel};
use crate::routing::group;
use crate::settings::{groups as groups_cfg, setting, AgentConfig};

/// Handles a group message when its chat is a group of agents that `cfg`'s
/// agent belongs to: `None` when it is not one; else whether every agent's
/// session got its copy (`Err` names the ones that did not). `reliably`:
/// retry each enqueue briefly (for a message never delivered again); a
/// webhook answers the error instead, and the platform delivers again.
pub async fn route_group<F: Front>(
    front: &F,
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
        extra.push((a.clone(), handles_of(front, inbound.channel, a).await));
    }
    let members =
        group::members(g, &|a| extra.iter().find(|(x, _)| x == a).map(|(_, h)| h.clone()).unwrap_or_default());
    let deliveries = group::human_deliveries(g, &members, inbound);
    let out = group::deliver(deliveries, |key, msg| async move {
        if reliably {
            super::webhook::enqueue_reliably(front, &key, &msg).await
        } else {
            front.enqueue(&key, &msg).await
        }
    })
    .await;
    let place = format!("group {}:{}", inbound.channel, inbound.chat_id);
    match &out {
        Ok(()) => front.log(LogLevel::Info, &format!("{place}: message routed")),
        Err(e) => front.log(LogLevel::Error, &format!("{place}: message {}: {e}", inbound.dedupe_key)),
    }
    Some(out)
}

/// What else `agent` is @mentioned by on `channel`: its Telegram bot's
/// username, or its Discord bot's user id (a mention reads `<@id>`).
async fn handles_of<F: Front>(front: &F, channel: ChannelKind, agent: &str) -> Vec<String> {
    match channel {
        ChannelKind::Telegram => {
            let Some(api) = front.config(agent).ok().and_then(|cfg| TelegramApi::for_agent(&cfg)) else {
                return vec![];
            };
            super::telegram::username::bot_username(front, &api).await.into_iter().collect()
        }
        ChannelKind::Discord => setting(front.vars(), agent, "DISCORD_BOT_TOKEN")
            .and_then(|t| super::discord::bot_id_of_token(&t))
            .into_iter()
            .collect(),
        _ => vec![],
    }
}
