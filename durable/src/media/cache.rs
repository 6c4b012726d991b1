//! The in-object media cache: a byte-budgeted LRU, so the media of recent
//! turns is not read from R2 before every model call.

use super::CACHE_BUDGET_BYTES;
use lru::LruCache;
use std::collections::HashMap;
use std::rc::Rc;

/// Counters of the media cache since the object started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    /// Media objects read from R2 (cache misses that found the object).
    pub r2_reads: u64,
    pub evictions: u64,
}

/// An LRU of media bytes bounded by total size, not entry count. Built on
/// `lru::LruCache` in unbounded mode: the crate orders the entries, this
/// type keeps the byte total and evicts from the cold end while over budget.
pub struct MediaCache {
    lru: LruCache<String, Rc<Vec<u8>>>,
    bytes: usize,
    budget: usize,
    /// Sizes of every object seen, so oversize media is not read again to
    /// learn that it is oversize.
    sizes: HashMap<String, u64>,
    pub stats: CacheStats,
}

impl Default for MediaCache {
    fn default() -> Self {
        MediaCache::new(CACHE_BUDGET_BYTES)
    }
}

impl MediaCache {
    pub fn new(budget: usize) -> Self {
        MediaCache { lru: LruCache::unbounded(), bytes: 0, budget, sizes: HashMap::new(), stats: CacheStats::default() }
    }

    /// The bytes of `key`, marked most recently used. Counts a hit.
    pub fn get(&mut self, key: &str) -> Option<Rc<Vec<u8>>> {
        let v = self.lru.get(key).cloned();
        if v.is_some() {
            self.stats.hits += 1;
        }
        v
    }

    /// Adds (or refreshes) an entry, evicting the least recently used until
    /// the total fits. An entry larger than the whole budget is not kept.
    pub fn insert(&mut self, key: &str, bytes: Rc<Vec<u8>>) {
        self.sizes.insert(key.to_owned(), bytes.len() as u64);
        if let Some(old) = self.lru.pop(key) {
            self.bytes -= old.len();
        }
        if bytes.len() > self.budget {
            return;
        }
        self.bytes += bytes.len();
        self.lru.put(key.to_owned(), bytes);
        while self.bytes > self.budget {
            match self.lru.pop_lru() {
                Some((_, v)) => {
                    self.bytes -= v.len();
                    self.stats.evictions += 1;
                }
                None => break,
            }
        }
    }

    pub fn known_size(&self, key: &str) -> Option<u64> {
        self.sizes.get(key).copied()
    }

    pub fn note_size(&mut self, key: &str, size: u64) {
        self.sizes.insert(key.to_owned(), size);
    }

    /// Forgets everything under a prefix (after a reset deleted it).
    pub fn forget_prefix(&mut self, prefix: &str) {
        let keys: Vec<String> = self.lru.iter().map(|(k, _)| k.clone()).filter(|k| k.starts_with(prefix)).collect();
        for k in keys {
            if let Some(v) = self.lru.pop(&k) {
                self.bytes -= v.len();
            }
        }
        self.sizes.retain(|k, _| !k.starts_with(prefix));
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.lru.contains(key)
    }
}
