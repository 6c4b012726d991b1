//! Telegram: the webhook (`POST /telegram/{agentId}`) and the reply channel.

pub mod client;
pub mod preview;
pub mod username;

use crate::access;
use crate::adapters::{self, EnvVars};
use crate::http::read_body_limited;
use client::TelegramApi;
use durable::channels::telegram::{self as update, BotIdentity, Ignored, Update};
use durable::inbound::{ChannelKind, ReplyTarget};
use durable::ports::LogLevel;
use durable::protocol::dreams::{Tap, TapOutcome, DREAMS_TAP_PATH};
use durable::protocol::AGENT_BINDING;
use durable::routing::{route, Route};
use durable::settings::setting;
use serde_json::json;
use worker::{Context, Env, Request, Response, Result};

/// Largest update body accepted (Telegram's are a few kB).
const MAX_UPDATE_BYTES: usize = 1024 * 1024;

/// Constant-time comparison, so the secret cannot be guessed byte by byte.
pub fn secrets_match(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = (given.len() ^ expected.len()) as u8 | (given.len() != expected.len()) as u8;
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

pub async fn handle_webhook(mut req: Request, env: &Env, ctx: &Context, agent: &str) -> Result<Response> {
    let vars = EnvVars::of(env);
    // The secret first: before it, a caller learns nothing about which agents
    // exist or how they are configured. An unknown agent id falls back to the
    // shared secret, so a wrong secret is 401 whether or not the agent exists.
    let known = access::is_configured(&vars, agent);
    let Some(secret) = setting(&vars, agent, "TELEGRAM_WEBHOOK_SECRET") else {
        if !known {
            return access::unknown_agent();
        }
        return Response::error("TELEGRAM_WEBHOOK_SECRET is not set for this agent (see .dev.vars.example)", 500);
    };
    let given = req.headers().get("X-Telegram-Bot-Api-Secret-Token")?.unwrap_or_default();
    if !secrets_match(given.as_bytes(), secret.as_bytes()) {
        return Response::error("wrong or missing X-Telegram-Bot-Api-Secret-Token", 401);
    }
    let cfg = match access::config_after_auth(&vars, agent, known) {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    let body = match read_body_limited(&mut req, MAX_UPDATE_BYTES).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let update: Update = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => return Response::error(format!("malformed Telegram update: {e}"), 400),
    };
    if let Some(tap) = update::button_tap(&update) {
        // A tap on a proposal's button: the Agent object decides and answers
        // Telegram. When it cannot be handled now (5xx), not answered here:
        // Telegram delivers it again.
        let tap = Tap {
            agent: agent.to_owned(),
            callback_id: tap.callback_id,
            from: tap.from,
            data: tap.data.unwrap_or_default(),
            chat: tap.chat,
            message_id: tap.message_id,
        };
        let body = serde_json::to_string(&tap)?;
        let answer =
            crate::objects::call_raw(env, AGENT_BINDING, agent, worker::Method::Post, DREAMS_TAP_PATH, Some(body))
                .await;
        return match answer {
            Ok((200..=299, text)) => match serde_json::from_str::<TapOutcome>(&text) {
                Ok(outcome) => Response::ok(format!("button: {}", outcome.note)),
                Err(e) => Response::error(format!("the button tap got an unreadable answer ({e}): {text}"), 503),
            },
            // The object refuses the tap for good (no Telegram owner configured,
            // say): answered here, and 200, or Telegram redelivers it forever.
            Ok((status @ 400..=499, text)) => {
                adapters::log(LogLevel::Warn, &format!("agent {agent}: button tap refused ({status}): {text}"));
                if let Some(api) = TelegramApi::for_agent(&cfg) {
                    let note = json!({"callback_query_id": tap.callback_id,
                        "text": "I can't act on this button (see my logs)."});
                    if let Err(e) = api.call("answerCallbackQuery", &note).await {
                        adapters::log(LogLevel::Warn, &format!("agent {agent}: callback not answered: {e}"));
                    }
                }
                Response::ok(format!("button refused: {text}"))
            }
            Ok((status, text)) => {
                Response::error(format!("the button tap could not be handled: HTTP {status}: {text}"), 503)
            }
            Err(e) => Response::error(format!("the button tap could not be handled: {e}"), 503),
        };
    }
    if update.edited_message.is_some() {
        // An edit starts no turn and fetches nothing (see `Ignored::Edit`).
        return Response::ok(format!("ignored: {}", Ignored::Edit));
    }
    let Some(api) = TelegramApi::for_agent(&cfg) else {
        return Response::error("TELEGRAM_BOT_TOKEN is not set for this agent (see .dev.vars.example)", 500);
    };
    let bot_id: i64 = api.token.split(':').next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut bot = BotIdentity { id: bot_id, username: username::cached(bot_id) };
    if bot.username.is_none() && update.message.as_ref().is_some_and(|m| m.needs_username()) {
        match api.get_me_username().await {
            Ok(Some(name)) => {
                username::remember(bot_id, &name);
                bot.username = Some(name);
            }
            Ok(None) => {}
            // Without getMe we cannot tell if we were mentioned: let Telegram redeliver.
            Err(e) => return Response::error(format!("getMe failed: {e}"), 503),
        }
    }
    let inbound = match update::to_inbound(&update, &bot, adapters::now_ms()) {
        Ok(m) => m,
        Err(why) => return Response::ok(format!("ignored: {why}")),
    };
    match crate::groups::route_group(env, &vars, &cfg, &inbound, false).await {
        Some(Ok(())) => return Response::ok("queued for the group"),
        // A non-2xx makes Telegram deliver it again; the sessions that have it dedupe.
        Some(Err(e)) => return Response::error(format!("could not queue the group message: {e}"), 503),
        None => {}
    }
    match route(&cfg, &inbound) {
        Route::Turn(key) => match crate::objects::enqueue(env, &key, &inbound).await {
            Ok(true) => Response::ok("queued"),
            Ok(false) => Response::ok("duplicate"),
            // Not queued: a non-2xx makes Telegram deliver it again, so nothing is lost.
            Err(e) => Response::error(format!("could not queue the message: {e}"), 503),
        },
        Route::Stranger => {
            let target =
                ReplyTarget { channel: ChannelKind::Telegram, chat_id: inbound.chat_id.clone(), ..Default::default() };
            let text = access::stranger_text(ChannelKind::Telegram, &inbound.sender_id, !cfg.owners.is_empty());
            let env = env.clone();
            // Each notice is a send from the bot's budget: at most one per
            // stranger per STRANGER_COOLDOWN_MINUTES.
            ctx.wait_until(async move {
                if access::may_tell_stranger(&env, &cfg, ChannelKind::Telegram, &inbound.sender_id).await {
                    let who = format!("telegram:{}", inbound.sender_id);
                    adapters::log(
                        LogLevel::Info,
                        &format!("stranger {who} wrote to agent {}: told their id", cfg.agent),
                    );
                    let _ = api.send_reply(&target, &text).await;
                }
            });
            Response::ok("not allowed")
        }
        Route::NotAddressed => Response::ok("not addressed"),
        Route::GroupNotAllowed => Response::ok("group not allowed"),
    }
}

#[cfg(test)]
mod tests {
    use super::secrets_match;

    #[test]
    fn secret_comparison() {
        assert!(secrets_match(b"abc", b"abc"));
        assert!(!secrets_match(b"abd", b"abc"));
        assert!(!secrets_match(b"ab", b"abc"));
        assert!(!secrets_match(b"abcd", b"abc"));
        assert!(!secrets_match(b"", b"abc"));
    }
}
