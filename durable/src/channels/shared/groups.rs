//! Groups of agents at the door: a human message in a chat listed in
//! `GROUPS` is routed once for the whole group (`crate::routing::group`):
//! every agent's session of that chat gets it, the ones that answer as a
//! turn and the rest to listen. Every bot of the group may receive the same
//! message (Telegram sends it to each bot that sees it, and each bot's
//! Gateway gets its `MESSAGE_CREATE`); the decision depends only on the
//! message, and the sessions dedupe it on the chat's message id, so it is
//! queued once per agent however many bots saw it.
//!
//! Mentions are matched on the agent id, the group's `handles`, and what
//! else each agent's bot is @mentioned by on the message's platform (a bot
//! username, a bot's user id): the platform's folder says, through the
//! `handles` it passes.

use super::web::enqueue_reliably;
use crate::inbound::{ChatKind, Inbound};
use crate::ports::{Front, LogLevel};
use crate::routing::group;
use crate::settings::{groups as groups_cfg, AgentConfig};

/// Handles a group message when its chat is a group of agents that `cfg`'s
/// agent belongs to: `None` when it is not one; else whether every agent's
/// session got its copy (`Err` names the ones that did not). `reliably`:
/// retry each enqueue briefly (for a message never delivered again); a
/// webhook answers the error instead, and the platform delivers again.
/// `handles`: what else an agent is @mentioned by on this platform.
pub async fn route_group<F: Front>(
    front: &F,
    cfg: &AgentConfig,
    inbound: &Inbound,
    reliably: bool,
    handles: impl AsyncFn(&str) -> Vec<String>,
) -> Option<Result<(), String>> {
    if inbound.kind != ChatKind::Group {
        return None;
    }
    // Apart: a direct message's webhook need not compile the group's routing.
    crate::apart::apart(async move {
        let g = groups_cfg::find(&cfg.groups, inbound.channel, &inbound.chat_id, cfg.agent.as_str())?;
        let mut extra: Vec<(String, Vec<String>)> = Vec::new();
        for a in &g.agents {
            extra.push((a.clone(), handles(a).await));
        }
        let members =
            group::members(g, &|a| extra.iter().find(|(x, _)| x == a).map(|(_, h)| h.clone()).unwrap_or_default());
        let deliveries = group::human_deliveries(g, &members, inbound);
        let out = group::deliver(deliveries, |key, msg| async move {
            if reliably {
                enqueue_reliably(front, &key, &msg).await
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
    })
    .await
}
