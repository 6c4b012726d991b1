//! The conversation indexes of one Agent object: loaded on first use, kept in RAM (a
//! few at a time), answering the memory protocol's conversation calls.

use super::store::{self, Conversations, CHECKPOINT_AFTER};
use crate::ports::{Sql, StorageError};
use crate::protocol::memory::{valid_store_name, ConversationHitView, ConversationSource, Exchange, MemoryCallError};
use hearth_memory::conversation::Ranking;
use hearth_memory::ConversationQuery;
use std::collections::HashMap;
use std::rc::Rc;

/// Conversation indexes kept in RAM at once (each is ~100 bytes per exchange; the
/// least recently used is dropped: its checkpoint and rows reload it).
pub const MAX_LOADED: usize = 8;
/// Most results a conversation search returns.
pub const MAX_K: usize = 20;

/// The loaded indexes and the schema flag.
pub struct Shelf<S: Sql> {
    sql: Rc<S>,
    schema_ready: bool,
    loaded: HashMap<String, (Conversations<S>, u64)>,
    uses: u64,
    /// How searches rank and recall (`MEMORY_CONVERSATION_RANKING`; the defaults otherwise).
    ranking: Ranking,
}

fn unavailable(e: StorageError) -> MemoryCallError {
    MemoryCallError::Unavailable(e.to_string())
}

impl<S: Sql> Shelf<S> {
    pub fn new(sql: Rc<S>) -> Self {
        Shelf { sql, schema_ready: false, loaded: HashMap::new(), uses: 0, ranking: Ranking::default() }
    }

    /// Ranks and recalls by `ranking` from now on (nothing to re-index).
    pub fn set_ranking(&mut self, ranking: Ranking) {
        self.ranking = ranking;
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
    /// that has conversations, merged by score (a sum of shares of what the query could
    /// score in each store: comparable, see [`hearth_memory::conversation::rank`]).
    pub fn search(
        &mut self,
        store: &str,
        q: &ConversationQuery<'_>,
        every_store: bool,
    ) -> Result<Vec<ConversationHitView>, MemoryCallError> {
        let q = ConversationQuery { k: q.k.min(MAX_K), ..q.clone() };
        let ranking = self.ranking;
        if !every_store {
            return self.get(store)?.search(&q, &ranking).map_err(unavailable);
        }
        self.schema()?;
        let mut hits = Vec::new();
        for name in store::stores(&*self.sql).map_err(unavailable)? {
            hits.extend(self.get(&name)?.search(&q, &ranking).map_err(unavailable)?);
        }
        crate::order::sort_by(&mut hits, |a, b| b.score.total_cmp(&a.score));
        hits.truncate(q.k);
        Ok(hits)
    }

    /// The exchange per-turn recall brings for `text`, with its context: only for a
    /// message that asks something and clearly matches (see
    /// [`hearth_memory::conversation::recall`]); at most one.
    pub fn recall(&mut self, store: &str, text: &str) -> Result<Vec<ConversationHitView>, MemoryCallError> {
        if self.count(store)? == 0 || !hearth_memory::conversation::recall::asks_something(text) {
            // No conversation yet, or nothing asked: nothing to load.
            return Ok(Vec::new());
        }
        let ranking = self.ranking;
        self.get(store)?.recall(text, &ranking).map_err(unavailable)
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

    /// Checkpoints loaded indexes with many exchanges since their last checkpoint
    /// ([`CHECKPOINT_AFTER`]), or with any once nothing was added since the last look
    /// (the store has settled: a reset's batch, the end of a backfill), so a cold load
    /// usually re-indexes nothing. Returns the stores written.
    pub fn maintenance(&mut self) -> Result<Vec<String>, StorageError> {
        let mut done = Vec::new();
        let mut names: Vec<String> = self.loaded.keys().cloned().collect();
        crate::order::sort(&mut names);
        for name in names {
            if let Some((c, _)) = self.loaded.get_mut(&name) {
                let settled = c.pending() > 0 && c.pending() == c.pending_when_looked;
                if c.pending() >= CHECKPOINT_AFTER || settled {
                    c.checkpoint()?;
                    done.push(name);
                }
                c.pending_when_looked = c.pending();
            }
        }
        Ok(done)
    }

    /// Drops a store from RAM (tests: an evicted object).
    pub fn unload(&mut self, name: &str) {
        self.loaded.remove(name);
    }
}
