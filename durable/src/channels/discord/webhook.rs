//! The Discord interactions endpoint (`POST /discord/{agentId}`). Slash
//! commands `/ask`, `/reset`, `/undo` and `/status`:
//! - the request's Ed25519 signature is checked first (401 otherwise);
//! - `/ask` and `/reset` are answered at once with a deferred response and
//!   queued in the same Session object as any Telegram message; the answer
//!   edits the deferred message ([`super::client`]);
//! - a message command (Apps → "Ask Hearth" on a message) is an `/ask` about
//!   that message: its text reaches the model as context, its attachments as
//!   media. A slash command cannot reply to a message, so `/ask` has no
//!   reply context; ordinary replies (`message_reference` /
//!   `referenced_message`) arrive only over the Gateway, which would fill the
//!   same [`crate::inbound::MessageContext`];
//! - buttons, menus and forms (component and modal interactions) get an
//!   ephemeral "not handled", autocomplete an empty list of choices;
//! - `/status` is answered directly from the Session object, no LLM call;
//! - `/usage` (the owner only) is answered from the agent's usage ledger,
//!   no LLM call, in the words of Telegram's `/usage`;
//! - people and channels not in `OWNER_IDS`/`ALLOW_FROM` get an ephemeral note
//!   with their id, every time: Discord wants every interaction answered
//!   (else the user sees "The application did not respond"), and that
//!   answer is the interaction's response, not a message from the bot's
//!   send budget, so the stranger cooldown of Telegram does not apply.

use super::interaction::{self, ephemeral, Command, Interaction};
use super::verify;
use crate::channels::shared::web::{config_after_auth, is_configured, unknown_agent, WebReply, WebRequest};
use crate::inbound::{ChannelKind, SessionKey};
use crate::ports::{Front, LogLevel};
use crate::routing::Route;
use crate::settings::{setting, AgentConfig};

/// Interactions are a few kB; attachments come as URLs.
pub const MAX_INTERACTION_BYTES: usize = 256 * 1024;

pub async fn handle<F: Front>(front: &F, agent: &str, req: &WebRequest) -> WebReply {
    let vars = front.vars();
    // The signature first, with the agent's key (an unknown agent id falls
    // back to the shared key): Discord's probes with bad signatures get 401
    // even when the rest of the configuration is broken, and nobody learns
    // which agents exist without a valid signature.
    let known = is_configured(front, agent);
    let key = match setting(vars, agent, "DISCORD_PUBLIC_KEY").map(|hex| verify::PublicKey::from_hex(&hex)) {
        Some(Ok(k)) => k,
        _ if !known => return unknown_agent(),
        None => return WebReply::text(500, "DISCORD_PUBLIC_KEY is not set for this agent (see .dev.vars.example)"),
        Some(Err(e)) => return WebReply::text(500, format!("DISCORD_PUBLIC_KEY is invalid: {e}")),
    };
    let signature = req.header(verify::SIGNATURE_HEADER);
    let timestamp = req.header(verify::TIMESTAMP_HEADER);
    match key.verify(front, signature, timestamp, &req.body).await {
        Ok(()) => {}
        // Not a point on the curve: known only once the check runs (the runtime's WebCrypto).
        Err(verify::VerifyError::BadKey) if !known => return unknown_agent(),
        Err(e @ verify::VerifyError::BadKey) => {
            return WebReply::text(500, format!("DISCORD_PUBLIC_KEY is invalid: {e}"))
        }
        Err(e) => return WebReply::text(401, format!("invalid request signature: {e}")),
    }
    let cfg = match config_after_auth(front, agent, known) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let i = match interaction::parse(&req.body) {
        Ok(i) => i,
        Err(e) => return WebReply::text(400, e.to_string()),
    };
    match i.kind {
        interaction::PING => WebReply::json(200, &interaction::pong()),
        interaction::APPLICATION_COMMAND => command(front, &cfg, &i).await,
        interaction::APPLICATION_COMMAND_AUTOCOMPLETE => WebReply::json(200, &interaction::no_choices()),
        interaction::MESSAGE_COMPONENT if is_ours(&i) => button(front, &cfg, &i).await,
        // Buttons, menus, forms and anything newer: a polite note only the user sees.
        other => WebReply::json(200, &ephemeral(&interaction::not_handled_text(other))),
    }
}

/// A tap on one of the agent's own buttons (a tool call waiting for the owner).
fn is_ours(i: &Interaction) -> bool {
    i.data.as_ref().and_then(|d| d.custom_id.as_deref()).is_some_and(|c| c.starts_with("ok:"))
}

/// A button tap: the Agent object decides (only the owner's count) and the
/// message is replaced with the outcome (`UPDATE_MESSAGE`), or the tapper
/// alone is told why nothing happened. Discord does not deliver it again:
/// a failure is said at once.
async fn button<F: Front>(front: &F, cfg: &AgentConfig, i: &Interaction) -> WebReply {
    let Some(from) = i.invoker().map(|u| u.id.clone()) else {
        return WebReply::text(400, "component interaction without a user");
    };
    let tap = crate::protocol::dreams::Tap {
        agent: cfg.agent.to_string(),
        channel: ChannelKind::Discord,
        callback_id: i.id.clone(),
        from,
        data: i.data.as_ref().and_then(|d| d.custom_id.clone()).unwrap_or_default(),
        respond_to: None,
        chat: i.channel_id().map(str::to_owned),
        message_id: None,
    };
    let outcome = match front.tap(&tap).await {
        Ok((200..=299, text)) => hearth_json::from_str::<crate::protocol::dreams::TapOutcome>(&text).ok(),
        Ok((status, text)) => {
            front.log(LogLevel::Warn, &format!("agent {}: button tap refused ({status}): {text}", cfg.agent));
            None
        }
        Err(e) => {
            front.log(LogLevel::Warn, &format!("agent {}: button tap failed: {e}", cfg.agent));
            None
        }
    };
    match outcome {
        Some(o) => match o.settled {
            Some(text) => WebReply::json(200, &super::buttons::update_message(&text)),
            None => WebReply::json(200, &ephemeral(&o.note)),
        },
        None => WebReply::json(200, &ephemeral("⚠️ I could not record that just now; tap again in a moment.")),
    }
}

async fn command<F: Front>(front: &F, cfg: &AgentConfig, i: &Interaction) -> WebReply {
    let vars = front.vars();
    let now = front.now_ms();
    let (cmd, text, media) = match i.command() {
        Some(Command::Ask { prompt, attachment }) => {
            let media = attachment.as_ref().map(interaction::attachment_media).into_iter().collect();
            (Command::Ask { prompt: prompt.clone(), attachment }, prompt, media)
        }
        // The message asked about travels as the inbound's context.
        Some(Command::AskAbout { .. }) if i.target_message().is_none() => {
            return WebReply::json(200, &ephemeral("I could not see the message you picked. Try /ask instead."));
        }
        Some(Command::AskAbout { attachments }) => {
            let media = attachments.iter().map(interaction::attachment_media).collect();
            (Command::AskAbout { attachments }, String::new(), media)
        }
        // The session's lifecycle handles `/reset` as a message.
        Some(Command::Reset) => (Command::Reset, "/reset".to_owned(), vec![]),
        // So does `/undo` (the owner's main session only).
        Some(Command::Undo) => (Command::Undo, "/undo".to_owned(), vec![]),
        Some(Command::Status) => (Command::Status, "/status".to_owned(), vec![]),
        Some(Command::Usage) => (Command::Usage, "/usage".to_owned(), vec![]),
        Some(Command::Memory { query }) => {
            (Command::Memory { query: query.clone() }, format!("/memory {query}"), vec![])
        }
        Some(Command::Unknown(name)) => return WebReply::json(200, &ephemeral(&format!("I don't know /{name}."))),
        None => return WebReply::text(400, "command interaction without data"),
    };
    let turn_window = match setting(vars, cfg.agent.as_str(), "DISCORD_TURN_DEADLINE_MS").map(|v| v.parse::<i64>()) {
        None => interaction::TURN_WINDOW_MS,
        Some(Ok(ms)) if ms > 0 => ms,
        Some(_) => return WebReply::text(500, "DISCORD_TURN_DEADLINE_MS is invalid: not a positive number of ms"),
    };
    let inbound = match interaction::to_inbound(i, text, media, now, turn_window) {
        Ok(m) => m,
        Err(e) => return WebReply::text(400, e.to_string()),
    };
    // An ephemeral note costs nothing: a stranger is told their code every time.
    let (route, notice) = crate::channels::shared::access::admit(front, cfg, &inbound, true).await;
    let key = match route {
        Route::Turn(key) => key,
        Route::Stranger => {
            front.log(
                LogLevel::Info,
                &format!("stranger discord:{} used a command of agent {}", inbound.sender_id, cfg.agent),
            );
            let text = notice.unwrap_or_else(|| {
                crate::people::texts::stranger(ChannelKind::Discord, &inbound.sender_id, !cfg.owners.is_empty(), None)
            });
            return WebReply::json(200, &ephemeral(&text));
        }
        Route::GroupNotAllowed | Route::NotAddressed => {
            return WebReply::json(200, &ephemeral(&interaction::channel_not_allowed_text(&inbound.chat_id)));
        }
    };
    if cmd == Command::Status {
        let text = match front.session_status(&key).await {
            Ok(status) => interaction::status_text(&status),
            Err(e) => format!("⚠️ Could not read the session status: {e}"),
        };
        return WebReply::json(200, &ephemeral(&text));
    }
    if cmd == Command::Usage {
        return WebReply::json(200, &ephemeral(&usage_answer(front, cfg, &inbound.sender_id).await));
    }
    if let Command::Memory { query } = &cmd {
        return WebReply::json(200, &ephemeral(&memory_answer(front, &key, query).await));
    }
    match front.enqueue(&key, &inbound).await {
        // A repeat is answered by the turn of the first delivery.
        Ok(_) => WebReply::json(200, &interaction::deferred()),
        // Discord does not redeliver: say so now rather than leave "thinking…".
        Err(e) => WebReply::json(200, &ephemeral(&format!("⚠️ I could not queue your message, please try again: {e}"))),
    }
}

/// `/memory query`: the best matches in the memory store of this
/// conversation's scope (a group channel searches only the group's store),
/// shown only to the person who asked. No LLM call.
async fn memory_answer<F: Front>(front: &F, key: &SessionKey, query: &str) -> String {
    use crate::protocol::memory::{MemoryCall, MemoryReply};
    if query.trim().is_empty() {
        return "Tell me what to look for: `/memory query:<words>`.".into();
    }
    let call = MemoryCall::Search {
        store: crate::protocol::memory::store_for(key),
        query: query.to_owned(),
        k: 5,
        kind: None,
        record: false,
    };
    match front.memory(key.agent().as_str(), &call).await {
        Ok(MemoryReply::Hits { hits }) if hits.is_empty() => format!("Nothing in my memory matches {query:?}."),
        Ok(MemoryReply::Hits { hits }) => {
            let lines: Vec<String> = hits
                .iter()
                .map(|h| {
                    let preview = crate::text::truncate_chars(h.entry.content.trim(), 300);
                    format!("• **{}** ({:.2}): {preview}", h.entry.name, h.score)
                })
                .collect();
            format!("From my memory, for {query:?}:\n{}", lines.join("\n"))
        }
        Ok(other) => format!("⚠️ Unexpected memory answer: {other:?}"),
        Err(e) => format!("⚠️ My memory is not available right now: {e}"),
    }
}

/// `/usage`: today's and this month's cost, cache hit rate and budget left,
/// from the agent's usage ledger, shown only to the owner who asked. No LLM
/// call; the same words as Telegram's `/usage`.
async fn usage_answer<F: Front>(front: &F, cfg: &AgentConfig, user: &str) -> String {
    if !cfg.is_owner(ChannelKind::Discord, user) {
        return "Only my owner can see what I cost.".into();
    }
    let req =
        crate::protocol::usage::MeterRequest { agent: cfg.agent.to_string(), summary: true, ..Default::default() };
    match front.meter(&req).await {
        Ok(reply) => reply
            .summary
            .map_or_else(|| "⚠️ My usage ledger gave no figures.".into(), |s| crate::usage::report::summary_text(&s)),
        Err(e) => format!("⚠️ I could not read my usage right now ({e}). Try again in a moment."),
    }
}

#[cfg(test)]
mod tests;
