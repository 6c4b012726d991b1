//! Discord's Gateway (the WebSocket bots receive messages on): its protocol
//! as a state machine ([`gateway`]) and its `MESSAGE_CREATE` read into an
//! [`crate::inbound::Inbound`] ([`message`]). Interactions (slash commands)
//! arrive over HTTP and are read in the Worker (`src/discord/`).

pub mod gateway;
pub mod message;

#[cfg(test)]
mod tests;
