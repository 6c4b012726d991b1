//! The Agent object's scheduling tables: claimed runs, a little state, and
//! the usage ledger of heartbeat and job runs.
//!
//! A run's claim goes through states (column `state`):
//! `pending` (claimed, its message in `payload`, not yet confirmed in the
//! Session) → `queued` (the Session has it; usage not yet recorded) → `done`
//! (one row in `sched_usage`). `failed`: a pending run given up after
//! [`PENDING_GIVE_UP_MS`] (logged and listed by the admin route).

use super::runs::HeartbeatOutcome;
use crate::ports::{Sql, SqlValue, StorageError};
use r2_layout::Usage;

/// Version 1: claims and state (the first release).
const SCHEMA_V1: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS sched_claims (
        slot_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        slot_ms INTEGER NOT NULL,
        claimed_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sched_claims_kind ON sched_claims(kind, name, slot_ms)",
    "CREATE TABLE IF NOT EXISTS sched_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
];

/// Version 2: claim states and messages, the usage ledger. Claims of version
/// 1 ran before the ledger existed: they are `done`, and their tokens are
/// counted with the first recorded run of their session (see `ledger`).
const MIGRATE_V2: &[&str] = &[
    "ALTER TABLE sched_claims ADD COLUMN state TEXT NOT NULL DEFAULT 'done'",
    "ALTER TABLE sched_claims ADD COLUMN payload TEXT",
    "CREATE INDEX IF NOT EXISTS sched_claims_state ON sched_claims(state, slot_ms)",
    "CREATE TABLE IF NOT EXISTS sched_usage (
        slot_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        slot_ms INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        input INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cache_read INTEGER NOT NULL,
        cache_write INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sched_usage_seen (
        session_key TEXT PRIMARY KEY,
        input INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cache_read INTEGER NOT NULL,
        cache_write INTEGER NOT NULL)",
];

const SCHEMA_VERSION: i64 = 2;

/// Every statement of both versions: what the set-up's version is hashed
/// from ([`crate::storage::ensure_with`]); [`ScheduleStore::init`] runs them.
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "schedule", statements: ALL };
const ALL: &[&str] = &[
    SCHEMA_V1[0],
    SCHEMA_V1[1],
    SCHEMA_V1[2],
    MIGRATE_V2[0],
    MIGRATE_V2[1],
    MIGRATE_V2[2],
    MIGRATE_V2[3],
    MIGRATE_V2[4],
];
const _: () = assert!(ALL.len() == SCHEMA_V1.len() + MIGRATE_V2.len(), "ALL lists every statement");

/// Claims are kept this long (by slot time): far longer than any retry or
/// redelivery, short enough to keep the table small. The usage ledger is
/// not pruned (one small row per run).
pub const CLAIM_RETENTION_MS: i64 = 30 * 24 * 3_600_000;

/// A run whose message could not be handed to its Session for this long is
/// given up (well inside the Session's 7-day dedupe memory, so a late
/// success is still never run twice).
pub const PENDING_GIVE_UP_MS: i64 = 24 * 3_600_000;

/// A claimed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub slot_id: String,
    /// `heartbeat` or `job`.
    pub kind: String,
    /// `heartbeat`, or the job's name.
    pub name: String,
    pub slot_ms: i64,
    /// The queued message (JSON), kept while the run is `pending`.
    pub payload: Option<String>,
}

impl Claim {
    /// The claim of a run whose message is `inbound` (its dedupe key is the slot id).
    pub fn of_run(
        kind: &str,
        name: &str,
        slot_ms: i64,
        inbound: &crate::inbound::Inbound,
    ) -> Result<Self, StorageError> {
        Ok(Claim {
            slot_id: inbound.dedupe_key.clone(),
            kind: kind.into(),
            name: name.into(),
            slot_ms,
            payload: Some(serde_json::to_string(inbound).map_err(|e| StorageError(e.to_string()))?),
        })
    }
}

/// Tokens of a kind/name in the ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerTotal {
    pub kind: String,
    pub name: String,
    pub runs: i64,
    pub usage: Usage,
}

pub struct ScheduleStore<'a, S: Sql> {
    sql: &'a S,
}

fn int(rows: &[Vec<SqlValue>]) -> Option<i64> {
    rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64)
}

fn text(row: &mut [SqlValue], i: usize) -> Option<String> {
    std::mem::replace(row.get_mut(i)?, SqlValue::Null).into_string()
}

fn tokens(row: &[SqlValue], from: usize) -> Usage {
    let n = |i: usize| row.get(from + i).and_then(SqlValue::as_i64).unwrap_or(0).max(0) as u64;
    r2_layout::Usage::new(n(0), n(1), n(2), n(3))
}

fn tok(v: u64) -> SqlValue {
    SqlValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

const CLAIM_COLUMNS: &str = "slot_id, kind, name, slot_ms, payload";

fn claims_of(rows: Vec<Vec<SqlValue>>) -> Vec<Claim> {
    rows.into_iter()
        .filter_map(|mut r| {
            Some(Claim {
                slot_id: text(&mut r, 0)?,
                kind: text(&mut r, 1)?,
                name: text(&mut r, 2)?,
                slot_ms: r.get(3).and_then(SqlValue::as_i64)?,
                payload: text(&mut r, 4),
            })
        })
        .collect()
}

impl<'a, S: Sql> ScheduleStore<'a, S> {
    pub fn new(sql: &'a S) -> Self {
        ScheduleStore { sql }
    }

    /// Creates the tables and brings an older object's tables up to date
    /// (once per object).
    pub fn init(&self) -> Result<(), StorageError> {
        crate::storage::ensure_with(self.sql, &TABLES, |_| self.create())
    }

    fn create(&self) -> Result<(), StorageError> {
        for stmt in SCHEMA_V1 {
            self.sql.exec(stmt, &[])?;
        }
        if self.get_i64("schema_version")?.unwrap_or(1) < SCHEMA_VERSION {
            let mut stmts: Vec<(String, Vec<SqlValue>)> = MIGRATE_V2.iter().map(|s| (s.to_string(), vec![])).collect();
            stmts.push((
                "INSERT INTO sched_state (key, value) VALUES ('schema_version', ?)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value"
                    .into(),
                vec![SCHEMA_VERSION.to_string().into()],
            ));
            self.sql.exec_atomic(stmts)?;
        }
        Ok(())
    }

    /// Records the run as taken, `pending` with its message. `false` when it
    /// already was: the caller must not run it again.
    pub fn claim(&self, c: &Claim, now: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "INSERT INTO sched_claims (slot_id, kind, name, slot_ms, claimed_at, state, payload)
             VALUES (?, ?, ?, ?, ?, 'pending', ?)
             ON CONFLICT(slot_id) DO NOTHING RETURNING slot_id",
            &[
                c.slot_id.as_str().into(),
                c.kind.as_str().into(),
                c.name.as_str().into(),
                c.slot_ms.into(),
                now.into(),
                c.payload.clone().map_or(SqlValue::Null, SqlValue::Text),
            ],
        )?;
        Ok(!rows.is_empty())
    }

    /// Takes a run the Agent object does itself (dreaming's nightly sweep),
    /// as `running`, with no message. `false` when it is taken already,
    /// unless it was left `running` since before `stale_before` (the object
    /// stopped mid-run): then it is taken again, once per such stop.
    pub fn claim_own(&self, c: &Claim, now: i64, stale_before: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "INSERT INTO sched_claims (slot_id, kind, name, slot_ms, claimed_at, state, payload)
             VALUES (?, ?, ?, ?, ?, 'running', NULL)
             ON CONFLICT(slot_id) DO UPDATE SET claimed_at = excluded.claimed_at
             WHERE sched_claims.state = 'running' AND sched_claims.claimed_at < ? RETURNING slot_id",
            &[
                c.slot_id.as_str().into(),
                c.kind.as_str().into(),
                c.name.as_str().into(),
                c.slot_ms.into(),
                now.into(),
                stale_before.into(),
            ],
        )?;
        Ok(!rows.is_empty())
    }

    /// A run taken with [`Self::claim_own`] is over; `usage` (if it made an
    /// LLM call) goes into the ledger under its kind and name.
    pub fn finish_own(&self, c: &Claim, usage: Option<&Usage>, now: i64) -> Result<(), StorageError> {
        self.end_own(c, "done", usage, now)
    }

    /// A run taken with [`Self::claim_own`] failed after spending `usage`:
    /// `failed` (listed by the admin route), not taken again, its usage in
    /// the ledger like a finished run's.
    pub fn fail_own(&self, c: &Claim, usage: Option<&Usage>, now: i64) -> Result<(), StorageError> {
        self.end_own(c, "failed", usage, now)
    }

    fn end_own(&self, c: &Claim, state: &str, usage: Option<&Usage>, now: i64) -> Result<(), StorageError> {
        let mut stmts: Vec<(String, Vec<SqlValue>)> = vec![(
            "UPDATE sched_claims SET state = ? WHERE slot_id = ?".into(),
            vec![state.into(), c.slot_id.as_str().into()],
        )];
        if let Some(u) = usage {
            stmts.push((
                "INSERT INTO sched_usage (slot_id, kind, name, slot_ms, recorded_at, input, output, cache_read, cache_write)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(slot_id) DO UPDATE SET input = input + excluded.input,
                   output = output + excluded.output, cache_read = cache_read + excluded.cache_read,
                   cache_write = cache_write + excluded.cache_write"
                    .into(),
                vec![
                    c.slot_id.as_str().into(),
                    c.kind.as_str().into(),
                    c.name.as_str().into(),
                    c.slot_ms.into(),
                    now.into(),
                    tok(u.input),
                    tok(u.output),
                    tok(u.cache_read),
                    tok(u.cache_write),
                ],
            ));
        }
        self.sql.exec_atomic(stmts)
    }

    /// The Session has the run's message: it will run it (once, by its
    /// dedupe key). The message is no longer needed here.
    pub fn mark_queued(&self, slot_id: &str) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE sched_claims SET state = 'queued', payload = NULL WHERE slot_id = ? AND state = 'pending'",
            &[slot_id.into()],
        )?;
        Ok(())
    }

    /// Gives a slot back (the heartbeat session was busy: a later tick of the
    /// same slot may run it).
    pub fn release(&self, slot_id: &str) -> Result<(), StorageError> {
        self.sql.exec("DELETE FROM sched_claims WHERE slot_id = ?", &[slot_id.into()])?;
        Ok(())
    }

    /// Runs claimed whose message may not have reached their Session, oldest first.
    pub fn pending(&self) -> Result<Vec<Claim>, StorageError> {
        let rows = self.sql.exec(
            &format!("SELECT {CLAIM_COLUMNS} FROM sched_claims WHERE state = 'pending' ORDER BY slot_ms, slot_id"),
            &[],
        )?;
        Ok(claims_of(rows))
    }

    /// Runs queued whose usage is not in the ledger yet, oldest first.
    pub fn queued(&self) -> Result<Vec<Claim>, StorageError> {
        let rows = self.sql.exec(
            &format!("SELECT {CLAIM_COLUMNS} FROM sched_claims WHERE state = 'queued' ORDER BY slot_ms, slot_id"),
            &[],
        )?;
        Ok(claims_of(rows))
    }

    /// Gives up a pending run (its message stays for the admin to see).
    pub fn mark_failed(&self, slot_id: &str) -> Result<(), StorageError> {
        self.sql.exec("UPDATE sched_claims SET state = 'failed' WHERE slot_id = ?", &[slot_id.into()])?;
        Ok(())
    }

    /// Slot ids of runs given up, newest first.
    pub fn failed(&self) -> Result<Vec<String>, StorageError> {
        let rows = self
            .sql
            .exec("SELECT slot_id FROM sched_claims WHERE state = 'failed' ORDER BY slot_ms DESC LIMIT 50", &[])?;
        Ok(rows.into_iter().filter_map(|mut r| text(&mut r, 0)).collect())
    }

    /// Start of the last heartbeat slot that was claimed.
    pub fn last_heartbeat_slot(&self) -> Result<Option<i64>, StorageError> {
        Ok(int(&self.sql.exec("SELECT MAX(slot_ms) FROM sched_claims WHERE kind = 'heartbeat'", &[])?))
    }

    /// The last claimed slot of each job, `(name, slot_ms)`.
    pub fn last_job_slots(&self) -> Result<Vec<(String, i64)>, StorageError> {
        let rows = self
            .sql
            .exec("SELECT name, MAX(slot_ms) FROM sched_claims WHERE kind = 'job' GROUP BY name ORDER BY name", &[])?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                let slot = r.get(1).and_then(SqlValue::as_i64)?;
                Some((text(&mut r, 0)?, slot))
            })
            .collect())
    }

    /// The Session's usage counters when its runs were last recorded.
    pub fn usage_seen(&self, session_key: &str) -> Result<Option<Usage>, StorageError> {
        let rows = self.sql.exec(
            "SELECT input, output, cache_read, cache_write FROM sched_usage_seen WHERE session_key = ?",
            &[session_key.into()],
        )?;
        Ok(rows.first().map(|r| tokens(r, 0)))
    }

    /// Records the usage of finished runs in one step: a ledger row per run
    /// (`usage` on the newest, see `ledger`), the Session's counters, the
    /// claims `done`.
    pub fn record_usage(
        &self,
        runs: &[Claim],
        usage: &Usage,
        session_key: &str,
        seen: &Usage,
        now: i64,
    ) -> Result<(), StorageError> {
        let mut stmts: Vec<(String, Vec<SqlValue>)> = Vec::with_capacity(runs.len() * 2 + 1);
        let zero = Usage::default();
        for (i, run) in runs.iter().enumerate() {
            let u = if i + 1 == runs.len() { usage } else { &zero };
            stmts.push((
                "INSERT INTO sched_usage (slot_id, kind, name, slot_ms, recorded_at, input, output, cache_read, cache_write)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(slot_id) DO NOTHING"
                    .into(),
                vec![
                    run.slot_id.as_str().into(),
                    run.kind.as_str().into(),
                    run.name.as_str().into(),
                    run.slot_ms.into(),
                    now.into(),
                    tok(u.input),
                    tok(u.output),
                    tok(u.cache_read),
                    tok(u.cache_write),
                ],
            ));
            stmts.push((
                "UPDATE sched_claims SET state = 'done' WHERE slot_id = ?".into(),
                vec![run.slot_id.as_str().into()],
            ));
        }
        stmts.push((
            "INSERT INTO sched_usage_seen (session_key, input, output, cache_read, cache_write) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT(session_key) DO UPDATE SET input = excluded.input, output = excluded.output,
               cache_read = excluded.cache_read, cache_write = excluded.cache_write"
                .into(),
            vec![session_key.into(), tok(seen.input), tok(seen.output), tok(seen.cache_read), tok(seen.cache_write)],
        ));
        self.sql.exec_atomic(stmts)
    }

    /// Ledger totals per kind and name (every run ever recorded).
    pub fn ledger_totals(&self) -> Result<Vec<LedgerTotal>, StorageError> {
        let rows = self.sql.exec(
            "SELECT kind, name, COUNT(*), SUM(input), SUM(output), SUM(cache_read), SUM(cache_write)
             FROM sched_usage GROUP BY kind, name ORDER BY kind, name",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                Some(LedgerTotal {
                    kind: text(&mut r, 0)?,
                    name: text(&mut r, 1)?,
                    runs: r.get(2).and_then(SqlValue::as_i64).unwrap_or(0),
                    usage: tokens(&r, 3),
                })
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

    pub fn get_i64(&self, key: &str) -> Result<Option<i64>, StorageError> {
        Ok(self.get(key)?.and_then(|v| v.parse().ok()))
    }

    /// A JSON value kept in the state table; `None` when absent or unreadable.
    pub fn get_json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        Ok(self.get(key)?.and_then(|v| hearth_json::from_slice(v.as_bytes()).ok()))
    }

    pub fn set_json<T: serde::Serialize>(&self, key: &str, value: &T) -> Result<(), StorageError> {
        let v = serde_json::to_string(value).map_err(|e| StorageError(e.to_string()))?;
        self.set(key, &v)
    }

    /// The latest tick time whose jobs were evaluated.
    pub fn last_tick(&self) -> Result<Option<i64>, StorageError> {
        self.get_i64("last_tick")
    }

    /// The latest trigger time handled.
    pub fn last_processed_tick(&self) -> Result<Option<i64>, StorageError> {
        self.get_i64("last_processed_tick")
    }

    /// Moves the job window and the last handled tick forward (never back:
    /// an old, late trigger must not reopen slots or hide newer state).
    pub fn advance_tick(&self, now: i64) -> Result<(), StorageError> {
        if self.last_tick()?.is_none_or(|t| now > t) {
            self.set("last_tick", &now.to_string())?;
        }
        if self.last_processed_tick()?.is_none_or(|t| now > t) {
            self.set("last_processed_tick", &now.to_string())?;
        }
        Ok(())
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

    /// The heartbeat's outcome at tick `now`; an older tick never replaces a newer one.
    pub fn set_heartbeat_outcome(&self, now: i64, outcome: &HeartbeatOutcome) -> Result<(), StorageError> {
        let last: Option<serde_json::Value> = self.get_json("heartbeat_last")?;
        if last.as_ref().and_then(|v| v["tick"].as_i64()).is_some_and(|t| t > now) {
            return Ok(());
        }
        let v = serde_json::json!({"tick": now, "outcome": outcome.label()});
        self.set("heartbeat_last", &v.to_string())?;
        if *outcome == HeartbeatOutcome::Queued {
            self.set("heartbeat_last_run", &now.to_string())?;
        }
        Ok(())
    }

    /// A list of messages kept under `key` (job errors, settings warnings).
    pub fn notes(&self, key: &str) -> Result<Vec<String>, StorageError> {
        Ok(self.get_json(key)?.unwrap_or_default())
    }

    /// Stores the list; `true` when it changed (worth a log line).
    pub fn set_notes(&self, key: &str, notes: &[String]) -> Result<bool, StorageError> {
        if self.notes(key)? == notes {
            return Ok(false);
        }
        self.set_json(key, &notes)?;
        Ok(true)
    }

    /// Drops claims of slots older than [`CLAIM_RETENTION_MS`].
    pub fn prune(&self, now: i64) -> Result<(), StorageError> {
        self.sql
            .exec("DELETE FROM sched_claims WHERE slot_ms < ?", &[now.saturating_sub(CLAIM_RETENTION_MS).into()])?;
        Ok(())
    }
}
