//! Property test: after random sequences of operations (with failures, checkpoints and
//! restarts mixed in), search results and scores equal a brute-force BM25 over the
//! current entries, recomputed from scratch.

mod common;

use common::{brute_force, Rng};
use hearth_memory::{Bm25Params, InMemoryBackend, Kind, MemoryConfig, MemoryError, MemoryStore, Op, Tokenizer};

const WORDS: &[&str] = &[
    "espresso", "coffee", "tea", "luis", "ana", "spanish", "english", "the", "a", "of", "müller", "straße", "canción",
    "東京", "京都", "wing", "flow", "mach", "boundary", "layer", "UPPER", "Mixed", "2026", "v3.14", "🐙", "--",
];
const NAMES: &[&str] =
    &["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "café", "東京 trip", "the tea"];

fn text(rng: &mut Rng, max_words: usize) -> String {
    let n = rng.below(max_words + 1);
    (0..n).map(|_| *rng.pick(WORDS)).collect::<Vec<_>>().join(" ")
}

fn random_op(rng: &mut Rng) -> Op {
    let name = rng.pick(NAMES).to_string();
    match rng.below(10) {
        0..=3 => Op::Add {
            name,
            content: text(rng, 40),
            kind: if rng.below(4) == 0 { Kind::Archive } else { Kind::Note },
            created_at: rng.below(1 << 40) as i64,
        },
        4 => Op::Rename { name, new_name: rng.pick(NAMES).to_string() },
        5 => Op::Alias { name, alias: rng.pick(NAMES).to_string() },
        6 | 7 => Op::Write { name, content: text(rng, 40) },
        _ => Op::Remove { name },
    }
}

fn check(store: &MemoryStore<InMemoryBackend>, rng: &mut Rng, tokenizer: Tokenizer, params: Bm25Params) {
    let entries: Vec<_> = store.entries().collect();
    for _ in 0..4 {
        let query = text(rng, 5);
        let expected = brute_force(&entries, tokenizer, params, &query);
        let k = if rng.below(2) == 0 { 3 } else { 1000 };
        let got: Vec<(u64, f32)> = store.search(&query, k).iter().map(|h| (h.entry.id, h.score)).collect();
        let expected: Vec<(u64, f32)> = expected.into_iter().take(k).collect();
        assert_eq!(got, expected, "query {query:?}");
        for (id, score) in got.iter().take(2) {
            let entry = store.get_by_id(*id).unwrap();
            assert_eq!(store.explain(&query, &entry.name).unwrap().value, *score);
        }
    }
}

fn run(seed: u64, tokenizer: Tokenizer, params: Bm25Params, steps: usize) {
    let mut rng = Rng::new(seed);
    let config =
        MemoryConfig { tokenizer, bm25: params, checkpoint_after: Some(1 + rng.below(20)), ..MemoryConfig::default() };
    let mut store = MemoryStore::open(InMemoryBackend::new(), config).unwrap();
    for step in 0..steps {
        let op = random_op(&mut rng);
        let fail = rng.below(10) == 0;
        if fail {
            store.backend_mut().fail_next_commits(1);
        }
        let before: Vec<_> = store.entries().cloned().collect();
        match store.apply(op.clone()) {
            Ok(_) => {}
            Err(MemoryError::Backend(_)) => assert!(fail),
            Err(
                MemoryError::DuplicateName { .. }
                | MemoryError::UnknownName(_)
                | MemoryError::AliasAlreadyBound { .. }
                | MemoryError::TooManyAliases { .. },
            ) => {
                store.backend_mut().fail_next_commits(0);
            }
            Err(other) => panic!("unexpected {other:?} for {op:?}"),
        }
        if fail {
            store.backend_mut().fail_next_commits(0);
            // The commit failed, or validation or a no-op stopped the op before it: in
            // every case nothing changed.
            assert_eq!(store.entries().cloned().collect::<Vec<_>>(), before, "failed {op:?}");
        }
        check(&store, &mut rng, tokenizer, params);
        if step % 37 == 36 {
            let before: Vec<_> = store.entries().cloned().collect();
            store = MemoryStore::open(store.into_backend(), config).unwrap();
            assert_eq!(store.entries().cloned().collect::<Vec<_>>(), before, "restart at step {step}");
            check(&store, &mut rng, tokenizer, params);
        }
    }
}

#[test]
fn incremental_index_equals_brute_force_unicode() {
    for seed in 1..=12 {
        run(seed, Tokenizer::Unicode, Bm25Params::default(), 300);
    }
}

#[test]
fn incremental_index_equals_brute_force_reference_tokenizer_other_params() {
    for seed in 100..=105 {
        run(seed, Tokenizer::Reference, Bm25Params { k1: 0.9, b: 0.4 }, 300);
    }
}

/// Enough removals to trigger the index's bulk purge of dead postings.
#[test]
fn purges_keep_scores_exact() {
    let mut rng = Rng::new(99);
    let config = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
    let mut store = MemoryStore::open(InMemoryBackend::new(), config).unwrap();
    for round in 0..6000 {
        let name = format!("n{}", rng.below(300));
        let op = match rng.below(3) {
            0 => Op::Add { name, content: text(&mut rng, 30), kind: Kind::Note, created_at: 0 },
            1 => Op::Write { name, content: text(&mut rng, 30) },
            _ => Op::Remove { name },
        };
        let _ = store.apply(op);
        if round % 500 == 0 {
            check(&store, &mut rng, Tokenizer::Unicode, Bm25Params::default());
        }
    }
    check(&store, &mut rng, Tokenizer::Unicode, Bm25Params::default());
    store.checkpoint().unwrap();
    let store = MemoryStore::open(store.into_backend(), config).unwrap();
    check(&store, &mut rng, Tokenizer::Unicode, Bm25Params::default());
}
