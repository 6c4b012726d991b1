//! Cranfield 1400 evaluation: ranking quality against Lucene 8.8.1's reference figures,
//! and query throughput.
//!
//! ```text
//! cargo run --release -p hearth-memory --example cranfield [-- path/to/cranfield]
//! ```
//!
//! Default path: `$CRANFIELD_DIR`, else `../shared/data/cranfield` next to the repository. Prints a table and
//! one `BENCH_JSON {...}` line for the bench script.

use std::path::PathBuf;
use std::time::Instant;

use hearth_memory::{Bm25Index, Bm25Params, Tokenizer};

#[path = "../../durable/memory/tests/common/cranfield.rs"]
mod cranfield;

use cranfield::LUCENE;

fn main() {
    let dir = cranfield::data_dir(std::env::args().nth(1).map(PathBuf::from)).unwrap_or_else(|why| {
        eprintln!("{why}");
        std::process::exit(2)
    });
    let collection = cranfield::load(&dir).unwrap_or_else(|e| {
        eprintln!("cannot read {}: {e}", dir.display());
        std::process::exit(2)
    });

    let started = Instant::now();
    let index = cranfield::index(&collection);
    let index_ms = started.elapsed().as_secs_f64() * 1e3;

    let query_terms: Vec<Vec<String>> =
        collection.queries.iter().map(|q| Tokenizer::Reference.query_terms(q)).collect();

    println!(
        "Cranfield: {} documents, {} queries, index built in {index_ms:.1} ms",
        collection.docs.len(),
        collection.queries.len()
    );
    println!("| k1, b | nDCG@10 | Lucene | Δ | Recall@100 | Lucene | MAP | Lucene | queries/s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut json_runs = Vec::new();
    for (k1, b, lucene_ndcg, lucene_recall, lucene_map) in LUCENE {
        let params = Bm25Params { k1, b };
        let quality = cranfield::evaluate(&collection, &index, params);
        let (ndcg, recall, map) = (quality.ndcg10, quality.recall100, quality.map);
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
        collection.docs.len(),
        collection.queries.len(),
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
