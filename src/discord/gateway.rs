//! What happens to a `MESSAGE_CREATE` the agent's `Gateway` object
//! received: read into an `Inbound`, routed like a webhook's message (the
//! owner's DMs to the main session, `ALLOW_FROM` for the rest; in a server,
//! only messages that mention the bot or reply to it, in allowed channels),
//! and queued in its Session object, which dedupes on the message id and
//! runs one turn at a time. The Gateway does not redeliver, so a failed
//! enqueue is tried again a few times before it is logged as lost.

use crate::access;
use crate::adapters::{self, EnvVars};
use durable::channels::discord::message::{to_inbound, without_mention, GatewayMessage};
use durable::inbound::{ChannelKind, Inbound, ReplyTarget};
use durable::ports::LogLevel;
use durable::routing::{route, Route};
use durable::settings::AgentConfig;
use worker::Env;

pub async fn handle_message(env: &Env, agent: &str, bot_id: Option<&str>, msg: &GatewayMessage) {
    let vars = EnvVars::of(env);
    let Ok(cfg) = access::config_after_auth(&vars, agent, true) else {
        adapters::log(LogLevel::Error, &format!("gateway message for agent {agent} dropped: its settings are invalid"));
        return;
    };
    let mut inbound = match to_inbound(msg, bot_id, adapters::now_ms()) {
        Ok(i) => i,
        Err(_) => return,
    };
    // A group of agents routes on the message as written (every bot of the
    // group reads the same); a session of this bot alone reads it without
    // the mention that addressed the bot.
    // A copy not queued is logged by `enqueue_reliably`: the Gateway does not redeliver.
    if crate::groups::route_group(env, &vars, &cfg, &inbound, true).await.is_some() {
        return;
    }
    if let Some(id) = bot_id {
        inbound.text = without_mention(&inbound.text, id);
    }
    match route(&cfg, &inbound) {
        Route::Turn(key) => {
            let _ = crate::objects::enqueue_reliably(env, &key, &inbound).await;
        }
        Route::Stranger => tell_stranger(env, &cfg, &inbound).await,
        Route::NotAddressed | Route::GroupNotAllowed => {}
    }
}

/// A DM from someone not allowed: their id, once per cooldown.
async fn tell_stranger(env: &Env, cfg: &AgentConfig, inbound: &Inbound) {
    if !access::may_tell_stranger(env, cfg, ChannelKind::Discord, &inbound.sender_id).await {
        return;
    }
    adapters::log(
        LogLevel::Info,
        &format!("stranger discord:{} wrote to agent {}: told their id", inbound.sender_id, cfg.agent),
    );
    let api = super::client::DiscordApi::for_agent(&EnvVars::of(env), cfg);
    let text = access::stranger_text(ChannelKind::Discord, &inbound.sender_id, !cfg.owners.is_empty());
    let target = ReplyTarget { channel: ChannelKind::Discord, chat_id: inbound.chat_id.clone(), ..Default::default() };
    let piece = durable::ports::OutgoingChunk { text, html: None, first: true, opens: true };
    let _ = api.send_chunk(&target, &piece).await;
}
