//! Shared helpers for the integration tests: a seeded RNG and a brute-force BM25 scorer.
#![allow(dead_code)]

pub mod cranfield;

use std::collections::HashMap;

use hearth_memory::norms::{length_to_norm, norm_to_length};
use hearth_memory::{Bm25Params, Entry, Tokenizer};

/// xorshift64*: deterministic, dependency-free randomness for property tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// BM25 recomputed from scratch over `entries`, written straight from Lucene's
/// definitions (no shared code with the index but the norm byte functions).
pub fn brute_force(entries: &[&Entry], tokenizer: Tokenizer, params: Bm25Params, query: &str) -> Vec<(u64, f32)> {
    let docs: Vec<(u64, HashMap<String, u32>, u32)> = entries
        .iter()
        .map(|e| {
            let mut tf = HashMap::new();
            let tokens: Vec<String> =
                tokenizer.tokens(&e.name).into_iter().chain(tokenizer.tokens(&e.content)).collect();
            for t in &tokens {
                *tf.entry(t.clone()).or_insert(0) += 1;
            }
            (e.id, tf, tokens.len() as u32)
        })
        .collect();
    let n_docs = docs.iter().filter(|d| d.2 > 0).count() as u64;
    if n_docs == 0 {
        return Vec::new();
    }
    let total: u64 = docs.iter().map(|d| u64::from(d.2)).sum();
    let avgdl = (total as f64 / n_docs as f64) as f32;
    let mut sums: HashMap<u64, f64> = HashMap::new();
    for term in tokenizer.query_terms(query) {
        let df = docs.iter().filter(|d| d.1.contains_key(&term)).count() as u64;
        if df == 0 {
            continue;
        }
        let idf = (1.0f64 + (n_docs as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln() as f32;
        for (id, tf, len) in &docs {
            if let Some(&freq) = tf.get(&term) {
                let dl = norm_to_length(length_to_norm(*len)) as f32;
                let inverse = 1.0f32 / (params.k1 * ((1.0 - params.b) + params.b * dl / avgdl));
                let score = idf - idf / (1.0 + freq as f32 * inverse);
                *sums.entry(*id).or_insert(0.0) += f64::from(score);
            }
        }
    }
    let mut hits: Vec<(u64, f32)> = sums.into_iter().map(|(id, s)| (id, s as f32)).collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits
}
