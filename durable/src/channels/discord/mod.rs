//! Discord: interactions (slash commands) over HTTP ([`webhook`], read by
//! [`interaction`], checked by [`verify`]), and the Gateway (the WebSocket
//! bots receive messages on): its protocol as a state machine ([`gateway`]),
//! its `MESSAGE_CREATE` read into an [`crate::inbound::Inbound`]
//! ([`message`]) and routed ([`events`]), one channel's relays in the
//! order the Gateway sent them ([`relay`]). Replies go through [`client`]
//! (deferred responses edited, follow-ups, channel messages) and
//! [`preview`].

pub mod buttons;
pub mod classify;
pub mod client;
pub mod events;
pub mod gateway;
pub mod interaction;
pub mod message;
pub mod preview;
pub mod relay;
pub mod verify;
pub mod webhook;
pub mod wire;

/// Discord's message length limit.
pub const MAX_CHARS: usize = 2000;

#[cfg(test)]
mod tests;

/// The bot's user id from its token: a Discord bot token starts with the
/// id in base64 (`MTAx….G….…`). Lets a group know how each of its bots is
/// mentioned (`<@id>`) without a request.
pub fn bot_id_of_token(token: &str) -> Option<String> {
    use base64::Engine;
    let first = token.split('.').next()?.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD.decode(first).ok()?;
    let id = String::from_utf8(bytes).ok()?;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

/// What else `agent` is @mentioned by in a Discord channel: its bot's user
/// id (a mention reads `<@id>`).
pub fn handles<F: crate::ports::Front>(front: &F, agent: &str) -> Vec<String> {
    crate::settings::setting(front.vars(), agent, "DISCORD_BOT_TOKEN")
        .and_then(|t| bot_id_of_token(&t))
        .into_iter()
        .collect()
}
