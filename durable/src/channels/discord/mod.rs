//! Discord's Gateway (the WebSocket bots receive messages on): its protocol
//! as a state machine ([`gateway`]) and its `MESSAGE_CREATE` read into an
//! [`crate::inbound::Inbound`] ([`message`]). Interactions (slash commands)
//! arrive over HTTP and are read in the Worker (`src/discord/`).

pub mod gateway;
pub mod message;

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
