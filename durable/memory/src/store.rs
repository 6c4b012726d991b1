//! The memory store: entries, name resolution, the closed set of operations, search.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use crate::backend::{ChangeSet, LogRow, MemoryBackend};
use crate::bm25::Explanation;
use crate::codec::CorruptData;
use crate::config::MemoryConfig;
use crate::entry::{Entry, EntryId, Kind, SearchHit};
use crate::entry_record;
use crate::entry_table::EntryTable;
use crate::error::MemoryError;
use crate::index::Bm25Index;
use crate::keys::KeyIndex;
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
    entries: EntryTable,
    /// Every canonical name and alias → its entry (the texts stay in the entries).
    names: KeyIndex<EntryId>,
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
            log.insert(row.entry_id, entry_record::decode_log_record(row.entry_id, &row.record)?);
        }

        // The checkpoint buffer is kept (shared): entries and posting lists stay encoded.
        let buffer: Vec<u8> = match persisted.snapshot.len() {
            0 => Vec::new(),
            1 => persisted.snapshot.pop().unwrap_or_default(),
            _ => persisted.snapshot.concat(),
        };
        let (mut next_id, mut entries, mut names, index) = if buffer.is_empty() {
            (FIRST_ID, EntryTable::default(), KeyIndex::default(), None)
        } else {
            let decoded = snapshot::decode_snapshot(Rc::new(buffer), config.tokenizer)?;
            (decoded.next_id, decoded.entries, decoded.names, decoded.index)
        };
        // No checkpoint, or one made with another tokenizer: index from the text.
        let mut index = index.unwrap_or_else(|| {
            let mut index = Bm25Index::new(config.tokenizer);
            entries.for_each_indexed_parts(|id, parts| {
                index.insert(id, &parts);
            });
            index
        });

        // Replay the log. A checkpointed document is re-indexed only if the log changed
        // the text the index saw (name or content): an alias costs nothing here. Names
        // of replaced entries are unbound first, the new ones bound after.
        let mut rebind = Vec::new();
        for (id, change) in log {
            next_id = next_id.max(id.saturating_add(1));
            let text_changed = match (entries.indexed_parts(id), &change) {
                (Some(old), Some(new)) => old != new.indexed_parts(),
                _ => true,
            };
            if text_changed {
                if let Some(old) = entries.indexed_parts(id) {
                    index.remove(id, &old);
                }
                if let Some(new) = &change {
                    index.insert(id, &new.indexed_parts());
                }
            }
            if let Some(old) = entries.remove(id) {
                for name in std::iter::once(&old.name).chain(&old.aliases) {
                    names.remove_hashed(names.hash(name.as_bytes()), id);
                }
            }
            if let Some(entry) = change {
                rebind.push(id);
                entries.insert(entry);
            }
        }
        for id in rebind {
            let Some(entry) = entries.get(id) else { continue };
            for name in std::iter::once(&entry.name).chain(&entry.aliases) {
                let hash = names.hash(name.as_bytes());
                if names.insert_hashed(hash, id, |other| entries.has_name(other, name)).is_err() {
                    return Err(CorruptData("a name is bound twice").into());
                }
            }
        }
        if let Some(last) = entries.last_id() {
            next_id = next_id.max(last.saturating_add(1));
        }
        if index.len() != entries.len() {
            return Err(CorruptData("index and entries disagree").into());
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

    /// The entry bound to `name` (already trimmed), if any.
    fn bound(&self, name: &str) -> Option<EntryId> {
        self.names.get(name.as_bytes(), |id| self.entries.has_name(id, name))
    }

    fn bind(&mut self, name: &str, id: EntryId) {
        let hash = self.names.hash(name.as_bytes());
        // The caller checked that `name` is free: no key comparison needed.
        let _ = self.names.insert_hashed(hash, id, |_| false);
    }

    fn unbind(&mut self, name: &str, id: EntryId) {
        let hash = self.names.hash(name.as_bytes());
        self.names.remove_hashed(hash, id);
    }

    fn add(&mut self, name: &str, content: String, kind: Kind, created_at: i64) -> Result<EntryId, MemoryError> {
        let name = self.valid_name(name)?;
        self.check_content(&content)?;
        if let Some(entry) = self.bound(name) {
            return Err(MemoryError::DuplicateName { name: name.to_owned(), entry });
        }
        let id = self.next_id;
        let entry = Entry { id, name: name.to_owned(), aliases: Vec::new(), content, kind, created_at };
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&entry))?;
        self.next_id += 1;
        self.index.insert(id, &entry.indexed_parts());
        self.bind(name, id);
        self.entries.insert(entry);
        Ok(id)
    }

    fn rename(&mut self, name: &str, new_name: &str) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        let new_name = self.valid_name(new_name)?;
        let already_bound = match self.bound(new_name) {
            Some(other) if other != id => {
                return Err(MemoryError::DuplicateName { name: new_name.to_owned(), entry: other });
            }
            bound => bound.is_some(),
        };
        let Some(old) = self.entries.get(id) else { return Err(MemoryError::UnknownName(name.to_owned())) };
        if old.name == new_name {
            return Ok(id);
        }
        let mut renamed = old.clone();
        renamed.aliases.retain(|a| a != new_name);
        renamed.name = new_name.to_owned();
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&renamed))?;
        self.index.remove(id, &old.indexed_parts());
        self.index.insert(id, &renamed.indexed_parts());
        let old_name = old.name.clone();
        self.unbind(&old_name, id);
        if !already_bound {
            // Renaming to one of its own aliases keeps that binding.
            self.bind(new_name, id);
        }
        self.entries.insert(renamed);
        Ok(id)
    }

    fn alias(&mut self, name: &str, alias: &str) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        let alias = self.valid_name(alias)?;
        match self.bound(alias) {
            Some(bound) if bound == id => return Ok(id),
            Some(bound) => return Err(MemoryError::AliasAlreadyBound { alias: alias.to_owned(), entry: bound }),
            None => {}
        }
        let Some(old) = self.entries.get(id) else { return Err(MemoryError::UnknownName(name.to_owned())) };
        if old.aliases.len() >= self.config.limits.max_aliases {
            return Err(MemoryError::TooManyAliases { max: self.config.limits.max_aliases });
        }
        let mut aliased = old.clone();
        aliased.aliases.push(alias.to_owned());
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&aliased))?;
        self.bind(alias, id);
        self.entries.insert(aliased);
        Ok(id)
    }

    fn write(&mut self, name: &str, content: String) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        self.check_content(&content)?;
        let Some(old) = self.entries.get(id) else { return Err(MemoryError::UnknownName(name.to_owned())) };
        if old.content == content {
            return Ok(id);
        }
        let mut written = old.clone();
        written.content = content;
        persist(&mut self.backend, &mut self.pending_log_rows, id, Some(&written))?;
        self.index.remove(id, &old.indexed_parts());
        self.index.insert(id, &written.indexed_parts());
        self.entries.insert(written);
        Ok(id)
    }

    fn remove(&mut self, name: &str) -> Result<EntryId, MemoryError> {
        let id = self.resolve(name)?;
        persist(&mut self.backend, &mut self.pending_log_rows, id, None)?;
        if let Some(old) = self.entries.remove(id) {
            self.index.remove(id, &old.indexed_parts());
            for bound in std::iter::once(&old.name).chain(&old.aliases) {
                self.unbind(bound, id);
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

    /// Operations in the log since the last checkpoint (what a cold load replays).
    pub fn pending_log_rows(&self) -> usize {
        self.pending_log_rows
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
        self.bound(name.trim()).ok_or_else(|| MemoryError::UnknownName(name.to_owned()))
    }

    /// The entry named `name` (canonical name or alias).
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.bound(name.trim()).and_then(|id| self.entries.get(id))
    }

    pub fn get_by_id(&self, id: EntryId) -> Option<&Entry> {
        self.entries.get(id)
    }

    /// All entries, by ascending id (creation order). Decodes every entry still encoded
    /// in the checkpoint: for tests and exports, not for the request path.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// A page of the entries, newest first (by id: creation order; a
    /// written entry keeps its place): `limit` after the `offset` newest.
    /// Browsing decodes only the page, unlike [`Self::entries`].
    pub fn newest(&self, offset: usize, limit: usize) -> Vec<&Entry> {
        self.entries.newest(offset, limit)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// The `k` best entries for `query`, best first (equal scores: older entry first).
    /// The store does not filter by relevance: the caller picks `k`.
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit<'_>> {
        let terms = self.index.tokenizer().query_terms(query);
        self.hits(self.index.search_terms(&terms, self.config.bm25, k, &|_| true))
    }

    fn hits(&self, ranked: Vec<(EntryId, f32)>) -> Vec<SearchHit<'_>> {
        ranked
            .into_iter()
            .filter_map(|(id, score)| self.entries.get(id).map(|entry| SearchHit { entry, score }))
            .collect()
    }

    /// [`MemoryStore::search`] among the entries `keep` accepts (e.g. only notes); the
    /// filter runs before the cut-off, so up to `k` accepted entries come back.
    pub fn search_where(&self, query: &str, k: usize, keep: impl Fn(&Entry) -> bool) -> Vec<SearchHit<'_>> {
        let terms = self.index.tokenizer().query_terms(query);
        let accept = |id: EntryId| self.entries.get(id).is_some_and(&keep);
        self.hits(self.index.search_terms(&terms, self.config.bm25, k, &accept))
    }

    /// [`MemoryStore::search`] among the entries of one kind (without decoding the
    /// entries it passes over, unlike [`MemoryStore::search_where`]).
    pub fn search_kind(&self, query: &str, k: usize, kind: Kind) -> Vec<SearchHit<'_>> {
        let terms = self.index.tokenizer().query_terms(query);
        let accept = |id: EntryId| self.entries.kind(id) == Some(kind);
        self.hits(self.index.search_terms(&terms, self.config.bm25, k, &accept))
    }

    /// How the entry `name` scores for `query`, in Lucene's explanation format.
    pub fn explain(&self, query: &str, name: &str) -> Result<Explanation, MemoryError> {
        let id = self.resolve(name)?;
        self.index.explain(query, id, self.config.bm25).ok_or_else(|| MemoryError::UnknownName(name.to_owned()))
    }

    pub fn stats(&self) -> MemoryStats {
        let archives = self.entries.archives();
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

    /// Scores later searches with `params` (they only affect scoring: no re-index).
    pub fn set_bm25(&mut self, params: crate::bm25::Bm25Params) -> Result<(), MemoryError> {
        MemoryConfig { bm25: params, ..self.config }.validate()?;
        self.config.bm25 = params;
        Ok(())
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
        self.entries()
            .flat_map(|e| std::iter::once(e.name.as_str()).chain(e.aliases.iter().map(String::as_str)))
            .collect()
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
    let row = LogRow { entry_id: id, record: entry_record::encode_log_record(entry) };
    backend.commit(&ChangeSet { log_upserts: vec![row], ..ChangeSet::default() })?;
    *pending_log_rows += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::InMemoryBackend;

    const FORMAT_VERSION_FOR_TESTS: u8 = 2;

    fn ranked(store: &MemoryStore<InMemoryBackend>, query: &str) -> Vec<(EntryId, f32)> {
        store.search(query, 1000).iter().map(|h| (h.entry.id, h.score)).collect()
    }

    /// After a cold load the checkpoint's terms are found by binary search, and hashed
    /// only once changes have made enough lookups: results are identical throughout to
    /// a store that was never reloaded.
    #[test]
    fn a_cold_store_finds_terms_before_and_after_hashing_them() {
        let config = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
        let word = |i: usize| format!("w{}", (i * 7919) % 1500);
        let text = |seed: usize| (0..12).map(|j| word(seed * 13 + j)).collect::<Vec<_>>().join(" ");
        let mut reloaded = MemoryStore::open(InMemoryBackend::new(), config).unwrap();
        let mut reference = MemoryStore::open(InMemoryBackend::new(), config).unwrap();
        let add = |i: usize| Op::Add { name: format!("n{i}"), content: text(i), kind: Kind::Note, created_at: 0 };
        for i in 0..300 {
            reloaded.apply(add(i)).unwrap();
            reference.apply(add(i)).unwrap();
        }
        reloaded.checkpoint().unwrap();
        let mut reloaded = MemoryStore::open(reloaded.into_backend(), config).unwrap();
        let sorted = reloaded.index.sorted_only;
        assert!(sorted > 1000, "the checkpoint's terms are searched in place");
        let queries = ["w1 w2 w3", "w700 w1499", "fresh w5", "n7", "w0"];
        let check = |a: &MemoryStore<InMemoryBackend>, b: &MemoryStore<InMemoryBackend>| {
            for q in queries {
                assert_eq!(ranked(a, q), ranked(b, q), "{q}");
            }
        };
        check(&reloaded, &reference);
        let mut step = 0;
        let mut changes_before_hashing = 0;
        while step < 400 {
            let i = step % 300;
            let ops = [
                Op::Write { name: format!("n{i}"), content: format!("{} fresh{step}", text(i + 1000)) },
                Op::Add {
                    name: format!("m{step}"),
                    content: format!("fresh w{step} {}", text(step + 2000)),
                    kind: Kind::Note,
                    created_at: 0,
                },
                Op::Remove { name: format!("n{}", (i * 31) % 300) },
            ];
            for op in ops {
                let a = reloaded.apply(op.clone()).is_ok();
                assert_eq!(a, reference.apply(op).is_ok());
            }
            if reloaded.index.sorted_only > 0 {
                changes_before_hashing += 1;
                check(&reloaded, &reference);
            }
            step += 1;
            if step % 20 == 0 {
                check(&reloaded, &reference);
            }
        }
        assert!(changes_before_hashing > 3, "some changes ran on binary search alone");
        assert_eq!(reloaded.index.sorted_only, 0, "the dictionary was hashed in the end");
        check(&reloaded, &reference);
    }

    fn checkpointed(contents: &[(&str, &str)]) -> Vec<u8> {
        let config = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
        let mut store = MemoryStore::open(InMemoryBackend::new(), config).unwrap();
        for (name, content) in contents {
            store
                .apply(Op::Add { name: (*name).into(), content: (*content).into(), kind: Kind::Note, created_at: 0 })
                .unwrap();
        }
        store.checkpoint().unwrap();
        store.into_backend().load().unwrap().snapshot.concat()
    }

    fn open_bytes(bytes: Vec<u8>) -> Result<MemoryStore<InMemoryBackend>, MemoryError> {
        let mut backend = InMemoryBackend::new();
        backend.commit(&ChangeSet { replace_snapshot: Some(vec![bytes]), ..ChangeSet::default() }).unwrap();
        MemoryStore::open(backend, MemoryConfig::default())
    }

    fn replace_last(bytes: &mut [u8], from: &[u8], to: &[u8]) {
        let at = bytes.windows(from.len()).rposition(|w| w == from).unwrap();
        bytes[at..at + from.len()].copy_from_slice(to);
    }

    /// Version 1 wrote the terms in any order; version 2 sorts them and a load checks it.
    #[test]
    fn version_1_checkpoints_load_and_version_2_term_order_is_checked() {
        let bytes = checkpointed(&[("x1", "qq coffee"), ("x2", "zz tea")]);
        assert_eq!(bytes[4], FORMAT_VERSION_FOR_TESTS);
        let mut v1 = bytes.clone();
        v1[4] = 1;
        let store = open_bytes(v1).unwrap();
        assert_eq!(store.search("coffee", 10)[0].entry.name, "x1");
        assert_eq!(store.search("tea", 10)[0].entry.name, "x2");

        // Swap two terms' texts in the term section: still well formed, but unsorted.
        let mut unsorted = bytes;
        replace_last(&mut unsorted, b"zz", b"##");
        replace_last(&mut unsorted, b"qq", b"zz");
        replace_last(&mut unsorted, b"##", b"qq");
        assert!(matches!(open_bytes(unsorted.clone()), Err(MemoryError::Corrupt(_))));
        unsorted[4] = 1;
        assert!(open_bytes(unsorted).is_ok(), "version 1 allows any order");
    }
}
