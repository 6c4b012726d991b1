//! Replies are never silently dropped: everything a session sends goes
//! through its outbox.
//!
//! Why: chat platforms fail in ways a turn cannot sit out. Telegram answers
//! a burst with `429` and a wait of minutes, has outages, and a long reply
//! goes out in several messages, any of which can fail. So a reply is first
//! cut into the pieces its channel takes ([`crate::channels::pieces`]) and written to the
//! session's SQLite ([`outbox`]), then sent piece by piece ([`flush`]):
//!
//! - **Each piece once, in order.** A piece is marked sent right after the
//!   platform accepted it; nothing marked sent goes again, after an
//!   eviction or a retried alarm either. (A piece whose send was cut off
//!   mid-request, before the answer came, is sent again: the platforms have
//!   no way to ask whether it arrived.)
//! - **Per chat, in order.** A chat's pieces go strictly in the order they
//!   were written: while one waits, later replies to that chat wait behind
//!   it; other chats go on.
//! - **Later, not now.** A failure that is worth another try (a 429, a 5xx,
//!   a time-out) is not waited out in the turn: the piece gets a time for
//!   its next attempt (the platform's `retry_after`, else a backoff from
//!   `RETRY_BASE_MS` doubling up to [`MAX_BACKOFF_MS`]) and the object's
//!   alarm is set for it.
//! - **Bounded.** A reply still not delivered `DELIVERY_GIVE_UP_MINUTES`
//!   (default a day) after it was written is given up. So is a piece the
//!   platform refuses outright (a 400: after one resend without markup on
//!   Telegram; the user is told in the chat), and everything still queued
//!   for a chat that cannot be reached (403 blocked, chat not found). Each
//!   give-up is reported to the owner on the owner's channel and listed in
//!   the session's status (`outbox` in `GET /api/agents/{id}/sessions/{key}`).
//!   A report or notice that fails is only logged: reports never loop.
//!
//! Ordering holds within one Session object; replies from different objects
//! to one chat (a heartbeat and the owner's conversation) are not ordered
//! against each other.

pub mod flush;
pub mod outbox;
pub mod status;

#[cfg(test)]
mod tests;

use crate::inbound::ReplyTarget;
use crate::ports::{Sql, StorageError};
pub use flush::{flush, next_due, FlushReport};
use outbox::{NewReply, Outbox};

/// The longest wait between two attempts at a piece that failed without
/// saying how long to wait (5 minutes).
pub const MAX_BACKOFF_MS: u64 = 5 * 60_000;

/// What a message in the outbox is, which decides what happens when it is
/// given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Part of the conversation: a failure is reported to the owner.
    Reply,
    /// Tells a chat that a reply failed; its own failure is only logged.
    Notice,
    /// Tells the owner a reply was given up; its own failure is only logged.
    Report,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Reply => "reply",
            Kind::Notice => "notice",
            Kind::Report => "report",
        }
    }
}

/// What chats are ordered by: the channel and the chat.
pub fn chat_key(target: &ReplyTarget) -> String {
    format!("{}:{}", target.channel, target.chat_id)
}

/// Writes a reply to the outbox, cut for its channel; [`flush`] sends it.
/// `id` names the reply: queueing an id that is already there does nothing
/// (work resumed after an eviction queues the same answer again). `false`:
/// nothing was queued (a repeat, or a text with nothing to send).
pub fn enqueue<S: Sql>(
    sql: &S,
    id: &str,
    kind: Kind,
    target: &ReplyTarget,
    text: &str,
    now: i64,
) -> Result<bool, StorageError> {
    let outbox = Outbox::open(sql)?;
    outbox.prune(now)?;
    if outbox.has_reply(id)? {
        return Ok(false);
    }
    let pieces = crate::channels::pieces(target.channel, text);
    if pieces.is_empty() {
        return Ok(false);
    }
    outbox.insert(
        &NewReply {
            reply: id,
            kind: kind.as_str(),
            chat: &chat_key(target),
            target,
            pieces: &pieces,
            markup: crate::channels::has_markup(target.channel),
        },
        now,
    )?;
    Ok(true)
}
