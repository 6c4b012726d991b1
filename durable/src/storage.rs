//! Storage helpers over the ports, shared by every feature that keeps data:
//! complete listings, operation counting, reading SQLite rows, and tables
//! created once per object ([`ensure`]).

use crate::ports::{
    ListPage, ObjectInfo, ObjectStore, PutOptions, SchemaVersions, Sql, SqlValue, StorageError, StoredObject,
};
use std::cell::Cell;

/// Every object under `prefix`, following cursors. A cursor that repeats
/// ends the listing (a misbehaving store must not loop for ever). Returns
/// the objects and the number of R2 operations made.
pub async fn list_all<S: ObjectStore>(
    store: &S,
    prefix: &str,
    delimiter: Option<&str>,
) -> Result<(Vec<ObjectInfo>, u32), StorageError> {
    let mut objects = Vec::new();
    let mut ops = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(prefix, delimiter, cursor.as_deref()).await?;
        ops += 1;
        objects.extend(page.objects);
        match page.cursor {
            Some(c) if !c.is_empty() && cursor.as_deref() != Some(c.as_str()) => cursor = Some(c),
            _ => return Ok((objects, ops)),
        }
    }
}

/// An [`ObjectStore`] that counts the operations made through it (the
/// scheduler reports a tick's R2 operations: an idle tick should cost one
/// or two cheap reads).
pub struct Counted<'a, O> {
    inner: &'a O,
    ops: Cell<u32>,
}

impl<'a, O> Counted<'a, O> {
    pub fn new(inner: &'a O) -> Self {
        Counted { inner, ops: Cell::new(0) }
    }

    /// Operations made so far.
    pub fn ops(&self) -> u32 {
        self.ops.get()
    }
}

impl<O> Counted<'_, O> {
    fn count(&self) {
        self.ops.set(self.ops.get().saturating_add(1));
    }
}

impl<O: ObjectStore> ObjectStore for Counted<'_, O> {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        self.count();
        self.inner.get(key).await
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        self.count();
        self.inner.head(key).await
    }
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        self.count();
        self.inner.put(key, body, opts).await
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        self.count();
        self.inner.delete(keys).await
    }
    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        self.count();
        self.inner.list(prefix, delimiter, cursor).await
    }
    // Codecs touch no object: not counted.
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        self.inner.gzip(data).await
    }
    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, crate::ports::GunzipError> {
        self.inner.gunzip(data, max_bytes).await
    }
}

/// A feature's tables in an object's SQLite: the statements that create
/// them (`CREATE ... IF NOT EXISTS`, additive `ALTER`s). Their version is a
/// hash of the statements, so changing one sets the tables up again in
/// every object, once.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// The feature's row in `schema_versions`.
    pub name: &'static str,
    pub statements: &'static [&'static str],
}

impl Schema {
    /// The version recorded for these statements: FNV-1a over their text,
    /// cut to 53 bits (a JavaScript number holds it exactly on its way to
    /// SQLite and back).
    pub fn version(&self) -> i64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for stmt in self.statements {
            for b in stmt.bytes().chain([0]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        (h >> 11) as i64
    }
}

/// The table that records which schema versions a database holds.
const VERSIONS_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS schema_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL)";

/// Runs `schema`'s statements (see [`ensure_with`]). An additive `ALTER
/// TABLE ... ADD COLUMN` brings a table made before the column up to date:
/// in a new database it is skipped (its `CREATE` has the column), and one
/// that finds its column has nothing to do. Without such a statement to run,
/// the statements and the version's record go to the database in one call
/// ([`Sql::exec_batch`]).
/// Whether this object's chore `name` (pruning rows past their retention)
/// should run at `now`: once per `every_ms` per object (a woken object runs
/// it on its first turn), on every call for a database without a memo. A
/// retention kept a little longer costs nothing; a `DELETE` on every turn
/// costs a statement each.
pub fn chore_due<S: Sql + ?Sized>(sql: &S, name: &'static str, now: i64, every_ms: i64) -> bool {
    let Some(memo) = sql.schemas() else { return true };
    let mut chores = memo.chores.borrow_mut();
    match chores.iter_mut().find(|(n, _)| *n == name) {
        Some((_, last)) if now.saturating_sub(*last) < every_ms => false,
        Some((_, last)) => {
            *last = now;
            true
        }
        None => {
            chores.push((name, now));
            true
        }
    }
}

pub fn ensure<S: Sql + ?Sized>(sql: &S, schema: &Schema) -> Result<(), StorageError> {
    setup(sql, schema, None)
}

/// Sets up `schema`'s tables with `create` unless this database holds them
/// at this version already (`create` is told whether the database had no
/// table when the object woke). An object reads its `schema_versions` once (one
/// statement when it wakes) and remembers what it holds and what it set up
/// ([`crate::ports::SchemaMemo`]): a woken object runs no `CREATE` at all,
/// a new one runs each feature's once. A database without a memo (the
/// default of [`Sql::schemas`]) runs `create` on every call.
pub fn ensure_with<S: Sql + ?Sized>(
    sql: &S,
    schema: &Schema,
    create: impl FnOnce(bool) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let mut create = Some(create);
    let mut run = |fresh: bool| create.take().map_or(Ok(()), |c| c(fresh));
    setup(sql, schema, Some(&mut run))
}

const RECORD: &str = "INSERT INTO schema_versions (name, version) VALUES (?, ?) \
    ON CONFLICT(name) DO UPDATE SET version = excluded.version";

fn is_additive(stmt: &str) -> bool {
    stmt.trim_start().starts_with("ALTER TABLE") && stmt.contains("ADD COLUMN")
}

/// Runs the statements one by one, an additive one finding its column being done.
fn run_statements<S: Sql + ?Sized>(sql: &S, statements: &[&str]) -> Result<(), StorageError> {
    for stmt in statements {
        if let Err(e) = sql.exec(stmt, &[]) {
            if !(is_additive(stmt) && e.0.contains("duplicate column")) {
                return Err(e);
            }
        }
    }
    Ok(())
}

fn setup<S: Sql + ?Sized>(
    sql: &S,
    schema: &Schema,
    create: Option<&mut dyn FnMut(bool) -> Result<(), StorageError>>,
) -> Result<(), StorageError> {
    let Some(memo) = sql.schemas() else {
        return match create {
            Some(create) => create(false),
            None => run_statements(sql, schema.statements),
        };
    };
    let version = schema.version();
    let held = |v: &SchemaVersions| v.versions.iter().any(|(n, at)| n == schema.name && *at == version);
    if memo.known.borrow().as_ref().is_some_and(held) {
        return Ok(());
    }
    if memo.known.borrow().is_none() {
        let read = sql.exec("SELECT name, version FROM schema_versions", &[]);
        let known = match read {
            Ok(rows) => SchemaVersions {
                table: true,
                fresh: false,
                versions: rows.into_iter().map(|mut r| (col_string(&mut r, 0), col_i64(&r, 1))).collect(),
            },
            // No table yet: a new object, or one made before versions were
            // kept (it has other tables).
            Err(_) => SchemaVersions {
                fresh: sql
                    .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1", &[])
                    .is_ok_and(|rows| rows.is_empty()),
                ..Default::default()
            },
        };
        let done = held(&known);
        *memo.known.borrow_mut() = Some(known);
        if done {
            return Ok(());
        }
    }
    let (fresh, table) = memo.known.borrow().as_ref().map_or((false, false), |k| (k.fresh, k.table));
    let record: [SqlValue; 2] = [schema.name.into(), version.into()];
    match create {
        Some(create) => {
            create(fresh)?;
            if !table {
                sql.exec(VERSIONS_TABLE, &[])?;
            }
            sql.exec(RECORD, &record)?;
        }
        None => {
            let todo: Vec<&str> = schema.statements.iter().copied().filter(|s| !(fresh && is_additive(s))).collect();
            if todo.iter().any(|s| is_additive(s)) {
                // An older database: its ALTERs may find their columns.
                run_statements(sql, &todo)?;
                if !table {
                    sql.exec(VERSIONS_TABLE, &[])?;
                }
                sql.exec(RECORD, &record)?;
            } else {
                let mut all = todo;
                if !table {
                    all.push(VERSIONS_TABLE);
                }
                sql.exec_batch(&all, (RECORD, &record))?;
            }
        }
    }
    let mut slot = memo.known.borrow_mut();
    let known = slot.get_or_insert_with(SchemaVersions::default);
    known.table = true;
    known.versions.retain(|(n, _)| n != schema.name);
    known.versions.push((schema.name.to_owned(), version));
    Ok(())
}

/// Column `i` of a row as an integer (0 when absent or not a number).
pub fn col_i64(row: &[SqlValue], i: usize) -> i64 {
    row.get(i).and_then(SqlValue::as_i64).unwrap_or(0)
}

/// Column `i` of a row as a string, taken out of the row (empty when absent).
pub fn col_string(row: &mut [SqlValue], i: usize) -> String {
    row.get_mut(i).map(|v| std::mem::replace(v, SqlValue::Null)).and_then(SqlValue::into_string).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    /// A store whose every page says "there is more, same cursor".
    struct StuckCursor;
    impl ObjectStore for StuckCursor {
        async fn get(&self, _: &str) -> Result<Option<crate::ports::StoredObject>, StorageError> {
            Ok(None)
        }
        async fn head(&self, _: &str) -> Result<Option<ObjectInfo>, StorageError> {
            Ok(None)
        }
        async fn put(&self, _: &str, _: Vec<u8>, _: crate::ports::PutOptions) -> Result<(), StorageError> {
            Ok(())
        }
        async fn delete(&self, _: &[String]) -> Result<(), StorageError> {
            Ok(())
        }
        async fn list(&self, prefix: &str, _: Option<&str>, _: Option<&str>) -> Result<ListPage, StorageError> {
            let info = ObjectInfo { key: format!("{prefix}x"), ..Default::default() };
            Ok(ListPage { objects: vec![info], cursor: Some("same".into()), ..Default::default() })
        }
    }

    /// Counts the statements run through it (and can forget its memo, as a woken object does).
    struct Counting {
        db: crate::testing::MemSql,
        memo: crate::ports::SchemaMemo,
        run: std::cell::RefCell<Vec<String>>,
    }
    impl Sql for Counting {
        fn exec(&self, q: &str, p: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
            self.run.borrow_mut().push(q.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
            self.db.exec(q, p)
        }
        fn schemas(&self) -> Option<&crate::ports::SchemaMemo> {
            Some(&self.memo)
        }
    }

    const NOTES: Schema =
        Schema { name: "notes", statements: &["CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT)"] };

    #[test]
    fn tables_are_created_once_per_object_and_version() {
        let sql = Counting { db: Default::default(), memo: Default::default(), run: Default::default() };
        ensure(&sql, &NOTES).unwrap();
        assert_eq!(
            sql.run.take(),
            [
                "SELECT name, version",
                "SELECT 1 FROM",
                "CREATE TABLE IF",
                "CREATE TABLE IF",
                "INSERT INTO schema_versions"
            ],
            "a new database: read (no table), see it is empty, create, record"
        );
        ensure(&sql, &NOTES).unwrap();
        assert!(sql.run.take().is_empty(), "the same object knows: no statement");
        // The object is evicted and woken: one read, no CREATE.
        let sql = Counting { db: sql.db, memo: Default::default(), run: Default::default() };
        ensure(&sql, &NOTES).unwrap();
        ensure(&sql, &NOTES).unwrap();
        assert_eq!(sql.run.take(), ["SELECT name, version"]);
        // A new version of the statements: set up again, once.
        const NOTES2: Schema = Schema {
            name: "notes",
            statements: &[
                "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT)",
                "CREATE INDEX IF NOT EXISTS notes_text ON notes(text)",
            ],
        };
        assert_ne!(NOTES.version(), NOTES2.version());
        assert!((0..1 << 53).contains(&NOTES.version()), "exact as a JavaScript number");
        ensure(&sql, &NOTES2).unwrap();
        assert_eq!(sql.run.take(), ["CREATE TABLE IF", "CREATE INDEX IF", "INSERT INTO schema_versions"]);
        sql.db.exec("INSERT INTO notes (text) VALUES ('kept')", &[]).unwrap();
        let sql = Counting { db: sql.db, memo: Default::default(), run: Default::default() };
        ensure(&sql, &NOTES2).unwrap();
        assert_eq!(sql.run.take(), ["SELECT name, version"]);
        assert_eq!(sql.db.exec("SELECT text FROM notes", &[]).unwrap().len(), 1, "rows kept");
    }

    #[test]
    fn additive_columns_are_added_to_old_tables_only() {
        const TABLES: Schema =
            Schema { name: "t", statements: &["CREATE TABLE IF NOT EXISTS t (a, b)", "ALTER TABLE t ADD COLUMN b"] };
        let sql = Counting { db: Default::default(), memo: Default::default(), run: Default::default() };
        ensure(&sql, &TABLES).unwrap();
        assert!(!sql.run.take().iter().any(|q| q.starts_with("ALTER")), "a new database skips them");
        // A database made before `b` (and before versions were kept).
        let old = Counting { db: Default::default(), memo: Default::default(), run: Default::default() };
        old.db.exec("CREATE TABLE t (a)", &[]).unwrap();
        ensure(&old, &TABLES).unwrap();
        assert!(old.run.take().iter().any(|q| q.starts_with("ALTER")));
        old.db.exec("INSERT INTO t (a, b) VALUES (1, 2)", &[]).unwrap();
        // One made after `b`, before versions were kept: the column is found, nothing to do.
        let newer = Counting { db: Default::default(), memo: Default::default(), run: Default::default() };
        newer.db.exec("CREATE TABLE t (a, b)", &[]).unwrap();
        ensure(&newer, &TABLES).unwrap();
    }

    #[test]
    fn a_chore_runs_once_per_period_per_object_and_always_without_a_memo() {
        use crate::testing::MemSql;
        let sql = MemSql::default();
        assert!(chore_due(&sql, "prune", 1_000, 3_600_000), "the first turn of a woken object");
        assert!(!chore_due(&sql, "prune", 2_000, 3_600_000));
        assert!(chore_due(&sql, "other", 2_000, 3_600_000), "chores are apart");
        assert!(!chore_due(&sql, "prune", 3_600_999, 3_600_000));
        assert!(chore_due(&sql, "prune", 3_601_000, 3_600_000), "an hour on");
        assert!(!chore_due(&sql, "prune", 3_601_001, 3_600_000));
        // Another object (its own memo) runs it on its own first turn.
        assert!(chore_due(&MemSql::default(), "prune", 3_601_001, 3_600_000));
        struct Plain;
        impl Sql for Plain {
            fn exec(&self, _: &str, _: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
                Ok(vec![])
            }
        }
        assert!(chore_due(&Plain, "prune", 1, 3_600_000) && chore_due(&Plain, "prune", 2, 3_600_000));
    }

    #[test]
    fn a_failed_setup_is_tried_again() {
        let sql = Counting { db: Default::default(), memo: Default::default(), run: Default::default() };
        sql.db.fail_writes.set(true);
        assert!(ensure(&sql, &NOTES).is_err());
        sql.db.fail_writes.set(false);
        ensure(&sql, &NOTES).unwrap();
        assert!(sql.db.exec("SELECT * FROM notes", &[]).is_ok());
        // Without a memo, every call sets up.
        let plain = crate::testing::MemSql::default();
        let bare = |q: &str| plain.conn.execute_batch(q).unwrap();
        bare("CREATE TABLE t (x)");
        struct NoMemo<'a>(&'a crate::testing::MemSql, Cell<u32>);
        impl Sql for NoMemo<'_> {
            fn exec(&self, q: &str, p: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
                self.1.set(self.1.get() + 1);
                self.0.exec(q, p)
            }
        }
        let n = NoMemo(&plain, Cell::new(0));
        ensure(&n, &NOTES).unwrap();
        ensure(&n, &NOTES).unwrap();
        assert_eq!(n.1.get(), 2);
    }

    #[test]
    fn a_repeated_cursor_ends_the_listing() {
        let (objects, ops) = block_on(list_all(&StuckCursor, "agents/a/", Some("/"))).unwrap();
        assert_eq!((objects.len(), ops), (2, 2), "first page, then the repeat, then stop");
    }
}
