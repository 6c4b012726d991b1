//! Lucene parity on a real collection: nDCG@10, Recall@100 and MAP on Cranfield 1400
//! equal Lucene 8.8.1's figures (the data set's README) within 0.001, at the default
//! parameters and at (0.9, 0.4).
//!
//! The data is not in the repository: the test reads `$CRANFIELD_DIR` or
//! `../shared/data/cranfield` next to it, and is skipped (with a note on stderr, which
//! the test harness does not capture) when neither exists, as in a plain clone.

mod common;

use std::io::Write;

use common::cranfield;
use hearth_memory::Bm25Params;

#[test]
fn cranfield_ranking_equals_lucene() {
    let dir = match cranfield::data_dir(None) {
        Ok(dir) => dir,
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "SKIPPED cranfield_ranking_equals_lucene: {why}");
            return;
        }
    };
    let collection = cranfield::load(&dir).expect("the Cranfield files are readable");
    assert_eq!((collection.docs.len(), collection.queries.len()), (1400, 225), "the README's collection");
    let index = cranfield::index(&collection);
    for (k1, b, ndcg10, recall100, map) in cranfield::LUCENE {
        let got = cranfield::evaluate(&collection, &index, Bm25Params { k1, b });
        let near = |a: f64, b: f64| (a - b).abs() <= 0.001;
        assert!(near(got.ndcg10, ndcg10), "nDCG@10 at ({k1}, {b}): {:.4}, Lucene {ndcg10}", got.ndcg10);
        assert!(near(got.recall100, recall100), "Recall@100 at ({k1}, {b}): {:.4}, Lucene {recall100}", got.recall100);
        assert!(near(got.map, map), "MAP at ({k1}, {b}): {:.4}, Lucene {map}", got.map);
    }
}
