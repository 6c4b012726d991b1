//! The `outbox` table: one row per piece of a reply, and every statement
//! that touches it.
//!
//! A row is `pending` until its piece is sent (`sent`) or given up
//! (`expired`, `rejected`, `unreachable`). Each change is one statement run
//! right after the attempt it records, so a piece marked `sent` is never sent
//! again, whatever happens to the object afterwards.

use crate::inbound::ReplyTarget;
use crate::ports::{Sql, SqlValue, StorageError};
use crate::storage::{col_i64, col_string, Schema};

const TABLES: Schema = Schema { name: "outbox", statements: SCHEMA };

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        reply TEXT NOT NULL,
        kind TEXT NOT NULL,
        chat TEXT NOT NULL,
        target TEXT NOT NULL,
        part INTEGER NOT NULL,
        parts INTEGER NOT NULL,
        text TEXT NOT NULL,
        markup INTEGER NOT NULL,
        opens INTEGER NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        next_at INTEGER NOT NULL,
        last_error TEXT,
        done_at INTEGER,
        UNIQUE (reply, part))",
    "CREATE INDEX IF NOT EXISTS outbox_open ON outbox(state, chat, seq)",
    "CREATE INDEX IF NOT EXISTS outbox_target ON outbox(target)",
];

/// Delivered pieces are remembered this long (what was already sent to a
/// message decides whether the next piece edits or follows up).
pub const SENT_RETENTION_MS: i64 = 24 * 3600 * 1000;
/// Pieces given up stay listed (admin API) this long.
pub const FAILED_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// Why a piece was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// Still failing when the reply's time ran out.
    Expired,
    /// The platform refused the piece itself.
    Rejected,
    /// The chat could not be reached.
    Unreachable,
}

impl GaveUp {
    pub fn as_str(self) -> &'static str {
        match self {
            GaveUp::Expired => "expired",
            GaveUp::Rejected => "rejected",
            GaveUp::Unreachable => "unreachable",
        }
    }
}

/// One piece in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub seq: i64,
    pub reply: String,
    pub kind: String,
    pub chat: String,
    pub target: ReplyTarget,
    pub part: i64,
    pub parts: i64,
    pub text: String,
    pub markup: bool,
    pub opens: bool,
    pub state: String,
    pub attempts: i64,
    pub created_at: i64,
    pub next_at: i64,
    pub last_error: Option<String>,
    pub done_at: Option<i64>,
}

const COLUMNS: &str = "seq, reply, kind, chat, target, part, parts, text, markup, opens, state, attempts, created_at, \
                       next_at, last_error, done_at";

fn row(mut r: Vec<SqlValue>) -> Row {
    let opt_i = |r: &[SqlValue], i: usize| r.get(i).and_then(SqlValue::as_i64);
    let target_json = col_string(&mut r, 4);
    Row {
        seq: col_i64(&r, 0),
        reply: col_string(&mut r, 1),
        kind: col_string(&mut r, 2),
        chat: col_string(&mut r, 3),
        // A target that no longer parses is sent nowhere: the adapter finds
        // no channel and the piece is given up (and reported), not retried.
        target: hearth_json::from_slice(target_json.as_bytes()).unwrap_or_default(),
        part: col_i64(&r, 5),
        parts: col_i64(&r, 6),
        text: col_string(&mut r, 7),
        markup: col_i64(&r, 8) != 0,
        opens: col_i64(&r, 9) != 0,
        state: col_string(&mut r, 10),
        attempts: col_i64(&r, 11),
        created_at: col_i64(&r, 12),
        next_at: col_i64(&r, 13),
        last_error: r.get_mut(14).and_then(|v| std::mem::replace(v, SqlValue::Null).into_string()),
        done_at: opt_i(&r, 15),
    }
}

/// A new reply, cut into its pieces.
pub struct NewReply<'a> {
    pub reply: &'a str,
    pub kind: &'a str,
    pub chat: &'a str,
    pub target: &'a ReplyTarget,
    pub pieces: &'a [String],
    pub markup: bool,
}

pub struct Outbox<'a, S: Sql> {
    sql: &'a S,
}

impl<'a, S: Sql> Outbox<'a, S> {
    /// The outbox of `sql`, its table created if missing (once per object).
    pub fn open(sql: &'a S) -> Result<Self, StorageError> {
        crate::storage::ensure(sql, &TABLES)?;
        Ok(Outbox { sql })
    }

    /// Whether a reply with this id was queued before (kept or pruned rows
    /// aside: ids of resumed work are seen within the retention).
    pub fn has_reply(&self, reply: &str) -> Result<bool, StorageError> {
        Ok(!self.sql.exec("SELECT 1 FROM outbox WHERE reply = ? LIMIT 1", &[reply.into()])?.is_empty())
    }

    /// Adds a reply's pieces, all or none. Its first piece `opens` when
    /// nothing was queued for the same target before.
    pub fn insert(&self, r: &NewReply<'_>, now: i64) -> Result<(), StorageError> {
        let target = serde_json::to_string(r.target).map_err(|e| StorageError(e.to_string()))?;
        let opened =
            !self.sql.exec("SELECT 1 FROM outbox WHERE target = ? LIMIT 1", &[target.as_str().into()])?.is_empty();
        let parts = r.pieces.len() as i64;
        let statements = r
            .pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| {
                (
                    "INSERT INTO outbox (reply, kind, chat, target, part, parts, text, markup, opens, created_at, next_at) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                        .to_owned(),
                    vec![
                        r.reply.into(),
                        r.kind.into(),
                        r.chat.into(),
                        target.as_str().into(),
                        (i as i64).into(),
                        parts.into(),
                        piece.as_str().into(),
                        i64::from(r.markup).into(),
                        i64::from(i == 0 && !opened).into(),
                        now.into(),
                        now.into(),
                    ],
                )
            })
            .collect();
        self.sql.exec_atomic(statements)
    }

    /// Forgets delivered pieces and old failures past their retention (at
    /// most once an hour per object: a statement on every reply otherwise).
    pub fn prune(&self, now: i64) -> Result<(), StorageError> {
        if !crate::storage::chore_due(self.sql, "outbox-prune", now, 3600 * 1000) {
            return Ok(());
        }
        self.sql.exec(
            "DELETE FROM outbox WHERE (state = 'sent' AND done_at < ?) OR (state NOT IN ('pending', 'sent') AND done_at < ?)",
            &[(now - SENT_RETENTION_MS).into(), (now - FAILED_RETENTION_MS).into()],
        )?;
        Ok(())
    }

    /// The piece each chat waits on (its oldest pending one), oldest first,
    /// each with how many pieces its chat has pending (the head included):
    /// a chat with one has nothing left once it is sent.
    pub fn heads(&self) -> Result<Vec<(Row, i64)>, StorageError> {
        let rows = self.sql.exec(
            &format!(
                "SELECT {COLUMNS}, (SELECT COUNT(*) FROM outbox AS o WHERE o.state = 'pending' AND o.chat = outbox.chat) \
                 FROM outbox WHERE state = 'pending' AND seq IN \
                 (SELECT MIN(seq) FROM outbox WHERE state = 'pending' GROUP BY chat) ORDER BY seq"
            ),
            &[],
        )?;
        Ok(rows
            .into_iter()
            .map(|mut r| {
                let queued = r.pop().and_then(|v| v.as_i64()).unwrap_or(i64::MAX);
                (row(r), queued)
            })
            .collect())
    }

    /// When the next attempt is due, if anything waits.
    pub fn next_due(&self) -> Result<Option<i64>, StorageError> {
        Ok(self.heads()?.iter().map(|(r, _)| r.next_at).min())
    }

    pub fn mark_sent(&self, seq: i64, now: i64) -> Result<(), StorageError> {
        // The text is in the history; the row only remembers that it went.
        self.sql.exec(
            "UPDATE outbox SET state = 'sent', text = '', attempts = attempts + 1, last_error = NULL, done_at = ? \
             WHERE seq = ?",
            &[now.into(), seq.into()],
        )?;
        Ok(())
    }

    /// Another try at `next_at`, after the failure `why`.
    pub fn defer(&self, seq: i64, next_at: i64, why: &str) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE outbox SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE seq = ?",
            &[next_at.into(), why.into(), seq.into()],
        )?;
        Ok(())
    }

    /// The piece goes again at once, without markup.
    pub fn drop_markup(&self, seq: i64, why: &str) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE outbox SET markup = 0, attempts = attempts + 1, last_error = ? WHERE seq = ?",
            &[why.into(), seq.into()],
        )?;
        Ok(())
    }

    /// Gives up one piece (`attempted`: this failure was an attempt at it).
    pub fn give_up_piece(
        &self,
        seq: i64,
        why: GaveUp,
        error: &str,
        attempted: bool,
        now: i64,
    ) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE outbox SET state = ?, attempts = attempts + ?, last_error = ?, done_at = ? WHERE seq = ?",
            &[why.as_str().into(), i64::from(attempted).into(), error.into(), now.into(), seq.into()],
        )?;
        Ok(())
    }

    /// Gives up every pending piece of a reply; returns how many.
    pub fn give_up_reply(&self, reply: &str, why: GaveUp, error: &str, now: i64) -> Result<i64, StorageError> {
        self.give_up_where("reply = ?", reply, why, error, now)
    }

    /// Gives up every pending piece queued for the same target (the same
    /// chat, topic and message to answer); returns how many.
    pub fn give_up_target(
        &self,
        target: &ReplyTarget,
        why: GaveUp,
        error: &str,
        now: i64,
    ) -> Result<i64, StorageError> {
        let target = serde_json::to_string(target).map_err(|e| StorageError(e.to_string()))?;
        self.give_up_where("target = ?", &target, why, error, now)
    }

    fn give_up_where(
        &self,
        clause: &str,
        value: &str,
        why: GaveUp,
        error: &str,
        now: i64,
    ) -> Result<i64, StorageError> {
        let count = self
            .sql
            .exec(&format!("SELECT COUNT(*) FROM outbox WHERE state = 'pending' AND {clause}"), &[value.into()])?;
        self.sql.exec(
            &format!(
                "UPDATE outbox SET state = ?, last_error = COALESCE(last_error, ?), done_at = ? \
                 WHERE state = 'pending' AND {clause}"
            ),
            &[why.as_str().into(), error.into(), now.into(), value.into()],
        )?;
        Ok(count.first().map(|r| col_i64(r, 0)).unwrap_or(0))
    }

    /// Every piece of the replies that still wait or were given up, in order.
    pub fn open_and_failed(&self) -> Result<Vec<Row>, StorageError> {
        let rows = self.sql.exec(
            &format!(
                "SELECT {COLUMNS} FROM outbox WHERE reply IN \
                 (SELECT reply FROM outbox WHERE state <> 'sent') ORDER BY seq"
            ),
            &[],
        )?;
        Ok(rows.into_iter().map(row).collect())
    }
}
