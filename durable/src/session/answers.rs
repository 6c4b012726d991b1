//! Answers to messages asked over HTTP (the `api` channel: Hearth's MCP
//! server, the HTTP API). There is no chat to send them to, so the channel
//! keeps each reply in the session's SQLite under the message's request id
//! (its `dedupe_key`, carried in the reply target's `extra`), and the caller
//! collects them with [`crate::protocol::session::ANSWER_PATH`] once the
//! message's turn is done.

use crate::ports::{Sql, StorageError};
use crate::protocol::session::{AnswerReply, AnswerState};
use crate::storage::col_string;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS api_answers (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    at INTEGER NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "api_answers", statements: &[SCHEMA] };

/// How long an answer waits to be collected.
pub const RETENTION_MS: i64 = 24 * 3600 * 1000;

/// Keeps a reply to `request`; answers older than [`RETENTION_MS`] go.
pub fn record<S: Sql>(sql: &S, request: &str, text: &str, now: i64) -> Result<(), StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    sql.exec_atomic(vec![
        ("DELETE FROM api_answers WHERE at < ?".into(), vec![(now - RETENTION_MS).into()]),
        (
            "INSERT INTO api_answers (request, text, at) VALUES (?, ?, ?)".into(),
            vec![request.into(), text.into(), now.into()],
        ),
    ])
}

/// Where `request` stands in the session's queue, and its replies so far.
pub fn answer<S: Sql>(sql: &S, request: &str) -> Result<AnswerReply, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let mut rows = sql.exec("SELECT state FROM inbox WHERE dedupe_key = ?", &[request.into()])?;
    let state = match rows.pop().map(|mut r| col_string(&mut r, 0)).as_deref() {
        None => AnswerState::Unknown,
        Some("pending") => AnswerState::Queued,
        Some("active") => AnswerState::Running,
        Some(_) => AnswerState::Done,
    };
    let texts = sql
        .exec("SELECT text FROM api_answers WHERE request = ? ORDER BY seq", &[request.into()])?
        .into_iter()
        .map(|mut r| col_string(&mut r, 0))
        .collect();
    Ok(AnswerReply { state, texts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::store::SessionStore;
    use crate::testing::MemSql;

    #[test]
    fn an_answer_is_collected_once_its_turn_is_done() {
        let sql = MemSql::default();
        let store = SessionStore::new(&sql);
        store.init().unwrap();
        assert_eq!(answer(&sql, "mcp:1").unwrap().state, AnswerState::Unknown);
        store.enqueue("mcp:1", "{}", 0).unwrap();
        assert_eq!(answer(&sql, "mcp:1").unwrap().state, AnswerState::Queued);
        let item = store.next_open().unwrap().unwrap();
        store.start(item.seq, "s", None).unwrap();
        assert_eq!(answer(&sql, "mcp:1").unwrap().state, AnswerState::Running);
        record(&sql, "mcp:1", "Hello.", 10).unwrap();
        record(&sql, "mcp:2", "Someone else's.", 10).unwrap();
        store.finish(item.seq, 11).unwrap();
        assert_eq!(
            answer(&sql, "mcp:1").unwrap(),
            AnswerReply { state: AnswerState::Done, texts: vec!["Hello.".into()] }
        );
        // A day later the old answers are gone.
        record(&sql, "mcp:3", "New.", 10 + RETENTION_MS + 1).unwrap();
        assert!(answer(&sql, "mcp:1").unwrap().texts.is_empty());
    }
}
