//! Recall evidence in the Agent object's SQLite, per store and entry
//! ([`hearth_memory::evidence`] has the record and its rules).
//!
//! ```sql
//! CREATE TABLE memory_evidence (store TEXT, entry_id INTEGER, hits INTEGER,
//!   n_queries INTEGER, n_days INTEGER, last_score REAL, last_at INTEGER,
//!   queries TEXT, days TEXT, PRIMARY KEY (store, entry_id));
//! ```
//!
//! Recording is on the turn's path (a search, a read, a recall), so it must
//! cost next to nothing: records are kept in RAM once read, and one use of
//! any number of entries is one upsert statement, which updates a known row
//! in place (`INSERT OR REPLACE` deleted and re-inserted it: a new rowid,
//! its index entry moved, more pages written at each commit). An entry
//! seen for the first time since the object started costs one `SELECT` of
//! the entries missing from RAM first. The counts have their own columns,
//! so the nightly sweep asks SQLite for the entries past its gates without
//! reading the rest. A group's store keeps its own rows: evidence never
//! crosses stores.

use crate::ports::{Sql, SqlValue, StorageError};
use hearth_memory::evidence::{decode_set, encode_set, Evidence, Use};
use hearth_memory::promote::Thresholds;
use hearth_memory::EntryId;
use std::collections::HashMap;

pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS memory_evidence (store TEXT NOT NULL, entry_id INTEGER NOT NULL, \
hits INTEGER NOT NULL, n_queries INTEGER NOT NULL, n_days INTEGER NOT NULL, last_score REAL, last_at INTEGER NOT NULL, \
queries TEXT NOT NULL, days TEXT NOT NULL, PRIMARY KEY (store, entry_id))";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "memory_evidence", statements: &[SCHEMA] };

const COLUMNS: &str = "entry_id, hits, last_score, last_at, queries, days";

fn int(v: i64) -> SqlValue {
    SqlValue::Int(v)
}

fn id_value(id: EntryId) -> SqlValue {
    SqlValue::Int(i64::try_from(id).unwrap_or(i64::MAX))
}

/// A row of [`COLUMNS`]; None when malformed (skipped: evidence is a statistic).
fn read_row(row: &[SqlValue]) -> Option<(EntryId, Evidence)> {
    let id = row.first()?.as_i64().and_then(|i| u64::try_from(i).ok())?;
    let hits = u32::try_from(row.get(1)?.as_i64()?.max(0)).unwrap_or(u32::MAX);
    let last_score = match row.get(2)? {
        SqlValue::Real(f) => Some(*f as f32),
        SqlValue::Int(i) => Some(*i as f32),
        _ => None,
    };
    let last_at = row.get(3)?.as_i64()?;
    let queries = decode_set(row.get(4)?.as_str().unwrap_or(""));
    let days = decode_set(row.get(5)?.as_str().unwrap_or(""));
    Some((id, Evidence { hits, last_score, last_at, queries, days }))
}

/// The evidence of the stores an Agent object has used, kept in RAM once read.
#[derive(Default)]
pub struct EvidenceBook {
    stores: HashMap<String, HashMap<EntryId, Evidence>>,
}

impl EvidenceBook {
    /// Records `uses` of entries of `store`: at most one `SELECT` (entries not
    /// in RAM yet) and one write. The RAM copy changes only once it is written.
    pub fn record<S: Sql + ?Sized>(
        &mut self,
        sql: &S,
        store: &str,
        uses: &[(EntryId, Use)],
    ) -> Result<(), StorageError> {
        if uses.is_empty() {
            return Ok(());
        }
        let known = self.stores.entry(store.to_owned()).or_default();
        let mut missing: Vec<EntryId> = uses.iter().map(|(id, _)| *id).filter(|id| !known.contains_key(id)).collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let marks = vec!["?"; missing.len()].join(",");
            let mut params = vec![SqlValue::from(store)];
            params.extend(missing.iter().map(|id| id_value(*id)));
            let rows = sql.exec(
                &format!("SELECT {COLUMNS} FROM memory_evidence WHERE store = ? AND entry_id IN ({marks})"),
                &params,
            )?;
            for (id, e) in rows.iter().filter_map(|r| read_row(r)) {
                known.insert(id, e);
            }
        }
        let mut updated: Vec<(EntryId, Evidence)> = Vec::with_capacity(uses.len());
        for (id, u) in uses {
            let slot = match updated.iter_mut().find(|(i, _)| i == id) {
                Some((_, e)) => e,
                None => {
                    updated.push((*id, known.get(id).cloned().unwrap_or_default()));
                    let last = updated.len() - 1;
                    &mut updated[last].1
                }
            };
            slot.record(u);
        }
        let mut params: Vec<SqlValue> = Vec::with_capacity(updated.len() * 9);
        for (id, e) in &updated {
            params.extend([
                SqlValue::from(store),
                id_value(*id),
                int(i64::from(e.hits)),
                int(e.distinct_queries() as i64),
                int(e.distinct_days() as i64),
                e.last_score.map_or(SqlValue::Null, |s| SqlValue::Real(f64::from(s))),
                int(e.last_at),
                SqlValue::Text(encode_set(&e.queries)),
                SqlValue::Text(encode_set(&e.days)),
            ]);
        }
        let rows = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?)"; updated.len()].join(", ");
        sql.exec(
            &format!(
                "INSERT INTO memory_evidence (store, entry_id, hits, n_queries, n_days, last_score, last_at, queries, \
                 days) VALUES {rows} ON CONFLICT (store, entry_id) DO UPDATE SET hits = excluded.hits, \
                 n_queries = excluded.n_queries, n_days = excluded.n_days, last_score = excluded.last_score, \
                 last_at = excluded.last_at, queries = excluded.queries, days = excluded.days"
            ),
            &params,
        )?;
        known.extend(updated);
        Ok(())
    }

    /// Forgets the evidence of entries (removed from the store).
    pub fn forget<S: Sql + ?Sized>(&mut self, sql: &S, store: &str, ids: &[EntryId]) -> Result<(), StorageError> {
        if ids.is_empty() {
            return Ok(());
        }
        let marks = vec!["?"; ids.len()].join(",");
        let mut params = vec![SqlValue::from(store)];
        params.extend(ids.iter().map(|id| id_value(*id)));
        sql.exec(&format!("DELETE FROM memory_evidence WHERE store = ? AND entry_id IN ({marks})"), &params)?;
        if let Some(known) = self.stores.get_mut(store) {
            for id in ids {
                known.remove(id);
            }
        }
        Ok(())
    }
}

/// The entries of `store` whose counts pass `gates` (read from SQLite: the
/// gates on counts filter there; the score gate is the caller's).
pub fn passing<S: Sql + ?Sized>(
    sql: &S,
    store: &str,
    gates: &Thresholds,
) -> Result<Vec<(EntryId, Evidence)>, StorageError> {
    // An agent that never used its memory has no table yet (the hub makes it
    // when it opens): that is no evidence, not an error.
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec(
        &format!(
            "SELECT {COLUMNS} FROM memory_evidence WHERE store = ? AND hits >= ? AND n_queries >= ? AND n_days >= ? \
             AND COALESCE(last_score, 0) >= ?"
        ),
        &[
            store.into(),
            int(i64::from(gates.min_hits)),
            int(gates.min_queries as i64),
            int(gates.min_days as i64),
            SqlValue::Real(f64::from(gates.min_score)),
        ],
    )?;
    Ok(rows.iter().filter_map(|r| read_row(r)).collect())
}

/// The most used entries of `store`, most hits first (for the admin view).
pub fn top<S: Sql + ?Sized>(sql: &S, store: &str, limit: usize) -> Result<Vec<(EntryId, Evidence)>, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec(
        &format!(
            "SELECT {COLUMNS} FROM memory_evidence WHERE store = ? ORDER BY hits DESC, last_at DESC, entry_id LIMIT ?"
        ),
        &[store.into(), int(limit.min(1000) as i64)],
    )?;
    Ok(rows.iter().filter_map(|r| read_row(r)).collect())
}
