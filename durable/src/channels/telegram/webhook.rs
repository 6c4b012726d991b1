//! The Telegram webhook (`POST /telegram/{agentId}`): the secret header
//! first (constant time), then the update read, routed (`OWNER_IDS`,
//! `ALLOW_FROM`, groups of agents) and queued in its Session object. A
//! non-2xx answer makes Telegram deliver the update again, so anything that
//! could not be queued is answered 503 and nothing is lost; the sessions
//! dedupe on `update_id`.

use super::arrivals::Arrival;
use super::client::TelegramApi;
use super::{username, BotIdentity, Ignored, Update};
use crate::channels::shared::web::{
    config_after_auth, constant_eq, is_configured, unknown_agent, WebReply, WebRequest,
};
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Front, LogLevel};
use crate::protocol::dreams::{Tap, TapOutcome};
use crate::routing::Route;
use crate::settings::setting;
use serde_json::json;

/// Largest update body accepted (Telegram's are a few kB).
pub const MAX_UPDATE_BYTES: usize = 1024 * 1024;

/// The header Telegram sends `setWebhook`'s `secret_token` in.
pub const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";

pub async fn handle<F: Front>(front: &F, agent: &str, req: &WebRequest) -> WebReply {
    // The secret first: before it, a caller learns nothing about which agents
    // exist or how they are configured. An unknown agent id falls back to the
    // shared secret, so a wrong secret is 401 whether or not the agent exists.
    let known = is_configured(front, agent);
    let Some(secret) = setting(front.vars(), agent, "TELEGRAM_WEBHOOK_SECRET") else {
        if !known {
            return unknown_agent();
        }
        return WebReply::text(500, "TELEGRAM_WEBHOOK_SECRET is not set for this agent (see .dev.vars.example)");
    };
    let given = req.header(SECRET_HEADER).unwrap_or_default();
    if !constant_eq(given.as_bytes(), secret.as_bytes()) {
        return WebReply::text(401, "wrong or missing X-Telegram-Bot-Api-Secret-Token");
    }
    let cfg = match config_after_auth(front, agent, known) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let update: Update = match hearth_json::from_slice(&req.body) {
        Ok(u) => u,
        Err(e) => return WebReply::text(400, format!("malformed Telegram update: {e}")),
    };
    // This isolate has it (done when this returns): what later updates are told.
    let arrival = Arrival::new(agent, update.update_id, front.now_ms());
    if let Some(tap) = super::button_tap(&update) {
        // Apart: a message's webhook need not compile the button's.
        return crate::apart::apart(button(front, agent, &cfg, tap)).await;
    }
    if update.edited_message.is_some() {
        // An edit starts no turn and fetches nothing (see `Ignored::Edit`).
        return WebReply::ok(format!("ignored: {}", Ignored::Edit));
    }
    let Some(api) = TelegramApi::for_agent(&cfg) else {
        return WebReply::text(500, "TELEGRAM_BOT_TOKEN is not set for this agent (see .dev.vars.example)");
    };
    let bot_id = api.bot_id();
    let mut bot = BotIdentity { id: bot_id, username: username::cached(bot_id) };
    if bot.username.is_none() && update.message.as_ref().is_some_and(|m| m.needs_username()) {
        match crate::apart::apart(api.get_me_username(front)).await {
            Ok(Some(name)) => {
                username::remember(bot_id, &name);
                bot.username = Some(name);
            }
            Ok(None) => {}
            // Without getMe we cannot tell if we were mentioned: let Telegram redeliver.
            Err(e) => {
                arrival.not_taken();
                return WebReply::text(503, format!("getMe failed: {e}"));
            }
        }
    }
    let mut inbound = match super::to_inbound(&update, &bot, front.now_ms()) {
        Ok(m) => m,
        Err(why) => return WebReply::ok(format!("ignored: {why}")),
    };
    if let Some(order) = inbound.order.as_mut() {
        order.earlier = arrival.earlier(&order.stream, cfg.order_hold_ms, front.now_ms());
    }
    match crate::channels::shared::groups::route_group(front, &cfg, &inbound, false, async |a: &str| {
        username::handles(front, a).await
    })
    .await
    {
        Some(Ok(())) => return WebReply::ok("queued for the group"),
        // A non-2xx makes Telegram deliver it again; the sessions that have it dedupe.
        Some(Err(e)) => {
            arrival.not_taken();
            return WebReply::text(503, format!("could not queue the group message: {e}"));
        }
        None => {}
    }
    let (route, notice) = crate::channels::shared::access::admit(front, &cfg, &inbound, false).await;
    // Each note is a send from the bot's budget: after Telegram has its 200.
    let tell = |said: &str| {
        let target = ReplyTarget {
            channel: ChannelKind::Telegram,
            chat_id: inbound.chat_id.clone(),
            thread_id: inbound.reply_target.thread_id.clone(),
            ..Default::default()
        };
        WebReply::ok(said.to_owned()).telling(agent, notice.as_ref(), target)
    };
    match route {
        Route::Turn(key) => match front.enqueue(&key, &inbound).await {
            Ok(true) => WebReply::ok("queued"),
            Ok(false) => WebReply::ok("duplicate"),
            // Not queued: a non-2xx makes Telegram deliver it again, so nothing is lost.
            Err(e) => {
                arrival.not_taken();
                WebReply::text(503, format!("could not queue the message: {e}"))
            }
        },
        Route::Stranger => tell("not allowed"),
        Route::NotAddressed => WebReply::ok("not addressed"),
        Route::GroupNotAllowed => tell("group not allowed"),
    }
}

/// A tap on one of the agent's buttons (a dreaming proposal, a tool call
/// waiting for approval): the Agent object decides and answers Telegram. When it cannot be handled now (5xx), not answered here:
/// Telegram delivers it again.
async fn button<F: Front>(
    front: &F,
    agent: &str,
    cfg: &crate::settings::AgentConfig,
    tap: super::ButtonTap,
) -> WebReply {
    let tap = Tap {
        agent: agent.to_owned(),
        channel: ChannelKind::Telegram,
        respond_to: None,
        callback_id: tap.callback_id,
        from: tap.from,
        data: tap.data.unwrap_or_default(),
        chat: tap.chat,
        message_id: tap.message_id,
    };
    match front.tap(&tap).await {
        Ok((200..=299, text)) => match hearth_json::from_str::<TapOutcome>(&text) {
            Ok(outcome) => WebReply::ok(format!("button: {}", outcome.note)),
            Err(e) => WebReply::text(503, format!("the button tap got an unreadable answer ({e}): {text}")),
        },
        // The object refuses the tap for good (no Telegram owner configured,
        // say): answered here, and 200, or Telegram redelivers it forever.
        Ok((status @ 400..=499, text)) => {
            front.log(LogLevel::Warn, &format!("agent {agent}: button tap refused ({status}): {text}"));
            if let Some(api) = TelegramApi::for_agent(cfg) {
                let note = json!({"callback_query_id": tap.callback_id,
                    "text": "I can't act on this button (see my logs)."});
                if let Err(e) = api.call(front, "answerCallbackQuery", &note).await {
                    front.log(LogLevel::Warn, &format!("agent {agent}: callback not answered: {e}"));
                }
            }
            WebReply::ok(format!("button refused: {text}"))
        }
        Ok((status, text)) => {
            WebReply::text(503, format!("the button tap could not be handled: HTTP {status}: {text}"))
        }
        Err(e) => WebReply::text(503, format!("the button tap could not be handled: {e}")),
    }
}

#[cfg(test)]
mod tests;
