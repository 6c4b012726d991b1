//! One stable sort for the whole crate.
//!
//! Every `sort`/`sort_by`/`sort_by_key` call with its own item type or
//! closure compiles the standard library's sort again: about 5 kB of WASM
//! each, and the Worker had some twenty of them. These helpers sort
//! positions through a single non-generic instantiation ([`order`]) and
//! then move the items into place, so a new call site costs a few hundred
//! bytes. The result is exactly `sort_by`'s (stable); each comparison is a
//! dynamic call, which does not matter for the lists sorted here (tools,
//! skills, threads, search terms, a session's messages).
//!
//! The memory store's own hot sorts (`hearth-memory`) keep the standard ones.
//!
//! `collect::<BTreeMap<_, _>>()` sorts too (a stable sort by key, then a bulk
//! build), once more per key/value type: [`btree_map`] inserts instead.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The positions `0..len` in the stable order that `cmp` (comparing two
/// positions) gives them. Not generic, so its sort exists once in the WASM.
#[inline(never)]
fn order(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut at: Vec<usize> = (0..len).collect();
    at.sort_by(|&a, &b| cmp(a, b));
    at
}

/// Same as `items.sort_by(cmp)` (stable).
pub fn sort_by<T>(items: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let at = order(items.len(), &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(at.into_iter().filter_map(|i| slots[i].take()));
}

/// Same as `items.sort_by_key(key)` (stable).
pub fn sort_by_key<T, K: Ord>(items: &mut Vec<T>, key: impl Fn(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Same as `items.sort()` (stable).
pub fn sort<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, T::cmp);
}

/// Same map as `items.into_iter().collect::<BTreeMap<_, _>>()` (a later
/// value for a key replaces an earlier one), built by insertion.
pub fn btree_map<K: Ord, V>(items: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (k, v) in items {
        map.insert(k, v);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_sort_and_keeps_ties_in_order() {
        // Ties on the key (the first field) must keep their input order.
        let input: Vec<(u8, usize)> = [3u8, 1, 2, 1, 3, 0, 2, 2, 1, 0].iter().copied().zip(0..).collect();
        let mut ours = input.clone();
        sort_by_key(&mut ours, |p| p.0);
        let mut std = input.clone();
        std.sort_by_key(|p| p.0);
        assert_eq!(ours, std);
        assert_eq!(ours.iter().map(|p| p.1).collect::<Vec<_>>(), [5, 9, 1, 3, 8, 2, 6, 7, 0, 4]);

        let mut reversed = input.clone();
        sort_by(&mut reversed, |a, b| b.0.cmp(&a.0));
        assert_eq!(reversed.iter().map(|p| p.1).collect::<Vec<_>>(), [0, 4, 2, 6, 7, 1, 3, 8, 5, 9]);

        let mut words: Vec<String> = ["pear", "apple", "fig", "apple"].map(String::from).to_vec();
        sort(&mut words);
        assert_eq!(words, ["apple", "apple", "fig", "pear"]);

        let pairs = [("b", 1), ("a", 2), ("b", 3)];
        assert_eq!(btree_map(pairs), pairs.into_iter().collect::<BTreeMap<_, _>>());
        assert_eq!(btree_map(pairs).get("b"), Some(&3));

        let mut empty: Vec<String> = Vec::new();
        sort(&mut empty);
        assert!(empty.is_empty());
    }
}
