//! Dreaming's tables in the Agent object's SQLite: what was settled (so it
//! is not considered again), the proposals waiting for the owner, and the
//! figures `my_stats` and the admin view report.
//!
//! ```sql
//! dream_marks (store, entry_id, content_hash, verdict, fact, reason, at)   -- promoted | rejected | refused_by_owner
//! dream_proposals (id, night, heading, entry_id, entry_name, content_hash, fact, score, hits, queries, days,
//!                  state, chat, message_id, created_at, expires_at, answered_at)  -- new | sent | approving | approved | rejected | expired
//! dream_state (key, value)                                                   -- promoted_total, last_dream_ts, last
//! ```
//!
//! A mark holds while the entry's content is the same (`content_hash`): a
//! rewritten note is judged again. The owner's rejections keep their fact
//! too, so the same fact from another note is not proposed again.

use crate::ports::{Sql, SqlValue, StorageError};
use crate::storage::col_i64;
use serde::Serialize;

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS dream_marks (store TEXT NOT NULL, entry_id INTEGER NOT NULL, content_hash TEXT NOT NULL,
        verdict TEXT NOT NULL, fact TEXT, reason TEXT, at INTEGER NOT NULL, PRIMARY KEY (store, entry_id, content_hash))",
    "CREATE TABLE IF NOT EXISTS dream_proposals (id INTEGER PRIMARY KEY AUTOINCREMENT, night TEXT NOT NULL,
        heading TEXT NOT NULL, entry_id INTEGER NOT NULL, entry_name TEXT NOT NULL, content_hash TEXT NOT NULL,
        fact TEXT NOT NULL, score REAL NOT NULL, hits INTEGER NOT NULL, queries INTEGER NOT NULL, days INTEGER NOT NULL,
        state TEXT NOT NULL, chat TEXT, message_id INTEGER, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
        answered_at INTEGER)",
    "CREATE INDEX IF NOT EXISTS dream_proposals_state ON dream_proposals(state, expires_at)",
    "CREATE TABLE IF NOT EXISTS dream_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
];
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "dreams", statements: SCHEMA };

/// A tap's claim on a proposal (`approving`) older than this is taken again
/// (the object stopped while writing the fact; the write skips a line already there).
pub const APPROVING_STALE_MS: i64 = 5 * 60_000;

/// A settled entry: what happened to it.
pub const PROMOTED: &str = "promoted";
pub const REJECTED: &str = "rejected";
pub const REFUSED_BY_OWNER: &str = "refused_by_owner";

/// One proposal to the owner.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    pub id: i64,
    pub night: String,
    /// The `## Dreamed …` heading its fact goes under.
    pub heading: String,
    pub entry_id: u64,
    pub entry_name: String,
    pub content_hash: u64,
    pub fact: String,
    pub score: f32,
    pub hits: u32,
    pub queries: u32,
    pub days: u32,
    /// `new` (not sent yet), `sent`, `approving` (a tap is writing its fact),
    /// `approved`, `rejected`, `expired`.
    pub state: String,
    pub chat: Option<String>,
    pub message_id: Option<i64>,
    pub created_at: i64,
    pub expires_at: i64,
    pub answered_at: Option<i64>,
}

impl Proposal {
    /// The MEMORY.md line of this fact (seed 000's format).
    pub fn line(&self) -> String {
        super::memory_file::fact_line(&self.fact, self.score, self.hits, self.days)
    }
}

pub struct DreamStore<'a, S: Sql + ?Sized> {
    sql: &'a S,
}

fn hash_text(h: u64) -> SqlValue {
    SqlValue::Text(h.to_string())
}

fn text(row: &mut [SqlValue], i: usize) -> Option<String> {
    std::mem::replace(row.get_mut(i)?, SqlValue::Null).into_string()
}

const PROPOSAL_COLUMNS: &str = "id, night, heading, entry_id, entry_name, content_hash, fact, score, hits, queries, \
days, state, chat, message_id, created_at, expires_at, answered_at";

fn proposal_of(mut r: Vec<SqlValue>) -> Option<Proposal> {
    let real = |v: &SqlValue| match v {
        SqlValue::Real(f) => *f as f32,
        SqlValue::Int(i) => *i as f32,
        _ => 0.0,
    };
    let small = |r: &[SqlValue], i: usize| u32::try_from(col_i64(r, i).max(0)).unwrap_or(u32::MAX);
    Some(Proposal {
        id: r.first()?.as_i64()?,
        night: text(&mut r, 1)?,
        heading: text(&mut r, 2)?,
        entry_id: u64::try_from(r.get(3)?.as_i64()?).ok()?,
        entry_name: text(&mut r, 4)?,
        content_hash: text(&mut r, 5)?.parse().ok()?,
        fact: text(&mut r, 6)?,
        score: real(r.get(7)?),
        hits: small(&r, 8),
        queries: small(&r, 9),
        days: small(&r, 10),
        state: text(&mut r, 11)?,
        chat: text(&mut r, 12),
        message_id: r.get(13).and_then(SqlValue::as_i64),
        created_at: r.get(14)?.as_i64()?,
        expires_at: r.get(15)?.as_i64()?,
        answered_at: r.get(16).and_then(SqlValue::as_i64),
    })
}

impl<'a, S: Sql + ?Sized> DreamStore<'a, S> {
    pub fn new(sql: &'a S) -> Self {
        DreamStore { sql }
    }

    pub fn init(&self) -> Result<(), StorageError> {
        crate::storage::ensure(self.sql, &TABLES)
    }

    /// Whether the entry with this content was settled, or waits in a proposal.
    pub fn settled(&self, store: &str, entry_id: u64, content_hash: u64) -> Result<bool, StorageError> {
        let id = SqlValue::Int(i64::try_from(entry_id).unwrap_or(i64::MAX));
        let marked = self.sql.exec(
            "SELECT 1 FROM dream_marks WHERE store = ? AND entry_id = ? AND content_hash = ? LIMIT 1",
            &[store.into(), id.clone(), hash_text(content_hash)],
        )?;
        if !marked.is_empty() {
            return Ok(true);
        }
        let waiting = self.sql.exec(
            "SELECT 1 FROM dream_proposals WHERE entry_id = ? AND content_hash = ? AND state IN ('new', 'sent', 'approving')
             LIMIT 1",
            &[id, hash_text(content_hash)],
        )?;
        Ok(!waiting.is_empty())
    }

    /// Every settled `(entry_id, content_hash)` of `store` (one read per sweep).
    pub fn settled_set(&self, store: &str) -> Result<std::collections::HashSet<(u64, u64)>, StorageError> {
        let mut out = std::collections::HashSet::new();
        for mut r in self.sql.exec("SELECT entry_id, content_hash FROM dream_marks WHERE store = ?", &[store.into()])? {
            if let (Some(id), Some(h)) = (r.first().and_then(SqlValue::as_i64), text(&mut r, 1)) {
                out.extend(h.parse().ok().map(|h| (id as u64, h)));
            }
        }
        for mut r in self.sql.exec(
            "SELECT entry_id, content_hash FROM dream_proposals WHERE state IN ('new', 'sent', 'approving')",
            &[],
        )? {
            if let (Some(id), Some(h)) = (r.first().and_then(SqlValue::as_i64), text(&mut r, 1)) {
                out.extend(h.parse().ok().map(|h| (id as u64, h)));
            }
        }
        Ok(out)
    }

    /// Facts the owner refused and facts waiting for an answer: a new fact
    /// like one of them is not proposed (again).
    pub fn facts_not_to_propose(&self) -> Result<Vec<String>, StorageError> {
        let mut out = Vec::new();
        for sql in [
            "SELECT fact FROM dream_marks WHERE verdict = 'refused_by_owner' AND fact IS NOT NULL",
            "SELECT fact FROM dream_proposals WHERE state IN ('new', 'sent', 'approving')",
        ] {
            out.extend(self.sql.exec(sql, &[])?.into_iter().filter_map(|mut r| text(&mut r, 0)));
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn mark(
        &self,
        store: &str,
        entry_id: u64,
        content_hash: u64,
        verdict: &str,
        fact: Option<&str>,
        reason: Option<&str>,
        at: i64,
    ) -> Result<(), StorageError> {
        let opt = |s: Option<&str>| s.map_or(SqlValue::Null, |s| SqlValue::Text(s.to_owned()));
        self.sql.exec(
            "INSERT OR REPLACE INTO dream_marks (store, entry_id, content_hash, verdict, fact, reason, at)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
            &[
                store.into(),
                SqlValue::Int(i64::try_from(entry_id).unwrap_or(i64::MAX)),
                hash_text(content_hash),
                verdict.into(),
                opt(fact),
                opt(reason),
                at.into(),
            ],
        )?;
        Ok(())
    }

    /// Adds a proposal (state `new`); returns its id.
    pub fn propose(&self, p: &Proposal) -> Result<i64, StorageError> {
        let rows = self.sql.exec(
            "INSERT INTO dream_proposals (night, heading, entry_id, entry_name, content_hash, fact, score, hits, queries,
               days, state, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, ?) RETURNING id",
            &[
                p.night.as_str().into(),
                p.heading.as_str().into(),
                SqlValue::Int(i64::try_from(p.entry_id).unwrap_or(i64::MAX)),
                p.entry_name.as_str().into(),
                hash_text(p.content_hash),
                p.fact.as_str().into(),
                SqlValue::Real(f64::from(p.score)),
                i64::from(p.hits).into(),
                i64::from(p.queries).into(),
                i64::from(p.days).into(),
                p.created_at.into(),
                p.expires_at.into(),
            ],
        )?;
        rows.first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_i64)
            .ok_or_else(|| StorageError("proposal not stored".into()))
    }

    pub fn proposal(&self, id: i64) -> Result<Option<Proposal>, StorageError> {
        let rows =
            self.sql.exec(&format!("SELECT {PROPOSAL_COLUMNS} FROM dream_proposals WHERE id = ?"), &[id.into()])?;
        Ok(rows.into_iter().next().and_then(proposal_of))
    }

    /// Proposals in `state`, oldest first.
    pub fn proposals_in(&self, state: &str) -> Result<Vec<Proposal>, StorageError> {
        let rows = self.sql.exec(
            &format!("SELECT {PROPOSAL_COLUMNS} FROM dream_proposals WHERE state = ? ORDER BY id"),
            &[state.into()],
        )?;
        Ok(rows.into_iter().filter_map(proposal_of).collect())
    }

    /// The latest proposals, any state (admin view).
    pub fn recent_proposals(&self, limit: usize) -> Result<Vec<Proposal>, StorageError> {
        let rows = self.sql.exec(
            &format!("SELECT {PROPOSAL_COLUMNS} FROM dream_proposals ORDER BY id DESC LIMIT ?"),
            &[(limit.min(500) as i64).into()],
        )?;
        Ok(rows.into_iter().filter_map(proposal_of).collect())
    }

    /// The proposal was sent as `message_id` in `chat`.
    pub fn mark_sent(&self, id: i64, chat: &str, message_id: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE dream_proposals SET state = 'sent', chat = ?, message_id = ? WHERE id = ? AND state = 'new'",
            &[chat.into(), message_id.into(), id.into()],
        )?;
        Ok(())
    }

    /// Moves an open proposal (`new` or `sent`) to `state`; false when it
    /// was answered or expired already (a second tap).
    pub fn answer(&self, id: i64, state: &str, at: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "UPDATE dream_proposals SET state = ?, answered_at = ? WHERE id = ? AND state IN ('new', 'sent') RETURNING id",
            &[state.into(), at.into(), id.into()],
        )?;
        Ok(!rows.is_empty())
    }

    /// Takes an open proposal for writing (state `approving`, claimed at
    /// `at`): only one tap writes its fact. A claim older than
    /// [`APPROVING_STALE_MS`] (the object stopped mid-write) may be taken
    /// again. False: answered already, or another tap is writing it.
    pub fn claim_for_approval(&self, id: i64, at: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "UPDATE dream_proposals SET state = 'approving', answered_at = ? WHERE id = ?
             AND (state IN ('new', 'sent') OR (state = 'approving' AND answered_at < ?)) RETURNING id",
            &[at.into(), id.into(), (at - APPROVING_STALE_MS).into()],
        )?;
        Ok(!rows.is_empty())
    }

    /// The claimed proposal's fact is in MEMORY.md: `approved`.
    pub fn approved(&self, id: i64, at: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "UPDATE dream_proposals SET state = 'approved', answered_at = ? WHERE id = ? AND state = 'approving'
             RETURNING id",
            &[at.into(), id.into()],
        )?;
        Ok(!rows.is_empty())
    }

    /// The claimed proposal's fact could not be written: open again, as it was
    /// (`sent` once it has a message, else `new`).
    pub fn unclaim(&self, id: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE dream_proposals SET state = CASE WHEN message_id IS NULL THEN 'new' ELSE 'sent' END,
             answered_at = NULL WHERE id = ? AND state = 'approving'",
            &[id.into()],
        )?;
        Ok(())
    }

    /// Open proposals past their time: now `expired`. Returns them.
    pub fn expire(&self, now: i64) -> Result<Vec<Proposal>, StorageError> {
        let rows = self.sql.exec(
            &format!(
                "UPDATE dream_proposals SET state = 'expired', answered_at = ? WHERE expires_at <= ?
                 AND (state IN ('new', 'sent') OR (state = 'approving' AND answered_at < ?)) RETURNING {PROPOSAL_COLUMNS}"
            ),
            &[now.into(), now.into(), (now - APPROVING_STALE_MS).into()],
        )?;
        Ok(rows.into_iter().filter_map(proposal_of).collect())
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
        let mut rows = self.sql.exec("SELECT value FROM dream_state WHERE key = ?", &[key.into()])?;
        Ok(rows.pop().and_then(|mut r| r.pop()).and_then(SqlValue::into_string))
    }

    pub fn set(&self, key: &str, value: &str) -> Result<(), StorageError> {
        self.sql.exec(
            "INSERT INTO dream_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            &[key.into(), value.into()],
        )?;
        Ok(())
    }

    /// Facts written to MEMORY.md, all time.
    pub fn promoted_total(&self) -> Result<u64, StorageError> {
        Ok(self.get("promoted_total")?.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    pub fn add_promoted(&self, n: u64) -> Result<(), StorageError> {
        self.set("promoted_total", &(self.promoted_total()? + n).to_string())
    }

    /// When the last sweep ran (ms).
    pub fn last_dream_ts(&self) -> Result<Option<i64>, StorageError> {
        Ok(self.get("last_dream_ts")?.and_then(|v| v.parse().ok()))
    }
}
