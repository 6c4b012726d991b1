//! One store's conversation index over the Agent object's SQLite.
//!
//! ```sql
//! conv_session    (store, ord, session_id, session_key, channel)       -- dense ord per store
//! conv_turn       (id, store, ord, at, speaker, channel, text, reply)  -- the exchanges (the "log")
//! conv_source     (store, source, added)                               -- batches already added
//! conv_checkpoint (store, seq, chunk)                                  -- the index, ≤ 1 MiB chunks
//! ```
//!
//! The exchanges' rows are the truth; the checkpoint is a shortcut. A load reads the
//! checkpoint and re-indexes the rows added after it (what `last_id` does not cover);
//! a missing or damaged checkpoint means a re-index of every row, never lost text.
//! A batch's rows, its session and its source mark go in one atomic write, and the RAM
//! index changes only after it: a failed write leaves both as they were, and a batch
//! sent twice (a reset retried after a lost reply) is added once.

use super::exchanges::indexed_text;
use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::memory::{ConversationHitView, ConversationSource, Exchange};
use hearth_memory::conversation::{Ranking, SessionOrd, TurnId, CONTEXT};
use hearth_memory::{ConversationHit, ConversationIndex, ConversationQuery, TurnDoc};
use std::collections::HashMap;
use std::rc::Rc;

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS conv_session (store TEXT NOT NULL, ord INTEGER NOT NULL, session_id TEXT NOT NULL, session_key TEXT NOT NULL, channel TEXT NOT NULL, PRIMARY KEY (store, ord))",
    "CREATE UNIQUE INDEX IF NOT EXISTS conv_session_id ON conv_session (store, session_id)",
    "CREATE TABLE IF NOT EXISTS conv_turn (id INTEGER PRIMARY KEY, store TEXT NOT NULL, ord INTEGER NOT NULL, at INTEGER NOT NULL, speaker TEXT NOT NULL, channel TEXT NOT NULL, text TEXT NOT NULL, reply TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS conv_turn_store ON conv_turn (store, id)",
    "CREATE INDEX IF NOT EXISTS conv_turn_session ON conv_turn (store, ord, id)",
    "CREATE TABLE IF NOT EXISTS conv_source (store TEXT NOT NULL, source TEXT NOT NULL, added INTEGER NOT NULL, PRIMARY KEY (store, source))",
    "CREATE INDEX IF NOT EXISTS conv_source_any ON conv_source (source)",
    "CREATE TABLE IF NOT EXISTS conv_checkpoint (store TEXT NOT NULL, seq INTEGER NOT NULL, chunk BLOB NOT NULL, PRIMARY KEY (store, seq))",
];
/// [`SCHEMA`], created once per object.
pub const TABLES: crate::storage::Schema = crate::storage::Schema { name: "conversations", statements: SCHEMA };

/// Exchanges added since the checkpoint after which maintenance writes a new one: a
/// cold load re-indexes at most about this many from their text (a few ms).
pub const CHECKPOINT_AFTER: u64 = 2_000;
/// Rows a load re-indexes per query (bounds one result's size).
const LOAD_PAGE: i64 = 2_000;
/// Characters of a hit's exchange, and of each neighbour, that a search returns.
pub const HIT_CHARS: usize = 1_200;
pub const CONTEXT_CHARS: usize = 400;

/// The stores that have conversations.
pub fn stores<S: Sql + ?Sized>(sql: &S) -> Result<Vec<String>, StorageError> {
    let rows = sql.exec("SELECT DISTINCT store FROM conv_session ORDER BY store", &[])?;
    Ok(rows.into_iter().filter_map(|r| r.first().and_then(SqlValue::as_str).map(str::to_owned)).collect())
}

/// Whether `store` has any conversation (without loading it).
pub fn has_conversations<S: Sql + ?Sized>(sql: &S, store: &str) -> Result<bool, StorageError> {
    Ok(!sql.exec("SELECT 1 FROM conv_session WHERE store = ? LIMIT 1", &[store.into()])?.is_empty())
}

/// One store's conversations: the index in RAM, the text in SQLite.
pub struct Conversations<S: Sql> {
    sql: Rc<S>,
    store: String,
    index: ConversationIndex,
    /// Exchanges indexed since the stored checkpoint (what the next load re-indexes).
    pending: u64,
    /// [`Self::pending`] when maintenance last looked: unchanged since means the store
    /// has settled, and its checkpoint can catch up.
    pub(super) pending_when_looked: u64,
}

fn int(v: Option<&SqlValue>) -> i64 {
    v.and_then(SqlValue::as_i64).unwrap_or(0)
}

fn text(v: Option<&SqlValue>) -> String {
    v.and_then(SqlValue::as_str).unwrap_or_default().to_owned()
}

/// The exchange of a `SELECT id, ord, at, speaker, channel, text, reply` row.
fn exchange_of(row: &[SqlValue]) -> Exchange {
    Exchange {
        at: int(row.get(2)),
        speaker: text(row.get(3)),
        channel: text(row.get(4)),
        text: text(row.get(5)),
        reply: text(row.get(6)),
    }
}

fn shortened(mut e: Exchange, chars: usize) -> Exchange {
    e.text = crate::text::truncate_chars(&e.text, chars);
    e.reply = crate::text::truncate_chars(&e.reply, chars);
    e
}

impl<S: Sql> Conversations<S> {
    /// Loads `store`: its checkpoint, then the exchanges added after it. The schema
    /// exists ([`SCHEMA`]).
    pub fn open(sql: Rc<S>, store: &str) -> Result<Self, StorageError> {
        let chunks = sql.exec("SELECT chunk FROM conv_checkpoint WHERE store = ? ORDER BY seq", &[store.into()])?;
        let mut buffer = Vec::new();
        for row in &chunks {
            if let Some(SqlValue::Blob(b)) = row.first() {
                buffer.extend_from_slice(b);
            }
        }
        // A damaged checkpoint costs a re-index from the rows, never an error.
        let index = if buffer.is_empty() {
            ConversationIndex::new()
        } else {
            ConversationIndex::from_checkpoint(buffer).unwrap_or_default()
        };
        let mut me = Conversations { sql, store: store.to_owned(), index, pending: 0, pending_when_looked: 0 };
        me.catch_up()?;
        Ok(me)
    }

    /// Indexes the rows the RAM index does not cover yet.
    fn catch_up(&mut self) -> Result<(), StorageError> {
        loop {
            let rows = self.sql.exec(
                "SELECT id, ord, at, speaker, channel, text, reply FROM conv_turn WHERE store = ? AND id > ? ORDER BY id LIMIT ?",
                &[self.store.as_str().into(), SqlValue::Int(self.index.last_id() as i64), SqlValue::Int(LOAD_PAGE)],
            )?;
            if rows.is_empty() {
                return Ok(());
            }
            let texts: Vec<(TurnId, SessionOrd, i64, String)> = rows
                .iter()
                .map(|r| {
                    (
                        int(r.first()) as TurnId,
                        int(r.get(1)) as SessionOrd,
                        int(r.get(2)),
                        indexed_text(&exchange_of(r)),
                    )
                })
                .collect();
            let docs: Vec<TurnDoc<'_>> = texts
                .iter()
                .map(|(id, session, at, text)| TurnDoc { id: *id, session: *session, at: *at, text })
                .collect();
            self.index.add(&docs).map_err(|e| StorageError(e.to_string()))?;
            self.pending += docs.len() as u64;
        }
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Adds a batch once per `from.source`; returns how many exchanges were added.
    pub fn add(&mut self, from: &ConversationSource, exchanges: &[Exchange], now: i64) -> Result<usize, StorageError> {
        let store: SqlValue = self.store.as_str().into();
        let done = self.sql.exec(
            "SELECT 1 FROM conv_source WHERE store = ? AND source = ?",
            &[store.clone(), from.source.as_str().into()],
        )?;
        if !done.is_empty() {
            return Ok(0);
        }
        let mut statements: Vec<(String, Vec<SqlValue>)> = Vec::new();
        let ord = match self
            .sql
            .exec(
                "SELECT ord FROM conv_session WHERE store = ? AND session_id = ?",
                &[store.clone(), from.session_id.as_str().into()],
            )?
            .first()
        {
            Some(row) => int(row.first()) as SessionOrd,
            None => {
                let next = self.sql.exec(
                    "SELECT COALESCE(MAX(ord) + 1, 0) FROM conv_session WHERE store = ?",
                    std::slice::from_ref(&store),
                )?;
                let ord = int(next.first().and_then(|r| r.first())) as SessionOrd;
                if !exchanges.is_empty() {
                    statements.push((
                        "INSERT INTO conv_session (store, ord, session_id, session_key, channel) VALUES (?, ?, ?, ?, ?)".into(),
                        vec![
                            store.clone(),
                            SqlValue::Int(i64::from(ord)),
                            from.session_id.as_str().into(),
                            from.session_key.as_str().into(),
                            from.channel.as_str().into(),
                        ],
                    ));
                }
                ord
            }
        };
        let first = self.sql.exec("SELECT COALESCE(MAX(id), 0) + 1 FROM conv_turn", &[])?;
        // Ids are global (one table) and increase per store as the index wants.
        let first = (int(first.first().and_then(|r| r.first())) as TurnId).max(self.index.last_id() + 1);
        for (i, e) in exchanges.iter().enumerate() {
            statements.push((
                "INSERT INTO conv_turn (id, store, ord, at, speaker, channel, text, reply) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    .into(),
                vec![
                    SqlValue::Int((first + i as u64) as i64),
                    store.clone(),
                    SqlValue::Int(i64::from(ord)),
                    SqlValue::Int(e.at),
                    e.speaker.as_str().into(),
                    if e.channel.is_empty() { from.channel.as_str() } else { e.channel.as_str() }.into(),
                    e.text.as_str().into(),
                    e.reply.as_str().into(),
                ],
            ));
        }
        statements.push((
            "INSERT INTO conv_source (store, source, added) VALUES (?, ?, ?)".into(),
            vec![store, from.source.as_str().into(), SqlValue::Int(now)],
        ));
        self.sql.exec_atomic(statements)?;
        let texts: Vec<String> = exchanges.iter().map(indexed_text).collect();
        let docs: Vec<TurnDoc<'_>> = exchanges
            .iter()
            .zip(&texts)
            .enumerate()
            .map(|(i, (e, text))| TurnDoc { id: first + i as u64, session: ord, at: e.at, text })
            .collect();
        // The rows are written: an index refusal (never expected) is repaired by the
        // next load, which re-indexes from them.
        if let Err(e) = self.index.add(&docs) {
            return Err(StorageError(format!("conversation index: {e}")));
        }
        self.pending += exchanges.len() as u64;
        Ok(exchanges.len())
    }

    /// The best `q.k` exchanges by `ranking`, each with its session and up to
    /// [`CONTEXT`] exchanges each side: the rows in one read (the index knows each
    /// hit's neighbours), the sessions in another; only a hit at the edge of a batch
    /// asks for more of its session on its own.
    pub fn search(
        &self,
        q: &ConversationQuery<'_>,
        ranking: &Ranking,
    ) -> Result<Vec<ConversationHitView>, StorageError> {
        self.views(self.index.search_with(q, ranking))
    }

    /// The exchange per-turn recall brings for `text` (see [`ConversationIndex::recall`]).
    pub fn recall(&self, text: &str, ranking: &Ranking) -> Result<Vec<ConversationHitView>, StorageError> {
        self.views(self.index.recall(text, ranking).into_iter().collect())
    }

    fn views(&self, hits: Vec<ConversationHit>) -> Result<Vec<ConversationHitView>, StorageError> {
        const COLUMNS: &str = "SELECT id, ord, at, speaker, channel, text, reply FROM conv_turn";
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let store: SqlValue = self.store.as_str().into();
        let mut ids: Vec<TurnId> =
            hits.iter().flat_map(|h| h.before.iter().chain([&h.id]).chain(&h.after)).copied().collect();
        crate::order::sort(&mut ids);
        ids.dedup();
        let marks = vec!["?"; ids.len()].join(",");
        let params: Vec<SqlValue> = ids.iter().map(|&id| SqlValue::Int(id as i64)).collect();
        let rows: HashMap<TurnId, Exchange> = self
            .sql
            .exec(&format!("{COLUMNS} WHERE id IN ({marks})"), &params)?
            .iter()
            .map(|r| (int(r.first()) as TurnId, exchange_of(r)))
            .collect();
        let mut ords: Vec<SessionOrd> = hits.iter().map(|h| h.session).collect();
        crate::order::sort(&mut ords);
        ords.dedup();
        let marks = vec!["?"; ords.len()].join(",");
        let mut params = vec![store.clone()];
        params.extend(ords.iter().map(|&o| SqlValue::Int(i64::from(o))));
        let sessions: HashMap<SessionOrd, (String, String, String)> = self
            .sql
            .exec(
                &format!("SELECT ord, session_id, session_key, channel FROM conv_session WHERE store = ? AND ord IN ({marks})"),
                &params,
            )?
            .iter()
            .map(|r| (int(r.first()) as SessionOrd, (text(r.get(1)), text(r.get(2)), text(r.get(3)))))
            .collect();
        // A session's exchanges across a batch edge (a compaction's part, then the
        // reset) are in the same session but not beside each other in the index.
        let beyond =
            |session: SessionOrd, from: TurnId, after: bool, n: usize| -> Result<Vec<Exchange>, StorageError> {
                let order = if after { "id > ? ORDER BY id" } else { "id < ? ORDER BY id DESC" };
                let found = self.sql.exec(
                    &format!("{COLUMNS} WHERE store = ? AND ord = ? AND {order} LIMIT ?"),
                    &[
                        store.clone(),
                        SqlValue::Int(i64::from(session)),
                        SqlValue::Int(from as i64),
                        SqlValue::Int(n as i64),
                    ],
                )?;
                Ok(found.iter().map(|r| exchange_of(r)).collect())
            };
        let known = |ids: &[TurnId]| ids.iter().filter_map(|id| rows.get(id).cloned()).collect::<Vec<_>>();
        let mut out = Vec::with_capacity(hits.len());
        for hit in &hits {
            let Some(exchange) = rows.get(&hit.id).cloned() else { continue };
            let mut before = known(&hit.before);
            if before.len() < CONTEXT {
                let from = hit.before.first().copied().unwrap_or(hit.id);
                let mut more = beyond(hit.session, from, false, CONTEXT - before.len())?;
                more.reverse();
                more.append(&mut before);
                before = more;
            }
            let mut after = known(&hit.after);
            if after.len() < CONTEXT {
                let from = hit.after.last().copied().unwrap_or(hit.id);
                after.extend(beyond(hit.session, from, true, CONTEXT - after.len())?);
            }
            let (session_id, session_key, channel) = sessions.get(&hit.session).cloned().unwrap_or_default();
            out.push(ConversationHitView {
                store: self.store.clone(),
                session_id,
                session_key,
                channel,
                score: hit.score,
                match_share: hit.match_share,
                window_share: hit.window_share,
                exchange: shortened(exchange, HIT_CHARS),
                before: before.into_iter().map(|e| shortened(e, CONTEXT_CHARS)).collect(),
                after: after.into_iter().map(|e| shortened(e, CONTEXT_CHARS)).collect(),
            });
        }
        Ok(out)
    }

    /// Exchanges added since the stored checkpoint.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Writes the index as the store's checkpoint (atomically replacing the old one),
    /// then loads the RAM index from it: what was added since the last load becomes
    /// compact, decoded-on-read postings again.
    pub fn checkpoint(&mut self) -> Result<(), StorageError> {
        let chunks = self.index.checkpoint();
        let store: SqlValue = self.store.as_str().into();
        let mut statements = vec![("DELETE FROM conv_checkpoint WHERE store = ?".to_owned(), vec![store.clone()])];
        for (seq, chunk) in chunks.iter().enumerate() {
            statements.push((
                "INSERT INTO conv_checkpoint (store, seq, chunk) VALUES (?, ?, ?)".into(),
                vec![store.clone(), SqlValue::Int(seq as i64), SqlValue::Blob(chunk.clone())],
            ));
        }
        self.sql.exec_atomic(statements)?;
        if let Ok(rebased) = ConversationIndex::from_checkpoint(chunks.concat()) {
            self.index = rebased;
        }
        self.pending = 0;
        Ok(())
    }
}
