//! The agent's session registry: Session objects report after each drain,
//! so the admin API can list live sessions (Durable Objects cannot be
//! enumerated). One row per session key, kept across resets, with who the
//! session talks with and its last message (for the console's listing).

use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::agent::SessionEntry;
use crate::protocol::session::{LastMessage, SessionTouch};
use crate::storage::{col_i64, col_string};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS sessions (
    session_key TEXT PRIMARY KEY, session_id TEXT, updated_at INTEGER)";
/// Who each session talks with and its last message: a table of its own, so
/// registries made before it need no migration (an `ALTER TABLE` that fails
/// on every call for the tables that have the column).
const LABELS: &str = "CREATE TABLE IF NOT EXISTS session_labels (
    session_key TEXT PRIMARY KEY, title TEXT, last TEXT)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "registry", statements: &[SCHEMA, LABELS] };

pub struct Registry<'a, S: Sql> {
    sql: &'a S,
}

fn text_or_null(v: Option<String>) -> SqlValue {
    v.map(SqlValue::Text).unwrap_or(SqlValue::Null)
}

impl<'a, S: Sql> Registry<'a, S> {
    pub fn new(sql: &'a S) -> Self {
        Registry { sql }
    }

    /// Creates the tables (once per object).
    pub fn init(&self) -> Result<(), StorageError> {
        crate::storage::ensure(self.sql, &TABLES)
    }

    /// Records (or refreshes) a session. A touch without a title or last
    /// message keeps the ones known.
    pub fn touch(&self, t: &SessionTouch) -> Result<(), StorageError> {
        let sid = text_or_null(t.session_id.clone());
        let at = t.updated_at.map(SqlValue::Int).unwrap_or(SqlValue::Null);
        let key = t.session_key.render();
        let mut statements = vec![(
            "INSERT INTO sessions (session_key, session_id, updated_at) VALUES (?, ?, ?)
             ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at"
                .to_owned(),
            vec![key.as_str().into(), sid, at],
        )];
        if t.title.is_some() || t.last.is_some() {
            let last = text_or_null(t.last.as_ref().and_then(|l| serde_json::to_string(l).ok()));
            statements.push((
                "INSERT INTO session_labels (session_key, title, last) VALUES (?, ?, ?)
                 ON CONFLICT(session_key) DO UPDATE SET title = COALESCE(excluded.title, session_labels.title),
                   last = COALESCE(excluded.last, session_labels.last)"
                    .to_owned(),
                vec![key.into(), text_or_null(t.title.clone()), last],
            ));
        }
        self.sql.exec_atomic(statements)
    }

    /// Every session, most recently active first.
    pub fn list(&self) -> Result<Vec<SessionEntry>, StorageError> {
        let rows = self.sql.exec(
            "SELECT s.session_key, s.session_id, s.updated_at, l.title, l.last FROM sessions s
             LEFT JOIN session_labels l ON l.session_key = s.session_key ORDER BY s.updated_at DESC",
            &[],
        )?;
        let take = |r: &mut Vec<SqlValue>, i: usize| {
            r.get_mut(i).and_then(|v| std::mem::replace(v, SqlValue::Null).into_string())
        };
        Ok(rows
            .into_iter()
            .map(|mut r| {
                let updated_at = r.get(2).and_then(SqlValue::as_i64);
                let session_id = take(&mut r, 1);
                let title = take(&mut r, 3);
                let last = take(&mut r, 4).and_then(|j| hearth_json::from_str::<LastMessage>(&j).ok());
                SessionEntry { session_key: col_string(&mut r, 0), session_id, updated_at, title, last }
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

    fn touch(key: &str, at: i64) -> SessionTouch {
        SessionTouch {
            session_key: SessionKey::parse(key).unwrap(),
            session_id: Some(format!("id-{at}")),
            updated_at: Some(at),
            title: None,
            last: None,
        }
    }

    #[test]
    fn sessions_are_listed_newest_first_and_touching_again_updates() {
        let sql = MemSql::default();
        let r = Registry::new(&sql);
        r.init().unwrap();
        r.touch(&touch("agent:main:main", 1)).unwrap();
        r.touch(&touch("agent:main:telegram:dm:7", 2)).unwrap();
        r.touch(&touch("agent:main:main", 3)).unwrap();
        let keys: Vec<_> = r.list().unwrap().into_iter().map(|e| (e.session_key, e.updated_at)).collect();
        assert_eq!(keys, [("agent:main:main".to_owned(), Some(3)), ("agent:main:telegram:dm:7".to_owned(), Some(2))]);
        assert_eq!(r.count().unwrap(), 2);
    }

    #[test]
    fn a_title_and_last_message_are_kept_until_a_touch_brings_new_ones() {
        let sql = MemSql::default();
        // A registry made before labels existed.
        sql.exec(SCHEMA, &[]).unwrap();
        sql.exec("INSERT INTO sessions VALUES ('agent:main:telegram:dm:7', 'old', 1)", &[]).unwrap();
        let r = Registry::new(&sql);
        r.init().unwrap();
        r.init().unwrap();
        assert_eq!(r.list().unwrap()[0].title, None);
        let last = LastMessage { role: "user".into(), text: "Is the tea ready?".into(), at: 5 };
        r.touch(&SessionTouch {
            title: Some("Ana".into()),
            last: Some(last.clone()),
            ..touch("agent:main:telegram:dm:7", 5)
        })
        .unwrap();
        r.touch(&touch("agent:main:telegram:dm:7", 6)).unwrap();
        let e = &r.list().unwrap()[0];
        assert_eq!((e.title.as_deref(), e.last.as_ref(), e.updated_at), (Some("Ana"), Some(&last), Some(6)));
    }
}
