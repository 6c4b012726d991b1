//! A Durable Object's SQLite database, and what its object remembers of
//! the schemas it set up.

use super::object_store::StorageError;

/// A value bound to or read from SQLite.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl SqlValue {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            SqlValue::Int(i) => Some(*i),
            SqlValue::Real(f) => Some(*f as i64),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
    pub fn into_string(self) -> Option<String> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        SqlValue::Int(v)
    }
}
impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        SqlValue::Text(v.to_owned())
    }
}
impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        SqlValue::Text(v)
    }
}

/// The schema versions a database holds, as far as its object has read or
/// written them (see [`crate::storage::ensure`]). `known` is `None` until
/// the object first reads its `schema_versions` table.
#[derive(Debug, Default)]
pub struct SchemaMemo {
    pub(crate) known: std::cell::RefCell<Option<SchemaVersions>>,
    /// When this object last ran each of its periodic chores (pruning old
    /// rows, [`crate::storage::chore_due`]).
    pub(crate) chores: std::cell::RefCell<Vec<(&'static str, i64)>>,
}

/// The rows of a database's `schema_versions` table, whether the table
/// exists, and whether the database had no table at all when the object
/// woke (a new object: its tables are made by today's statements).
#[derive(Debug, Default, Clone)]
pub(crate) struct SchemaVersions {
    pub(crate) table: bool,
    pub(crate) fresh: bool,
    pub(crate) versions: Vec<(String, i64)>,
}

/// A Durable Object's SQLite database. Synchronous, like `ctx.storage.sql`:
/// statements run without an `await` between them are committed together,
/// which is what makes each state transition of the session atomic.
pub trait Sql {
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError>;

    /// What this database's object already knows of its tables
    /// ([`crate::storage::ensure`]): one memo per object, shared by every
    /// handle on its database. `None` (the default): every schema is set up
    /// again on each use, as before there were memos.
    fn schemas(&self) -> Option<&SchemaMemo> {
        None
    }

    /// The database's size in bytes, where the runtime says
    /// (`ctx.storage.sql.databaseSize`). Default: unknown.
    fn database_size(&self) -> Option<u64> {
        None
    }

    /// Runs `statements` (without parameters), then `last` with its
    /// parameters: in one call where the database takes several statements
    /// at once (a Durable Object's `exec` does), one by one here. Not atomic:
    /// a failure leaves the statements before it done.
    fn exec_batch(&self, statements: &[&str], last: (&str, &[SqlValue])) -> Result<(), StorageError> {
        for stmt in statements {
            self.exec(stmt, &[])?;
        }
        self.exec(last.0, last.1).map(|_| ())
    }

    /// Runs `statements` in order, all or nothing. Adapters that can roll back
    /// override this (Durable Objects: `transactionSync`; tests: a savepoint);
    /// this default runs them one by one and stops at the first failure.
    fn exec_atomic(&self, statements: Vec<(String, Vec<SqlValue>)>) -> Result<(), StorageError> {
        for (query, params) in &statements {
            self.exec(query, params)?;
        }
        Ok(())
    }
}
