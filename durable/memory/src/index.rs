//! The inverted index: term → postings, maintained incrementally.
//!
//! Layout, chosen for cheap updates and a cheap cold load:
//!
//! - a term dictionary (`term text → term id`) and, per term id, its document frequency
//!   and a posting list of `(slot, tf)`;
//! - per slot, the document's id, exact length and one-byte norm. A document gets a new
//!   slot every time it is (re)inserted, and slots only grow, so every posting list is
//!   sorted by slot for free (appends only) — which [`Bm25Index::explain`] binary-searches
//!   and the snapshot delta-encodes.
//!
//! Insert appends one posting per distinct term. Remove does not touch the posting lists:
//! it marks the slot dead and corrects the statistics (df, N, sum of lengths) from the
//! document's own tokens, which the caller passes back (the store re-tokenizes the old
//! text: about as cheap as the insert was). Dead postings are skipped by search and
//! swept by [`Bm25Index::purge`] once they are a sizeable share of the index, so the cost
//! of a removal is amortised O(1) per posting instead of O(df) per term.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use foldhash::fast::RandomState;

use crate::bm25::{self, Bm25Params, Explanation, NormCache, TermStats};
use crate::norms::length_to_norm;
use crate::tokenize::Tokenizer;

/// The caller's document id (the store uses entry ids).
pub type DocId = u64;

pub(crate) type FastMap<K, V> = HashMap<K, V, RandomState>;

/// Purge when dead postings exceed this share of live ones (and the floor below):
/// search cost stays within 1.5× of a clean index, and the amortised sweep is cheap.
const PURGE_DEAD_RATIO: u64 = 2;
/// No purge below this many dead postings: small indexes never pay for sweeps.
const PURGE_MIN_DEAD_POSTINGS: u64 = 4096;
const PURGE_MIN_DEAD_SLOTS: usize = 1024;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Posting {
    pub slot: u32,
    pub tf: u32,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Term {
    /// Live documents containing the term (dead postings excluded).
    pub df: u32,
    /// Postings loaded from a checkpoint, still encoded until first used: most terms are
    /// never queried before the next checkpoint, so a cold load does not decode them.
    pub frozen: FrozenPostings,
    /// Postings added since (all of them, for an index built in RAM). Their slots are
    /// all greater than the frozen ones, so `frozen ++ postings` is sorted by slot.
    pub postings: Vec<Posting>,
}

impl Term {
    /// All postings of the term, dead ones included, in slot order.
    pub fn all_postings(&self) -> impl Iterator<Item = &Posting> {
        self.frozen.postings().iter().chain(self.postings.iter())
    }

    fn find(&self, slot: u32) -> Option<&Posting> {
        let frozen = self.frozen.postings();
        let in_list = |list: &'_ [Posting]| list.binary_search_by_key(&slot, |p| p.slot).ok();
        match in_list(frozen) {
            Some(at) => frozen.get(at),
            None => in_list(&self.postings).and_then(|at| self.postings.get(at)),
        }
    }
}

/// A posting list still in its checkpoint encoding (see `snapshot.rs`), decoded once on
/// first use. The checkpoint buffer is shared by all terms and freed with the last one.
#[derive(Clone, Debug, Default)]
pub struct FrozenPostings {
    source: Option<(Rc<Vec<u8>>, Range<usize>)>,
    decoded: OnceCell<Vec<Posting>>,
}

impl FrozenPostings {
    pub fn new(buffer: Rc<Vec<u8>>, range: Range<usize>) -> Self {
        FrozenPostings { source: Some((buffer, range)), decoded: OnceCell::new() }
    }

    pub fn postings(&self) -> &[Posting] {
        match &self.source {
            None => &[],
            Some((buffer, range)) => self
                .decoded
                .get_or_init(|| crate::snapshot::decode_postings(buffer.get(range.clone()).unwrap_or_default())),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub doc: DocId,
    /// Exact token count: the sum of lengths (for avgdl) must be exact, as in Lucene.
    pub len: u32,
    pub norm: u8,
    pub live: bool,
}

/// A BM25 index over documents made of one or more text parts (the store indexes an
/// entry's name and content as one field).
///
/// Contract: [`Bm25Index::remove`] must be given the same text that was inserted for that
/// document; the index does not keep a copy of it.
#[derive(Clone, Debug)]
pub struct Bm25Index {
    pub(crate) tokenizer: Tokenizer,
    pub(crate) dict: FastMap<Box<str>, u32>,
    pub(crate) terms: Vec<Term>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) slot_of: FastMap<DocId, u32>,
    /// Live documents with at least one token: Lucene's docCount (N).
    pub(crate) doc_count: u64,
    /// Lucene's sumTotalTermFreq over live documents.
    pub(crate) sum_total_term_freq: u64,
    pub(crate) live_postings: u64,
    pub(crate) dead_postings: u64,
    pub(crate) dead_slots: usize,
    scratch: Vec<u32>,
}

impl Bm25Index {
    pub fn new(tokenizer: Tokenizer) -> Self {
        Bm25Index {
            tokenizer,
            dict: FastMap::default(),
            terms: Vec::new(),
            slots: Vec::new(),
            slot_of: FastMap::default(),
            doc_count: 0,
            sum_total_term_freq: 0,
            live_postings: 0,
            dead_postings: 0,
            dead_slots: 0,
            scratch: Vec::new(),
        }
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Documents in the index (including ones without tokens).
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    pub fn contains(&self, doc: DocId) -> bool {
        self.slot_of.contains_key(&doc)
    }

    /// Lucene's N: documents with at least one token.
    pub fn doc_count(&self) -> u64 {
        self.doc_count
    }

    /// Lucene's avgdl.
    pub fn avgdl(&self) -> f32 {
        bm25::avg_field_length(self.sum_total_term_freq, self.doc_count)
    }

    /// Distinct terms in live documents.
    pub fn vocabulary_len(&self) -> usize {
        self.terms.iter().filter(|t| t.df > 0).count()
    }

    /// Documents containing `term` (already tokenized).
    pub fn doc_freq(&self, term: &str) -> u64 {
        self.dict.get(term).and_then(|&id| self.terms.get(id as usize)).map_or(0, |t| u64::from(t.df))
    }

    /// Indexes `doc` with the tokens of `parts`. Returns false (and changes nothing) if
    /// `doc` is already indexed or the index is full (2³² slots).
    pub fn insert(&mut self, doc: DocId, parts: &[&str]) -> bool {
        if self.slot_of.contains_key(&doc) {
            return false;
        }
        if self.slots.len() >= u32::MAX as usize {
            self.purge();
        }
        let Ok(slot) = u32::try_from(self.slots.len()) else { return false };

        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        {
            let dict = &mut self.dict;
            let terms = &mut self.terms;
            for part in parts {
                self.tokenizer.for_each_token(part, &mut |token| {
                    let id = match dict.get(token) {
                        Some(&id) => id,
                        None => {
                            let id = terms.len() as u32;
                            dict.insert(token.into(), id);
                            terms.push(Term::default());
                            id
                        }
                    };
                    ids.push(id);
                });
            }
        }
        let len = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        ids.sort_unstable();
        let mut unique = 0u64;
        for run in ids.chunk_by(|a, b| a == b) {
            if let Some(term) = self.terms.get_mut(run[0] as usize) {
                term.postings.push(Posting { slot, tf: run.len() as u32 });
                term.df += 1;
                unique += 1;
            }
        }
        self.scratch = ids;

        self.slots.push(Slot { doc, len, norm: length_to_norm(len), live: true });
        self.slot_of.insert(doc, slot);
        if len > 0 {
            self.doc_count += 1;
            self.sum_total_term_freq += u64::from(len);
        }
        self.live_postings += unique;
        true
    }

    /// Removes `doc`, given the same `parts` it was inserted with. Returns false if `doc`
    /// is not indexed.
    pub fn remove(&mut self, doc: DocId, parts: &[&str]) -> bool {
        let Some(slot_index) = self.slot_of.remove(&doc) else { return false };
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        {
            let dict = &self.dict;
            for part in parts {
                self.tokenizer.for_each_token(part, &mut |token| {
                    if let Some(&id) = dict.get(token) {
                        ids.push(id);
                    }
                });
            }
        }
        ids.sort_unstable();
        ids.dedup();
        for &id in &ids {
            if let Some(term) = self.terms.get_mut(id as usize) {
                term.df = term.df.saturating_sub(1);
            }
        }
        let unique = ids.len() as u64;
        self.scratch = ids;

        if let Some(slot) = self.slots.get_mut(slot_index as usize) {
            slot.live = false;
            if slot.len > 0 {
                self.doc_count = self.doc_count.saturating_sub(1);
                self.sum_total_term_freq = self.sum_total_term_freq.saturating_sub(u64::from(slot.len));
            }
        }
        self.live_postings = self.live_postings.saturating_sub(unique);
        self.dead_postings += unique;
        self.dead_slots += 1;
        if self.dead_postings > PURGE_MIN_DEAD_POSTINGS.max(self.live_postings / PURGE_DEAD_RATIO)
            || self.dead_slots > PURGE_MIN_DEAD_SLOTS.max(self.slot_of.len())
        {
            self.purge();
        }
        true
    }

    /// Sweeps dead postings, dead slots and unused terms: O(size of the index).
    pub fn purge(&mut self) {
        let mut slot_remap = vec![u32::MAX; self.slots.len()];
        let mut slots = Vec::with_capacity(self.slot_of.len());
        for (old, slot) in self.slots.iter().enumerate() {
            if slot.live {
                slot_remap[old] = slots.len() as u32;
                slots.push(*slot);
            }
        }
        let mut term_remap = vec![u32::MAX; self.terms.len()];
        let mut terms = Vec::with_capacity(self.terms.len());
        for (old, mut term) in std::mem::take(&mut self.terms).into_iter().enumerate() {
            if term.df == 0 {
                continue;
            }
            let mut postings: Vec<Posting> = Vec::with_capacity(term.df as usize);
            for posting in term.all_postings() {
                if let Some(&new) = slot_remap.get(posting.slot as usize) {
                    if new != u32::MAX {
                        postings.push(Posting { slot: new, tf: posting.tf });
                    }
                }
            }
            term.postings = postings;
            term.frozen = FrozenPostings::default();
            term_remap[old] = terms.len() as u32;
            terms.push(term);
        }
        self.dict.retain(|_, id| match term_remap.get(*id as usize) {
            Some(&new) if new != u32::MAX => {
                *id = new;
                true
            }
            _ => false,
        });
        self.slot_of = slots.iter().enumerate().map(|(i, s)| (s.doc, i as u32)).collect();
        self.terms = terms;
        self.slots = slots;
        self.dead_postings = 0;
        self.dead_slots = 0;
    }

    /// The best `k` documents for `query`, best first; equal scores by ascending id.
    pub fn search(&self, query: &str, params: Bm25Params, k: usize) -> Vec<(DocId, f32)> {
        let terms = self.tokenizer.query_terms(query);
        self.search_terms(&terms, params, k, &|_| true)
    }

    /// [`Bm25Index::search`] over already tokenized, deduplicated terms, keeping only the
    /// documents `keep` accepts (before the cut-off, so `k` results are still returned).
    pub fn search_terms(
        &self,
        terms: &[String],
        params: Bm25Params,
        k: usize,
        keep: &dyn Fn(DocId) -> bool,
    ) -> Vec<(DocId, f32)> {
        if k == 0 || self.doc_count == 0 {
            return Vec::new();
        }
        let cache = NormCache::new(params, self.avgdl());
        // Lucene sums a document's term scores in double and rounds once to float.
        let mut sums = vec![0.0f64; self.slots.len()];
        let mut matched: Vec<u32> = Vec::new();
        for text in terms {
            let Some(term) = self.dict.get(text.as_str()).and_then(|&id| self.terms.get(id as usize)) else {
                continue;
            };
            if term.df == 0 {
                continue;
            }
            let weight = bm25::idf(u64::from(term.df), self.doc_count);
            for posting in term.all_postings() {
                let Some(slot) = self.slots.get(posting.slot as usize) else { continue };
                if !slot.live {
                    continue;
                }
                let score = bm25::term_score(weight, posting.tf as f32, cache.inverse(slot.norm));
                let sum = &mut sums[posting.slot as usize];
                if *sum == 0.0 {
                    matched.push(posting.slot);
                }
                *sum += f64::from(score);
            }
        }
        let mut hits: Vec<(DocId, f32)> = matched
            .iter()
            .filter_map(|&s| {
                let doc = self.slots[s as usize].doc;
                keep(doc).then(|| (doc, sums[s as usize] as f32))
            })
            .collect();
        rank_top_k(&mut hits, k);
        hits
    }

    /// Lucene's explanation of `doc`'s score for `query`; None if `doc` is not indexed.
    pub fn explain(&self, query: &str, doc: DocId, params: Bm25Params) -> Option<Explanation> {
        let slot_index = *self.slot_of.get(&doc)?;
        let slot = self.slots.get(slot_index as usize)?;
        let avgdl = self.avgdl();
        let mut parts = Vec::new();
        for text in self.tokenizer.query_terms(query) {
            let Some(term) = self.dict.get(text.as_str()).and_then(|&id| self.terms.get(id as usize)) else {
                continue;
            };
            let Some(posting) = term.find(slot_index) else { continue };
            let stats = TermStats {
                term: text,
                doc_freq: u64::from(term.df),
                doc_count: self.doc_count,
                avgdl,
                freq: posting.tf,
                norm: slot.norm,
            };
            parts.push(bm25::explain_term(params, &stats));
        }
        Some(bm25::explain_sum(parts))
    }
}

/// Sorts best first (ties: smaller id first, as Lucene breaks ties by doc id) and keeps `k`.
pub(crate) fn rank_top_k(hits: &mut Vec<(DocId, f32)>, k: usize) {
    let order = |a: &(DocId, f32), b: &(DocId, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if k == 0 {
        hits.clear();
        return;
    }
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, order);
        hits.truncate(k);
    }
    hits.sort_unstable_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_search_remove() {
        let mut index = Bm25Index::new(Tokenizer::Unicode);
        assert!(index.insert(1, &["wing", "supersonic wing flow"]));
        assert!(index.insert(2, &["flow", "laminar flow in pipes"]));
        assert!(!index.insert(2, &["again"]), "duplicate doc ids are refused");
        let hits = index.search("wing flow", Bm25Params::default(), 10);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 2]);
        assert!(index.remove(1, &["wing", "supersonic wing flow"]));
        assert!(!index.remove(1, &["wing"]));
        let hits = index.search("wing flow", Bm25Params::default(), 10);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2]);
        assert_eq!(index.doc_freq("wing"), 0);
        index.purge();
        assert_eq!(index.vocabulary_len(), 4);
        assert_eq!(index.search("flow", Bm25Params::default(), 10), hits);
    }

    #[test]
    fn empty_documents_do_not_count_in_n() {
        let mut index = Bm25Index::new(Tokenizer::Reference);
        index.insert(1, &["the of and"]);
        index.insert(2, &["wing"]);
        assert_eq!(index.doc_count(), 1);
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn explanation_matches_search_score() {
        let mut index = Bm25Index::new(Tokenizer::Unicode);
        for (id, text) in [(1, "a b c"), (2, "b c d d"), (3, "c d e f g h")] {
            index.insert(id, &[text]);
        }
        let params = Bm25Params::default();
        for (doc, score) in index.search("d c", params, 10) {
            assert_eq!(index.explain("d c", doc, params).unwrap().value, score);
        }
    }
}
