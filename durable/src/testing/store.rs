//! The bucket double: R2 in memory, with failures injected by operation
//! and key.

use super::wait::YieldOnce;
use crate::ports::*;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// One kind of bucket operation, for [`Fault`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp {
    Get,
    Head,
    Put,
    Delete,
    List,
}

/// An injected bucket failure: of the `op` calls that touch a key under
/// `prefix` (for a listing: whose prefix is under it), the first `skip`
/// succeed and the next `times` fail. So a test can fail "the media delete",
/// "the part archive put" or "the 3rd put", and let everything else through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub op: StoreOp,
    pub prefix: String,
    pub skip: u32,
    pub times: u32,
}

impl Fault {
    /// Every `op` under `prefix` fails (until the fault is cleared).
    pub fn always(op: StoreOp, prefix: &str) -> Self {
        Fault { op, prefix: prefix.to_owned(), skip: 0, times: u32::MAX }
    }
    /// The next `op` under `prefix` fails, once.
    pub fn once(op: StoreOp, prefix: &str) -> Self {
        Fault { op, prefix: prefix.to_owned(), skip: 0, times: 1 }
    }
    /// The `n`th `op` from now (1-based), on any key, fails once.
    pub fn nth(op: StoreOp, n: u32) -> Self {
        Fault { op, prefix: String::new(), skip: n.saturating_sub(1), times: 1 }
    }
}

/// An R2 bucket in memory. `fail_puts` makes every put fail; [`MemStore::inject`]
/// fails chosen operations only.
#[derive(Default)]
pub struct MemStore {
    pub objects: RefCell<BTreeMap<String, StoredObject>>,
    pub ops: RefCell<Vec<String>>,
    pub fail_puts: Cell<bool>,
    pub faults: RefCell<Vec<Fault>>,
    /// Objects + prefixes per listing page, like R2's `limit` (0: all in one page).
    pub page_size: Cell<usize>,
    /// Each operation stays pending this many polls before it answers (a slow
    /// bucket, for what runs meanwhile).
    pub pending_polls: Cell<u32>,
    etag_counter: Cell<u64>,
}

impl MemStore {
    pub fn put_text(&self, key: &str, text: &str) {
        let n = self.etag_counter.get() + 1;
        self.etag_counter.set(n);
        self.objects.borrow_mut().insert(
            key.to_owned(),
            StoredObject {
                info: ObjectInfo {
                    key: key.to_owned(),
                    size: text.len() as u64,
                    etag: format!("e{n}"),
                    uploaded_ms: 0,
                },
                body: text.as_bytes().to_vec(),
                ..Default::default()
            },
        );
    }
    pub fn op_count(&self) -> usize {
        self.ops.borrow().len()
    }
    /// Adds a failure (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.faults.borrow_mut().push(fault);
    }
    pub fn clear_faults(&self) {
        self.faults.borrow_mut().clear();
    }
    /// How many recorded operations start with `prefix` (e.g. `"put agents/main/sessions/"`).
    pub fn ops_matching(&self, prefix: &str) -> usize {
        self.ops.borrow().iter().filter(|o| o.starts_with(prefix)).count()
    }
    async fn answer_later(&self) {
        for _ in 0..self.pending_polls.get() {
            YieldOnce::default().await;
        }
    }
    fn check(&self, op: StoreOp, keys: &[&str]) -> Result<(), StorageError> {
        for f in self.faults.borrow_mut().iter_mut() {
            if f.op != op || f.times == 0 || !keys.iter().any(|k| k.starts_with(&f.prefix)) {
                continue;
            }
            if f.skip > 0 {
                f.skip -= 1;
                continue;
            }
            f.times -= 1;
            return Err(StorageError(format!("injected {op:?} failure on {}", keys.join(","))));
        }
        Ok(())
    }
}

impl ObjectStore for MemStore {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        self.ops.borrow_mut().push(format!("get {key}"));
        self.answer_later().await;
        self.check(StoreOp::Get, &[key])?;
        Ok(self.objects.borrow().get(key).cloned())
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        self.ops.borrow_mut().push(format!("head {key}"));
        self.answer_later().await;
        self.check(StoreOp::Head, &[key])?;
        Ok(self.objects.borrow().get(key).map(|o| o.info.clone()))
    }
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        self.ops.borrow_mut().push(format!("put {key}"));
        self.answer_later().await;
        if self.fail_puts.get() {
            return Err(StorageError("injected put failure".into()));
        }
        self.check(StoreOp::Put, &[key])?;
        let n = self.etag_counter.get() + 1;
        self.etag_counter.set(n);
        self.objects.borrow_mut().insert(
            key.to_owned(),
            StoredObject {
                info: ObjectInfo {
                    key: key.to_owned(),
                    size: body.len() as u64,
                    etag: format!("e{n}"),
                    uploaded_ms: 0,
                },
                body,
                content_type: opts.content_type,
                custom_metadata: opts.custom_metadata,
            },
        );
        Ok(())
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        self.ops.borrow_mut().push(format!("delete {}", keys.join(",")));
        self.answer_later().await;
        self.check(StoreOp::Delete, &keys.iter().map(String::as_str).collect::<Vec<_>>())?;
        let mut objs = self.objects.borrow_mut();
        for k in keys {
            objs.remove(k);
        }
        Ok(())
    }
    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        self.ops.borrow_mut().push(format!("list {prefix}"));
        self.answer_later().await;
        self.check(StoreOp::List, &[prefix])?;
        let mut page = ListPage::default();
        // The cursor is the last key of the previous page.
        let start = cursor.unwrap_or(prefix).to_owned();
        let limit = self.page_size.get();
        let mut last: Option<&String> = None;
        for (k, o) in self.objects.borrow().range(start..) {
            if Some(k.as_str()) == cursor {
                continue;
            }
            let Some(rest) = k.strip_prefix(prefix) else { break };
            if limit > 0 && page.objects.len() + page.prefixes.len() >= limit {
                page.cursor = last.cloned();
                break;
            }
            last = Some(k);
            match delimiter.and_then(|d| rest.find(d).map(|i| (i, d))) {
                Some((i, d)) => {
                    let p = format!("{prefix}{}{d}", &rest[..i]);
                    if !page.prefixes.contains(&p) {
                        page.prefixes.push(p);
                    }
                }
                None => page.objects.push(o.info.clone()),
            }
        }
        Ok(page)
    }
    async fn list_with_metadata(&self, prefix: &str, cursor: Option<&str>) -> Result<MetadataPage, StorageError> {
        let page = self.list(prefix, None, cursor).await?;
        let objects = self.objects.borrow();
        let objects = page
            .objects
            .into_iter()
            .map(|info| {
                let metadata = objects.get(&info.key).map(|o| o.custom_metadata.clone()).unwrap_or_default();
                (info, metadata)
            })
            .collect();
        Ok(MetadataPage { objects, cursor: page.cursor })
    }
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        Ok(r2_layout::archive::gzip(data))
    }
    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GunzipError> {
        r2_layout::archive::gunzip(data, max_bytes).map_err(|e| match e {
            r2_layout::archive::ArchiveError::TooLarge(n) => GunzipError::TooLarge(n),
            other => GunzipError::Invalid(other.to_string()),
        })
    }
}
