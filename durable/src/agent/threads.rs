//! The HTTP API's threads of an agent (`/api/agents/{id}/memory/threads`):
//! the API sessions in the registry (every thread that had a message), and
//! the threads created ahead with a title.

use super::registry::Registry;
use crate::inbound::SessionKey;
use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::agent::{ThreadCreate, ThreadRow};
use crate::storage::col_i64;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS api_threads (
    session_key TEXT PRIMARY KEY, title TEXT, resource_id TEXT, created_at INTEGER NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "api_threads", statements: &[SCHEMA] };

fn text(v: Option<&SqlValue>) -> Option<String> {
    v.and_then(SqlValue::as_str).map(str::to_owned)
}

/// Creates a thread; `None` when it exists (it was created or used before).
pub fn create<S: Sql>(sql: &S, req: &ThreadCreate) -> Result<Option<ThreadRow>, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let key = req.session_key.render();
    let registry = Registry::new(sql);
    registry.init()?;
    let known = sql.exec("SELECT 1 FROM api_threads WHERE session_key = ?", &[key.as_str().into()])?;
    let used = registry.list()?.into_iter().any(|e| e.session_key == key);
    if !known.is_empty() || used {
        return Ok(None);
    }
    let opt = |v: &Option<String>| v.clone().map(SqlValue::Text).unwrap_or(SqlValue::Null);
    sql.exec(
        "INSERT INTO api_threads (session_key, title, resource_id, created_at) VALUES (?, ?, ?, ?)",
        &[key.as_str().into(), opt(&req.title), opt(&req.resource_id), req.created_at.into()],
    )?;
    Ok(Some(ThreadRow {
        session_key: req.session_key.clone(),
        title: req.title.clone(),
        resource_id: req.resource_id.clone(),
        created_at: Some(req.created_at),
        updated_at: None,
    }))
}

/// Every API thread and the main session, most recently active first.
pub fn list<S: Sql>(sql: &S) -> Result<Vec<ThreadRow>, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let registry = Registry::new(sql);
    registry.init()?;
    let mut rows: Vec<ThreadRow> = Vec::new();
    for r in sql.exec("SELECT session_key, title, resource_id, created_at FROM api_threads", &[])? {
        let Some(key) = text(r.first()).as_deref().and_then(SessionKey::parse) else { continue };
        rows.push(ThreadRow {
            session_key: key,
            title: text(r.get(1)),
            resource_id: text(r.get(2)),
            created_at: Some(col_i64(&r, 3)),
            updated_at: None,
        });
    }
    for entry in registry.list()? {
        let Some(key) = entry.key() else { continue };
        if !matches!(key, SessionKey::Api { .. } | SessionKey::Main(_)) {
            continue;
        }
        match rows.iter_mut().find(|r| r.session_key == key) {
            Some(row) => row.updated_at = entry.updated_at,
            None => rows.push(ThreadRow {
                session_key: key,
                title: None,
                resource_id: None,
                created_at: None,
                updated_at: entry.updated_at,
            }),
        }
    }
    crate::order::sort_by_key(&mut rows, |r| std::cmp::Reverse(r.updated_at.or(r.created_at).unwrap_or(0)));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::session::SessionTouch;
    use crate::testing::MemSql;

    #[test]
    fn created_and_used_threads_are_listed_once_newest_first() {
        let sql = MemSql::default();
        let key = |k: &str| SessionKey::parse(k).unwrap();
        let create = |k: &str, at: i64| ThreadCreate {
            session_key: key(k),
            title: Some(format!("title {k}")),
            resource_id: None,
            created_at: at,
        };
        assert!(create_ok(&sql, &create("agent:main:api:plans", 1)));
        assert!(!create_ok(&sql, &create("agent:main:api:plans", 2)), "exists");
        let registry = Registry::new(&sql);
        for (k, at) in [("agent:main:api:plans", 50), ("agent:main:api:used", 40), ("agent:main:telegram:dm:7", 60)] {
            registry
                .touch(&SessionTouch {
                    session_key: key(k),
                    session_id: None,
                    updated_at: Some(at),
                    title: None,
                    last: None,
                })
                .unwrap();
        }
        assert!(!create_ok(&sql, &create("agent:main:api:used", 3)), "used threads exist too");
        let rows = list(&sql).unwrap();
        let keys: Vec<String> = rows.iter().map(|r| r.session_key.render()).collect();
        assert_eq!(keys, ["agent:main:api:plans", "agent:main:api:used"], "no chat sessions");
        assert_eq!((rows[0].title.as_deref(), rows[0].updated_at), (Some("title agent:main:api:plans"), Some(50)));
    }

    fn create_ok(sql: &MemSql, req: &ThreadCreate) -> bool {
        create(sql, req).unwrap().is_some()
    }
}
