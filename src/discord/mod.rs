//! Discord: the interactions endpoint (`POST /discord/{agentId}`) and the
//! reply channel. Slash commands `/ask`, `/reset`, `/undo` and `/status`:
//! - the request's Ed25519 signature is checked first (401 otherwise);
//! - `/ask` and `/reset` are answered at once with a deferred response and
//!   queued in the same Session object as any Telegram message; the answer
//!   edits the deferred message ([`client`]);
//! - a message command (Apps → "Ask Hearth" on a message) is an `/ask` about
//!   that message: its text reaches the model as context, its attachments as
//!   media. A slash command cannot reply to a message, so `/ask` has no
//!   reply context; ordinary replies (`message_reference` /
//!   `referenced_message`) arrive only over the Gateway, which would fill the
//!   same [`durable::inbound::MessageContext`];
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

pub mod client;
pub mod gateway;
pub mod interaction;
pub mod preview;
pub mod verify;

use crate::access;
use crate::adapters::{self, EnvVars};
use crate::http::{json_response, read_body_limited};
use durable::inbound::{ChannelKind, SessionKey};
use durable::ports::LogLevel;
use durable::routing::{route, Route};
use durable::settings::{setting, AgentConfig};
use interaction::{ephemeral, Command, Interaction};
use worker::{Env, Request, Response, Result};

/// Interactions are a few kB; attachments come as URLs.
const MAX_INTERACTION_BYTES: usize = 256 * 1024;

pub async fn handle_interaction(mut req: Request, env: &Env, agent: &str) -> Result<Response> {
    let vars = EnvVars::of(env);
    // The signature first, with the agent's key (an unknown agent id falls
    // back to the shared key): Discord's probes with bad signatures get 401
    // even when the rest of the configuration is broken, and nobody learns
    // which agents exist without a valid signature.
    let known = access::is_configured(&vars, agent);
    let key = match setting(&vars, agent, "DISCORD_PUBLIC_KEY").map(|hex| verify::PublicKey::from_hex(&hex)) {
        Some(Ok(k)) => k,
        _ if !known => return access::unknown_agent(),
        None => return Response::error("DISCORD_PUBLIC_KEY is not set for this agent (see .dev.vars.example)", 500),
        Some(Err(e)) => return Response::error(format!("DISCORD_PUBLIC_KEY is invalid: {e}"), 500),
    };
    let signature = req.headers().get(verify::SIGNATURE_HEADER)?;
    let timestamp = req.headers().get(verify::TIMESTAMP_HEADER)?;
    let body = match read_body_limited(&mut req, MAX_INTERACTION_BYTES).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    match key.verify(signature.as_deref(), timestamp.as_deref(), &body).await {
        Ok(()) => {}
        // Not a point on the curve: known only once the check runs (the runtime's WebCrypto).
        Err(verify::VerifyError::BadKey) if !known => return access::unknown_agent(),
        Err(e @ verify::VerifyError::BadKey) => {
            return Response::error(format!("DISCORD_PUBLIC_KEY is invalid: {e}"), 500)
        }
        Err(e) => return Response::error(format!("invalid request signature: {e}"), 401),
    }
    let cfg = match access::config_after_auth(&vars, agent, known) {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    let i = match interaction::parse(&body) {
        Ok(i) => i,
        Err(e) => return Response::error(e.to_string(), 400),
    };
    match i.kind {
        interaction::PING => json_response(&interaction::pong(), 200),
        interaction::APPLICATION_COMMAND => command(env, &vars, &cfg, &i).await,
        interaction::APPLICATION_COMMAND_AUTOCOMPLETE => json_response(&interaction::no_choices(), 200),
        // Buttons, menus, forms and anything newer: a polite note only the user sees.
        other => json_response(&ephemeral(&interaction::not_handled_text(other)), 200),
    }
}

async fn command(env: &Env, vars: &EnvVars, cfg: &AgentConfig, i: &Interaction) -> Result<Response> {
    let now = adapters::now_ms();
    let (cmd, text, media) = match i.command() {
        Some(Command::Ask { prompt, attachment }) => {
            let media = attachment.as_ref().map(interaction::attachment_media).into_iter().collect();
            (Command::Ask { prompt: prompt.clone(), attachment }, prompt, media)
        }
        // The message asked about travels as the inbound's context.
        Some(Command::AskAbout { .. }) if i.target_message().is_none() => {
            return json_response(&ephemeral("I could not see the message you picked. Try /ask instead."), 200);
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
        Some(Command::Unknown(name)) => return json_response(&ephemeral(&format!("I don't know /{name}.")), 200),
        None => return Response::error("command interaction without data", 400),
    };
    let turn_window = match setting(vars, cfg.agent.as_str(), "DISCORD_TURN_DEADLINE_MS").map(|v| v.parse::<i64>()) {
        None => interaction::TURN_WINDOW_MS,
        Some(Ok(ms)) if ms > 0 => ms,
        Some(_) => return Response::error("DISCORD_TURN_DEADLINE_MS is invalid: not a positive number of ms", 500),
    };
    let inbound = match interaction::to_inbound(i, text, media, now, turn_window) {
        Ok(m) => m,
        Err(e) => return Response::error(e.to_string(), 400),
    };
    let key = match route(cfg, &inbound) {
        Route::Turn(key) => key,
        Route::Stranger => {
            adapters::log(
                LogLevel::Info,
                &format!("stranger discord:{} used a command of agent {}", inbound.sender_id, cfg.agent),
            );
            let text = access::stranger_text(ChannelKind::Discord, &inbound.sender_id, !cfg.owners.is_empty());
            return json_response(&ephemeral(&text), 200);
        }
        Route::GroupNotAllowed | Route::NotAddressed => {
            return json_response(&ephemeral(&interaction::channel_not_allowed_text(&inbound.chat_id)), 200);
        }
    };
    if cmd == Command::Status {
        let text = match crate::objects::status(env, &key).await {
            Ok(status) => interaction::status_text(&status),
            Err(e) => format!("⚠️ Could not read the session status: {e}"),
        };
        return json_response(&ephemeral(&text), 200);
    }
    if cmd == Command::Usage {
        return json_response(&ephemeral(&usage_answer(env, cfg, &inbound.sender_id).await), 200);
    }
    if let Command::Memory { query } = &cmd {
        return json_response(&ephemeral(&memory_answer(env, &key, query).await), 200);
    }
    match crate::objects::enqueue(env, &key, &inbound).await {
        // A repeat is answered by the turn of the first delivery.
        Ok(_) => json_response(&interaction::deferred(), 200),
        // Discord does not redeliver: say so now rather than leave "thinking…".
        Err(e) => json_response(&ephemeral(&format!("⚠️ I could not queue your message, please try again: {e}")), 200),
    }
}

/// `/memory query`: the best matches in the memory store of this
/// conversation's scope (a group channel searches only the group's store),
/// shown only to the person who asked. No LLM call.
async fn memory_answer(env: &Env, key: &SessionKey, query: &str) -> String {
    use durable::ports::MemoryService;
    use durable::protocol::memory::{MemoryCall, MemoryReply};
    if query.trim().is_empty() {
        return "Tell me what to look for: `/memory query:<words>`.".into();
    }
    let memory = crate::platform::AgentMemory { env: env.clone(), agent: key.agent().as_str().to_owned() };
    let call = MemoryCall::Search {
        store: durable::protocol::memory::store_for(key),
        query: query.to_owned(),
        k: 5,
        kind: None,
        record: false,
    };
    match memory.call(&call).await {
        Ok(MemoryReply::Hits { hits }) if hits.is_empty() => format!("Nothing in my memory matches {query:?}."),
        Ok(MemoryReply::Hits { hits }) => {
            let lines: Vec<String> = hits
                .iter()
                .map(|h| {
                    let preview = durable::text::truncate_chars(h.entry.content.trim(), 300);
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
async fn usage_answer(env: &Env, cfg: &AgentConfig, user: &str) -> String {
    if !cfg.is_owner(ChannelKind::Discord, user) {
        return "Only my owner can see what I cost.".into();
    }
    let req =
        durable::protocol::usage::MeterRequest { agent: cfg.agent.to_string(), summary: true, ..Default::default() };
    match crate::agent_do::meter(env, &req).await {
        Ok(reply) => reply
            .summary
            .map_or_else(|| "⚠️ My usage ledger gave no figures.".into(), |s| durable::usage::report::summary_text(&s)),
        Err(e) => format!("⚠️ I could not read my usage right now ({e}). Try again in a moment."),
    }
}
