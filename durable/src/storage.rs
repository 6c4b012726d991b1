//! Storage helpers over the ports, shared by every feature that keeps data:
//! complete listings, operation counting, reading SQLite rows.

use crate::ports::{ListPage, ObjectInfo, ObjectStore, PutOptions, SqlValue, StorageError, StoredObject};
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

    #[test]
    fn a_repeated_cursor_ends_the_listing() {
        let (objects, ops) = block_on(list_all(&StuckCursor, "agents/a/", Some("/"))).unwrap();
        assert_eq!((objects.len(), ops), (2, 2), "first page, then the repeat, then stop");
    }
}
