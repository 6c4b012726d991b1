//! [`MemoryBackend`] over a Durable Object's SQLite (the [`Sql`] port).
//!
//! Several stores share one database (one per scope: `main`, each group, each
//! DM peer), so the crate's two tables gain a `store` column:
//!
//! ```sql
//! CREATE TABLE memory_snapshot (store TEXT, seq INTEGER, chunk BLOB, PRIMARY KEY (store, seq));
//! CREATE TABLE memory_log (store TEXT, entry_id INTEGER, record BLOB, PRIMARY KEY (store, entry_id));
//! ```
//!
//! A [`ChangeSet`] becomes one [`Sql::exec_atomic`] call: all its statements or
//! none (in the Agent object, inside `transactionSync`). Snapshot chunks are
//! ≤ 1 MiB and log records ≤ ~1.5 MiB, under the 2 MB row limit.

use crate::ports::{Sql, SqlValue, StorageError};
use hearth_memory::{BackendError, ChangeSet, LogRow, MemoryBackend, Persisted};
use std::rc::Rc;

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS memory_snapshot (store TEXT NOT NULL, seq INTEGER NOT NULL, chunk BLOB NOT NULL, PRIMARY KEY (store, seq))",
    "CREATE TABLE IF NOT EXISTS memory_log (store TEXT NOT NULL, entry_id INTEGER NOT NULL, record BLOB NOT NULL, PRIMARY KEY (store, entry_id))",
    // Recalls that brought notes into a turn, per store and UTC day (for my_stats).
    "CREATE TABLE IF NOT EXISTS memory_recalls (store TEXT NOT NULL, day INTEGER NOT NULL, events INTEGER NOT NULL, PRIMARY KEY (store, day))",
    // Recall evidence per entry (see `super::evidence`).
    super::evidence::SCHEMA,
];
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "memory", statements: SCHEMA };

const DAY_MS: i64 = 86_400_000;
/// Days of recall counts kept (my_stats reports the last 7).
pub const RECALL_DAYS_KEPT: i64 = 30;

/// Counts one recall event of `store` at `now_ms`.
pub fn count_recall<S: Sql + ?Sized>(sql: &S, store: &str, now_ms: i64) -> Result<(), StorageError> {
    sql.exec(
        "INSERT INTO memory_recalls (store, day, events) VALUES (?, ?, 1) ON CONFLICT(store, day) DO UPDATE SET events = events + 1",
        &[store.into(), SqlValue::Int(now_ms.div_euclid(DAY_MS))],
    )
    .map(|_| ())
}

/// Recall events of `store` in the `days` UTC days up to `now_ms` (today included).
pub fn recalls_in_last_days<S: Sql + ?Sized>(
    sql: &S,
    store: &str,
    now_ms: i64,
    days: i64,
) -> Result<u64, StorageError> {
    let since = now_ms.div_euclid(DAY_MS) - days + 1;
    let rows = sql.exec(
        "SELECT COALESCE(SUM(events), 0) FROM memory_recalls WHERE store = ? AND day >= ?",
        &[store.into(), SqlValue::Int(since)],
    )?;
    Ok(rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).unwrap_or(0).max(0) as u64)
}

/// Forgets recall counts older than [`RECALL_DAYS_KEPT`].
pub fn prune_recalls<S: Sql + ?Sized>(sql: &S, now_ms: i64) -> Result<(), StorageError> {
    let before = now_ms.div_euclid(DAY_MS) - RECALL_DAYS_KEPT;
    sql.exec("DELETE FROM memory_recalls WHERE day < ?", &[SqlValue::Int(before)]).map(|_| ())
}

/// Creates the tables (idempotent).
pub fn init_schema<S: Sql + ?Sized>(sql: &S) -> Result<(), BackendError> {
    crate::storage::ensure(sql, &TABLES).map_err(|e| BackendError(e.0))
}

/// One named store's rows in the shared database.
pub struct SqlMemoryBackend<S: Sql> {
    sql: Rc<S>,
    store: String,
}

impl<S: Sql> SqlMemoryBackend<S> {
    /// The caller has run [`init_schema`] on this database.
    pub fn new(sql: Rc<S>, store: &str) -> Self {
        SqlMemoryBackend { sql, store: store.to_owned() }
    }

    pub fn store_name(&self) -> &str {
        &self.store
    }
}

fn blob(v: SqlValue) -> Option<Vec<u8>> {
    match v {
        SqlValue::Blob(b) => Some(b),
        SqlValue::Text(t) => Some(t.into_bytes()),
        SqlValue::Null => Some(Vec::new()),
        _ => None,
    }
}

impl<S: Sql> MemoryBackend for SqlMemoryBackend<S> {
    fn load(&mut self) -> Result<Persisted, BackendError> {
        let err = |e: crate::ports::StorageError| BackendError(e.0);
        let store = SqlValue::from(self.store.as_str());
        let rows = self
            .sql
            .exec("SELECT seq, chunk FROM memory_snapshot WHERE store = ? ORDER BY seq", std::slice::from_ref(&store))
            .map_err(err)?;
        let mut snapshot = Vec::with_capacity(rows.len());
        for (expected, row) in rows.into_iter().enumerate() {
            let mut cols = row.into_iter();
            let seq = cols.next().and_then(|v| v.as_i64());
            if seq != Some(expected as i64) {
                return Err(BackendError(format!("memory {:?}: checkpoint chunk {expected} is missing", self.store)));
            }
            let chunk =
                cols.next().and_then(blob).ok_or_else(|| BackendError("checkpoint chunk is not a blob".into()))?;
            snapshot.push(chunk);
        }
        let rows = self
            .sql
            .exec("SELECT entry_id, record FROM memory_log WHERE store = ?", std::slice::from_ref(&store))
            .map_err(err)?;
        let mut log = Vec::with_capacity(rows.len());
        for row in rows {
            let mut cols = row.into_iter();
            let entry_id = cols.next().and_then(|v| v.as_i64()).filter(|i| *i >= 0);
            let record = cols.next().and_then(blob);
            match (entry_id, record) {
                (Some(id), Some(record)) => log.push(LogRow { entry_id: id as u64, record }),
                _ => return Err(BackendError("memory log row is malformed".into())),
            }
        }
        Ok(Persisted { snapshot, log })
    }

    fn commit(&mut self, changes: &ChangeSet) -> Result<(), BackendError> {
        let store = || SqlValue::from(self.store.as_str());
        let mut statements: Vec<(String, Vec<SqlValue>)> = Vec::new();
        if changes.clear_log {
            statements.push(("DELETE FROM memory_log WHERE store = ?".into(), vec![store()]));
        }
        if let Some(chunks) = &changes.replace_snapshot {
            statements.push(("DELETE FROM memory_snapshot WHERE store = ?".into(), vec![store()]));
            for (seq, chunk) in chunks.iter().enumerate() {
                statements.push((
                    "INSERT INTO memory_snapshot (store, seq, chunk) VALUES (?, ?, ?)".into(),
                    vec![store(), SqlValue::Int(seq as i64), SqlValue::Blob(chunk.clone())],
                ));
            }
        }
        for row in &changes.log_upserts {
            let id = i64::try_from(row.entry_id).map_err(|_| BackendError("entry id out of range".into()))?;
            statements.push((
                "INSERT OR REPLACE INTO memory_log (store, entry_id, record) VALUES (?, ?, ?)".into(),
                vec![store(), SqlValue::Int(id), SqlValue::Blob(row.record.clone())],
            ));
        }
        self.sql.exec_atomic(statements).map_err(|e| BackendError(e.0))
    }
}
