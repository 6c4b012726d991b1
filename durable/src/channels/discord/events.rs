//! What happens to a `MESSAGE_CREATE` the agent's `Gateway` object
//! received: read into an `Inbound`, routed like a webhook's message (the
//! owner's DMs to the main session, `ALLOW_FROM` for the rest; in a server,
//! only messages that mention the bot or reply to it, in allowed channels),
//! and queued in its Session object, which dedupes on the message id and
//! runs one turn at a time. The Gateway does not redeliver, so a failed
//! enqueue is tried again a few times before it is logged as lost.

use super::message::{to_inbound, without_mention, GatewayMessage};
use crate::channels::webhook::enqueue_reliably;
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Front, LogLevel};
use crate::routing::{route, Route};

pub async fn handle_message<F: Front>(front: &F, agent: &str, bot_id: Option<&str>, msg: &GatewayMessage) {
    let Ok(cfg) = front.config(agent) else {
        front.log(LogLevel::Error, &format!("gateway message for agent {agent} dropped: its settings are invalid"));
        return;
    };
    let mut inbound = match to_inbound(msg, bot_id, front.now_ms()) {
        Ok(i) => i,
        Err(_) => return,
    };
    // A group of agents routes on the message as written (every bot of the
    // group reads the same); a session of this bot alone reads it without
    // the mention that addressed the bot.
    // A copy not queued is logged by `enqueue_reliably`: the Gateway does not redeliver.
    if crate::channels::groups::route_group(front, &cfg, &inbound, true).await.is_some() {
        return;
    }
    if let Some(id) = bot_id {
        inbound.text = without_mention(&inbound.text, id);
    }
    match route(&cfg, &inbound) {
        Route::Turn(key) => {
            let _ = enqueue_reliably(front, &key, &inbound).await;
        }
        // A DM from someone not allowed: their id, once per cooldown.
        Route::Stranger => {
            let target =
                ReplyTarget { channel: ChannelKind::Discord, chat_id: inbound.chat_id.clone(), ..Default::default() };
            crate::channels::access::tell_stranger(front, agent, ChannelKind::Discord, &inbound.sender_id, &target)
                .await
        }
        Route::NotAddressed | Route::GroupNotAllowed => {}
    }
}
