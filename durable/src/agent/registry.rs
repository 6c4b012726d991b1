//! The agent's session registry: Session objects report after each drain,
//! so the admin API can list live sessions (Durable Objects cannot be
//! enumerated). One row per session key, kept across resets.

use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::agent::SessionEntry;
use crate::protocol::session::SessionTouch;
use crate::storage::{col_i64, col_string};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS sessions (
    session_key TEXT PRIMARY KEY, session_id TEXT, updated_at INTEGER)";

pub struct Registry<'a, S: Sql> {
    sql: &'a S,
}

impl<'a, S: Sql> Registry<'a, S> {
    pub fn new(sql: &'a S) -> Self {
        Registry { sql }
    }

    pub fn init(&self) -> Result<(), StorageError> {
        self.sql.exec(SCHEMA, &[]).map(|_| ())
    }

    /// Records (or refreshes) a session.
    pub fn touch(&self, t: &SessionTouch) -> Result<(), StorageError> {
        let sid = t.session_id.clone().map(SqlValue::Text).unwrap_or(SqlValue::Null);
        let at = t.updated_at.map(SqlValue::Int).unwrap_or(SqlValue::Null);
        self.sql.exec(
            "INSERT INTO sessions (session_key, session_id, updated_at) VALUES (?, ?, ?)
             ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
            &[t.session_key.render().into(), sid, at],
        )?;
        Ok(())
    }

    /// Every session, most recently active first.
    pub fn list(&self) -> Result<Vec<SessionEntry>, StorageError> {
        let rows =
            self.sql.exec("SELECT session_key, session_id, updated_at FROM sessions ORDER BY updated_at DESC", &[])?;
        Ok(rows
            .into_iter()
            .map(|mut r| {
                let updated_at = r.get(2).and_then(SqlValue::as_i64);
                let session_id = r.get_mut(1).and_then(|v| std::mem::replace(v, SqlValue::Null).into_string());
                SessionEntry { session_key: col_string(&mut r, 0), session_id, updated_at }
            })
            .collect())
    }

    /// How many sessions the agent has had (its conversations).
    pub fn count(&self) -> Result<u64, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM sessions", &[])?;
        Ok(rows.first().map(|r| col_i64(r, 0).max(0) as u64).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::SessionKey;
    use crate::testing::MemSql;

    #[test]
    fn sessions_are_listed_newest_first_and_touching_again_updates() {
        let sql = MemSql::default();
        let r = Registry::new(&sql);
        r.init().unwrap();
        let touch = |key: &str, at: i64| SessionTouch {
            session_key: SessionKey::parse(key).unwrap(),
            session_id: Some(format!("id-{at}")),
            updated_at: Some(at),
        };
        r.touch(&touch("agent:main:main", 1)).unwrap();
        r.touch(&touch("agent:main:telegram:dm:7", 2)).unwrap();
        r.touch(&touch("agent:main:main", 3)).unwrap();
        let keys: Vec<_> = r.list().unwrap().into_iter().map(|e| (e.session_key, e.updated_at)).collect();
        assert_eq!(keys, [("agent:main:main".to_owned(), Some(3)), ("agent:main:telegram:dm:7".to_owned(), Some(2))]);
        assert_eq!(r.count().unwrap(), 2);
    }
}
