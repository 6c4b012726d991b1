//! A string-keyed map that does not store its keys.
//!
//! The term dictionary and the name table map text to ids, and their texts already live
//! somewhere: in the checkpoint buffer (after a cold load) or in the entries and the term
//! arena. Copying every key into its own allocation at load was most of the load time, so
//! [`KeyIndex`] keeps only `hash(key) → value` and asks the caller, through an `is_key_of`
//! closure, whether a value's key is the text looked up. Building it at load is one hash
//! and one insert of a `u64` per key, with no allocation per key.
//!
//! Two different keys with the same 64-bit hash are handled (the second one goes to a
//! small spill list) but practically never happen: the hash is seeded per map.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use foldhash::fast::RandomState;

/// The map's keys are already good hashes: use them as they are.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; fold anything else so it still works.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct KeyIndex<V> {
    state: RandomState,
    first: HashMap<u64, V, BuildHasherDefault<PassThrough>>,
    /// Values whose key hashes like another key's. Invariant: a hash is here only if
    /// `first` has it too, so a miss in `first` is a miss.
    spill: Vec<(u64, V)>,
}

impl<V: Copy + PartialEq> KeyIndex<V> {
    pub fn with_capacity(capacity: usize) -> Self {
        KeyIndex {
            state: RandomState::default(),
            first: HashMap::with_capacity_and_hasher(capacity, Default::default()),
            spill: Vec::new(),
        }
    }

    pub fn hash(&self, key: &[u8]) -> u64 {
        self.state.hash_one(key)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.first.len() + self.spill.len()
    }

    /// The value whose key is `key` (`is_key_of` tells whether a value's key is it).
    pub fn get(&self, key: &[u8], is_key_of: impl Fn(V) -> bool) -> Option<V> {
        self.get_hashed(self.hash(key), is_key_of)
    }

    pub fn get_hashed(&self, hash: u64, is_key_of: impl Fn(V) -> bool) -> Option<V> {
        let &value = self.first.get(&hash)?;
        if is_key_of(value) {
            return Some(value);
        }
        self.spill.iter().find(|(h, v)| *h == hash && is_key_of(*v)).map(|&(_, v)| v)
    }

    /// Binds `value` under `hash` unless a value with an equal key is bound already
    /// (then returns that value and changes nothing).
    pub fn insert_hashed(&mut self, hash: u64, value: V, is_key_of: impl Fn(V) -> bool) -> Result<(), V> {
        match self.first.entry(hash) {
            MapEntry::Vacant(slot) => {
                slot.insert(value);
                Ok(())
            }
            MapEntry::Occupied(slot) => {
                let existing = *slot.get();
                if is_key_of(existing) {
                    return Err(existing);
                }
                if let Some(&(_, v)) = self.spill.iter().find(|(h, v)| *h == hash && is_key_of(*v)) {
                    return Err(v);
                }
                self.spill.push((hash, value));
                Ok(())
            }
        }
    }

    /// Unbinds `value` from a key hashing to `hash`. Returns whether it was bound.
    pub fn remove_hashed(&mut self, hash: u64, value: V) -> bool {
        if self.first.get(&hash) == Some(&value) {
            match self.spill.iter().position(|(h, _)| *h == hash) {
                Some(at) => {
                    let (_, promoted) = self.spill.swap_remove(at);
                    self.first.insert(hash, promoted);
                }
                None => {
                    self.first.remove(&hash);
                }
            }
            return true;
        }
        match self.spill.iter().position(|&(h, v)| h == hash && v == value) {
            Some(at) => {
                self.spill.swap_remove(at);
                true
            }
            None => false,
        }
    }

    /// Unbinds everything (keeps the seed and the allocation).
    pub fn clear(&mut self) {
        self.first.clear();
        self.spill.clear();
    }

    pub fn reserve(&mut self, additional: usize) {
        self.first.reserve(additional);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forces every key onto one hash to exercise the spill list.
    #[test]
    fn colliding_hashes_still_resolve_by_key() {
        let keys = ["alpha", "beta", "gamma", "delta"];
        let is = |key: &'static str| move |v: usize| keys[v] == key;
        let mut index: KeyIndex<usize> = KeyIndex::with_capacity(4);
        for (v, key) in keys.iter().enumerate() {
            assert_eq!(index.insert_hashed(7, v, is(key)), Ok(()));
        }
        assert_eq!(index.insert_hashed(7, 9, is("gamma")), Err(2), "an equal key is refused");
        for (v, key) in keys.iter().enumerate() {
            assert_eq!(index.get_hashed(7, is(key)), Some(v));
        }
        assert!(index.remove_hashed(7, 0), "removing the first promotes a spilled one");
        assert!(!index.remove_hashed(7, 0));
        assert_eq!(index.get_hashed(7, is("alpha")), None);
        for (v, key) in keys.iter().enumerate().skip(1) {
            assert_eq!(index.get_hashed(7, is(key)), Some(v));
        }
        assert!(index.remove_hashed(7, 2));
        assert_eq!(index.get_hashed(7, is("gamma")), None);
        assert_eq!(index.get_hashed(7, is("delta")), Some(3));
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn real_hashes() {
        let keys: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
        let mut index: KeyIndex<usize> = KeyIndex::with_capacity(0);
        for (v, key) in keys.iter().enumerate() {
            let h = index.hash(key.as_bytes());
            index.insert_hashed(h, v, |x| keys[x] == *key).unwrap();
        }
        for (v, key) in keys.iter().enumerate() {
            assert_eq!(index.get(key.as_bytes(), |x| keys[x] == *key), Some(v));
        }
        assert_eq!(index.get(b"nope", |x| keys[x] == "nope"), None);
    }
}
