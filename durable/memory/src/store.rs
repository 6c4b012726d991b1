//! The memory store: entries, name resolution, the closed set of operations, search.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use crate::backend::{ChangeSet, LogRow, MemoryBackend};
use crate::bm25::Explanation;
use crate::config::MemoryConfig;
use crate::entry::{Entry, EntryId, Kind, SearchHit};
use crate::error::MemoryError;
use crate::index::{Bm25Index, FastMap};
use crate::ops::Op;
use crate::snapshot;

/// Ids start at 1 so 0 never names an entry.
const FIRST_ID: EntryId = 1;

/// Counts for `my_stats` and the figures.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MemoryStats {
    pub entries: usize,
    pub notes: usize,
    pub archives: usize,
    /// Distinct terms in the index.
    pub vocabulary: usize,
    /// Entries with at least one token (BM25's N).
    pub indexed_documents: u64,
    pub avgdl: f32,
    /// Operations in the log since the last checkpoint.
    pub pending_log_rows: usize,
}

/// A memory: all entries in RAM with their inverted index, persisted through `B`.
pub struct MemoryStore<B: MemoryBackend> {
    backend: B,
    config: MemoryConfig,
    entries: BTreeMap<EntryId, Entry>,
    /// Every canonical name and alias → its entry.
    names: FastMap<Box<str>, EntryId>,
    index: Bm25Index,
    next_id: EntryId,
    /// Log rows written since the last checkpoint (what a cold load has to replay).
    pending_log_rows: usize,
}

impl<B: MemoryBackend> MemoryStore<B> {
    /// Loads the store from `backend` (an empty backend is an empty store).
    pub fn open(mut backend: B, config: MemoryConfig) -> Result<Self, MemoryError> {
        config.validate()?;
        let mut persisted = backend.load()?;

        let mut log: BTreeMap<EntryId, Option<Entry>> = BTreeMap::new();
        for row in &persisted.log {
            log.insert(row.entry_id, snapshot::decode_log_record(row.entry_id, &row.record)?);
        }

        // The checkpoint buffer is kept (shared) so posting lists can stay encoded.
        let buffer: Vec<u8> = match persisted.snapshot.len() {
            0 => Vec::new(),
            1 => persisted.snapshot.pop().unwrap_or_default(),
            _ => persisted.snapshot.concat(),
        };
        let (mut next_id, mut entries, index) = if buffer.is_empty() {
            (FIRST_ID, BTreeMap::new(), None)
        } else {
            let decoded = snapshot::decode_snapshot(Rc::new(buffer), config.tokenizer)?;
            (decoded.next_id, decoded.entries, decoded.index)
        };
        // No checkpoint, or one made with another tokenizer: index from the text.
        let mut index = index.unwrap_or_else(|| {
            let mut index = Bm25Index::new(config.tokenizer);
            for entry in entries.values() {
                index.insert(entry.id, &entry.indexed_parts());
            }
            index
        });

        // Replay the log. A checkpointed document is re-indexed only if the log changed
        // the text the index saw (name or content): an alias costs nothing here.
        for (id, change) in log {
            next_id = next_id.max(id.saturating_add(1));
            let old = entries.remove(&id);
            let text_changed = match (&old, &change) {
                (Some(old), Some(new)) => old.name != new.name || old.content != new.content,
                _ => true,
            };
            if text_changed {
                if let Some(old) = &old {
                    index.remove(id, &old.indexed_parts());
                }
                if let Some(new) = &change {
                    index.insert(id, &new.indexed_parts());
                }
            }
            if let Some(entry) = change {
                entries.insert(id, entry);
            }
        }
        if let Some((&last, _)) = entries.last_key_value() {
            next_id = next_id.max(last.saturating_add(1));
        }

        let mut names = FastMap::default();
        names.reserve(entries.len());
        for entry in entries.values() {
            for name in std::iter::once(&entry.name).chain(&entry.aliases) {
                if names.insert(name.as_str().into(), entry.id).is_some() {
                    return Err(crate::codec::CorruptData("a name is bound twice").into());
                }
            }
        }
        if index.len() != entries.len() {
            return Err(crate::codec::CorruptData("index and entries disagree").into());
        }
        let pending_log_rows = persisted.log.len();
        Ok(MemoryStore { backend, config, entries, names, index, next_id, pending_log_rows })
    }

    /// Applies one operation: validated, persisted as one atomic change, then applied in
    /// RAM. On any error nothing changed, in RAM or in storage. Returns the entry's id.
    pub fn apply(&mut self, op: Op) -> Result<EntryId, MemoryError> {
        let id = match op {
            Op::Add { name, content, kind, created_at } => self.add(&name, content, kind, created_at)?,
            Op::Rename { name, new_name } => self.rename(&name, &new_name)?,
            Op::Alias { name, alias } => self.alias(&name, &alias)?,
            Op::Write { name, content } => self.write(&name, content)?,
            Op::Remove { name } => self.remove(&name)?,
        };
        if let Some(after) = self.config.checkpoint_after {
            if self.pending_log_rows >= after.max(1) {
                // The operation is already durable in the log; a failed checkpoint only
                // means the next operation tries again.
                let _ = self.checkpoint();
            }
        }
        Ok(id)
    }

    fn add(&mut self, name: &str, content: String, kind: Kind, created_at: i64) -> Result<EntryId, MemoryError> {
        let name = self.valid_name(name)?;
        self.check_content(&content)?;
        if let Some(&entry) = self.names.get(name) {
            return Err(MemoryError::DuplicateName { name: name.to_owned(), entry });
        }
        let id = self.next_id;
        let entry = Entry { id, name: name.to_owned(), aliases: Vec::new(), content, kind, created_at };
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&entry))?;
        self.next_id += 1;
        self.index.insert(id, &entry.indexed_parts());
        self.names.insert(entry.name.as_str().into(), id);
        self.entries.insert(id, entry);
        Ok(id)
    }

    fn rename(&mut self, name: &str, new_name: &str) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        let new_name = self.valid_name(new_name)?;
        if let Some(&other) = self.names.get(new_name) {
            if other != id {
                return Err(MemoryError::DuplicateName { name: new_name.to_owned(), entry: other });
            }
        }
        let Some(old) = self.entries.get(&id) else { return Err(MemoryError::UnknownName(name.to_owned())) };
        if old.name == new_name {
            return Ok(id);
        }
        let mut renamed = old.clone();
        renamed.aliases.retain(|a| a != new_name);
        renamed.name = new_name.to_owned();
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&renamed))?;
        self.index.remove(id, &old.indexed_parts());
        self.index.insert(id, &renamed.indexed_parts());
        self.names.remove(old.name.as_str());
        self.names.insert(new_name.into(), id);
        self.entries.insert(id, renamed);
        Ok(id)
    }

    fn alias(&mut self, name: &str, alias: &str) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        let alias = self.valid_name(alias)?;
        match self.names.get(alias) {
            Some(&bound) if bound == id => return Ok(id),
            Some(&bound) => return Err(MemoryError::AliasAlreadyBound { alias: alias.to_owned(), entry: bound }),
            None => {}
        }
        let Some(old) = self.entries.get(&id) else { return Err(MemoryError::UnknownName(name.to_owned())) };
        if old.aliases.len() >= self.config.limits.max_aliases {
            return Err(MemoryError::TooManyAliases { max: self.config.limits.max_aliases });
        }
        let mut aliased = old.clone();
        aliased.aliases.push(alias.to_owned());
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&aliased))?;
        self.names.insert(alias.into(), id);
        self.entries.insert(id, aliased);
        Ok(id)
    }

    fn write(&mut self, name: &str, content: String) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        self.check_content(&content)?;
        let Some(old) = self.entries.get(&id) else { return Err(MemoryError::UnknownName(name.to_owned())) };
        if old.content == content {
            return Ok(id);
        }
        let mut written = old.clone();
        written.content = content;
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&written))?;
        self.index.remove(id, &old.indexed_parts());
        self.index.insert(id, &written.indexed_parts());
        self.entries.insert(id, written);
        Ok(id)
    }

    fn remove(&mut self, name: &str) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        persist(&mut self.backend, &mut self.pending_log_rows, id, None)?;
        if let Some(old) = self.entries.remove(&id) {
            self.index.remove(id, &old.indexed_parts());
            for bound in std::iter::once(&old.name).chain(&old.aliases) {
                self.names.remove(bound.as_str());
            }
        }
        Ok(id)
    }

    /// Writes the whole state as a new checkpoint and clears the log, in one change.
    pub fn checkpoint(&mut self) -> Result<(), MemoryError> {
        let chunks = snapshot::encode_snapshot(&self.entries, &self.index, self.next_id);
        self.backend.commit(&ChangeSet { clear_log: true, replace_snapshot: Some(chunks), log_upserts: Vec::new() })?;
        self.pending_log_rows = 0;
        Ok(())
    }

    /// True when a checkpoint would shorten the next cold load (for hosts that
    /// checkpoint from an alarm with `checkpoint_after: None`).
    pub fn checkpoint_due(&self) -> bool {
        self.pending_log_rows >= self.config.checkpoint_after.unwrap_or(crate::config::DEFAULT_CHECKPOINT_AFTER)
    }

    /// Names are trimmed; they must be non-empty, short, and free of control characters.
    fn valid_name<'n>(&self, name: &'n str) -> Result<&'n str, MemoryError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(MemoryError::EmptyName);
        }
        if name.len() > self.config.limits.max_name_bytes {
            return Err(MemoryError::NameTooLong { len: name.len(), max: self.config.limits.max_name_bytes });
        }
        if name.chars().any(char::is_control) {
            return Err(MemoryError::InvalidName);
        }
        Ok(name)
    }

    fn check_content(&self, content: &str) -> Result<(), MemoryError> {
        let max = self.config.limits.max_content_bytes;
        if content.len() > max {
            return Err(MemoryError::ContentTooLarge { len: content.len(), max });
        }
        Ok(())
    }

    /// The entry a name or alias refers to.
    pub fn resolve(&self, name: &str) -> Result<EntryId, MemoryError> {
        self.names.get(name.trim()).copied().ok_or_else(|| MemoryError::UnknownName(name.to_owned()))
    }

    /// The entry named `name` (canonical name or alias).
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.names.get(name.trim()).and_then(|id| self.entries.get(id))
    }

    pub fn get_by_id(&self, id: EntryId) -> Option<&Entry> {
        self.entries.get(&id)
    }

    /// All entries, by ascending id (creation order).
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `k` best entries for `query`, best first (equal scores: older entry first).
    /// The store does not filter by relevance: the caller picks `k`.
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit<'_>> {
        let terms = self.index.tokenizer().query_terms(query);
        self.hits(self.index.search_terms(&terms, self.config.bm25, k, &|_| true))
    }

    fn hits(&self, ranked: Vec<(EntryId, f32)>) -> Vec<SearchHit<'_>> {
        ranked.into_iter().filter_map(|(id, score)| self.entries.get(&id).map(|entry| SearchHit { entry, score })).collect()
    }

    /// [`MemoryStore::search`] among the entries `keep` accepts (e.g. only notes); the
    /// filter runs before the cut-off, so up to `k` accepted entries come back.
    pub fn search_where(&self, query: &str, k: usize, keep: impl Fn(&Entry) -> bool) -> Vec<SearchHit<'_>> {
        let terms = self.index.tokenizer().query_terms(query);
        let accept = |id: EntryId| self.entries.get(&id).is_some_and(&keep);
        self.hits(self.index.search_terms(&terms, self.config.bm25, k, &accept))
    }

    /// How the entry `name` scores for `query`, in Lucene's explanation format.
    pub fn explain(&self, query: &str, name: &str) -> Result<Explanation, MemoryError> {
        let id = self.resolve(name)?;
        self.index.explain(query, id, self.config.bm25).ok_or_else(|| MemoryError::UnknownName(name.to_owned()))
    }

    pub fn stats(&self) -> MemoryStats {
        let archives = self.entries.values().filter(|e| e.kind == Kind::Archive).count();
        MemoryStats {
            entries: self.entries.len(),
            notes: self.entries.len() - archives,
            archives,
            vocabulary: self.index.vocabulary_len(),
            indexed_documents: self.index.doc_count(),
            avgdl: self.index.avgdl(),
            pending_log_rows: self.pending_log_rows,
        }
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// The index, for read-only inspection (document frequencies, explanations).
    pub fn index(&self) -> &Bm25Index {
        &self.index
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// For tests: e.g. to inject storage failures.
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    pub fn into_backend(self) -> B {
        self.backend
    }

    /// Names currently bound (canonical names and aliases), for diagnostics.
    pub fn bound_names(&self) -> HashSet<&str> {
        self.names.keys().map(|k| &**k).collect()
    }
}

/// Writes an entry's new state (None: removed) to the log as one atomic change. A free
/// function over the two fields it needs, so callers can keep borrowing the old entry.
fn persist<B: MemoryBackend>(
    backend: &mut B,
    pending_log_rows: &mut usize,
    id: EntryId,
    entry: Option<&Entry>,
) -> Result<(), MemoryError> {
    let row = LogRow { entry_id: id, record: snapshot::encode_log_record(entry) };
    backend.commit(&ChangeSet { log_upserts: vec![row], ..ChangeSet::default() })?;
    *pending_log_rows += 1;
    Ok(())
}
