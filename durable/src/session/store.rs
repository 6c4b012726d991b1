//! The session's SQLite tables and every statement that touches them (but
//! which queued message is next: [`super::sequence`]).

use crate::ports::{Sql, SqlValue, StorageError};
use crate::storage::{col_i64, col_string, Schema};
use r2_layout::{Message, Usage};

/// The session's tables; the `ALTER`s add the columns `usage` gained after
/// it was first created (rows written before them count as settled: they
/// were never meant for the Agent object's ledger).
const TABLES: Schema = Schema { name: "session", statements: SCHEMA };

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS inbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        dedupe_key TEXT NOT NULL UNIQUE,
        payload TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        received_at INTEGER NOT NULL,
        finished_at INTEGER)",
    "CREATE INDEX IF NOT EXISTS inbox_open ON inbox(state, seq)",
    "CREATE TABLE IF NOT EXISTS history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        message TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS history_session ON history(session_id, seq)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS compactions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        archive_name TEXT NOT NULL,
        archived_at INTEGER NOT NULL,
        summary TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS usage (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        model TEXT NOT NULL,
        input INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cache_read INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        kind TEXT NOT NULL DEFAULT 'conversation',
        settled INTEGER NOT NULL DEFAULT 1,
        cache_write_1h INTEGER NOT NULL DEFAULT 0)",
    "ALTER TABLE usage ADD COLUMN kind TEXT NOT NULL DEFAULT 'conversation'",
    "ALTER TABLE usage ADD COLUMN settled INTEGER NOT NULL DEFAULT 1",
    // The part of `cache_write` written for an hour (older rows: none).
    "ALTER TABLE usage ADD COLUMN cache_write_1h INTEGER NOT NULL DEFAULT 0",
];

/// How long handled deliveries are remembered for de-duplication. Telegram
/// gives up redelivering after 24 h; a week is a comfortable margin.
pub const DEDUPE_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// Handled deliveries past their retention are forgotten at most this often
/// per object (not on every turn).
pub const PRUNE_EVERY_MS: i64 = 3600 * 1000;

/// Where a compacted session's replay starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactMarker {
    pub archive_name: String,
    pub archived_at: i64,
    pub summary: String,
}

/// Where a session's history rows start and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistorySpan {
    pub first: Option<i64>,
    pub last: Option<i64>,
    pub count: i64,
}

/// A call written down by the Session, not yet in the Agent object's ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsettledCall {
    pub seq: i64,
    pub at: i64,
    pub session_id: String,
    pub model: String,
    pub kind: String,
    pub usage: Usage,
}

/// A queued inbound message.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxItem {
    pub seq: i64,
    pub payload: String,
    pub active: bool,
    pub attempts: i64,
    /// When the session got it (its clock, ms).
    pub received_at: i64,
}

pub struct SessionStore<'a, S: Sql> {
    pub(super) sql: &'a S,
}

impl<'a, S: Sql> SessionStore<'a, S> {
    pub fn new(sql: &'a S) -> Self {
        SessionStore { sql }
    }

    /// Creates the tables, once per object ([`crate::storage::ensure`]).
    pub fn init(&self) -> Result<(), StorageError> {
        crate::storage::ensure(self.sql, &TABLES)
    }

    /// Queues a delivery. `false` when the same `dedupe_key` was seen before
    /// (a webhook repeat): acknowledged, not processed again.
    pub fn enqueue(&self, dedupe_key: &str, payload: &str, now: i64) -> Result<bool, StorageError> {
        let seen = self.sql.exec("SELECT 1 FROM inbox WHERE dedupe_key = ?", &[dedupe_key.into()])?;
        if !seen.is_empty() {
            return Ok(false);
        }
        self.sql.exec(
            "INSERT INTO inbox (dedupe_key, payload, received_at) VALUES (?, ?, ?)",
            &[dedupe_key.into(), payload.into(), now.into()],
        )?;
        Ok(true)
    }

    /// A delivery's state (`pending`, `active`, `done`), if it was seen.
    pub fn inbox_state(&self, dedupe_key: &str) -> Result<Option<String>, StorageError> {
        let mut rows = self.sql.exec("SELECT state FROM inbox WHERE dedupe_key = ?", &[dedupe_key.into()])?;
        Ok(rows.pop().map(|mut r| col_string(&mut r, 0)))
    }

    pub fn open_count(&self) -> Result<i64, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM inbox WHERE state IN ('pending','active')", &[])?;
        Ok(rows.first().map(|r| col_i64(r, 0)).unwrap_or(0))
    }

    /// Marks a message active and appends it to the history, in one step.
    /// Marks an inbox row active, with its message in the history: both or
    /// neither, so a resumed turn never finds its message twice or not at all.
    pub fn start(&self, seq: i64, session_id: &str, message: Option<&Message>) -> Result<(), StorageError> {
        let mut statements = match message {
            Some(m) => append_statements(session_id, m)?,
            None => Vec::new(),
        };
        statements.push((
            "UPDATE inbox SET state = 'active', attempts = attempts + 1 WHERE seq = ?".into(),
            vec![seq.into()],
        ));
        self.sql.exec_atomic(statements)
    }

    /// Counts another attempt at an already active message (resumed turn).
    pub fn retry(&self, seq: i64) -> Result<(), StorageError> {
        self.sql.exec("UPDATE inbox SET attempts = attempts + 1 WHERE seq = ?", &[seq.into()])?;
        Ok(())
    }

    pub fn finish(&self, seq: i64, now: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE inbox SET state = 'done', payload = '', finished_at = ? WHERE seq = ?",
            &[now.into(), seq.into()],
        )?;
        if crate::storage::chore_due(self.sql, "inbox-prune", now, PRUNE_EVERY_MS) {
            self.sql.exec(
                "DELETE FROM inbox WHERE state = 'done' AND finished_at < ?",
                &[(now - DEDUPE_RETENTION_MS).into()],
            )?;
        }
        Ok(())
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>, StorageError> {
        let mut rows = self.sql.exec("SELECT value FROM meta WHERE key = ?", &[key.into()])?;
        Ok(rows.pop().map(|mut r| col_string(&mut r, 0)))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), StorageError> {
        let (query, params) = set_meta_statement(key, value);
        self.sql.exec(&query, &params)?;
        Ok(())
    }

    pub fn delete_meta(&self, key: &str) -> Result<(), StorageError> {
        self.sql.exec("DELETE FROM meta WHERE key = ?", &[key.into()])?;
        Ok(())
    }

    /// The current session id, created on first use.
    pub fn session_id(&self, new_uuid: impl FnOnce() -> String, now: i64) -> Result<String, StorageError> {
        if let Some(id) = self.meta("session_id")? {
            return Ok(id);
        }
        let id = new_uuid();
        self.set_meta("session_id", &id)?;
        self.set_meta("created_at", &now.to_string())?;
        Ok(id)
    }

    pub fn append(&self, session_id: &str, message: &Message) -> Result<(), StorageError> {
        self.sql.exec_atomic(append_statements(session_id, message)?)
    }

    /// Drops the history of `session_id`; usage rows stay. Heartbeat and job
    /// runs start from the workspace alone (see `crate::scheduled`).
    pub fn clear_history(&self, session_id: &str) -> Result<(), StorageError> {
        self.sql.exec("DELETE FROM history WHERE session_id = ?", &[session_id.into()])?;
        Ok(())
    }

    /// The session's messages in order. A row that no longer parses is
    /// skipped, not fatal: one bad row must not silence the agent.
    pub fn history(&self, session_id: &str) -> Result<Vec<Message>, StorageError> {
        let rows =
            self.sql.exec("SELECT message FROM history WHERE session_id = ? ORDER BY seq", &[session_id.into()])?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| hearth_json::from_slice(col_string(&mut r, 0).as_bytes()).ok())
            .collect())
    }

    /// How many messages the session holds (without reading them).
    pub fn message_count(&self, session_id: &str) -> Result<i64, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM history WHERE session_id = ?", &[session_id.into()])?;
        Ok(rows.first().map(|r| col_i64(r, 0)).unwrap_or(0))
    }

    /// The first and last row number and the row count of a session's history.
    pub fn history_span(&self, session_id: &str) -> Result<HistorySpan, StorageError> {
        let rows = self
            .sql
            .exec("SELECT MIN(seq), MAX(seq), COUNT(*) FROM history WHERE session_id = ?", &[session_id.into()])?;
        let row = rows.first();
        let int = |i: usize| row.and_then(|r| r.get(i)).and_then(SqlValue::as_i64);
        Ok(HistorySpan { first: int(0), last: int(1), count: int(2).unwrap_or(0) })
    }

    /// The session's rows after row `seq`, in order, and how many of them
    /// did not parse (skipped: one bad row must not silence the agent).
    pub fn history_rows_after(&self, session_id: &str, seq: i64) -> Result<(Vec<(i64, Message)>, i64), StorageError> {
        let rows = self.sql.exec(
            "SELECT seq, message FROM history WHERE session_id = ? AND seq > ? ORDER BY seq",
            &[session_id.into(), seq.into()],
        )?;
        let total = rows.len() as i64;
        let parsed: Vec<(i64, Message)> = rows
            .into_iter()
            .filter_map(|mut r| {
                let seq = col_i64(&r, 0);
                hearth_json::from_slice(col_string(&mut r, 1).as_bytes()).ok().map(|m| (seq, m))
            })
            .collect();
        let unreadable = total - parsed.len() as i64;
        Ok((parsed, unreadable))
    }

    /// The JSON of the session's last `n` messages, newest first: the caller
    /// parses only as many as it needs (a listing's label, at the end of
    /// every turn, usually needs the newest one alone).
    pub fn recent_json(&self, session_id: &str, n: i64) -> Result<Vec<String>, StorageError> {
        let rows = self.sql.exec(
            "SELECT message FROM history WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
            &[session_id.into(), n.into()],
        )?;
        Ok(rows.into_iter().map(|mut r| col_string(&mut r, 0)).collect())
    }

    /// The session's messages with their row numbers, in order.
    pub fn history_rows(&self, session_id: &str) -> Result<Vec<(i64, Message)>, StorageError> {
        Ok(self.history_rows_after(session_id, 0)?.0)
    }

    /// Replaces the messages of some history rows, all or none (the strict
    /// repair of a history the provider refused).
    pub fn rewrite_rows(&self, session_id: &str, rows: &[(i64, Message)]) -> Result<(), StorageError> {
        let mut statements = Vec::with_capacity(rows.len());
        for (seq, m) in rows {
            let json = serde_json::to_string(m).map_err(|e| StorageError(e.to_string()))?;
            statements.push((
                "UPDATE history SET message = ? WHERE session_id = ? AND seq = ?".into(),
                vec![json.into(), session_id.into(), (*seq).into()],
            ));
        }
        if statements.is_empty() {
            return Ok(());
        }
        self.sql.exec_atomic(statements)
    }

    /// Records a compaction: the marker, and the compacted rows removed (they
    /// are in the part archive already). One step, so it is all or nothing.
    pub fn record_compaction(
        &self,
        marker: &CompactMarker,
        session_id: &str,
        through_seq: i64,
    ) -> Result<(), StorageError> {
        self.sql.exec_atomic(vec![
            (
                "INSERT INTO compactions (session_id, archive_name, archived_at, summary) VALUES (?, ?, ?, ?)".into(),
                vec![
                    session_id.into(),
                    marker.archive_name.clone().into(),
                    marker.archived_at.into(),
                    marker.summary.clone().into(),
                ],
            ),
            (
                "DELETE FROM history WHERE session_id = ? AND seq <= ?".into(),
                vec![session_id.into(), through_seq.into()],
            ),
        ])
    }

    /// The latest compact marker of a session: the next turn replays from it.
    pub fn latest_compaction(&self, session_id: &str) -> Result<Option<CompactMarker>, StorageError> {
        let mut rows = self.sql.exec(
            "SELECT archive_name, archived_at, summary FROM compactions WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            &[session_id.into()],
        )?;
        Ok(rows.pop().map(|mut r| CompactMarker {
            archive_name: col_string(&mut r, 0),
            archived_at: col_i64(&r, 1),
            summary: col_string(&mut r, 2),
        }))
    }

    pub fn compaction_count(&self, session_id: &str) -> Result<i64, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM compactions WHERE session_id = ?", &[session_id.into()])?;
        Ok(rows.first().map(|r| col_i64(r, 0)).unwrap_or(0))
    }

    /// Ends the current session: its history and markers go (the archive
    /// holds them), and the next message starts a new session id.
    /// All or nothing: a reset retried after a half-done clear would archive
    /// what was left over the whole archive it had written.
    pub fn clear_session(&self, session_id: &str) -> Result<(), StorageError> {
        self.sql.exec_atomic(vec![
            ("DELETE FROM history WHERE session_id = ?".into(), vec![session_id.into()]),
            ("DELETE FROM compactions WHERE session_id = ?".into(), vec![session_id.into()]),
            (
                "DELETE FROM meta WHERE key IN ('session_id', 'created_at', 'updated_at', 'reset_progress')".into(),
                vec![],
            ),
        ])
    }

    /// Writes down one LLM call, not yet settled with the Agent object's
    /// ledger. Returns its row number (the ledger's key for it).
    pub fn record_call(
        &self,
        now: i64,
        session_id: &str,
        model: &str,
        kind: &str,
        u: &Usage,
    ) -> Result<i64, StorageError> {
        let rows = self.sql.exec(
            "INSERT INTO usage (at, session_id, model, input, output, cache_read, cache_write, kind, settled, \
             cache_write_1h) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?) RETURNING seq",
            &[
                now.into(),
                session_id.into(),
                model.into(),
                (u.input as i64).into(),
                (u.output as i64).into(),
                (u.cache_read as i64).into(),
                (u.cache_write as i64).into(),
                kind.into(),
                (u.cache_write_1h as i64).into(),
            ],
        )?;
        Ok(rows.first().map(|r| col_i64(r, 0)).unwrap_or(0))
    }

    /// Calls not yet settled with the ledger, oldest first (at most `limit`):
    /// `(seq, at, session_id, model, kind, usage)`.
    pub fn unsettled(&self, limit: i64) -> Result<Vec<UnsettledCall>, StorageError> {
        let rows = self.sql.exec(
            "SELECT seq, at, session_id, model, kind, input, output, cache_read, cache_write, cache_write_1h \
             FROM usage WHERE settled = 0 ORDER BY seq LIMIT ?",
            &[limit.into()],
        )?;
        Ok(rows
            .into_iter()
            .map(|mut r| {
                let n = |r: &[SqlValue], i| col_i64(r, i).max(0) as u64;
                UnsettledCall {
                    seq: col_i64(&r, 0),
                    at: col_i64(&r, 1),
                    usage: Usage::new(n(&r, 5), n(&r, 6), n(&r, 7), n(&r, 8)).with_1h_writes(n(&r, 9)),
                    session_id: col_string(&mut r, 2),
                    model: col_string(&mut r, 3),
                    kind: col_string(&mut r, 4),
                }
            })
            .collect())
    }

    /// The ledger has the calls up to row `seq`.
    pub fn mark_settled(&self, through_seq: i64) -> Result<(), StorageError> {
        self.sql.exec("UPDATE usage SET settled = 1 WHERE settled = 0 AND seq <= ?", &[through_seq.into()])?;
        Ok(())
    }

    /// Open messages still waiting (not started), oldest first: `(seq, payload)`.
    pub fn pending(&self) -> Result<Vec<(i64, String)>, StorageError> {
        let rows = self.sql.exec("SELECT seq, payload FROM inbox WHERE state = 'pending' ORDER BY seq", &[])?;
        Ok(rows.into_iter().map(|mut r| (col_i64(&r, 0), col_string(&mut r, 1))).collect())
    }

    /// Open messages (running or waiting), oldest first: `(seq, payload)`.
    pub fn open_items(&self) -> Result<Vec<(i64, String)>, StorageError> {
        let rows =
            self.sql.exec("SELECT seq, payload FROM inbox WHERE state IN ('pending','active') ORDER BY seq", &[])?;
        Ok(rows.into_iter().map(|mut r| (col_i64(&r, 0), col_string(&mut r, 1))).collect())
    }

    /// Row `head` takes `payload` (its batch merged into it) and rows
    /// `absorbed` are done, in one change.
    pub fn absorb(&self, head: i64, payload: &str, absorbed: &[i64], now: i64) -> Result<(), StorageError> {
        let mut statements =
            vec![("UPDATE inbox SET payload = ? WHERE seq = ?".to_owned(), vec![payload.into(), head.into()])];
        for seq in absorbed {
            statements.push((
                "UPDATE inbox SET state = 'done', payload = '', finished_at = ? WHERE seq = ?".into(),
                vec![now.into(), (*seq).into()],
            ));
        }
        self.sql.exec_atomic(statements)
    }

    /// An attempt that a budget stopped does not count towards
    /// `MAX_ATTEMPTS_PER_MESSAGE`: the message waits, it did not fail.
    pub fn uncount_attempt(&self, seq: i64) -> Result<(), StorageError> {
        self.sql.exec("UPDATE inbox SET attempts = MAX(attempts - 1, 0) WHERE seq = ?", &[seq.into()])?;
        Ok(())
    }

    /// Token totals of every session id this object has had (heartbeat and
    /// job sessions are counted whole, across resets).
    pub fn usage_totals_all(&self) -> Result<Usage, StorageError> {
        let rows = self.sql.exec(
            "SELECT COALESCE(SUM(input),0), COALESCE(SUM(output),0), COALESCE(SUM(cache_read),0), COALESCE(SUM(cache_write),0) FROM usage",
            &[],
        )?;
        let r = rows.first().cloned().unwrap_or_default();
        let n = |i| col_i64(&r, i).max(0) as u64;
        Ok(r2_layout::Usage::new(n(0), n(1), n(2), n(3)))
    }

    /// Token totals of one session id.
    pub fn usage_totals(&self, session_id: &str) -> Result<Usage, StorageError> {
        let rows = self.sql.exec(
            "SELECT COALESCE(SUM(input),0), COALESCE(SUM(output),0), COALESCE(SUM(cache_read),0), COALESCE(SUM(cache_write),0) FROM usage WHERE session_id = ?",
            &[session_id.into()],
        )?;
        let r = rows.first().cloned().unwrap_or_default();
        let n = |i| col_i64(&r, i).max(0) as u64;
        Ok(r2_layout::Usage::new(n(0), n(1), n(2), n(3)))
    }
}

type Statement = (String, Vec<SqlValue>);

fn set_meta_statement(key: &str, value: &str) -> Statement {
    (
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value".into(),
        vec![key.into(), value.into()],
    )
}

/// A message added to the history, and the session's last activity moved to
/// it. The message is stored as the providers accept it
/// ([`crate::llm::rules::conform`]): one odd message stored as it came would
/// be refused on every later request.
fn append_statements(session_id: &str, message: &Message) -> Result<Vec<Statement>, StorageError> {
    let message = &crate::llm::rules::conform(message.clone());
    let json = serde_json::to_string(message).map_err(|e| StorageError(e.to_string()))?;
    Ok(vec![
        ("INSERT INTO history (session_id, message) VALUES (?, ?)".into(), vec![session_id.into(), json.into()]),
        set_meta_statement("updated_at", &message.timestamp().to_string()),
    ])
}
