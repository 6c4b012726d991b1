//! The session's history as the object last read it, kept between turns so
//! a warm turn reads from SQLite only the rows added since (and parses only
//! those), not the whole conversation. SQLite stays the only truth: before
//! each use the cache compares the table's span with what it holds, drops the
//! rows a compaction removed, and reads the new ones; anything else (a reset,
//! a cleared heartbeat run, another session id) makes it read the table whole.

use super::live::Replay;
use super::store::SessionStore;
use crate::ports::{Sql, StorageError};
use r2_layout::Message;

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
