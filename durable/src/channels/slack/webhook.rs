//! The Events API endpoint (`POST /slack/{agentId}`). Slack wants an
//! answer within 3 seconds, else it retries (up to three times, with
//! `X-Slack-Retry-Num`): the handler only checks the signature, reads the
//! event, routes it and queues it in its Session object (one Durable Object
//! call); the turn runs in the object's alarm, after the answer. A retry of
//! a queued event is a duplicate there (the dedupe key is the message's
//! channel and `ts`), so an event is answered once however often it comes.

use super::client::SlackApi;
use super::names;
use super::verify::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use super::{Envelope, Ignored};
use crate::channels::shared::web::{config_after_auth, is_configured, unknown_agent, WebReply, WebRequest};
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::ports::{Front, LogLevel};
use crate::routing::Route;
use crate::settings::setting;

/// Event bodies are a few kB (files come as URLs).
pub const MAX_EVENT_BYTES: usize = 512 * 1024;

/// Slack's retry counter: present on a redelivery.
pub const RETRY_HEADER: &str = "X-Slack-Retry-Num";

pub async fn handle<F: Front>(front: &F, agent: &str, req: &WebRequest) -> WebReply {
    // The signature first: before it, a caller learns nothing about which
    // agents exist or how they are configured.
    let known = is_configured(front, agent);
    let Some(secret) = setting(front.vars(), agent, "SLACK_SIGNING_SECRET") else {
        if !known {
            return unknown_agent();
        }
        return WebReply::text(500, "SLACK_SIGNING_SECRET is not set for this agent (see .dev.vars.example)");
    };
    let signature = req.header(SIGNATURE_HEADER);
    let timestamp = req.header(TIMESTAMP_HEADER);
    if let Err(e) = verify::verify(front, &secret, signature, timestamp, &req.body, front.now_ms()).await {
        return WebReply::text(401, format!("invalid request signature: {e}"));
    }
    if super::buttons::is_interaction(req.header("content-type"), &req.body) {
        return interaction(front, agent, known, &req.body).await;
    }
    let envelope = match super::read(&req.body) {
        Ok(e) => e,
        Err(e) => return WebReply::text(400, format!("malformed Slack event: {e}")),
    };
    let (event_id, bot_user, event) = match envelope {
        // Answered before the agent's settings are read: setting the Request
        // URL works as soon as the signing secret is right.
        Envelope::UrlVerification { challenge } => {
            return WebReply::json(200, &serde_json::json!({ "challenge": challenge }))
        }
        Envelope::Other(kind) => return WebReply::ok(format!("ignored: {kind}")),
        Envelope::Event { event_id, bot_user, event } => (event_id, bot_user, event),
    };
    let cfg = match config_after_auth(front, agent, known) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let bot_user = bot_user.or_else(|| setting(front.vars(), agent, "SLACK_BOT_USER_ID"));
    let mut inbound = match super::to_inbound(&event, bot_user.as_deref(), front.now_ms()) {
        Ok(m) => m,
        Err(why @ (Ignored::ChannelMessage | Ignored::Bot | Ignored::Subtype(_) | Ignored::NotAMessage(_))) => {
            return WebReply::ok(format!("ignored: {why}"))
        }
        Err(why) => return WebReply::ok(format!("ignored: {why} (event {event_id})")),
    };
    if let Some(n) = req.header(RETRY_HEADER) {
        let reason = req.header("X-Slack-Retry-Reason").unwrap_or("unknown");
        front.log(LogLevel::Info, &format!("slack event {event_id} delivered again (retry {n}, {reason})"));
    }
    let (route, notice) = crate::channels::shared::access::admit(front, &cfg, &inbound, false).await;
    let tell = |said: &str| {
        let target = ReplyTarget {
            channel: ChannelKind::Slack,
            chat_id: inbound.chat_id.clone(),
            thread_id: inbound.reply_target.thread_id.clone(),
            ..Default::default()
        };
        WebReply::ok(said.to_owned()).telling(agent, notice.as_ref(), target)
    };
    match route {
        Route::Turn(key) => {
            // Only a message that starts a turn costs a lookup (cached: see `names`).
            if let Some(api) = SlackApi::for_agent(front.vars(), &cfg) {
                inbound.sender_name = names::sender_name(front, &api, agent, &inbound.sender_id).await;
            }
            enqueue(front, &key, &inbound).await
        }
        Route::Stranger => tell("not allowed"),
        Route::NotAddressed => WebReply::ok("not addressed"),
        Route::GroupNotAllowed if inbound.kind == ChatKind::Group => {
            front.log(
                LogLevel::Info,
                &format!("slack channel {} is not in ALLOW_FROM of agent {agent}: mention ignored", inbound.chat_id),
            );
            tell("channel not allowed")
        }
        Route::GroupNotAllowed => WebReply::ok("channel not allowed"),
    }
}

/// A tap on one of the agent's buttons (the Interactivity Request URL may
/// be this same address): the Agent object decides, only the owner's tap
/// counts, and replaces the message through its `response_url`. Slack wants
/// its 200 within 3 seconds and does not deliver a tap again.
async fn interaction<F: Front>(front: &F, agent: &str, known: bool, body: &[u8]) -> WebReply {
    let cfg = match config_after_auth(front, agent, known) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let action = match super::buttons::read_action(body) {
        Ok(a) => a,
        Err(why) => return WebReply::ok(format!("ignored: {why}")),
    };
    if !action.data.starts_with("ok:") {
        return WebReply::ok("ignored: not one of my buttons");
    }
    let tap = crate::protocol::dreams::Tap {
        agent: cfg.agent.to_string(),
        channel: ChannelKind::Slack,
        callback_id: action.message_ts.clone().unwrap_or_default(),
        from: action.user,
        data: action.data,
        respond_to: action.response_url,
        chat: action.channel,
        message_id: None,
    };
    match front.tap(&tap).await {
        Ok((200..=299, _)) => WebReply::ok(""),
        Ok((status, text)) => {
            front.log(LogLevel::Warn, &format!("agent {agent}: button tap refused ({status}): {text}"));
            WebReply::ok("")
        }
        Err(e) => {
            front.log(LogLevel::Warn, &format!("agent {agent}: button tap failed: {e}"));
            WebReply::text(503, format!("the tap could not be handled: {e}"))
        }
    }
}

async fn enqueue<F: Front>(front: &F, key: &SessionKey, inbound: &Inbound) -> WebReply {
    match front.enqueue(key, inbound).await {
        Ok(true) => WebReply::ok("queued"),
        // A retry of an event already queued: answered once.
        Ok(false) => WebReply::ok("duplicate"),
        // Not queued: a non-2xx makes Slack deliver it again, so nothing is lost.
        Err(e) => WebReply::text(503, format!("could not queue the message: {e}")),
    }
}
