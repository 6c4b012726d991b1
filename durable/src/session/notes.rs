//! What a session told the user beside the conversation: that the model
//! could not answer, that an answer was stopped before its first word.
//!
//! Not history: the model never reads these (a failure is no reply of its
//! own, and would teach it to apologise for outages). Kept so that a
//! client reading the thread again (the console after a reload) still
//! sees why a question has no answer. Only the current session's notes are
//! kept: a reset starts a new session id, and the notes of the old one go
//! with the next note written.

use crate::ports::{Sql, StorageError};
use crate::protocol::session::SessionNote;
use crate::storage::{col_i64, col_string};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS notes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "notes", statements: &[SCHEMA] };

/// The model could not answer.
pub const ERROR: &str = "error";
/// The answer was stopped before the model wrote anything.
pub const STOPPED: &str = "stopped";

/// Notes kept per session at most (the oldest go).
const KEEP: i64 = 100;

/// Keeps a note of session `session_id`.
pub fn record<S: Sql>(sql: &S, session_id: &str, at: i64, kind: &str, text: &str) -> Result<(), StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    sql.exec_atomic(vec![
        ("DELETE FROM notes WHERE session_id != ?".into(), vec![session_id.into()]),
        (
            "INSERT INTO notes (session_id, at, kind, text) VALUES (?, ?, ?, ?)".into(),
            vec![session_id.into(), at.into(), kind.into(), text.into()],
        ),
        ("DELETE FROM notes WHERE seq <= (SELECT MAX(seq) FROM notes) - ?".into(), vec![KEEP.into()]),
    ])
}

/// The notes of session `session_id`, oldest first.
pub fn list<S: Sql>(sql: &S, session_id: &str) -> Result<Vec<SessionNote>, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec("SELECT at, kind, text FROM notes WHERE session_id = ? ORDER BY seq", &[session_id.into()])?;
    Ok(rows
        .into_iter()
        .map(|mut r| SessionNote { at: col_i64(&r, 0), kind: col_string(&mut r, 1), text: col_string(&mut r, 2) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemSql;

    #[test]
    fn notes_are_the_current_sessions_and_bounded() {
        let sql = MemSql::default();
        assert!(list(&sql, "s1").unwrap().is_empty());
        record(&sql, "s1", 10, ERROR, "The model is not answering.").unwrap();
        record(&sql, "s1", 20, STOPPED, "Stopped.").unwrap();
        let notes = list(&sql, "s1").unwrap();
        assert_eq!(notes.iter().map(|n| (n.at, n.kind.as_str())).collect::<Vec<_>>(), [(10, ERROR), (20, STOPPED)]);
        // A reset: the new session's first note drops the old session's.
        record(&sql, "s2", 30, ERROR, "Down.").unwrap();
        assert!(list(&sql, "s1").unwrap().is_empty());
        for at in 0..(KEEP + 5) {
            record(&sql, "s2", 40 + at, ERROR, "again").unwrap();
        }
        let kept = list(&sql, "s2").unwrap();
        assert_eq!(kept.len() as i64, KEEP);
        assert_eq!(kept.last().unwrap().at, 40 + KEEP + 4, "the newest are kept");
    }
}
