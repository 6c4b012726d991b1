//! The inverted index: term → postings, maintained incrementally.
//!
//! Layout, chosen for cheap updates and a cheap cold load:
//!
//! - per term id, a 24-byte [`Term`]: document frequency, where the text is (the
//!   checkpoint buffer or the index's arena: no allocation per term), where the
//!   checkpointed posting list is (decoded as it is read), and the postings added since;
//! - a term dictionary (`text → term id`) that stores hashes, not texts ([`KeyIndex`]);
//!   after a cold load the checkpoint's terms, written sorted, are binary-searched in
//!   place until changes have made enough lookups to pay for hashing them;
//! - per slot, the document's id, exact length and one-byte norm. A document gets a new
//!   slot every time it is (re)inserted, and slots only grow, so every posting list is
//!   sorted by slot for free (appends only) — which the snapshot delta-encodes.
//!
//! Insert appends one posting per distinct term. Remove does not touch the posting lists:
//! it marks the slot dead and corrects the statistics (df, N, sum of lengths) from the
//! document's own tokens, which the caller passes back (the store re-tokenizes the old
//! text: about as cheap as the insert was). Dead postings are skipped by search and
//! swept by [`Bm25Index::purge`] once they are a sizeable share of the index, so the cost
//! of a removal is amortised O(1) per posting instead of O(df) per term.

use std::collections::HashMap;
use std::rc::Rc;

use foldhash::fast::RandomState;

use crate::bm25::{self, Bm25Params, Explanation, NormCache, TermStats};
use crate::keys::KeyIndex;
use crate::norms::length_to_norm;
use crate::postings::{Posting, PostingDecoder};
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

/// Where a term's text is: a range of the checkpoint buffer or of the index's arena.
/// Either way no term owns an allocation, so loading 35,000 terms allocates nothing per term.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TermText {
    start: u32,
    /// The top bit says "in the arena".
    len: u32,
}

const IN_ARENA: u32 = 1 << 31;

impl TermText {
    pub fn in_checkpoint(start: usize, len: usize) -> Option<Self> {
        let len = u32::try_from(len).ok().filter(|l| l & IN_ARENA == 0)?;
        Some(TermText { start: u32::try_from(start).ok()?, len })
    }

    fn in_arena(start: usize, len: usize) -> Self {
        let start = u32::try_from(start).unwrap_or(u32::MAX);
        TermText { start, len: (len as u32 & !IN_ARENA) | IN_ARENA }
    }

    pub(crate) fn bytes<'a>(self, checkpoint: &'a [u8], arena: &'a str) -> &'a [u8] {
        let source = if self.len & IN_ARENA != 0 { arena.as_bytes() } else { checkpoint };
        let start = self.start as usize;
        source.get(start..start + (self.len & !IN_ARENA) as usize).unwrap_or_default()
    }
}

/// 24 bytes: a cold load creates one per term (tens of thousands) and touches nothing else.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Term {
    /// Live documents containing the term (dead postings excluded).
    pub df: u32,
    pub text: TermText,
    /// The term's posting list in the checkpoint (start, length in bytes), decoded as it
    /// is read: most terms are never read before the next checkpoint.
    frozen: (u32, u32),
    /// 1 + the index in [`Bm25Index::added`] of the postings added since (0: none). Their
    /// slots are all greater than the frozen ones, so `frozen ++ added` is sorted by slot.
    added: u32,
}

impl Term {
    pub fn new(text: TermText) -> Self {
        Term { df: 0, text, frozen: (0, 0), added: 0 }
    }

    /// A term of a checkpoint, with its posting list's byte range in it.
    pub fn frozen(text: TermText, df: u32, postings: (u32, u32)) -> Self {
        Term { df, text, frozen: postings, added: 0 }
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
    /// The checkpoint the index was loaded from (empty for one built in RAM): terms'
    /// texts and encoded posting lists point into it.
    pub(crate) checkpoint: Rc<Vec<u8>>,
    /// The texts of terms added since, back to back.
    arena: String,
    /// term text → term id (the texts stay in `checkpoint` or `arena`), for every term
    /// but the first `sorted_only` ones.
    pub(crate) dict: KeyIndex<u32>,
    /// After a cold load, the checkpoint's terms (ids `0..sorted_only`, sorted by text)
    /// are found by binary search instead of being hashed into `dict`: a search needs a
    /// few lookups, and hashing every term was the largest part of a load. The first
    /// change to the index hashes them ([`Bm25Index::complete_dict`]), as an insert
    /// looks up every token of the new text.
    pub(crate) sorted_only: u32,
    /// Binary-search lookups a change may still make before `complete_dict` (a quarter
    /// of `sorted_only`: a binary search costs about four hash insertions).
    pub(crate) sorted_lookups_left: u32,
    pub(crate) terms: Vec<Term>,
    /// Postings added since the checkpoint, per term (see [`Term`]).
    added: Vec<Vec<Posting>>,
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
        Self::over_checkpoint(tokenizer, Rc::default())
    }

    pub(crate) fn over_checkpoint(tokenizer: Tokenizer, checkpoint: Rc<Vec<u8>>) -> Self {
        Bm25Index {
            tokenizer,
            checkpoint,
            arena: String::new(),
            dict: KeyIndex::default(),
            sorted_only: 0,
            sorted_lookups_left: 0,
            terms: Vec::new(),
            added: Vec::new(),
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

    /// The text of term `id` (empty if there is none).
    pub(crate) fn term_text(&self, id: u32) -> &str {
        let bytes = self.terms.get(id as usize).map_or(&[][..], |t| t.text.bytes(&self.checkpoint, &self.arena));
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The id of the term `text`.
    fn term_id(&self, text: &str) -> Option<u32> {
        let key = text.as_bytes();
        find_term(&self.dict, &self.terms, &self.checkpoint, &self.arena, self.sorted_only, key, self.dict.hash(key))
    }

    /// Before a change looks up its tokens: once binary searches have cost about what
    /// hashing the sorted terms costs, hash them (so the extra work stays within 2x of
    /// the best choice made knowing the future).
    fn prepare_lookups(&mut self) {
        if self.sorted_only > 0 && self.sorted_lookups_left == 0 {
            self.complete_dict();
        }
    }

    /// Hashes the terms still only found by binary search (see `sorted_only`).
    fn complete_dict(&mut self) {
        if self.sorted_only == 0 {
            return;
        }
        let sorted = std::mem::take(&mut self.sorted_only) as usize;
        self.dict.reserve(sorted);
        for (id, term) in self.terms.iter().enumerate().take(sorted) {
            let hash = self.dict.hash(term.text.bytes(&self.checkpoint, &self.arena));
            // Distinct texts (checked at load): no key comparison needed.
            let _ = self.dict.insert_hashed(hash, id as u32, |_| false);
        }
    }

    pub(crate) fn term(&self, text: &str) -> Option<&Term> {
        self.term_id(text).and_then(|id| self.terms.get(id as usize))
    }

    /// All postings of `term`, dead ones included, in slot order.
    pub(crate) fn postings<'a>(&'a self, term: &Term) -> impl Iterator<Item = Posting> + 'a {
        postings_of(&self.checkpoint, &self.added, term)
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
        self.term(term).map_or(0, |t| u64::from(t.df))
    }

    /// Indexes `doc` with the tokens of `parts`. Returns false (and changes nothing) if
    /// `doc` is already indexed or the index is full (2³² slots).
    pub fn insert(&mut self, doc: DocId, parts: &[&str]) -> bool {
        if self.slot_of.contains_key(&doc) {
            return false;
        }
        self.prepare_lookups();
        if self.slots.len() >= u32::MAX as usize {
            self.purge();
        }
        let Ok(slot) = u32::try_from(self.slots.len()) else { return false };

        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        {
            let (tokenizer, sorted_only) = (self.tokenizer, self.sorted_only);
            let (dict, terms, arena, checkpoint) =
                (&mut self.dict, &mut self.terms, &mut self.arena, &self.checkpoint[..]);
            let lookups_left = &mut self.sorted_lookups_left;
            for part in parts {
                tokenizer.for_each_token(part, &mut |token| {
                    let hash = dict.hash(token.as_bytes());
                    *lookups_left = lookups_left.saturating_sub(u32::from(sorted_only > 0));
                    let id = match find_term(dict, terms, checkpoint, arena, sorted_only, token.as_bytes(), hash) {
                        Some(id) => id,
                        None => {
                            let id = terms.len() as u32;
                            terms.push(Term::new(TermText::in_arena(arena.len(), token.len())));
                            arena.push_str(token);
                            // Known to be new: no key comparison needed.
                            let _ = dict.insert_hashed(hash, id, |_| false);
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
                if term.added == 0 {
                    self.added.push(Vec::new());
                    term.added = self.added.len() as u32;
                }
                if let Some(list) = self.added.get_mut(term.added as usize - 1) {
                    list.push(Posting { slot, tf: run.len() as u32 });
                }
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
        self.prepare_lookups();
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        let mut lookups = 0u32;
        for part in parts {
            self.tokenizer.for_each_token(part, &mut |token| {
                lookups += 1;
                if let Some(id) = self.term_id(token) {
                    ids.push(id);
                }
            });
        }
        if self.sorted_only > 0 {
            self.sorted_lookups_left = self.sorted_lookups_left.saturating_sub(lookups);
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
        // The dictionary is rebuilt below, for every term.
        self.sorted_only = 0;
        let mut slot_remap = vec![u32::MAX; self.slots.len()];
        let mut slots = Vec::with_capacity(self.slot_of.len());
        for (old, slot) in self.slots.iter().enumerate() {
            if slot.live {
                slot_remap[old] = slots.len() as u32;
                slots.push(*slot);
            }
        }
        let mut terms = Vec::with_capacity(self.terms.len());
        let mut added = Vec::with_capacity(self.terms.len());
        let mut arena = String::new();
        for term in &self.terms {
            if term.df == 0 {
                continue;
            }
            let mut postings: Vec<Posting> = Vec::with_capacity(term.df as usize);
            for posting in self.postings(term) {
                if let Some(&new) = slot_remap.get(posting.slot as usize) {
                    if new != u32::MAX {
                        postings.push(Posting { slot: new, tf: posting.tf });
                    }
                }
            }
            let mut text = term.text;
            if text.len & IN_ARENA != 0 {
                let bytes = text.bytes(&self.checkpoint, &self.arena);
                text = TermText::in_arena(arena.len(), bytes.len());
                arena.push_str(std::str::from_utf8(bytes).unwrap_or_default());
            }
            added.push(postings);
            terms.push(Term { df: term.df, text, frozen: (0, 0), added: added.len() as u32 });
        }
        self.added = added;
        self.arena = arena;
        self.terms = terms;
        self.dict.clear();
        self.dict.reserve(self.terms.len());
        for (id, term) in self.terms.iter().enumerate() {
            let hash = self.dict.hash(term.text.bytes(&self.checkpoint, &self.arena));
            // Texts are distinct, so no key comparison is needed.
            let _ = self.dict.insert_hashed(hash, id as u32, |_| false);
        }
        self.slot_of = slots.iter().enumerate().map(|(i, s)| (s.doc, i as u32)).collect();
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
            let Some(term) = self.term(text) else { continue };
            if term.df == 0 {
                continue;
            }
            let weight = bm25::idf(u64::from(term.df), self.doc_count);
            for posting in self.postings(term) {
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
            let Some(term) = self.term(&text) else { continue };
            let Some(posting) = self.postings(term).find(|p| p.slot == slot_index) else { continue };
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

/// Finds the term `key` (whose hash is `hash`): among the hashed terms, then by binary
/// search among the first `sorted_only` terms (sorted by text).
fn find_term(
    dict: &KeyIndex<u32>,
    terms: &[Term],
    checkpoint: &[u8],
    arena: &str,
    sorted_only: u32,
    key: &[u8],
    hash: u64,
) -> Option<u32> {
    let hashed =
        dict.get_hashed(hash, |id| terms.get(id as usize).is_some_and(|t| t.text.bytes(checkpoint, arena) == key));
    if hashed.is_some() || sorted_only == 0 {
        return hashed;
    }
    let sorted = terms.get(..sorted_only as usize).unwrap_or_default();
    sorted.binary_search_by(|t| t.text.bytes(checkpoint, arena).cmp(key)).ok().map(|at| at as u32)
}

fn postings_of<'a>(checkpoint: &'a [u8], added: &'a [Vec<Posting>], term: &Term) -> impl Iterator<Item = Posting> + 'a {
    let (start, len) = (term.frozen.0 as usize, term.frozen.1 as usize);
    let frozen = PostingDecoder::new(checkpoint.get(start..start + len).unwrap_or_default());
    let added = (term.added as usize).checked_sub(1).and_then(|at| added.get(at)).map_or(&[][..], Vec::as_slice);
    frozen.chain(added.iter().copied())
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
