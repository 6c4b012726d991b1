//! The agent's BM25 memory as a service: which store a session may use, the
//! calls a session makes to the Agent object, and the host that answers them.
//!
//! - [`store_for`] maps a session key to its store: `main` for the owner's main
//!   and heartbeat sessions, `group:{channel}:{chat}` per group (all topics of a
//!   group share it), `dm:{channel}:{peer}` per other DM, `job:{id}` per isolated
//!   job. A session only ever names its own store, so a private note cannot reach
//!   a group: not by a tool call and not by recall (recall runs in `main` only).
//! - [`MemoryCall`] / [`MemoryReply`] are the wire format between the Session
//!   object (through [`crate::ports::MemoryService`]) and the Agent object.
//! - [`MemoryHub`] holds the loaded stores of one Agent object (lazily opened,
//!   kept across requests, at most [`MAX_LOADED_STORES`]: the least recently used
//!   is checkpointed and unloaded) over [`backend::SqlMemoryBackend`] and answers
//!   calls.
//! - [`tools`]: the memory tools, [`self_report`] the self-report tools of seed 000;
//!   [`conversation`]: what was said, searchable; [`recall`]: per-turn recall,
//!   with a relevance floor.

pub mod backend;
pub mod conversation;
pub mod evidence;
pub mod recall;
pub mod self_report;
pub mod tool_context;
pub mod tools;

pub use recall::{recall, RECALL_CHARS, RECALL_K};

#[cfg(test)]
mod tests;

use crate::ports::Sql;
use crate::protocol::memory::{
    valid_store_name, EvidenceView, MemoryCall, MemoryCallError, MemoryHit, MemoryReply, NoteSummary, StoreStats,
    MAIN_STORE, MAX_LIST,
};
use backend::SqlMemoryBackend;
use evidence::EvidenceBook;
use hearth_memory::evidence::{normalised, query_key, score_ceiling, Use};
use hearth_memory::{ConversationQuery, EntryId, Kind, MemoryConfig, MemoryStore, Op};
use std::collections::HashMap;
use std::rc::Rc;

/// Most hits a search returns.
pub const MAX_K: usize = 50;
/// Log rows after which a request checkpoints inline (the alarm's
/// [`MemoryHub::maintenance`] normally does it much earlier, off the request path).
pub const INLINE_CHECKPOINT_AFTER: usize = 1024;
/// Log rows after which [`MemoryHub::maintenance`] checkpoints a store.
pub const MAINTENANCE_CHECKPOINT_AFTER: usize = 32;
/// Stores kept in RAM at once: an agent in many groups has a store per group,
/// and each loaded store holds its checkpoint and index (megabytes for a big
/// one). The least recently used is checkpointed and unloaded to make room.
pub const MAX_LOADED_STORES: usize = 16;

/// What the hub learns from the object hosting it.
pub trait HubHost {
    /// Now (ms since the epoch): recall events are counted per UTC day.
    fn now_ms(&self) -> i64;
    /// How many conversations the agent has, if the host keeps count.
    fn sessions_total(&self) -> Option<u64>;
    /// Facts dreaming promoted, and when it last ran (None: it never did).
    fn dreams(&self) -> (Option<u64>, Option<i64>) {
        (None, None)
    }
}

/// Characters of a note's first line a listing shows.
const SUMMARY_CHARS: usize = 120;

/// How a listing shows an entry: its first non-empty line, cut, and its length.
fn note_summary(e: &hearth_memory::Entry) -> NoteSummary {
    let line = e.content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let summary = match line.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    };
    NoteSummary {
        name: e.name.clone(),
        kind: e.kind,
        created_at: e.created_at,
        summary,
        length: e.content.chars().count(),
    }
}

struct Loaded<S: Sql> {
    store: MemoryStore<SqlMemoryBackend<S>>,
    /// The hub's use counter when the store was last used (for LRU unloading).
    last_used: u64,
}

/// The stores of one Agent object, loaded on first use and kept in RAM (up to
/// [`MAX_LOADED_STORES`]).
pub struct MemoryHub<S: Sql> {
    sql: Rc<S>,
    config: MemoryConfig,
    schema_ready: bool,
    stores: HashMap<String, Loaded<S>>,
    uses: u64,
    host: Option<Box<dyn HubHost>>,
    evidence: EvidenceBook,
    /// What was said: one conversation index per store ([`conversation`]).
    conversations: conversation::shelf::Shelf<S>,
    /// The main session may hold a recall's "the store is empty"
    /// ([`recall::RecallGate`]). True from the start: it may have heard so
    /// from this object before the object was evicted.
    main_told_empty: bool,
    /// Something was stored in `main` since the main session was told it was
    /// empty: the host tells it ([`MemoryHub::take_main_tell`]).
    main_tell_owed: bool,
}

impl<S: Sql> MemoryHub<S> {
    pub fn new(sql: Rc<S>) -> Self {
        let config = MemoryConfig { checkpoint_after: Some(INLINE_CHECKPOINT_AFTER), ..MemoryConfig::default() };
        Self::with_config(sql, config)
    }

    pub fn with_config(sql: Rc<S>, config: MemoryConfig) -> Self {
        MemoryHub {
            sql: sql.clone(),
            config,
            schema_ready: false,
            stores: HashMap::new(),
            uses: 0,
            host: None,
            evidence: EvidenceBook::default(),
            conversations: conversation::shelf::Shelf::new(sql.clone()),
            main_told_empty: true,
            main_tell_owed: false,
        }
    }

    /// Notes that `store` may hold something new (an add, an archive, exchanges).
    pub fn stored_in(&mut self, store: &str) {
        if store == MAIN_STORE && self.main_told_empty {
            self.main_told_empty = false;
            self.main_tell_owed = true;
        }
    }

    /// Whether the main session must be told that its store holds something
    /// now (once: taken). Its host sends `MemoryStored`, and gives it back
    /// with [`MemoryHub::main_tell_failed`] when that did not arrive.
    pub fn take_main_tell(&mut self) -> bool {
        std::mem::take(&mut self.main_tell_owed)
    }

    /// The tell did not arrive: the next write tries again.
    pub fn main_tell_failed(&mut self) {
        self.main_told_empty = true;
    }

    /// Whether `store` holds nothing a recall could find (no entry, no
    /// conversation), as a recall with `found` and `said` saw it.
    fn holds_nothing(&mut self, store: &str, found: bool) -> bool {
        let entries = self.stores.get(store).map_or(1, |l| l.store.index().doc_count());
        !found && entries == 0 && self.conversations.count(store).is_ok_and(|n| n == 0)
    }

    /// Gives the hub a clock (recall events are counted) and the session count.
    pub fn with_host(mut self, host: Box<dyn HubHost>) -> Self {
        self.host = Some(host);
        self
    }

    /// Scores later searches of every store with `params` (the agent's
    /// `MEMORY_BM25_K1` / `MEMORY_BM25_B`); invalid values change nothing.
    pub fn set_bm25(&mut self, params: hearth_memory::Bm25Params) -> Result<(), MemoryCallError> {
        if params == self.config.bm25 {
            return Ok(());
        }
        for loaded in self.stores.values_mut() {
            loaded.store.set_bm25(params)?;
        }
        self.config.bm25 = params;
        Ok(())
    }

    /// Ranks and recalls conversations by `ranking` (the agent's
    /// `MEMORY_CONVERSATION_RANKING`).
    pub fn set_conversation_ranking(&mut self, ranking: hearth_memory::conversation::Ranking) {
        self.conversations.set_ranking(ranking);
    }

    /// Names of the stores loaded in RAM.
    pub fn loaded(&self) -> Vec<String> {
        let mut names: Vec<String> = self.stores.keys().cloned().collect();
        crate::order::sort(&mut names);
        names
    }

    /// The store `name`, opened from SQLite on first use.
    pub fn store(&mut self, name: &str) -> Result<&mut MemoryStore<SqlMemoryBackend<S>>, MemoryCallError> {
        if !valid_store_name(name) {
            return Err(MemoryCallError::Rejected(format!("bad store name {name:?}")));
        }
        if !self.schema_ready {
            backend::init_schema(&*self.sql).map_err(|e| MemoryCallError::Unavailable(e.to_string()))?;
            self.schema_ready = true;
        }
        self.uses += 1;
        if !self.stores.contains_key(name) {
            let store = MemoryStore::open(SqlMemoryBackend::new(self.sql.clone(), name), self.config)?;
            self.make_room();
            self.stores.insert(name.to_owned(), Loaded { store, last_used: 0 });
        }
        let loaded = self.stores.get_mut(name).ok_or_else(|| MemoryCallError::Unavailable("store vanished".into()))?;
        loaded.last_used = self.uses;
        Ok(&mut loaded.store)
    }

    /// Unloads least recently used stores until one more fits under
    /// [`MAX_LOADED_STORES`], checkpointing each first so its next load is short.
    /// A failed checkpoint does not keep it loaded: its log holds every change.
    fn make_room(&mut self) {
        while self.stores.len() >= MAX_LOADED_STORES.max(1) {
            let Some(oldest) = self.stores.iter().min_by_key(|(_, l)| l.last_used).map(|(name, _)| name.clone()) else {
                break;
            };
            if let Some(mut loaded) = self.stores.remove(&oldest) {
                if loaded.store.pending_log_rows() > 0 {
                    let _ = loaded.store.checkpoint();
                }
            }
        }
    }

    /// Answers one call.
    pub fn call(&mut self, call: MemoryCall) -> Result<MemoryReply, MemoryCallError> {
        match call {
            MemoryCall::Op { store, op } => {
                let removing = matches!(op, Op::Remove { .. });
                let s = self.store(&store)?;
                let id = s.apply(op)?;
                let name = if removing { None } else { s.get_by_id(id).map(|e| e.name.clone()) };
                if removing {
                    // Tidiness only: the sweep also skips evidence of removed entries.
                    let _ = self.evidence.forget(&*self.sql, &store, &[id]);
                } else {
                    self.stored_in(&store);
                }
                Ok(MemoryReply::Applied { id, name })
            }
            MemoryCall::Search { store, query, k, kind, record } => {
                let s = self.store(&store)?;
                let k = k.min(MAX_K);
                let hits = match kind {
                    Some(kind) => s.search_kind(&query, k, kind),
                    None => s.search(&query, k),
                };
                let hits: Vec<MemoryHit> =
                    hits.into_iter().map(|h| MemoryHit { entry: h.entry.clone(), score: h.score }).collect();
                if record {
                    let terms = s.index().tokenizer().query_terms(&query);
                    let ceiling = score_ceiling(s.index(), &terms);
                    let key = query_key(s.index().tokenizer(), &query);
                    self.record(&store, &hits, key, ceiling);
                }
                Ok(MemoryReply::Hits { hits })
            }
            MemoryCall::Recall { store, query, k, conversations } => {
                // Conversations first: a store without any must not fail the notes' recall.
                let said = if conversations > 0 {
                    self.conversations.recall(&store, &query).unwrap_or_default()
                } else {
                    Vec::new()
                };
                let s = self.store(&store)?;
                let (found, ceiling) = recall::relevant_with_ceiling(s, &query, k.min(MAX_K));
                let hits: Vec<MemoryHit> =
                    found.into_iter().map(|h| MemoryHit { entry: h.entry.clone(), score: h.score }).collect();
                let key = query_key(s.index().tokenizer(), &query);
                if let (false, Some(host)) = (hits.is_empty(), &self.host) {
                    // Only a statistic: a failed count must not cost the turn its recall.
                    let _ = backend::count_recall(&*self.sql, &store, host.now_ms());
                }
                self.record(&store, &hits, key, ceiling);
                // Only the main session is told when that changes.
                let empty = store == MAIN_STORE && self.holds_nothing(&store, !hits.is_empty() || !said.is_empty());
                if empty {
                    self.main_told_empty = true;
                }
                Ok(MemoryReply::Recalled { hits, conversations: said, empty })
            }
            MemoryCall::Get { store, name, record } => {
                let s = self.store(&store)?;
                let entry = s.get(&name).cloned();
                if let (true, Some(e), Some(host)) = (record, &entry, &self.host) {
                    let read = Use { at_ms: host.now_ms(), query: None, score: None };
                    let _ = self.evidence.record(&*self.sql, &store, &[(e.id, read)]);
                }
                Ok(MemoryReply::Entry { entry })
            }
            MemoryCall::Evidence { store, limit } => {
                let rows = evidence::top(&*self.sql, &store, limit)
                    .map_err(|e| MemoryCallError::Unavailable(e.to_string()))?;
                let s = self.store(&store)?;
                let entries = rows
                    .into_iter()
                    .map(|(id, e)| EvidenceView {
                        entry_id: id,
                        name: s.get_by_id(id).map(|en| en.name.clone()),
                        hits: e.hits,
                        distinct_queries: e.distinct_queries(),
                        distinct_days: e.distinct_days(),
                        last_score: e.last_score,
                        last_at: e.last_at,
                    })
                    .collect();
                Ok(MemoryReply::Evidence { entries })
            }
            MemoryCall::List { store, offset, limit } => {
                let s = self.store(&store)?;
                let notes = s.newest(offset, limit.min(MAX_LIST)).into_iter().map(note_summary).collect();
                Ok(MemoryReply::Notes { total: s.len(), offset, notes })
            }
            MemoryCall::Stats { store } => {
                let st = self.store(&store)?.stats();
                let recall_events_7d = self
                    .host
                    .as_ref()
                    .and_then(|h| backend::recalls_in_last_days(&*self.sql, &store, h.now_ms(), 7).ok());
                Ok(MemoryReply::Stats {
                    stats: StoreStats {
                        entries: st.entries,
                        notes: st.notes,
                        archives: st.archives,
                        vocabulary: st.vocabulary,
                        avgdl: st.avgdl,
                        pending_log_rows: st.pending_log_rows,
                        recall_events_7d,
                        sessions_total: self.host.as_ref().and_then(|h| h.sessions_total()),
                        memories_promoted: self.host.as_ref().and_then(|h| h.dreams().0),
                        last_dream_ts: self.host.as_ref().and_then(|h| h.dreams().1),
                        conversations: self.conversations.count(&store).ok(),
                        store,
                    },
                })
            }
            MemoryCall::AddConversation { store, from, exchanges } => {
                let now = self.host.as_ref().map_or(0, |h| h.now_ms());
                let added = self.conversations.add(&store, &from, &exchanges, now)?;
                if added > 0 {
                    self.stored_in(&store);
                }
                Ok(MemoryReply::Added { added })
            }
            MemoryCall::SearchConversations { store, query, more, k, since, until, every_store } => {
                let q = ConversationQuery { text: &query, more: &more, k, since, until };
                Ok(MemoryReply::Conversations { hits: self.conversations.search(&store, &q, every_store)? })
            }
            MemoryCall::AddArchive { store, name, summary, created_at } => {
                let s = self.store(&store)?;
                let base = name.trim().to_owned();
                let mut candidate = base.clone();
                let mut n = 2;
                while let Some(taken) = s.get(&candidate) {
                    // The same add again (a retry whose first reply was lost): the entry is there.
                    if taken.kind == Kind::Archive && taken.content == summary && taken.created_at == created_at {
                        return Ok(MemoryReply::Applied { id: taken.id, name: Some(taken.name.clone()) });
                    }
                    candidate = format!("{base} ({n})");
                    n += 1;
                }
                let op = Op::Add { name: candidate, content: summary, kind: Kind::Archive, created_at };
                let id = s.apply(op)?;
                let name = s.get_by_id(id).map(|e| e.name.clone());
                self.stored_in(&store);
                Ok(MemoryReply::Applied { id, name })
            }
        }
    }

    /// Records that `hits` of `store` were used for a question (`key`) that
    /// could score at most `ceiling`. Needs the host's clock; a failure is
    /// ignored (evidence is a statistic, the turn goes on).
    fn record(&mut self, store: &str, hits: &[MemoryHit], key: Option<u32>, ceiling: f32) {
        let Some(host) = &self.host else { return };
        if hits.is_empty() {
            return;
        }
        let at_ms = host.now_ms();
        let uses: Vec<(EntryId, Use)> = hits
            .iter()
            .map(|h| (h.entry.id, Use { at_ms, query: key, score: Some(normalised(h.score, ceiling)) }))
            .collect();
        let _ = self.evidence.record(&*self.sql, store, &uses);
    }

    /// Forgets evidence of entries the store no longer has (the sweep found them).
    pub fn forget_evidence(&mut self, store: &str, ids: &[EntryId]) {
        let _ = self.evidence.forget(&*self.sql, store, ids);
    }

    /// The SQLite the hub keeps its stores in.
    pub fn sql(&self) -> &Rc<S> {
        &self.sql
    }

    /// Off the request path (the Agent object's alarm): checkpoints every
    /// loaded store with more than a few log rows. Returns the stores written.
    pub fn maintenance(&mut self) -> Result<Vec<String>, MemoryCallError> {
        let mut done = Vec::new();
        let mut names: Vec<&String> = self.stores.keys().collect();
        crate::order::sort(&mut names);
        let names: Vec<String> = names.into_iter().cloned().collect();
        for name in names {
            if let Some(loaded) = self.stores.get_mut(&name) {
                if loaded.store.pending_log_rows() >= MAINTENANCE_CHECKPOINT_AFTER {
                    loaded.store.checkpoint()?;
                    done.push(name);
                }
            }
        }
        if let (true, Some(host)) = (self.schema_ready, &self.host) {
            let _ = backend::prune_recalls(&*self.sql, host.now_ms());
        }
        let written = self.conversations.maintenance().map_err(|e| MemoryCallError::Unavailable(e.to_string()))?;
        done.extend(written.into_iter().map(|name| format!("{name} (conversations)")));
        Ok(done)
    }

    /// Drops a store from RAM (tests: simulate eviction of one store).
    pub fn unload(&mut self, name: &str) {
        self.stores.remove(name);
        self.conversations.unload(name);
    }

    /// The conversation indexes (the backfill adds to them).
    pub fn conversations(&mut self) -> &mut conversation::shelf::Shelf<S> {
        &mut self.conversations
    }
}
