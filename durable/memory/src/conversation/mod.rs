//! # Conversation memory: what was said, findable again
//!
//! Notes are what the agent chose to keep; a conversation index keeps what was *said*.
//! Every exchange that leaves a session's live history (a reset, a compaction) becomes
//! one document here: who spoke, their words, and the agent's answer. Search finds the
//! exchange weeks later, with its session and time, so the host can show the exchanges
//! around it.
//!
//! It is a second index beside the notes store, not a new kind of note: notes keep their
//! exact Lucene BM25 (seed 002), while conversation search needs a different ranking
//! ([`rank`]) and a different size: a year of daily use is ~100,000 exchanges, ten times
//! a large notes store. So the index keeps no text in RAM (the host pages exchange text
//! from SQLite for the few hits it shows), only postings and, per exchange, its session
//! and time:
//!
//! - terms come from [`Tokenizer::Prefixed`]: word prefixes plus whole words, so
//!   "painting" finds "paintings" in any language that builds words by suffixes;
//! - documents are [`TurnDoc`]s with ids the host assigns (increasing; the host's SQLite
//!   row ids), a session ordinal (dense, assigned by the host) and a time;
//! - [`snapshot`] writes the whole index as a checkpoint; exchanges added after a
//!   checkpoint are re-indexed from their text at the next load (the host's log is its
//!   table of exchanges, so nothing is written twice);
//! - [`rank`] scores an exchange by itself, its ±1 window and its session; [`ranking`]
//!   holds the four numbers that could be fitted (chosen by leave-one-conversation-out);
//!   [`recall`] decides what per-turn recall brings.
//!
//! A search costs what its words touch: per-exchange buffers are reused and put back to
//! zero where written, words in most exchanges are left out, and past
//! [`rank::MAX_CANDIDATES`] scored exchanges commoner words only add to those.
//!
//! Measured natively by `bench/memory/conversation_bench.rs` and in workerd by
//! `bench/conversations.mjs` (`npm run bench -- conversations`): LoCoMo, each
//! conversation held out, and 100,000 exchanges of distinct text.

pub mod rank;
pub mod ranking;
pub mod recall;
pub mod snapshot;

use crate::index::Bm25Index;
use crate::tokenize::Tokenizer;

pub use rank::{ConversationHit, ConversationQuery, CONTEXT};
pub use ranking::{Ranking, RankingError};

/// The host's id of an exchange (its SQLite row id): increasing, never reused.
pub type TurnId = u64;
/// The host's dense number for a session (0, 1, 2, ... per store).
pub type SessionOrd = u32;

/// One exchange to index.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnDoc<'a> {
    pub id: TurnId,
    pub session: SessionOrd,
    /// When it was said (ms since the epoch): date filters and display.
    pub at: i64,
    /// Everything searchable: the speaker's name, their words, the agent's answer.
    pub text: &'a str,
}

/// Why exchanges were not added. Nothing is added when one of a batch is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConversationError {
    #[error("exchange ids must increase: {id} after {last}")]
    IdNotIncreasing { id: TurnId, last: TurnId },
    #[error("the conversation index is full")]
    Full,
}

/// Per indexed exchange, in slot order (the index's insertion order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TurnMeta {
    pub session: SessionOrd,
    pub at: i64,
}

/// Per-slot buffers a search reuses ([`rank`]): zero except while a phrasing is scored
/// (each search puts back the zeros it wrote), so a search costs what it touches, not
/// the store's size.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    pub own: Vec<f32>,
    pub window: Vec<f32>,
    pub window_tf: Vec<u32>,
    pub marks: Vec<u8>,
}

/// The conversation index of one store.
#[derive(Clone, Debug)]
pub struct ConversationIndex {
    pub(crate) index: Bm25Index,
    /// Aligned with `index.slots`: slots are only appended (exchanges are never removed).
    pub(crate) turns: Vec<TurnMeta>,
    /// Tokens per session (the sum of its exchanges' lengths), by ordinal.
    pub(crate) session_len: Vec<u64>,
    /// The tokens of every exchange's ±1 window, summed (windows' average length).
    pub(crate) window_total: u64,
    pub(crate) last_id: TurnId,
    /// What a search writes per exchange, kept for the next one.
    pub(crate) scratch: std::cell::RefCell<Scratch>,
}

impl Default for ConversationIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl ConversationIndex {
    pub fn new() -> Self {
        ConversationIndex {
            index: Bm25Index::new(Tokenizer::Prefixed),
            turns: Vec::new(),
            session_len: Vec::new(),
            window_total: 0,
            last_id: 0,
            scratch: Default::default(),
        }
    }

    /// Exchanges indexed.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// The highest exchange id indexed (0: none). The host re-indexes what is above it.
    pub fn last_id(&self) -> TurnId {
        self.last_id
    }

    /// Sessions that have at least one token.
    pub fn session_count(&self) -> usize {
        self.session_len.iter().filter(|&&l| l > 0).count()
    }

    /// Distinct terms.
    pub fn vocabulary_len(&self) -> usize {
        self.index.vocabulary_len()
    }

    /// Indexes `docs` (ids increasing and above [`Self::last_id`]); all or nothing.
    pub fn add(&mut self, docs: &[TurnDoc<'_>]) -> Result<(), ConversationError> {
        let mut last = self.last_id;
        for doc in docs {
            if doc.id <= last {
                return Err(ConversationError::IdNotIncreasing { id: doc.id, last });
            }
            last = doc.id;
        }
        if self.index.slots.len() + docs.len() >= u32::MAX as usize {
            return Err(ConversationError::Full);
        }
        for doc in docs {
            // Ids are new and increasing (checked above), so the insert cannot refuse.
            self.index.insert(doc.id, &[doc.text]);
            let len = self.index.slots.last().map_or(0, |s| u64::from(s.len));
            self.window_total += window_growth(self.index.slots.len(), &self.turns, doc.session, len, |slot| {
                u64::from(self.index.slots[slot].len)
            });
            self.turns.push(TurnMeta { session: doc.session, at: doc.at });
            let at = doc.session as usize;
            if self.session_len.len() <= at {
                self.session_len.resize(at + 1, 0);
            }
            self.session_len[at] += len;
            self.last_id = doc.id;
        }
        Ok(())
    }
}

/// What appending an exchange of `len` tokens to `session` (as slot `count - 1`) adds
/// to the windows' total: its own window holds it and its predecessor (when that is of
/// the same session), and the predecessor's window gains it.
pub(crate) fn window_growth(
    count: usize,
    turns: &[TurnMeta],
    session: SessionOrd,
    len: u64,
    len_of: impl Fn(usize) -> u64,
) -> u64 {
    match count.checked_sub(2) {
        Some(previous) if turns.get(previous).is_some_and(|t| t.session == session) => len_of(previous) + 2 * len,
        _ => len,
    }
}

#[cfg(test)]
mod tests;
