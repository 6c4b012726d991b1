//! The conversation indexes of one Agent object: loaded on first use, kept in RAM (a
//! few at a time), answering the memory protocol's conversation calls.

use super::store::{self, Conversations, CHECKPOINT_AFTER};
use crate::ports::{Sql, StorageError};
use crate::protocol::memory::{valid_store_name, ConversationHitView, ConversationSource, Exchange, MemoryCallError};
use hearth_memory::ConversationQuery;
use std::collections::HashMap;
use std::rc::Rc;

/// Conversation indexes kept in RAM at once (each is ~100 bytes per exchange; the
/// least recently used is dropped: its checkpoint and rows reload it).
pub const MAX_LOADED: usize = 8;
/// Most results a conversation search returns.
pub const MAX_K: usize = 20;
/// Per-turn recall brings an exchange only when it matches this share of what the
/// message's specific words could score: one occurrence of each in an exchange of
/// average length gives about 0.45 (BM25 saturates below idf), so this asks for most
/// of them, not one shared word.
pub const RECALL_MIN_MATCH: f32 = 0.35;

/// The loaded indexes and the schema flag.
pub struct Shelf<S: Sql> {
    sql: Rc<S>,
    schema_ready: bool,
    loaded: HashMap<String, (Conversations<S>, u64)>,
    uses: u64,
}

fn unavailable(e: StorageError) -> MemoryCallError {
    MemoryCallError::Unavailable(e.to_string())
}

impl<S: Sql> Shelf<S> {
    pub fn new(sql: Rc<S>) -> Self {
        Shelf { sql, schema_ready: false, loaded: HashMap::new(), uses: 0 }
    }

    fn schema(&mut self) -> Result<(), MemoryCallError> {
        if !self.schema_ready {
            crate::storage::ensure(&*self.sql, &store::TABLES).map_err(unavailable)?;
            self.schema_ready = true;
        }
        Ok(())
    }

    /// The store's index, loaded on first use.
    pub fn get(&mut self, name: &str) -> Result<&mut Conversations<S>, MemoryCallError> {
        if !valid_store_name(name) {
            return Err(MemoryCallError::Rejected(format!("bad store name {name:?}")));
        }
        self.schema()?;
        self.uses += 1;
        if !self.loaded.contains_key(name) {
            let c = Conversations::open(self.sql.clone(), name).map_err(unavailable)?;
            while self.loaded.len() >= MAX_LOADED {
                let Some(oldest) = self.loaded.iter().min_by_key(|(_, (_, used))| *used).map(|(n, _)| n.clone()) else {
                    break;
                };
                if let Some((mut old, _)) = self.loaded.remove(&oldest) {
                    // A shorter next load; the rows make up for a failure.
                    if old.pending() > 0 {
                        let _ = old.checkpoint();
                    }
                }
            }
            self.loaded.insert(name.to_owned(), (c, 0));
        }
        let uses = self.uses;
        let (c, used) =
            self.loaded.get_mut(name).ok_or_else(|| MemoryCallError::Unavailable("store vanished".into()))?;
        *used = uses;
        Ok(c)
    }

    pub fn add(
        &mut self,
        store: &str,
        from: &ConversationSource,
        exchanges: &[Exchange],
        now: i64,
    ) -> Result<usize, MemoryCallError> {
        self.get(store)?.add(from, exchanges, now).map_err(unavailable)
    }

    /// `store`'s best exchanges for `q`, or (`every_store`) the best of every store
    /// that has conversations, merged by score.
    pub fn search(
        &mut self,
        store: &str,
        q: &ConversationQuery<'_>,
        every_store: bool,
    ) -> Result<Vec<ConversationHitView>, MemoryCallError> {
        let q = ConversationQuery { k: q.k.min(MAX_K), ..q.clone() };
        if !every_store {
            return self.get(store)?.search(&q).map_err(unavailable);
        }
        self.schema()?;
        let mut hits = Vec::new();
        for name in store::stores(&*self.sql).map_err(unavailable)? {
            hits.extend(self.get(&name)?.search(&q).map_err(unavailable)?);
        }
        crate::order::sort_by(&mut hits, |a, b| b.score.total_cmp(&a.score));
        hits.truncate(q.k);
        Ok(hits)
    }

    /// The exchanges clearly about `text`, for per-turn recall: the best `k` whose own
    /// match is at least [`RECALL_MIN_MATCH`] (see [`hearth_memory::ConversationHit::match_share`]).
    pub fn recall(&mut self, store: &str, text: &str, k: usize) -> Result<Vec<ConversationHitView>, MemoryCallError> {
        if self.count(store)? == 0 {
            // No conversation yet: nothing to load.
            return Ok(Vec::new());
        }
        let q = ConversationQuery { text, k, specific_only: true, ..Default::default() };
        let mut hits = self.get(store)?.search(&q).map_err(unavailable)?;
        hits.retain(|h| h.match_share >= RECALL_MIN_MATCH);
        Ok(hits)
    }

    /// Exchanges in the store's conversation memory (0 without loading a store that has none).
    pub fn count(&mut self, store: &str) -> Result<usize, MemoryCallError> {
        if let Some((c, _)) = self.loaded.get(store) {
            return Ok(c.len());
        }
        self.schema()?;
        if !store::has_conversations(&*self.sql, store).map_err(unavailable)? {
            return Ok(0);
        }
        Ok(self.get(store)?.len())
    }

    /// Checkpoints loaded indexes with many exchanges since their last checkpoint.
    /// Returns the stores written.
    pub fn maintenance(&mut self) -> Result<Vec<String>, StorageError> {
        let mut done = Vec::new();
        let mut names: Vec<String> = self.loaded.keys().cloned().collect();
        crate::order::sort(&mut names);
        for name in names {
            if let Some((c, _)) = self.loaded.get_mut(&name) {
                if c.pending() >= CHECKPOINT_AFTER {
                    c.checkpoint()?;
                    done.push(name);
                }
            }
        }
        Ok(done)
    }

    /// Drops a store from RAM (tests: an evicted object).
    pub fn unload(&mut self, name: &str) {
        self.loaded.remove(name);
    }
}
