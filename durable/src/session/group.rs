//! A session in a group of agents (see [`crate::routing::group`]): messages
//! it only listens to join its history without a turn, and its answers are
//! relayed to the other agents' sessions of the group through the outbox
//! (so a relay is retried like any reply until that session has it).

use super::deps::SessionDeps;
use super::store::{InboxItem, SessionStore};
use crate::delivery::{self, Kind};
use crate::inbound::{GroupHop, Inbound, SessionKey};
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::routing::group::{self, Delivery};
use crate::settings::groups::{self as groups_cfg, AgentGroup};
use r2_layout::{Message, UserBlock, UserContent};

/// The group of agents this session is in, if any.
pub fn group_of<'a>(deps: &'a SessionDeps<'_>) -> Option<&'a AgentGroup> {
    let SessionKey::Group { channel, chat, .. } = deps.key else { return None };
    groups_cfg::find(&deps.config.groups, *channel, chat, deps.config.agent.as_str())
}

/// Whether `inbound` is only for the history (another agent's turn).
pub fn is_listen(inbound: &Inbound) -> bool {
    inbound.group.as_ref().is_some_and(|g| g.listen)
}

/// Stores a listened-to message in the history, with its author, and no turn.
pub fn listen<P: Platform, S: Sql>(
    p: &P,
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    inbound: &Inbound,
) -> Result<(), StorageError> {
    let session_id = store.session_id(|| p.new_uuid(), p.now_ms())?;
    let message = if item.active {
        None
    } else {
        Some(Message::User {
            content: UserContent::Blocks(vec![UserBlock::Text { text: inbound.user_text() }]),
            timestamp: p.now_ms(),
            sender: inbound.sender(),
            channel: Some(inbound.channel.as_str().to_owned()),
        })
    };
    store.start(item.seq, &session_id, message.as_ref())?;
    store.finish(item.seq, p.now_ms())
}

/// Queues this agent's answer `text` to `inbound` (queued message `seq`)
/// for the group's other agents: those it @mentions take a turn while the
/// group's turn limit allows, the rest listen. Nothing outside a group.
pub fn relay<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    inbound: &Inbound,
    text: &str,
    seq: i64,
) -> Result<(), StorageError> {
    let Some(group) = group_of(deps) else { return Ok(()) };
    let me = deps.config.agent.as_str();
    let hop =
        inbound.group.clone().unwrap_or_else(|| GroupHop { origin: inbound.dedupe_key.clone(), ..Default::default() });
    let members = group::reply_members(group, &hop);
    let (routes, next) = group::route_reply(group, &members, me, text, &hop);
    let now = p.now_ms();
    let named = group::mentioned(text, &members);
    for (agent, delivery) in routes {
        let Some(to) = group::session_of(&agent, deps.key) else { continue };
        if delivery == Delivery::Listen && named.contains(&agent) {
            p.log(
                LogLevel::Info,
                &format!(
                    "group {}: @{agent} not given a turn (only the first agent mentioned takes it; {} of {} agent \
                     turns, {} of {} replies after the person's message)",
                    group.chat,
                    next.turns,
                    group.max_agent_turns,
                    next.hops,
                    group::max_hops(group)
                ),
            );
        }
        let target = group::relay_target(&to, me, inbound, &next, delivery == Delivery::Listen);
        delivery::enqueue(p.sql(), &format!("relay:{seq}:{agent}"), Kind::Reply, &target, text, now)?;
    }
    Ok(())
}
