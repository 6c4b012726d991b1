//! The conversation lent to a turn: the [`Replay`] kept beside the
//! [`HistoryCache`]'s rows between turns, so a warm turn pays for what is
//! new, not for the whole history: the new rows are paired and measured, the
//! rest is lent as it was.
//!
//! What the replay holds is, by construction, what [`super::replay::conversation`]
//! builds from scratch: the latest summary, then the rows, every tool call
//! answered. [`pair_tool_calls`] decides each message from the calls of the
//! latest user or assistant message before it alone (it forgets every open
//! call at one), so pairing the rows from the last such message on gives
//! what pairing them all gives; only that last part is paired again when
//! rows are added. Anything but an append (a compaction, a reset, a
//! rewrite, another session) bumps the cache's epoch and builds it afresh.

use super::history::{HistoryCache, Replay};
use super::store::SessionStore;
use crate::ports::{Sql, StorageError};
use r2_layout::Message;
use std::cell::RefCell;

/// The conversation lent to a turn: read as a slice; the turn's own
/// messages are pushed after it and dropped when it goes back to the cache
/// (the next turn reads them as rows). Going back happens on drop, whatever
/// way the turn ends; while it is out, another reader builds its own.
pub struct Lent<'c> {
    cache: &'c RefCell<HistoryCache>,
    replay: Option<Replay>,
    /// Messages that came from the cache (the rest the turn pushed).
    cached: usize,
}

impl<'c> Lent<'c> {
    /// The conversation of `session_id`, up to date with SQLite.
    pub fn take<S: Sql>(
        cache: &'c RefCell<HistoryCache>,
        store: &SessionStore<'_, S>,
        session_id: &str,
    ) -> Result<Self, StorageError> {
        let summary = store.latest_compaction(session_id)?;
        let mut c = cache.borrow_mut();
        c.rows(store, session_id)?;
        let epoch = c.epoch();
        let kept = c.replay.take().filter(|r| r.follows(session_id, epoch, &summary, c.cached_rows()));
        let mut replay = kept.unwrap_or_else(|| Replay::new(session_id, epoch, summary));
        replay.catch_up(c.cached_rows());
        drop(c);
        Ok(Lent { cache, cached: replay.messages.len(), replay: Some(replay) })
    }

    /// Gives this one back and takes it again, up to date (after the turn
    /// compacted or rewrote the history).
    pub fn renew<S: Sql>(&mut self, store: &SessionStore<'_, S>, session_id: &str) -> Result<(), StorageError> {
        self.give_back();
        *self = Lent::take(self.cache, store, session_id)?;
        Ok(())
    }

    pub fn push(&mut self, m: Message) {
        if let Some(r) = &mut self.replay {
            r.messages.push(m);
        }
    }

    pub fn extend(&mut self, ms: impl IntoIterator<Item = Message>) {
        if let Some(r) = &mut self.replay {
            r.messages.extend(ms);
        }
    }

    /// The text tokens of every message ([`super::context::text_tokens`]):
    /// the cached sum, plus the turn's own messages.
    pub fn text_tokens(&self) -> u64 {
        self.replay
            .as_ref()
            .map_or(0, |r| r.total + r.messages[self.cached..].iter().map(super::context::text_tokens).sum::<u64>())
    }

    /// The stamps of the messages that came from the cache (the first ones).
    pub fn stamps(&self) -> &[u64] {
        self.replay.as_ref().map_or(&[], |r| &r.stamps)
    }

    fn give_back(&mut self) {
        if let Some(mut r) = self.replay.take() {
            r.messages.truncate(self.cached);
            // Busy (it never is between turns) or already refilled: let it go.
            if let Ok(mut c) = self.cache.try_borrow_mut() {
                if c.replay.is_none() {
                    c.replay = Some(r);
                }
            }
        }
    }
}

impl std::ops::Deref for Lent<'_> {
    type Target = [Message];
    fn deref(&self) -> &[Message] {
        self.replay.as_ref().map_or(&[], |r| &r.messages)
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[cfg(test)]
mod tests;
