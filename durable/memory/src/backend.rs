//! The persistence port: what the store needs from durable storage, and nothing more.
//!
//! The Agent Durable Object implements [`MemoryBackend`] over its SQLite storage; tests
//! use [`InMemoryBackend`]. The store's state is two tables:
//!
//! ```sql
//! -- The checkpoint: one byte stream (entries + index), cut in chunks of ≤ 1 MiB
//! -- so no value comes near the 2 MB row limit.
//! CREATE TABLE IF NOT EXISTS memory_snapshot (seq INTEGER PRIMARY KEY, chunk BLOB NOT NULL);
//! -- Entries changed since the checkpoint: the latest record per entry (or a tombstone).
//! CREATE TABLE IF NOT EXISTS memory_log (entry_id INTEGER PRIMARY KEY, record BLOB NOT NULL);
//! ```
//!
//! [`MemoryBackend::commit`] must apply a [`ChangeSet`] all or nothing (in a Durable
//! Object: inside `transactionSync`); the store only updates its RAM state after a
//! successful commit, so a failed commit leaves both sides as they were.

use std::collections::BTreeMap;

/// A storage failure, as text (the backend's own error type stays on its side).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("memory storage failed: {0}")]
pub struct BackendError(pub String);

/// One row of `memory_log`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRow {
    pub entry_id: u64,
    pub record: Vec<u8>,
}

/// Everything persisted, as [`MemoryBackend::load`] returns it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Persisted {
    /// `memory_snapshot` chunks in ascending `seq` order.
    pub snapshot: Vec<Vec<u8>>,
    /// `memory_log` rows, in any order.
    pub log: Vec<LogRow>,
}

/// One atomic change. Apply in this order: clear the log if `clear_log`; replace the
/// whole snapshot if `replace_snapshot` is set (delete every chunk, insert these with
/// `seq` 0, 1, ...); then upsert `log_upserts` by `entry_id`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeSet {
    pub clear_log: bool,
    pub replace_snapshot: Option<Vec<Vec<u8>>>,
    pub log_upserts: Vec<LogRow>,
}

impl ChangeSet {
    /// Bytes this change writes (for the figures).
    pub fn bytes(&self) -> usize {
        self.replace_snapshot.iter().flatten().map(Vec::len).sum::<usize>()
            + self.log_upserts.iter().map(|r| r.record.len() + 8).sum::<usize>()
    }
}

/// Durable storage for one memory store. Synchronous on purpose: Durable Object SQLite
/// calls are synchronous, and an `await` between check and write would let another
/// request interleave.
pub trait MemoryBackend {
    /// Reads the whole persisted state (empty for a new store).
    fn load(&mut self) -> Result<Persisted, BackendError>;
    /// Applies `changes` atomically: on `Err`, nothing of it may be visible afterwards.
    fn commit(&mut self, changes: &ChangeSet) -> Result<(), BackendError>;
}

/// A backend in RAM: for tests, benchmarks, and as the reference semantics. It can be
/// told to fail upcoming commits, to test that failures change nothing.
#[derive(Clone, Debug, Default)]
pub struct InMemoryBackend {
    snapshot: Vec<Vec<u8>>,
    log: BTreeMap<u64, Vec<u8>>,
    fail_commits: usize,
    /// When set, every commit that writes a checkpoint fails (log-only commits succeed).
    pub fail_checkpoints: bool,
    /// Successful commits so far.
    pub commits: usize,
    /// Bytes written by successful commits so far.
    pub bytes_written: usize,
}

impl InMemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next `count` commits fail without changing anything.
    pub fn fail_next_commits(&mut self, count: usize) {
        self.fail_commits = count;
    }

    /// Bytes stored now (snapshot chunks + log records + 8 bytes per log key).
    pub fn stored_bytes(&self) -> usize {
        self.snapshot.iter().map(Vec::len).sum::<usize>() + self.log.values().map(|r| r.len() + 8).sum::<usize>()
    }

    pub fn snapshot_chunks(&self) -> usize {
        self.snapshot.len()
    }

    pub fn log_rows(&self) -> usize {
        self.log.len()
    }
}

impl MemoryBackend for InMemoryBackend {
    fn load(&mut self) -> Result<Persisted, BackendError> {
        Ok(Persisted {
            snapshot: self.snapshot.clone(),
            log: self.log.iter().map(|(&entry_id, record)| LogRow { entry_id, record: record.clone() }).collect(),
        })
    }

    fn commit(&mut self, changes: &ChangeSet) -> Result<(), BackendError> {
        if self.fail_commits > 0 {
            self.fail_commits -= 1;
            return Err(BackendError("injected failure".into()));
        }
        if self.fail_checkpoints && changes.replace_snapshot.is_some() {
            return Err(BackendError("injected checkpoint failure".into()));
        }
        if changes.clear_log {
            self.log.clear();
        }
        if let Some(chunks) = &changes.replace_snapshot {
            self.snapshot = chunks.clone();
        }
        for row in &changes.log_upserts {
            self.log.insert(row.entry_id, row.record.clone());
        }
        self.commits += 1;
        self.bytes_written += changes.bytes();
        Ok(())
    }
}

/// A mutable reference to a backend is a backend, so a caller can keep ownership.
impl<B: MemoryBackend + ?Sized> MemoryBackend for &mut B {
    fn load(&mut self) -> Result<Persisted, BackendError> {
        (**self).load()
    }

    fn commit(&mut self, changes: &ChangeSet) -> Result<(), BackendError> {
        (**self).commit(changes)
    }
}
