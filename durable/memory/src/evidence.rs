//! Recall evidence: how often, for how many different questions and on how
//! many different days an entry was actually used (returned by a search,
//! read whole, recalled into a turn), and how well it matched the last time.
//!
//! Dreaming (Hearth's nightly sweep) promotes only entries with evidence: one
//! lucky match is not a lasting fact, the same note found again and again for
//! different questions on different days probably is. The store itself does
//! not keep evidence (its host does, next to it, see Hearth's `memory_evidence`
//! table); this module is the record and its rules, so the host and the
//! sweep's candidate selection ([`crate::promote`]) agree on them.
//!
//! - **Distinct queries** are told apart by their terms, not their spelling:
//!   "Olga's tea?" and "tea olga" are one question ([`query_key`]).
//! - **Days** are UTC days (`ms / 86 400 000`).
//! - **Scores** are BM25 scores divided by what the query could score at
//!   most ([`score_ceiling`]: Lucene's BM25 term score stays below the term's
//!   idf, so `Σ idf` over the query's terms bounds a match). The result is
//!   in `[0, 1)`, comparable across queries and stores: 0.45 is what a note
//!   of average length holding a one-word query once scores at the default
//!   `k1`. A `memory_get` has no query and no score: it counts as a hit and
//!   a day only.
//! - Both sets are capped at [`MAX_DISTINCT`] values (queries: the first
//!   ones; days: the latest), so a record stays small; thresholds are far
//!   below the cap.

use crate::index::Bm25Index;
use crate::tokenize::Tokenizer;

/// Most distinct queries and days one record keeps.
pub const MAX_DISTINCT: usize = 64;

const DAY_MS: i64 = 86_400_000;

/// The UTC day number of `ms`.
pub fn day_of(ms: i64) -> i32 {
    i32::try_from(ms.div_euclid(DAY_MS)).unwrap_or(if ms < 0 { i32::MIN } else { i32::MAX })
}

/// One use of an entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Use {
    pub at_ms: i64,
    /// The question's [`query_key`] (None: a read by name).
    pub query: Option<u32>,
    /// The normalised score of the match (None: a read by name).
    pub score: Option<f32>,
}

/// What is known about one entry's uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    pub hits: u32,
    /// The normalised score of the latest scored use.
    pub last_score: Option<f32>,
    /// When it was last used (ms).
    pub last_at: i64,
    /// Distinct query keys, sorted.
    pub queries: Vec<u32>,
    /// Distinct UTC days, ascending.
    pub days: Vec<i32>,
}

impl Evidence {
    /// Adds one use.
    pub fn record(&mut self, u: &Use) {
        self.hits = self.hits.saturating_add(1);
        self.last_at = self.last_at.max(u.at_ms);
        if let Some(s) = u.score.filter(|s| s.is_finite()) {
            self.last_score = Some(s.clamp(0.0, 1.0));
        }
        if let Some(q) = u.query {
            if let Err(at) = self.queries.binary_search(&q) {
                if self.queries.len() < MAX_DISTINCT {
                    self.queries.insert(at, q);
                }
            }
        }
        let day = day_of(u.at_ms);
        if let Err(at) = self.days.binary_search(&day) {
            self.days.insert(at, day);
            if self.days.len() > MAX_DISTINCT {
                self.days.remove(0);
            }
        }
    }

    pub fn distinct_queries(&self) -> usize {
        self.queries.len()
    }

    pub fn distinct_days(&self) -> usize {
        self.days.len()
    }
}

/// A set of numbers as stored (`"3,17,42"`).
pub fn encode_set<T: std::fmt::Display>(values: &[T]) -> String {
    let mut out = String::with_capacity(values.len() * 8);
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&v.to_string());
    }
    out
}

/// Reads [`encode_set`]'s text back, sorted and deduplicated; malformed
/// parts are skipped (evidence is a statistic: a damaged record must not
/// fail a turn) and at most [`MAX_DISTINCT`] values are kept.
pub fn decode_set<T: std::str::FromStr + Ord>(text: &str) -> Vec<T> {
    let mut v: Vec<T> = text.split(',').filter_map(|p| p.trim().parse().ok()).collect();
    v.sort();
    v.dedup();
    let excess = v.len().saturating_sub(MAX_DISTINCT);
    v.drain(..excess);
    v
}

fn fnv1a32(parts: &[&str]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0x1f;
            h = h.wrapping_mul(0x0100_0193);
        }
        for b in p.bytes() {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// The key of a question: a hash of its distinct terms in sorted order, so
/// word order, case and punctuation do not make a new question. None when
/// the text has no terms.
pub fn query_key(tokenizer: Tokenizer, query: &str) -> Option<u32> {
    let mut terms = tokenizer.query_terms(query);
    if terms.is_empty() {
        return None;
    }
    terms.sort_unstable();
    let parts: Vec<&str> = terms.iter().map(String::as_str).collect();
    Some(fnv1a32(&parts))
}

/// The most a document can score for `terms` (already tokenized): the sum
/// of their idf over the terms the index knows. Zero when it knows none.
pub fn score_ceiling(index: &Bm25Index, terms: &[String]) -> f32 {
    let n = index.doc_count();
    terms.iter().map(|t| index.doc_freq(t)).filter(|df| *df > 0).map(|df| crate::bm25::idf(df, n)).sum()
}

/// `score` as a share of `ceiling` (0 when the ceiling is 0).
pub fn normalised(score: f32, ceiling: f32) -> f32 {
    if ceiling > 0.0 && score.is_finite() {
        (score / ceiling).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_counts_hits_distinct_questions_and_days() {
        let mut e = Evidence::default();
        let day = 20_000 * DAY_MS;
        let q = |s: &str| query_key(Tokenizer::Unicode, s);
        e.record(&Use { at_ms: day, query: q("Olga's tea?"), score: Some(0.4) });
        e.record(&Use { at_ms: day + 5, query: q("tea, olga's"), score: Some(0.5) });
        e.record(&Use { at_ms: day + DAY_MS, query: q("green tea"), score: None });
        e.record(&Use { at_ms: day + 2 * DAY_MS, query: None, score: None });
        assert_eq!(e.hits, 4);
        assert_eq!(e.distinct_queries(), 2, "the first two are one question");
        assert_eq!(e.distinct_days(), 3);
        assert_eq!(e.last_score, Some(0.5), "a use without a score keeps the last one");
        assert_eq!(e.last_at, day + 2 * DAY_MS);
        assert_eq!(q("  ...  "), None);
    }

    #[test]
    fn sets_are_capped_and_survive_their_text_form() {
        let mut e = Evidence::default();
        for i in 0..(MAX_DISTINCT as i64 + 10) {
            e.record(&Use { at_ms: i * DAY_MS, query: Some(i as u32), score: Some(2.0) });
        }
        assert_eq!(e.distinct_queries(), MAX_DISTINCT);
        assert_eq!(e.distinct_days(), MAX_DISTINCT);
        assert_eq!(e.days[0], 10, "the latest days are kept");
        assert_eq!(e.last_score, Some(1.0), "scores are shares");
        let days: Vec<i32> = decode_set(&encode_set(&e.days));
        assert_eq!(days, e.days);
        assert_eq!(decode_set::<u32>("3,x,1,3,,2"), vec![1, 2, 3], "damaged parts are skipped");
    }

    #[test]
    fn a_score_is_a_share_of_what_the_query_could_score() {
        let mut index = Bm25Index::new(Tokenizer::Unicode);
        index.insert(0, &["tea", "Olga likes green tea"]);
        index.insert(1, &["coffee", "Pat drinks coffee"]);
        let terms = Tokenizer::Unicode.query_terms("green tea tomorrow");
        let ceiling = score_ceiling(&index, &terms);
        let n = index.doc_count();
        let expected = crate::bm25::idf(1, n) * 2.0;
        assert!((ceiling - expected).abs() < 1e-6, "unknown words add nothing: {ceiling} vs {expected}");
        let hits = index.search("green tea tomorrow", crate::bm25::Bm25Params::default(), 1);
        let share = normalised(hits[0].1, ceiling);
        assert!(share > 0.0 && share < 1.0, "{share}");
        assert_eq!(normalised(3.0, 0.0), 0.0);
    }
}
