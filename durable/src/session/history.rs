//! The session's history as the object last read it, kept between turns so
//! a warm turn reads from SQLite only the rows added since (and parses only
//! those), not the whole conversation. SQLite stays the only truth: before
//! each use the cache compares the table's span with what it holds, drops the
//! rows a compaction removed, and reads the new ones; anything else (a reset,
//! a cleared heartbeat run, another session id) makes it read the table whole.
//!
//! Beside the rows it keeps the conversation paired from them ([`Replay`]),
//! which `live` lends to a turn.

use super::store::{CompactMarker, SessionStore};
use crate::llm::rules::pair_tool_calls;
use crate::ports::{Sql, StorageError};
use r2_layout::keys::ARCHIVE_SUFFIX;
use r2_layout::Message;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rows of one session id, in order: `(seq, message)`.
#[derive(Debug, Default)]
pub struct HistoryCache {
    session_id: String,
    rows: Vec<(i64, Message)>,
    /// Rows of the table that do not parse (skipped, as the store does).
    unreadable: i64,
    /// Rows read from SQLite since the object started (tests and the bench).
    pub rows_read: u64,
    /// Bumped whenever the rows change other than by an append: what was
    /// built from them ([`Replay`]) is then built afresh.
    epoch: u64,
    /// The conversation paired from these rows (out while a turn has it).
    pub(super) replay: Option<Replay>,
}

impl HistoryCache {
    /// The rows of `session_id`, brought up to date with SQLite.
    pub fn rows<S: Sql>(
        &mut self,
        store: &SessionStore<'_, S>,
        session_id: &str,
    ) -> Result<&[(i64, Message)], StorageError> {
        if self.session_id != session_id {
            self.session_id = session_id.to_owned();
            self.rows.clear();
            self.unreadable = 0;
            self.epoch += 1;
        }
        let span = store.history_span(session_id)?;
        match span.first {
            // A compaction removed the oldest rows.
            Some(first) => {
                let gone = self.rows.partition_point(|(seq, _)| *seq < first);
                if gone > 0 {
                    self.rows.drain(..gone);
                    self.epoch += 1;
                }
            }
            None => {
                if !self.rows.is_empty() {
                    self.rows.clear();
                    self.epoch += 1;
                }
            }
        }
        let cached_last = self.rows.last().map(|(seq, _)| *seq);
        if span.last > cached_last {
            let (new, unreadable) = store.history_rows_after(session_id, cached_last.unwrap_or(0))?;
            self.rows_read += (new.len() as i64 + unreadable) as u64;
            self.rows.extend(new);
            self.unreadable += unreadable;
        }
        let consistent = self.rows.len() as i64 + self.unreadable == span.count
            && (self.rows.is_empty() || self.rows.first().map(|(seq, _)| *seq) >= span.first);
        if !consistent {
            let (all, unreadable) = store.history_rows_after(session_id, 0)?;
            self.rows_read += (all.len() as i64 + unreadable) as u64;
            self.rows = all;
            self.unreadable = unreadable;
            self.epoch += 1;
        }
        Ok(&self.rows)
    }

    /// The rows as last brought up to date by [`Self::rows`].
    pub(super) fn cached_rows(&self) -> &[(i64, Message)] {
        &self.rows
    }

    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Forgets everything (the next use reads the table whole).
    pub fn clear(&mut self) {
        self.session_id.clear();
        self.rows.clear();
        self.unreadable = 0;
        self.epoch += 1;
        self.replay = None;
    }
}

/// The paired conversation and what is known of each message.
#[derive(Debug)]
pub struct Replay {
    pub(super) session_id: String,
    /// The cache's epoch it was built in (see [`HistoryCache::epoch`]).
    pub(super) epoch: u64,
    pub(super) summary: Option<CompactMarker>,
    /// Rows of the cache paired so far, and the number of the last of them.
    pub(super) rows_used: usize,
    pub(super) last_seq: Option<i64>,
    /// Where the last part starts that a new row can change: its first row
    /// (a user or assistant message, or the first row) and first message.
    pub(super) seg_row: usize,
    pub(super) seg_msg: usize,
    pub(super) messages: Vec<Message>,
    /// Each message's text tokens ([`super::context::text_tokens`]) and their sum.
    pub(super) tokens: Vec<u64>,
    pub(super) total: u64,
    /// Each message's stamp ([`crate::llm::ChatRequest::stamps`]).
    pub(super) stamps: Vec<u64>,
}

/// The next stamp: one counter for the object, so a stamp never names two
/// messages, whichever cache or replay made them.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

impl Replay {
    pub(super) fn new(session_id: &str, epoch: u64, summary: Option<CompactMarker>) -> Self {
        let mut r = Replay {
            session_id: session_id.to_owned(),
            epoch,
            summary: None,
            rows_used: 0,
            last_seq: None,
            seg_row: 0,
            seg_msg: 0,
            messages: Vec::new(),
            tokens: Vec::new(),
            total: 0,
            stamps: Vec::new(),
        };
        if let Some(marker) = &summary {
            r.push(summary_message(marker));
        }
        r.seg_msg = r.messages.len();
        r.summary = summary;
        r
    }

    /// Whether it still stands for `rows` of `session_id` after `summary`
    /// (rows only added since it was built).
    pub(super) fn follows(
        &self,
        session_id: &str,
        epoch: u64,
        summary: &Option<CompactMarker>,
        rows: &[(i64, Message)],
    ) -> bool {
        self.session_id == session_id
            && self.epoch == epoch
            && self.summary == *summary
            && self.rows_used <= rows.len()
            && self.last_seq == self.rows_used.checked_sub(1).map(|i| rows[i].0)
    }

    pub(super) fn push(&mut self, m: Message) {
        let t = super::context::text_tokens(&m);
        self.total += t;
        self.tokens.push(t);
        self.stamps.push(NEXT_STAMP.fetch_add(1, Ordering::Relaxed));
        self.messages.push(m);
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.total -= self.tokens[len.min(self.tokens.len())..].iter().sum::<u64>();
        self.tokens.truncate(len);
        self.stamps.truncate(len);
        self.messages.truncate(len);
    }

    /// Pairs the rows added since, re-pairing only the last part.
    pub(super) fn catch_up(&mut self, rows: &[(i64, Message)]) {
        if self.rows_used == rows.len() {
            return;
        }
        let start = self.seg_row;
        self.truncate(self.seg_msg);
        let last = (start..rows.len())
            .rev()
            .find(|&i| matches!(rows[i].1, Message::User { .. } | Message::Assistant { .. }))
            .unwrap_or(start);
        let owned = |part: &[(i64, Message)]| part.iter().map(|(_, m)| m.clone()).collect();
        for m in pair_tool_calls(owned(&rows[start..last])) {
            self.push(m);
        }
        self.seg_row = last;
        self.seg_msg = self.messages.len();
        for m in pair_tool_calls(owned(&rows[last..])) {
            self.push(m);
        }
        self.rows_used = rows.len();
        self.last_seq = rows.last().map(|(seq, _)| *seq);
    }
}

/// The message that stands for the compacted part. It names what the model
/// can fetch: the memory entry (by `memory_get`), or the part archive when the
/// memory could not take the summary.
pub fn summary_message(marker: &CompactMarker) -> Message {
    let source = if marker.archive_name.ends_with(ARCHIVE_SUFFIX) {
        format!("the compacted messages are archived as {}", marker.archive_name)
    } else {
        format!(
            "kept in memory as the archive entry '{}': memory_get fetches it by that name, memory_search finds earlier ones",
            marker.archive_name
        )
    };
    Message::user_text(
        format!("[Summary of our earlier conversation, {source}]\n{}", marker.summary),
        marker.archived_at,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemSql;

    fn store_with(sql: &MemSql, n: i64) -> SessionStore<'_, MemSql> {
        let store = SessionStore::new(sql);
        store.init().unwrap();
        for i in 0..n {
            store.append("s", &Message::user_text(format!("m{i}"), i)).unwrap();
        }
        store
    }

    fn texts(rows: &[(i64, Message)]) -> Vec<String> {
        rows.iter().map(|(_, m)| m.text()).collect()
    }

    #[test]
    fn a_warm_read_takes_only_the_new_rows() {
        let sql = MemSql::default();
        let store = store_with(&sql, 3);
        let mut cache = HistoryCache::default();
        assert_eq!(texts(cache.rows(&store, "s").unwrap()), ["m0", "m1", "m2"]);
        assert_eq!(cache.rows_read, 3);
        store.append("s", &Message::user_text("m3", 3)).unwrap();
        assert_eq!(texts(cache.rows(&store, "s").unwrap()), ["m0", "m1", "m2", "m3"]);
        assert_eq!(cache.rows_read, 4, "one new row read, not four");
        cache.rows(&store, "s").unwrap();
        assert_eq!(cache.rows_read, 4, "nothing new, nothing read");
    }

    #[test]
    fn compaction_clear_and_another_session_are_followed() {
        let sql = MemSql::default();
        let store = store_with(&sql, 4);
        let mut cache = HistoryCache::default();
        let rows = cache.rows(&store, "s").unwrap().to_vec();
        let marker =
            crate::session::store::CompactMarker { archive_name: "a".into(), archived_at: 9, summary: "sum".into() };
        store.record_compaction(&marker, "s", rows[1].0).unwrap();
        assert_eq!(texts(cache.rows(&store, "s").unwrap()), ["m2", "m3"]);
        store.clear_history("s").unwrap();
        assert!(cache.rows(&store, "s").unwrap().is_empty());
        store.append("t", &Message::user_text("other", 1)).unwrap();
        assert_eq!(texts(cache.rows(&store, "t").unwrap()), ["other"]);
    }

    #[test]
    fn an_unreadable_row_is_skipped_without_rereading_every_turn() {
        let sql = MemSql::default();
        let store = store_with(&sql, 2);
        sql.exec("INSERT INTO history (session_id, message) VALUES ('s', 'not json')", &[]).unwrap();
        store.append("s", &Message::user_text("m3", 3)).unwrap();
        let mut cache = HistoryCache::default();
        assert_eq!(texts(cache.rows(&store, "s").unwrap()), ["m0", "m1", "m3"]);
        let read = cache.rows_read;
        cache.rows(&store, "s").unwrap();
        assert_eq!(cache.rows_read, read, "the bad row does not force a full read");
    }
}
