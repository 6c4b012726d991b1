//! The SQLite double: rusqlite in memory, the same SQL as the objects'.

use crate::ports::*;
use std::cell::{Cell, RefCell};

/// SQLite in memory through rusqlite: the same SQL as production.
pub struct MemSql {
    pub conn: rusqlite::Connection,
    pub fail_writes: Cell<bool>,
    /// Writes whose SQL contains this text fail (e.g. `"DELETE FROM history"`).
    pub fail_writes_containing: RefCell<Option<String>>,
    /// Writes with a text parameter containing this fail (one chosen value,
    /// e.g. a meta row saved with `"inMemory":true`).
    pub fail_writes_of_value: RefCell<Option<String>>,
    /// What the object knows of its tables, as a Durable Object's handle keeps it.
    pub schemas: crate::ports::SchemaMemo,
}

impl Default for MemSql {
    fn default() -> Self {
        MemSql {
            conn: rusqlite::Connection::open_in_memory().expect("sqlite"),
            fail_writes: Cell::new(false),
            fail_writes_containing: RefCell::new(None),
            fail_writes_of_value: RefCell::new(None),
            schemas: Default::default(),
        }
    }
}

impl Sql for MemSql {
    fn schemas(&self) -> Option<&crate::ports::SchemaMemo> {
        Some(&self.schemas)
    }

    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
        use rusqlite::types::{Value as V, ValueRef};
        let is_write = !query.trim_start().to_ascii_uppercase().starts_with("SELECT");
        if is_write && self.fail_writes.get() {
            return Err(StorageError("injected write failure".into()));
        }
        if is_write && self.fail_writes_containing.borrow().as_deref().is_some_and(|t| query.contains(t)) {
            return Err(StorageError(format!("injected write failure: {query}")));
        }
        if let (true, Some(value)) = (is_write, self.fail_writes_of_value.borrow().as_deref()) {
            if params.iter().any(|p| matches!(p, SqlValue::Text(t) if t.contains(value))) {
                return Err(StorageError(format!("injected write failure: a value containing {value}")));
            }
        }
        let mut stmt = self.conn.prepare(query).map_err(|e| StorageError(e.to_string()))?;
        let bound: Vec<V> = params
            .iter()
            .map(|p| match p {
                SqlValue::Null => V::Null,
                SqlValue::Int(i) => V::Integer(*i),
                SqlValue::Real(f) => V::Real(*f),
                SqlValue::Text(s) => V::Text(s.clone()),
                SqlValue::Blob(b) => V::Blob(b.clone()),
            })
            .collect();
        let n = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(bound)).map_err(|e| StorageError(e.to_string()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| StorageError(e.to_string()))? {
            let mut r = Vec::with_capacity(n);
            for i in 0..n {
                r.push(match row.get_ref(i).map_err(|e| StorageError(e.to_string()))? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(i) => SqlValue::Int(i),
                    ValueRef::Real(f) => SqlValue::Real(f),
                    ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
                });
            }
            out.push(r);
        }
        Ok(out)
    }

    fn exec_atomic(&self, statements: Vec<(String, Vec<SqlValue>)>) -> Result<(), StorageError> {
        let sp = |q: &str| self.conn.execute_batch(q).map_err(|e| StorageError(e.to_string()));
        sp("SAVEPOINT exec_atomic")?;
        for (query, params) in &statements {
            if let Err(e) = self.exec(query, params) {
                sp("ROLLBACK TO exec_atomic; RELEASE exec_atomic")?;
                return Err(e);
            }
        }
        sp("RELEASE exec_atomic")
    }
}
