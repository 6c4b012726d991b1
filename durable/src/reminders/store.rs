//! The Agent object's reminder tables, and every statement that touches them.
//!
//! `reminders`: one row per reminder, `pending` until it is `done` (its last
//! time fired) or `cancelled`; `next_at` is when it fires next. The partial
//! index on `next_at` of pending rows makes "what is due" and "when is the
//! next one" a lookup, however many are pending.
//!
//! `reminder_fires`: one row per time a reminder fires (`reminder:{id}:{slot}`,
//! primary key), claimed in the same step that moves the reminder on, with
//! the post it makes. `pending` until its session took the post (`posted`),
//! or given up (`failed`). A fire claimed twice is one row: the slot id is
//! the post's id too, and the session ignores a post it has seen.

use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::reminders::Reminder;
use crate::protocol::session::{PostMode, PostRequest};
use crate::storage::{col_i64, col_string, Schema};

const TABLES: Schema = Schema { name: "reminders", statements: SCHEMA };

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS reminders (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_key TEXT NOT NULL,
        target TEXT NOT NULL,
        chat TEXT NOT NULL,
        text TEXT NOT NULL,
        mode TEXT NOT NULL,
        every_ms INTEGER,
        cron TEXT,
        timezone TEXT NOT NULL,
        next_at INTEGER,
        until_at INTEGER,
        created_at INTEGER NOT NULL,
        fired INTEGER NOT NULL DEFAULT 0,
        last_fired_at INTEGER,
        state TEXT NOT NULL DEFAULT 'pending',
        changed_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS reminders_due ON reminders(next_at) WHERE state = 'pending'",
    "CREATE INDEX IF NOT EXISTS reminders_chat ON reminders(session_key, state, next_at)",
    "CREATE INDEX IF NOT EXISTS reminders_finished ON reminders(changed_at) WHERE state != 'pending'",
    "CREATE TABLE IF NOT EXISTS reminder_fires (
        id TEXT PRIMARY KEY,
        slot_ms INTEGER NOT NULL,
        request TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        next_try INTEGER NOT NULL,
        last_error TEXT,
        at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS reminder_fires_open ON reminder_fires(next_try) WHERE state = 'pending'",
    "CREATE INDEX IF NOT EXISTS reminder_fires_old ON reminder_fires(at) WHERE state != 'pending'",
];

/// Reminders done or cancelled stay listed (the admin API) this long.
pub const KEEP_FINISHED_MS: i64 = 7 * 24 * 3_600_000;
/// Fires are remembered this long (well past any retry).
pub const KEEP_FIRES_MS: i64 = 30 * 24 * 3_600_000;

/// A reminder that is due, with what its post needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub reminder: Reminder,
    /// The chat's target (JSON, as stored).
    pub target: String,
    /// The time it is due now.
    pub slot_ms: i64,
}

/// A fire whose post has not reached its session yet.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenFire {
    pub id: String,
    pub slot_ms: i64,
    pub request: PostRequest,
    pub attempts: i64,
}

const COLUMNS: &str = "seq, session_key, chat, text, mode, every_ms, cron, timezone, next_at, until_at, created_at, \
                       fired, last_fired_at, state";

fn opt(r: &[SqlValue], i: usize) -> Option<i64> {
    r.get(i).and_then(SqlValue::as_i64)
}

fn reminder(mut r: Vec<SqlValue>) -> Reminder {
    Reminder {
        id: format!("r{}", col_i64(&r, 0)),
        session_key: col_string(&mut r, 1),
        target: None,
        chat: col_string(&mut r, 2),
        text: col_string(&mut r, 3),
        mode: if col_string(&mut r, 4) == "turn" { PostMode::Turn } else { PostMode::Say },
        every_ms: opt(&r, 5),
        cron: r.get_mut(6).and_then(|v| std::mem::replace(v, SqlValue::Null).into_string()),
        timezone: col_string(&mut r, 7),
        next_at: opt(&r, 8),
        until: opt(&r, 9),
        created_at: col_i64(&r, 10),
        fired: u32::try_from(col_i64(&r, 11)).unwrap_or(0),
        last_fired_at: opt(&r, 12),
        state: col_string(&mut r, 13),
    }
}

fn mode_name(mode: PostMode) -> &'static str {
    match mode {
        PostMode::Say => "say",
        PostMode::Turn => "turn",
    }
}

fn json<T: serde::Serialize>(v: &T) -> Result<String, StorageError> {
    serde_json::to_string(v).map_err(|e| StorageError(e.to_string()))
}

/// The number of a reminder's id (`r12` → 12).
pub fn seq_of(id: &str) -> Option<i64> {
    id.trim().strip_prefix('r').and_then(|n| n.parse().ok()).filter(|n| *n > 0)
}

pub struct ReminderStore<'a, S: Sql> {
    sql: &'a S,
}

impl<'a, S: Sql> ReminderStore<'a, S> {
    /// The store of `sql`, its tables made if missing (once per object).
    pub fn open(sql: &'a S) -> Result<Self, StorageError> {
        crate::storage::ensure(sql, &TABLES)?;
        Ok(ReminderStore { sql })
    }

    /// Pending reminders of the agent (one agent per object).
    pub fn pending_count(&self) -> Result<u32, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM reminders WHERE state = 'pending'", &[])?;
        Ok(rows.first().map_or(0, |r| u32::try_from(col_i64(r, 0)).unwrap_or(u32::MAX)))
    }

    /// Pending reminders of one session.
    pub fn pending_in(&self, session_key: &str) -> Result<u32, StorageError> {
        let rows = self.sql.exec(
            "SELECT COUNT(*) FROM reminders WHERE session_key = ? AND state = 'pending'",
            &[session_key.into()],
        )?;
        Ok(rows.first().map_or(0, |r| u32::try_from(col_i64(r, 0)).unwrap_or(u32::MAX)))
    }

    /// Keeps a new reminder (checked: its target and first time are
    /// there), pending from its first time.
    pub fn insert(&self, new: &Reminder, now: i64) -> Result<Reminder, StorageError> {
        let int = |v: Option<i64>| v.map_or(SqlValue::Null, SqlValue::Int);
        let mut rows = self.sql.exec(
            &format!(
                "INSERT INTO reminders (session_key, target, chat, text, mode, every_ms, cron, timezone, next_at,
                 until_at, created_at, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {COLUMNS}"
            ),
            &[
                new.session_key.as_str().into(),
                json(&new.target)?.into(),
                new.chat.as_str().into(),
                new.text.as_str().into(),
                mode_name(new.mode).into(),
                int(new.every_ms),
                new.cron.clone().map_or(SqlValue::Null, SqlValue::Text),
                new.timezone.as_str().into(),
                int(new.next_at),
                int(new.until),
                now.into(),
                now.into(),
            ],
        )?;
        rows.pop().map(reminder).ok_or_else(|| StorageError("the new reminder was not returned".into()))
    }

    /// Pending reminders, soonest first: of one session, or all.
    pub fn list(&self, session_key: Option<&str>, limit: i64) -> Result<Vec<Reminder>, StorageError> {
        let rows = match session_key {
            Some(key) => self.sql.exec(
                &format!(
                    "SELECT {COLUMNS} FROM reminders WHERE session_key = ? AND state = 'pending' \
                     ORDER BY next_at, seq LIMIT ?"
                ),
                &[key.into(), limit.into()],
            )?,
            None => self.sql.exec(
                &format!("SELECT {COLUMNS} FROM reminders WHERE state = 'pending' ORDER BY next_at, seq LIMIT ?"),
                &[limit.into()],
            )?,
        };
        Ok(rows.into_iter().map(reminder).collect())
    }

    /// Pending reminder `id` (of one session, or of any).
    pub fn pending_one(&self, id: &str, session_key: Option<&str>) -> Result<Option<Reminder>, StorageError> {
        let Some(seq) = seq_of(id) else { return Ok(None) };
        let scope = session_key.map_or(SqlValue::Null, SqlValue::from);
        let mut rows = self.sql.exec(
            &format!(
                "SELECT {COLUMNS} FROM reminders WHERE seq = ? AND state = 'pending' AND (? IS NULL OR session_key = ?)"
            ),
            &[seq.into(), scope.clone(), scope],
        )?;
        Ok(rows.pop().map(reminder))
    }

    /// Cancels pending reminder `id` (or `all`) of one session, or of any:
    /// the ones cancelled (none: nothing matched).
    pub fn cancel(&self, id: &str, session_key: Option<&str>, now: i64) -> Result<Vec<Reminder>, StorageError> {
        let scope = session_key.map_or(SqlValue::Null, SqlValue::from);
        let one = if id.trim().eq_ignore_ascii_case("all") {
            SqlValue::Null
        } else {
            match seq_of(id) {
                Some(n) => SqlValue::Int(n),
                None => return Ok(Vec::new()),
            }
        };
        let rows = self.sql.exec(
            &format!(
                "UPDATE reminders SET state = 'cancelled', next_at = NULL, changed_at = ? \
                 WHERE state = 'pending' AND (? IS NULL OR session_key = ?) AND (? IS NULL OR seq = ?) \
                 RETURNING {COLUMNS}"
            ),
            &[now.into(), scope.clone(), scope, one.clone(), one],
        )?;
        let mut out: Vec<Reminder> = rows.into_iter().map(reminder).collect();
        crate::order::sort_by(&mut out, |a, b| seq_of(&a.id).cmp(&seq_of(&b.id)));
        Ok(out)
    }

    /// Reminders due at `now`, soonest first (at most `limit`).
    pub fn due(&self, now: i64, limit: i64) -> Result<Vec<Due>, StorageError> {
        let rows = self.sql.exec(
            &format!(
                "SELECT {COLUMNS}, target FROM reminders WHERE state = 'pending' AND next_at <= ? \
                 ORDER BY next_at LIMIT ?"
            ),
            &[now.into(), limit.into()],
        )?;
        Ok(rows
            .into_iter()
            .map(|mut r| {
                let target = col_string(&mut r, 14);
                let reminder = reminder(r);
                let slot_ms = reminder.next_at.unwrap_or(now);
                Due { reminder, target, slot_ms }
            })
            .collect())
    }

    /// Claims one fire of a due reminder and moves the reminder on, in one
    /// step: `next` is its following time (`None`: it is done).
    pub fn claim(&self, due: &Due, request: &PostRequest, next: Option<i64>, now: i64) -> Result<(), StorageError> {
        let Some(seq) = seq_of(&due.reminder.id) else { return Ok(()) };
        let state = if next.is_some() { "pending" } else { "done" };
        self.sql.exec_atomic(vec![
            (
                "INSERT INTO reminder_fires (id, slot_ms, request, next_try, at) VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT(id) DO NOTHING"
                    .into(),
                vec![request.id.as_str().into(), due.slot_ms.into(), json(request)?.into(), now.into(), now.into()],
            ),
            (
                "UPDATE reminders SET next_at = ?, state = ?, fired = fired + 1, last_fired_at = ?, changed_at = ? \
                 WHERE seq = ? AND state = 'pending'"
                    .into(),
                vec![next.map_or(SqlValue::Null, SqlValue::Int), state.into(), now.into(), now.into(), seq.into()],
            ),
        ])
    }

    /// Fires whose post is due to be tried (new ones, and retries whose
    /// time came), oldest first.
    pub fn open_fires(&self, now: i64, limit: i64) -> Result<Vec<OpenFire>, StorageError> {
        let rows = self.sql.exec(
            "SELECT id, slot_ms, request, attempts FROM reminder_fires WHERE state = 'pending' AND next_try <= ? \
             ORDER BY next_try, slot_ms LIMIT ?",
            &[now.into(), limit.into()],
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                let request = col_string(&mut r, 2);
                Some(OpenFire {
                    id: col_string(&mut r, 0),
                    slot_ms: col_i64(&r, 1),
                    request: hearth_json::from_slice(request.as_bytes()).ok()?,
                    attempts: col_i64(&r, 3),
                })
            })
            .collect())
    }

    /// The session took the fire's post.
    pub fn posted(&self, id: &str) -> Result<(), StorageError> {
        self.sql.exec("UPDATE reminder_fires SET state = 'posted', request = '' WHERE id = ?", &[id.into()])?;
        Ok(())
    }

    /// The post failed: try again at `next_try`, or give up (`None`).
    pub fn failed(&self, id: &str, next_try: Option<i64>, why: &str) -> Result<(), StorageError> {
        match next_try {
            Some(at) => self.sql.exec(
                "UPDATE reminder_fires SET attempts = attempts + 1, next_try = ?, last_error = ? WHERE id = ?",
                &[at.into(), why.into(), id.into()],
            )?,
            None => self.sql.exec(
                "UPDATE reminder_fires SET attempts = attempts + 1, state = 'failed', last_error = ? WHERE id = ?",
                &[why.into(), id.into()],
            )?,
        };
        Ok(())
    }

    /// When there is something to do next: a reminder's time, or a retry.
    pub fn next_wake(&self) -> Result<Option<i64>, StorageError> {
        let rows = self.sql.exec(
            "SELECT MIN(t) FROM (SELECT MIN(next_at) AS t FROM reminders WHERE state = 'pending' \
             UNION ALL SELECT MIN(next_try) FROM reminder_fires WHERE state = 'pending')",
            &[],
        )?;
        Ok(rows.first().and_then(|r| opt(r, 0)))
    }

    /// Forgets finished reminders and old fires.
    pub fn prune(&self, now: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "DELETE FROM reminders WHERE state != 'pending' AND changed_at < ?",
            &[(now - KEEP_FINISHED_MS).into()],
        )?;
        self.sql
            .exec("DELETE FROM reminder_fires WHERE state != 'pending' AND at < ?", &[(now - KEEP_FIRES_MS).into()])?;
        Ok(())
    }

    /// Fires given up, newest first (the admin view).
    pub fn failed_fires(&self, limit: i64) -> Result<Vec<(String, String)>, StorageError> {
        let rows = self.sql.exec(
            "SELECT id, COALESCE(last_error, '') FROM reminder_fires WHERE state = 'failed' ORDER BY at DESC LIMIT ?",
            &[limit.into()],
        )?;
        Ok(rows.into_iter().map(|mut r| (col_string(&mut r, 0), col_string(&mut r, 1))).collect())
    }
}
