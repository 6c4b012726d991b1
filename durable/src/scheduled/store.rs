//! The Agent object's scheduling tables: claimed slots and a little state.

use super::HeartbeatOutcome;
use crate::ports::{Sql, SqlValue, StorageError};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS sched_claims (
        slot_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        slot_ms INTEGER NOT NULL,
        claimed_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sched_claims_kind ON sched_claims(kind, name, slot_ms)",
    "CREATE TABLE IF NOT EXISTS sched_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
];

/// Claims are kept this long (by slot time): far longer than any retry or
/// redelivery, short enough to keep the table small.
pub const CLAIM_RETENTION_MS: i64 = 30 * 24 * 3_600_000;

pub struct ScheduleStore<'a, S: Sql> {
    sql: &'a S,
}

fn int(rows: &[Vec<SqlValue>]) -> Option<i64> {
    rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64)
}

impl<'a, S: Sql> ScheduleStore<'a, S> {
    pub fn new(sql: &'a S) -> Self {
        ScheduleStore { sql }
    }

    pub fn init(&self) -> Result<(), StorageError> {
        for stmt in SCHEMA {
            self.sql.exec(stmt, &[])?;
        }
        Ok(())
    }

    /// Records the slot as taken. `false` when it already was: the caller
    /// must not run it again.
    pub fn claim(&self, slot_id: &str, kind: &str, name: &str, slot_ms: i64, now: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "INSERT INTO sched_claims (slot_id, kind, name, slot_ms, claimed_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT(slot_id) DO NOTHING RETURNING slot_id",
            &[slot_id.into(), kind.into(), name.into(), slot_ms.into(), now.into()],
        )?;
        Ok(!rows.is_empty())
    }

    /// Gives a slot back (its message could not be queued).
    pub fn release(&self, slot_id: &str) -> Result<(), StorageError> {
        self.sql.exec("DELETE FROM sched_claims WHERE slot_id = ?", &[slot_id.into()])?;
        Ok(())
    }

    /// Start of the last heartbeat slot that was claimed.
    pub fn last_heartbeat_slot(&self) -> Result<Option<i64>, StorageError> {
        Ok(int(&self.sql.exec("SELECT MAX(slot_ms) FROM sched_claims WHERE kind = 'heartbeat'", &[])?))
    }

    /// The last claimed slot of each job, `(name, slot_ms)`.
    pub fn last_job_slots(&self) -> Result<Vec<(String, i64)>, StorageError> {
        let rows = self.sql.exec(
            "SELECT name, MAX(slot_ms) FROM sched_claims WHERE kind = 'job' GROUP BY name ORDER BY name",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                let slot = r.get(1).and_then(SqlValue::as_i64)?;
                let name = std::mem::replace(r.get_mut(0)?, SqlValue::Null).into_string()?;
                Some((name, slot))
            })
            .collect())
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
        let mut rows = self.sql.exec("SELECT value FROM sched_state WHERE key = ?", &[key.into()])?;
        Ok(rows.pop().and_then(|mut r| r.pop()).and_then(SqlValue::into_string))
    }

    pub fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        self.sql.exec(
            "INSERT INTO sched_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            &[key.into(), value.into()],
        )?;
        Ok(())
    }

    pub fn delete(&self, key: &str) -> Result<(), StorageError> {
        self.sql.exec("DELETE FROM sched_state WHERE key = ?", &[key.into()])?;
        Ok(())
    }

    fn get_i64(&self, key: &str) -> Result<Option<i64>, StorageError> {
        Ok(self.get(key)?.and_then(|v| v.parse().ok()))
    }

    /// The latest tick time whose jobs were evaluated.
    pub fn last_tick(&self) -> Result<Option<i64>, StorageError> {
        self.get_i64("last_tick")
    }

    /// Moves the job window forward (never back: an old, late trigger must
    /// not reopen slots) and remembers the tick just handled.
    pub fn advance_tick(&self, now: i64) -> Result<(), StorageError> {
        if self.last_tick()?.is_none_or(|t| now > t) {
            self.set("last_tick", &now.to_string())?;
        }
        self.set("last_processed_tick", &now.to_string())
    }

    /// Remembers a trigger's time for the alarm; keeps the latest.
    pub fn add_pending_tick(&self, t: i64) -> Result<(), StorageError> {
        if self.get_i64("pending_tick")?.is_none_or(|p| t > p) {
            self.set("pending_tick", &t.to_string())?;
        }
        Ok(())
    }

    pub fn pending_tick(&self) -> Result<Option<i64>, StorageError> {
        self.get_i64("pending_tick")
    }

    /// Clears the pending tick if it is still `t` (a newer one stays).
    pub fn done_pending_tick(&self, t: i64) -> Result<(), StorageError> {
        if self.get_i64("pending_tick")? == Some(t) {
            self.delete("pending_tick")?;
        }
        Ok(())
    }

    pub fn set_heartbeat_outcome(&self, now: i64, outcome: &HeartbeatOutcome) -> Result<(), StorageError> {
        let v = serde_json::json!({"tick": now, "outcome": outcome.label()});
        self.set("heartbeat_last", &v.to_string())?;
        if *outcome == HeartbeatOutcome::Queued {
            self.set("heartbeat_last_run", &now.to_string())?;
        }
        Ok(())
    }

    pub fn job_errors(&self) -> Result<Vec<String>, StorageError> {
        Ok(self.get("job_errors")?.and_then(|v| serde_json::from_str(&v).ok()).unwrap_or_default())
    }

    pub fn set_job_errors(&self, errors: &[String]) -> Result<(), StorageError> {
        self.set("job_errors", &serde_json::to_string(errors).unwrap_or_else(|_| "[]".into()))
    }

    /// Drops claims of slots older than [`CLAIM_RETENTION_MS`].
    pub fn prune(&self, now: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "DELETE FROM sched_claims WHERE slot_ms < ?",
            &[now.saturating_sub(CLAIM_RETENTION_MS).into()],
        )?;
        Ok(())
    }
}
