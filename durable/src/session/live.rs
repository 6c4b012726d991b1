//! The conversation a turn replays, kept beside the [`HistoryCache`]'s rows
//! between turns, so a warm turn pays for what is new, not for the whole
//! history: the new rows are paired and measured, the rest is lent as it was.
//!
//! What it holds is, by construction, what [`super::replay::conversation`]
//! builds from scratch: the latest summary, then the rows, every tool call
//! answered. [`pair_tool_calls`] decides each message from the calls of the
//! latest user or assistant message before it alone (it forgets every open
//! call at one), so pairing the rows from the last such message on gives
//! what pairing them all gives; only that last part is paired again when
//! rows are added. Anything but an append (a compaction, a reset, a
//! rewrite, another session) bumps the cache's epoch and builds it afresh.

use super::history::HistoryCache;
use super::replay::summary_message;
use super::store::{CompactMarker, SessionStore};
use crate::llm::rules::pair_tool_calls;
use crate::ports::{Sql, StorageError};
use r2_layout::Message;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The paired conversation and what is known of each message.
#[derive(Debug)]
pub struct Replay {
    session_id: String,
    /// The cache's epoch it was built in (see [`HistoryCache::epoch`]).
    epoch: u64,
    summary: Option<CompactMarker>,
    /// Rows of the cache paired so far, and the number of the last of them.
    rows_used: usize,
    last_seq: Option<i64>,
    /// Where the last part starts that a new row can change: its first row
    /// (a user or assistant message, or the first row) and first message.
    seg_row: usize,
    seg_msg: usize,
    messages: Vec<Message>,
    /// Each message's text tokens ([`super::context::text_tokens`]) and their sum.
    tokens: Vec<u64>,
    total: u64,
    /// Each message's stamp ([`crate::llm::ChatRequest::stamps`]).
    stamps: Vec<u64>,
}

/// The next stamp: one counter for the object, so a stamp never names two
/// messages, whichever cache or replay made them.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

impl Replay {
    fn new(session_id: &str, epoch: u64, summary: Option<CompactMarker>) -> Self {
        let mut r = Replay {
            session_id: session_id.to_owned(),
            epoch,
            summary: None,
            rows_used: 0,
            last_seq: None,
            seg_row: 0,
            seg_msg: 0,
            messages: Vec::new(),
            tokens: Vec::new(),
            total: 0,
            stamps: Vec::new(),
        };
        if let Some(marker) = &summary {
            r.push(summary_message(marker));
        }
        r.seg_msg = r.messages.len();
        r.summary = summary;
        r
    }

    /// Whether it still stands for `rows` of `session_id` after `summary`
    /// (rows only added since it was built).
    fn follows(&self, session_id: &str, epoch: u64, summary: &Option<CompactMarker>, rows: &[(i64, Message)]) -> bool {
        self.session_id == session_id
            && self.epoch == epoch
            && self.summary == *summary
            && self.rows_used <= rows.len()
            && self.last_seq == self.rows_used.checked_sub(1).map(|i| rows[i].0)
    }

    fn push(&mut self, m: Message) {
        let t = super::context::text_tokens(&m);
        self.total += t;
        self.tokens.push(t);
        self.stamps.push(NEXT_STAMP.fetch_add(1, Ordering::Relaxed));
        self.messages.push(m);
    }

    fn truncate(&mut self, len: usize) {
        self.total -= self.tokens[len.min(self.tokens.len())..].iter().sum::<u64>();
        self.tokens.truncate(len);
        self.stamps.truncate(len);
        self.messages.truncate(len);
    }

    /// Pairs the rows added since, re-pairing only the last part.
    fn catch_up(&mut self, rows: &[(i64, Message)]) {
        if self.rows_used == rows.len() {
            return;
        }
        let start = self.seg_row;
        self.truncate(self.seg_msg);
        let last = (start..rows.len())
            .rev()
            .find(|&i| matches!(rows[i].1, Message::User { .. } | Message::Assistant { .. }))
            .unwrap_or(start);
        let owned = |part: &[(i64, Message)]| part.iter().map(|(_, m)| m.clone()).collect();
        for m in pair_tool_calls(owned(&rows[start..last])) {
            self.push(m);
        }
        self.seg_row = last;
        self.seg_msg = self.messages.len();
        for m in pair_tool_calls(owned(&rows[last..])) {
            self.push(m);
        }
        self.rows_used = rows.len();
        self.last_seq = rows.last().map(|(seq, _)| *seq);
    }
}

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
