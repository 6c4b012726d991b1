//! Conversation memory, hosted: what was said, searchable again (see
//! [`hearth_memory::conversation`] for the index and its ranking).
//!
//! - [`exchanges`]: a session's messages as exchanges (speaker, words, answer), without
//!   what the runtime added;
//! - [`store`]: one store's index over the Agent object's SQLite (text paged, index in
//!   RAM, checkpoint + the exchanges' rows as its log);
//! - [`backfill`]: archives already in R2, indexed once, in the background.
//!
//! Privacy is the notes' rule: a session adds to, and searches, its own store only
//! ([`crate::protocol::memory::store_for`]).

pub mod backfill;
pub mod exchanges;
pub mod shelf;
pub mod store;

pub use exchanges::exchanges;

use crate::inbound::{ChannelKind, SessionKey};
use crate::protocol::memory::ConversationSource;

/// Whether a session's conversations are indexed: not heartbeats' and jobs' (their
/// "user" text is a fixed prompt, not something anyone said), nor a sub-agent's (its
/// result is posted in the chat that asked, and indexed with that chat).
pub fn is_indexed(key: &SessionKey) -> bool {
    !matches!(key, SessionKey::Heartbeat(_) | SessionKey::Job { .. } | SessionKey::Task { .. })
}

/// Where an archive's exchanges come from: the archive's key makes the batch once-only.
/// The channel is the session's (a DM's or a group's platform, `api` for an HTTP
/// thread); the owner's main session hears several, so its exchanges carry their own.
pub fn source_of(key: &SessionKey, session_id: &str, archive_key: &str) -> ConversationSource {
    let channel = match key {
        SessionKey::Direct { channel, .. } | SessionKey::Group { channel, .. } => channel.as_str().to_owned(),
        SessionKey::Api { .. } => ChannelKind::Api.as_str().to_owned(),
        _ => String::new(),
    };
    ConversationSource {
        source: archive_key.to_owned(),
        session_id: session_id.to_owned(),
        session_key: key.render(),
        channel,
    }
}

#[cfg(test)]
mod tests;
