//! Cranfield 1400 evaluation: ranking quality against Lucene 8.8.1's reference figures,
//! and query throughput.
//!
//! ```text
//! cargo run --release -p hearth-memory --example cranfield [-- path/to/cranfield]
//! ```
//!
//! Default path: `../shared/data/cranfield` from the repository root. Prints a table and
//! one `BENCH_JSON {...}` line for the bench script.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hearth_memory::{Bm25Index, Bm25Params, Tokenizer};

/// Lucene 8.8.1 figures from the data set's README: (k1, b, nDCG@10, Recall@100, MAP).
const LUCENE: [(f32, f32, f64, f64, f64); 2] = [(1.2, 0.75, 0.3442, 0.6980, 0.2762), (0.9, 0.4, 0.3286, 0.6878, 0.2638)];
/// Average precision is computed over this many results (trec_eval's default).
const MAP_DEPTH: usize = 1000;

struct Judgements {
    /// Per query (0-based, file order): doc id → graded gain (5 - code; 0 if not relevant).
    gains: Vec<HashMap<u64, f64>>,
}

fn main() {
    let dir = data_dir();
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| {
            eprintln!("cannot read {}: {e}", dir.join(name).display());
            std::process::exit(2)
        })
    };
    let docs = parse_smart(&read("cran.all.1400"), &["T", "W"]);
    let queries = parse_smart(&read("cran.qry"), &["W"]);
    let judgements = parse_qrels(&read("cranqrel"), queries.len());

    let started = Instant::now();
    let mut index = Bm25Index::new(Tokenizer::Reference);
    for (id, text) in &docs {
        index.insert(*id, &[text]);
    }
    let index_ms = started.elapsed().as_secs_f64() * 1e3;

    let query_terms: Vec<Vec<String>> = queries.iter().map(|(_, q)| Tokenizer::Reference.query_terms(q)).collect();

    println!("Cranfield: {} documents, {} queries, index built in {index_ms:.1} ms", docs.len(), queries.len());
    println!("| k1, b | nDCG@10 | Lucene | Δ | Recall@100 | Lucene | MAP | Lucene | queries/s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut json_runs = Vec::new();
    for (k1, b, lucene_ndcg, lucene_recall, lucene_map) in LUCENE {
        let params = Bm25Params { k1, b };
        let (mut ndcg, mut recall, mut map) = (0.0, 0.0, 0.0);
        for (q, terms) in query_terms.iter().enumerate() {
            let ranking: Vec<u64> = index.search_terms(terms, params, MAP_DEPTH, &|_| true).into_iter().map(|h| h.0).collect();
            let gains = &judgements.gains[q];
            ndcg += ndcg_at(&ranking, gains, 10);
            recall += recall_at(&ranking, gains, 100);
            map += average_precision(&ranking, gains);
        }
        let n = query_terms.len() as f64;
        let (ndcg, recall, map) = (ndcg / n, recall / n, map / n);
        let qps = queries_per_second(&index, &query_terms, params);
        println!(
            "| {k1}, {b} | {ndcg:.4} | {lucene_ndcg:.4} | {:+.4} | {recall:.4} | {lucene_recall:.4} | {map:.4} | {lucene_map:.4} | {qps:.0} |",
            ndcg - lucene_ndcg
        );
        json_runs.push(format!(
            "{{\"k1\":{k1},\"b\":{b},\"ndcg10\":{ndcg:.6},\"recall100\":{recall:.6},\"map\":{map:.6},\"lucene_ndcg10\":{lucene_ndcg},\"lucene_recall100\":{lucene_recall},\"lucene_map\":{lucene_map},\"qps\":{qps:.1}}}"
        ));
    }
    println!(
        "BENCH_JSON {{\"bench\":\"cranfield\",\"engine\":\"hearth-memory\",\"target\":\"native\",\"docs\":{},\"queries\":{},\"index_ms\":{index_ms:.3},\"runs\":[{}]}}",
        docs.len(),
        queries.len(),
        json_runs.join(",")
    );
}

/// Top-10 searches per second over all queries (best of several passes).
fn queries_per_second(index: &Bm25Index, queries: &[Vec<String>], params: Bm25Params) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..20 {
        let started = Instant::now();
        let mut found = 0usize;
        for terms in queries {
            found += index.search_terms(terms, params, 10, &|_| true).len();
        }
        std::hint::black_box(found);
        best = best.min(started.elapsed().as_secs_f64());
    }
    queries.len() as f64 / best
}

/// nDCG with linear graded gains and log2(rank + 1) discounts; the ideal ranking uses
/// every judged document of the query.
fn ndcg_at(ranking: &[u64], gains: &HashMap<u64, f64>, k: usize) -> f64 {
    let dcg: f64 = ranking.iter().take(k).enumerate().map(|(i, d)| gains.get(d).copied().unwrap_or(0.0) / (i as f64 + 2.0).log2()).sum();
    let mut ideal: Vec<f64> = gains.values().copied().filter(|g| *g > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, g)| g / (i as f64 + 2.0).log2()).sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

fn relevant_count(gains: &HashMap<u64, f64>) -> usize {
    gains.values().filter(|g| **g > 0.0).count()
}

fn recall_at(ranking: &[u64], gains: &HashMap<u64, f64>, k: usize) -> f64 {
    let total = relevant_count(gains);
    if total == 0 {
        return 0.0;
    }
    let found = ranking.iter().take(k).filter(|d| gains.get(d).is_some_and(|g| *g > 0.0)).count();
    found as f64 / total as f64
}

fn average_precision(ranking: &[u64], gains: &HashMap<u64, f64>) -> f64 {
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
fn parse_smart(text: &str, fields: &[&str]) -> Vec<(u64, String)> {
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
fn parse_qrels(text: &str, queries: usize) -> Judgements {
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
    Judgements { gains }
}

fn data_dir() -> PathBuf {
    if let Some(arg) = std::env::args().nth(1) {
        return PathBuf::from(arg);
    }
    let from_cwd = Path::new("../shared/data/cranfield");
    if from_cwd.exists() {
        return from_cwd.to_path_buf();
    }
    // The repository root is two levels above this crate.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cranfield")
}
