//! The Cranfield 1400 collection (`../shared/data/cranfield`, see its README): parsing,
//! the judged metrics, and Lucene 8.8.1's reference figures. Shared by the parity test
//! (`tests/cranfield.rs`) and the bench example (`examples/cranfield.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hearth_memory::{Bm25Index, Bm25Params, Tokenizer};

/// Lucene 8.8.1 figures from the data set's README: (k1, b, nDCG@10, Recall@100, MAP).
pub const LUCENE: [(f32, f32, f64, f64, f64); 2] =
    [(1.2, 0.75, 0.3442, 0.6980, 0.2762), (0.9, 0.4, 0.3286, 0.6878, 0.2638)];
/// Average precision is computed over this many results (trec_eval's default).
pub const MAP_DEPTH: usize = 1000;

pub struct Collection {
    /// (doc id, title + text), file order.
    pub docs: Vec<(u64, String)>,
    /// Query texts, file order (the judgements number them 1..=n in this order).
    pub queries: Vec<String>,
    /// Per query (0-based): doc id → graded gain (5 - code; 0 if not relevant).
    pub gains: Vec<HashMap<u64, f64>>,
}

#[derive(Clone, Copy, Debug)]
pub struct Quality {
    pub ndcg10: f64,
    pub recall100: f64,
    pub map: f64,
}

/// Where the data is: `explicit`, else `$CRANFIELD_DIR` (when set, the only place
/// looked at), else `../shared/data/cranfield` next to the repository (from the working
/// directory or from this crate). Err: why there is none.
pub fn data_dir(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
    let has_data = |dir: &Path| dir.join("cran.all.1400").is_file();
    if let Some(dir) = explicit.or_else(|| std::env::var_os("CRANFIELD_DIR").map(PathBuf::from)) {
        return if has_data(&dir) { Ok(dir) } else { Err(format!("{} has no cran.all.1400", dir.display())) };
    }
    let candidates = [
        PathBuf::from("../shared/data/cranfield"),
        // The repository root is two levels above this crate.
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cranfield"),
    ];
    candidates.into_iter().find(|dir| has_data(dir)).ok_or_else(|| {
        "no Cranfield data (set CRANFIELD_DIR, or put it at ../shared/data/cranfield next to the repository)".to_owned()
    })
}

pub fn load(dir: &Path) -> std::io::Result<Collection> {
    let read = |name: &str| std::fs::read(dir.join(name)).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let docs = parse_smart(&read("cran.all.1400")?, &["T", "W"]);
    let queries: Vec<String> = parse_smart(&read("cran.qry")?, &["W"]).into_iter().map(|(_, q)| q).collect();
    let gains = parse_qrels(&read("cranqrel")?, queries.len());
    Ok(Collection { docs, queries, gains })
}

/// The index the README's figures were measured with: title + text as one field,
/// the reference tokenization.
pub fn index(collection: &Collection) -> Bm25Index {
    let mut index = Bm25Index::new(Tokenizer::Reference);
    for (id, text) in &collection.docs {
        index.insert(*id, &[text]);
    }
    index
}

/// Mean nDCG@10, Recall@100 and MAP over all queries.
pub fn evaluate(collection: &Collection, index: &Bm25Index, params: Bm25Params) -> Quality {
    let (mut ndcg10, mut recall100, mut map) = (0.0, 0.0, 0.0);
    for (query, gains) in collection.queries.iter().zip(&collection.gains) {
        let terms = Tokenizer::Reference.query_terms(query);
        let ranking: Vec<u64> =
            index.search_terms(&terms, params, MAP_DEPTH, &|_| true).into_iter().map(|h| h.0).collect();
        ndcg10 += ndcg_at(&ranking, gains, 10);
        recall100 += recall_at(&ranking, gains, 100);
        map += average_precision(&ranking, gains);
    }
    let n = collection.queries.len().max(1) as f64;
    Quality { ndcg10: ndcg10 / n, recall100: recall100 / n, map: map / n }
}

/// nDCG with linear graded gains and log2(rank + 1) discounts; the ideal ranking uses
/// every judged document of the query.
pub fn ndcg_at(ranking: &[u64], gains: &HashMap<u64, f64>, k: usize) -> f64 {
    let dcg: f64 = ranking
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| gains.get(d).copied().unwrap_or(0.0) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<f64> = gains.values().copied().filter(|g| *g > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
    if idcg == 0.0 {
        0.0
    } else {
        dcg / idcg
    }
}

fn relevant_count(gains: &HashMap<u64, f64>) -> usize {
    gains.values().filter(|g| **g > 0.0).count()
}

pub fn recall_at(ranking: &[u64], gains: &HashMap<u64, f64>, k: usize) -> f64 {
    let total = relevant_count(gains);
    if total == 0 {
        return 0.0;
    }
    let found = ranking.iter().take(k).filter(|d| gains.get(d).is_some_and(|g| *g > 0.0)).count();
    found as f64 / total as f64
}

pub fn average_precision(ranking: &[u64], gains: &HashMap<u64, f64>) -> f64 {
    let total = relevant_count(gains);
    if total == 0 {
        return 0.0;
    }
    let (mut hits, mut sum) = (0usize, 0.0);
    for (i, d) in ranking.iter().enumerate() {
        if gains.get(d).is_some_and(|g| *g > 0.0) {
            hits += 1;
            sum += hits as f64 / (i + 1) as f64;
        }
    }
    sum / total as f64
}

/// SMART format: `.I id` starts a record; `.X` lines switch field; the wanted fields are
/// joined by newlines. Returns (id, text) in file order.
pub fn parse_smart(text: &str, fields: &[&str]) -> Vec<(u64, String)> {
    let mut records: Vec<(u64, String)> = Vec::new();
    let mut keep = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(".I") {
            let id = rest.trim().parse().unwrap_or(records.len() as u64 + 1);
            records.push((id, String::new()));
            keep = false;
        } else if line.len() >= 2 && line.starts_with('.') && line[1..].chars().all(|c| c.is_ascii_uppercase()) {
            keep = fields.contains(&&line[1..]);
        } else if keep {
            if let Some((_, body)) = records.last_mut() {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    records
}

/// `query doc code` lines; queries are numbered 1..=n in file order.
pub fn parse_qrels(text: &str, queries: usize) -> Vec<HashMap<u64, f64>> {
    let mut gains = vec![HashMap::new(); queries];
    for line in text.lines() {
        let parts: Vec<i64> = line.split_whitespace().filter_map(|p| p.parse().ok()).collect();
        if let [q, doc, code] = parts[..] {
            if q >= 1 && (q as usize) <= queries {
                let gain = if (1..=4).contains(&code) { (5 - code) as f64 } else { 0.0 };
                gains[q as usize - 1].insert(doc as u64, gain);
            }
        }
    }
    gains
}
