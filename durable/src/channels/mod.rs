//! The chat platforms, on three floors.
//!
//! - [`shared`], the ground: what every platform uses and none owns (a
//!   webhook's request and reply, who is let in, groups of agents,
//!   downloads, multipart bodies, the Markdown reader, buttons). It names
//!   no platform.
//! - One folder per platform above it: `telegram/`, `discord/`, `slack/`,
//!   `whatsapp/`, `email/`. A folder owns everything about its platform:
//!   its wire types, the signature check of its webhook, the reader that
//!   turns what it sends into an [`crate::inbound::Inbound`], its client
//!   (generic over the [`crate::ports::Http`] port, so it is tested natively
//!   with recorded requests) and how replies are cut and marked up for it.
//!   It uses [`shared`] and itself, never another folder nor the table.
//! - The table on top, where the platforms meet for the rest of the
//!   runtime: [`facts`] (limits, markup, previews, downloads, voice),
//!   [`outbound`] (an agent's clients and the dispatch of a reply),
//!   [`buttons`] (asking the owner), [`later`] (a target for a message sent
//!   later), [`webhook`] (the work after a handler's answer).
//!
//! Why here and not in the Worker: deciding what an update means, what to
//! answer and how to send is logic, tested natively against every real
//! payload in `tests/fixtures/real-world/`. The Worker only hands requests
//! over and carries out what it is told.

pub mod shared;

pub mod discord;
pub mod email;
pub mod slack;
pub mod telegram;
pub mod whatsapp;

pub mod buttons;
pub mod facts;
pub mod later;
pub mod outbound;
pub mod webhook;

pub use facts::{
    download_limit, has_markup, max_chars, pieces, preview_is_a_message, preview_mode, render, sends_voice,
    EMAIL_MAX_CHARS, RELAY_MAX_CHARS,
};
pub use outbound::{AgentChannels, Channels};
pub use shared::access;
