//! The Cloud API's webhook (`GET|POST /whatsapp/{agentId}`). `GET` is
//! Meta's subscription check; `POST` a notification, signed: the handler
//! checks the signature, reads every message of it, routes each and queues
//! it in its Session object (one Durable Object call each); the turns run in
//! the objects' alarms, after the answer. Meta retries a notification not
//! answered 200, so anything that could not be queued is answered 503; the
//! sessions dedupe on the message id (`wamid`).

use super::verify::{self, SIGNATURE_HEADER};
use super::Ignored;
use crate::channels::shared::web::{config_after_auth, is_configured, unknown_agent, Later, WebReply, WebRequest};
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Front, LogLevel};
use crate::routing::Route;
use crate::settings::setting;

/// Notifications are a few kB (media comes by id).
pub const MAX_NOTIFICATION_BYTES: usize = 512 * 1024;

/// `GET`: the subscription check (`hub.mode`, `hub.verify_token`, `hub.challenge`).
pub fn subscribe<F: Front>(front: &F, agent: &str, req: &WebRequest) -> WebReply {
    let Some(expected) = setting(front.vars(), agent, "WHATSAPP_VERIFY_TOKEN") else {
        if !is_configured(front, agent) {
            return unknown_agent();
        }
        return WebReply::text(500, "WHATSAPP_VERIFY_TOKEN is not set for this agent (see .dev.vars.example)");
    };
    match verify::subscription(
        req.query("hub.mode"),
        req.query("hub.verify_token"),
        req.query("hub.challenge"),
        &expected,
    ) {
        Some(challenge) => WebReply::ok(challenge),
        None => WebReply::text(403, "wrong hub.verify_token, or not a subscription request"),
    }
}

/// `POST`: a notification.
pub async fn handle<F: Front>(front: &F, agent: &str, req: &WebRequest) -> WebReply {
    // The signature first: before it, a caller learns nothing about which
    // agents exist or how they are configured.
    let known = is_configured(front, agent);
    let Some(secret) = setting(front.vars(), agent, "WHATSAPP_APP_SECRET") else {
        if !known {
            return unknown_agent();
        }
        return WebReply::text(500, "WHATSAPP_APP_SECRET is not set for this agent (see .dev.vars.example)");
    };
    if let Err(e) = verify::verify(front, &secret, req.header(SIGNATURE_HEADER), &req.body).await {
        return WebReply::text(401, format!("invalid request signature: {e}"));
    }
    let notification = match super::read(&req.body) {
        Ok(n) => n,
        Err(e) => return WebReply::text(400, format!("malformed WhatsApp notification: {e}")),
    };
    let cfg = match config_after_auth(front, agent, known) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    for s in notification.statuses.iter().filter(|s| s.status == "failed") {
        // The API took a message and could not deliver it (a window that
        // closed meanwhile, a number that left WhatsApp): said, not retried.
        let why = s.error.as_deref().unwrap_or("no reason given");
        front.log(LogLevel::Error, &format!("whatsapp: a message to {} was not delivered: {why}", s.recipient));
    }
    let mut said = Vec::new();
    let mut later = None;
    for incoming in &notification.messages {
        let inbound = match super::to_inbound(incoming, front.now_ms()) {
            Ok(m) => m,
            Err(why) => {
                if let Ignored::Reaction(emoji) = &why {
                    front.log(LogLevel::Info, &format!("whatsapp: a reaction ({emoji}), no answer needed"));
                }
                said.push(format!("ignored: {why}"));
                continue;
            }
        };
        let (route, notice) = crate::channels::shared::access::admit(front, &cfg, &inbound, false).await;
        match route {
            Route::Turn(key) => match front.enqueue(&key, &inbound).await {
                Ok(true) => said.push("queued".into()),
                Ok(false) => said.push("duplicate".into()),
                // Not queued: Meta delivers the notification again; the ones queued dedupe.
                Err(e) => return WebReply::text(503, format!("could not queue the message: {e}")),
            },
            Route::Stranger => {
                said.push("not allowed".into());
                later = notice.map(|text| Later::Tell {
                    agent: agent.to_owned(),
                    target: ReplyTarget {
                        channel: ChannelKind::Whatsapp,
                        chat_id: inbound.chat_id.clone(),
                        extra: inbound.reply_target.extra.clone(),
                        ..Default::default()
                    },
                    text,
                });
            }
            Route::NotAddressed | Route::GroupNotAllowed => said.push("not addressed".into()),
        }
    }
    if said.is_empty() {
        said.push(format!("{} status update(s)", notification.statuses.len()));
    }
    let reply = WebReply::ok(said.join(", "));
    match later {
        Some(l) => reply.then(l),
        None => reply,
    }
}
