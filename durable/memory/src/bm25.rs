//! Lucene 8's `BM25Similarity`, to the bit.
//!
//! The formula is the Robertson–Zaragoza one without the `(k1 + 1)` factor (it scales
//! every score equally and Lucene 8 dropped it):
//!
//! ```text
//! idf   = ln(1 + (N - n + 0.5) / (n + 0.5))          N: documents with the field
//! score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))   dl: decoded one-byte norm
//! ```
//!
//! The arithmetic follows Lucene's types so scores agree bit for bit: `idf` is computed in
//! `double` and rounded to `float`; `avgdl` likewise; the per-norm factor is a 256-entry
//! `float` cache of `1 / (k1 * ((1 - b) + b * LENGTH_TABLE[i] / avgdl))`; and the term score
//! is Lucene's monotonic rewrite `weight - weight / (1 + freq * normInverse)`. A query's
//! term scores are summed in `double` and rounded to `float`, as Lucene's disjunction
//! scorers do.

use std::fmt;

use crate::norms::LENGTH_TABLE;

/// Term-frequency saturation: how quickly repeated occurrences stop adding score.
pub const DEFAULT_K1: f32 = 1.2;
/// Length normalisation: 0 ignores document length, 1 normalises fully.
pub const DEFAULT_B: f32 = 0.75;

/// The two BM25 parameters.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: DEFAULT_K1, b: DEFAULT_B }
    }
}

impl Bm25Params {
    /// Lucene rejects these too (`k1` must be finite and non-negative, `b` in [0, 1]).
    pub fn is_valid(&self) -> bool {
        self.k1.is_finite() && self.k1 >= 0.0 && self.b.is_finite() && (0.0..=1.0).contains(&self.b)
    }
}

/// `BM25Similarity.idf(docFreq, docCount)`.
pub fn idf(doc_freq: u64, doc_count: u64) -> f32 {
    (1.0f64 + (doc_count as f64 - doc_freq as f64 + 0.5) / (doc_freq as f64 + 0.5)).ln() as f32
}

/// `BM25Similarity.avgFieldLength`: sumTotalTermFreq / docCount, in double, as float.
pub fn avg_field_length(sum_total_term_freq: u64, doc_count: u64) -> f32 {
    if doc_count == 0 {
        return 1.0;
    }
    (sum_total_term_freq as f64 / doc_count as f64) as f32
}

/// The reciprocal of `k1 * ((1 - b) + b * dl / avgdl)` for every norm byte: Lucene's
/// `BM25Scorer.cache`. Depends only on the parameters and avgdl, so one search builds it
/// once for all its terms.
pub struct NormCache {
    inverse: [f32; 256],
}

impl NormCache {
    pub fn new(params: Bm25Params, avgdl: f32) -> Self {
        let mut inverse = [0.0f32; 256];
        for (slot, length) in inverse.iter_mut().zip(LENGTH_TABLE.iter()) {
            // Same evaluation order as Java: (b * length) / avgdl, then the sums.
            *slot = 1.0 / (params.k1 * ((1.0 - params.b) + params.b * *length / avgdl));
        }
        NormCache { inverse }
    }

    #[inline]
    pub fn inverse(&self, norm: u8) -> f32 {
        self.inverse[norm as usize]
    }
}

/// `BM25Scorer.score`: `weight` is `boost * idf` (boost is always 1 here).
#[inline]
pub fn term_score(weight: f32, freq: f32, norm_inverse: f32) -> f32 {
    weight - weight / (1.0 + freq * norm_inverse)
}

/// Everything needed to score one term in one document, for [`explain_term`].
#[derive(Clone, Debug)]
pub struct TermStats {
    pub term: String,
    /// n: documents containing the term.
    pub doc_freq: u64,
    /// N: documents with at least one token.
    pub doc_count: u64,
    pub avgdl: f32,
    /// Occurrences of the term in the document.
    pub freq: u32,
    /// The document's one-byte length norm.
    pub norm: u8,
}

/// A score and how it was computed, shaped like Lucene's `Explanation` (and tantivy's).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Explanation {
    pub value: f32,
    pub description: String,
    pub details: Vec<Explanation>,
}

impl Explanation {
    pub fn new(value: f32, description: impl Into<String>) -> Self {
        Explanation { value, description: description.into(), details: Vec::new() }
    }

    fn with(mut self, details: Vec<Explanation>) -> Self {
        self.details = details;
        self
    }

    fn write_indented(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        writeln!(f, "{:width$}{} = {}", "", self.value, self.description, width = depth * 2)?;
        for detail in &self.details {
            detail.write_indented(f, depth + 1)?;
        }
        Ok(())
    }
}

/// Lucene's `Explanation.toString()` layout: one line per node, two spaces per level.
impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_indented(f, 0)
    }
}

/// `BM25Scorer.explain` for one term in one document.
pub fn explain_term(params: Bm25Params, stats: &TermStats) -> Explanation {
    let idf_value = idf(stats.doc_freq, stats.doc_count);
    let idf_explanation = Explanation::new(idf_value, "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:")
        .with(vec![
            Explanation::new(stats.doc_freq as f32, "n, number of documents containing term"),
            Explanation::new(stats.doc_count as f32, "N, total number of documents with field"),
        ]);
    let freq = stats.freq as f32;
    let dl = LENGTH_TABLE[stats.norm as usize];
    let norm_value = params.k1 * ((1.0 - params.b) + params.b * dl / stats.avgdl);
    let tf_value = (freq as f64 / (freq as f64 + norm_value as f64)) as f32;
    let tf_explanation =
        Explanation::new(tf_value, "tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:").with(vec![
            Explanation::new(freq, "freq, occurrences of term within document"),
            Explanation::new(params.k1, "k1, term saturation parameter"),
            Explanation::new(params.b, "b, length normalization parameter"),
            Explanation::new(dl, "dl, length of field (approximate)"),
            Explanation::new(stats.avgdl, "avgdl, average length of field"),
        ]);
    let cache = NormCache::new(params, stats.avgdl);
    let score = term_score(idf_value, freq, cache.inverse(stats.norm));
    let inner = Explanation::new(score, format!("score(freq={freq:?}), computed as boost * idf * tf from:"))
        .with(vec![idf_explanation, tf_explanation]);
    Explanation::new(score, format!("weight(text:{} in doc) [BM25Similarity], result of:", stats.term))
        .with(vec![inner])
}

/// A query's explanation: Lucene's "sum of:" over the matching terms' explanations.
pub fn explain_sum(terms: Vec<Explanation>) -> Explanation {
    let total = terms.iter().map(|t| t.value as f64).sum::<f64>() as f32;
    Explanation::new(total, "sum of:").with(terms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::norms::length_to_norm;

    #[test]
    fn idf_matches_lucene() {
        // ln(1 + (10 - 1 + 0.5) / 1.5) = ln(7.333...)
        assert_eq!(idf(1, 10), (1.0f64 + 9.5 / 1.5).ln() as f32);
        assert!(idf(10, 10) > 0.0, "Lucene's +1 keeps idf positive for common terms");
    }

    #[test]
    fn rewrite_equals_textbook_formula_up_to_rounding() {
        let params = Bm25Params::default();
        let avgdl = 37.5;
        let cache = NormCache::new(params, avgdl);
        let weight = idf(3, 100);
        for len in [1u32, 10, 24, 50, 300] {
            let norm = length_to_norm(len);
            let dl = LENGTH_TABLE[norm as usize];
            for freq in 1..5u32 {
                let f = freq as f32;
                let textbook = weight * f / (f + params.k1 * (1.0 - params.b + params.b * dl / avgdl));
                let lucene = term_score(weight, f, cache.inverse(norm));
                assert!((textbook - lucene).abs() <= 1e-6 * textbook.abs().max(1.0));
            }
        }
    }

    #[test]
    fn explanation_value_is_the_score() {
        let params = Bm25Params::default();
        let stats = TermStats {
            term: "wing".into(),
            doc_freq: 3,
            doc_count: 100,
            avgdl: 20.0,
            freq: 2,
            norm: length_to_norm(30),
        };
        let e = explain_term(params, &stats);
        let cache = NormCache::new(params, 20.0);
        assert_eq!(e.value, term_score(idf(3, 100), 2.0, cache.inverse(stats.norm)));
        let text = e.to_string();
        assert!(text.contains("idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:"));
        assert!(text.contains("dl, length of field (approximate)"));
    }
}
