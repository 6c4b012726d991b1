//! The conversation index at scale, natively: the exchanges of a file (one per line, a
//! blank line between sessions, `?`-lines are queries), as `bench/conversations.mjs`
//! writes them (distinct synthetic text). Indexes them in batches of 200, checkpoints,
//! loads the checkpoint, and times a search per query.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hearth_memory::{ConversationIndex, ConversationQuery, TurnDoc};

/// Counts live heap bytes, for the index's memory figure.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

pub fn run(file: &str) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut sessions: Vec<Vec<&str>> = vec![Vec::new()];
    let mut queries = Vec::new();
    for line in text.lines() {
        if let Some(q) = line.strip_prefix('?') {
            queries.push(q);
        } else if line.is_empty() {
            sessions.push(Vec::new());
        } else if let Some(last) = sessions.last_mut() {
            last.push(line);
        }
    }
    let mut all_docs: Vec<TurnDoc<'_>> = Vec::new();
    for (s, texts) in sessions.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        for text in texts {
            let id = all_docs.len() as u64 + 1;
            all_docs.push(TurnDoc { id, session: s as u32, at: id as i64 * 60_000, text });
        }
    }
    let before = LIVE.load(Ordering::Relaxed);
    let mut ix = ConversationIndex::new();
    let mut batch_ms = Vec::new();
    // Batches of 200 within a session, as a reset or the backfill adds them.
    let mut at = 0;
    while at < all_docs.len() {
        let session = all_docs[at].session;
        let end = (at + 200).min(all_docs.len());
        let end = at + all_docs[at..end].iter().take_while(|d| d.session == session).count();
        let t = Instant::now();
        ix.add(&all_docs[at..end]).expect("increasing ids");
        batch_ms.push(t.elapsed().as_secs_f64() * 1e3 * 200.0 / (end - at) as f64);
        at = end;
    }
    let heap = LIVE.load(Ordering::Relaxed) - before;
    let t = Instant::now();
    let chunks = ix.checkpoint();
    let checkpoint_ms = t.elapsed().as_secs_f64() * 1e3;
    let bytes: usize = chunks.iter().map(Vec::len).sum();
    drop(ix);
    let before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    let loaded = ConversationIndex::from_checkpoint(chunks.concat()).expect("a checkpoint");
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let loaded_heap = LIVE.load(Ordering::Relaxed) - before;
    // A cold load when the checkpoint lags by up to 2,000 exchanges (the host's
    // CHECKPOINT_AFTER): load, then re-index the last 2,000 from their text.
    let lag = 2_000.min(all_docs.len());
    let mut lagging = ConversationIndex::new();
    lagging.add(&all_docs[..all_docs.len() - lag]).expect("increasing ids");
    let lag_chunks = lagging.checkpoint();
    drop(lagging);
    let t = Instant::now();
    let mut caught = ConversationIndex::from_checkpoint(lag_chunks.concat()).expect("a checkpoint");
    caught.add(&all_docs[all_docs.len() - lag..]).expect("increasing ids");
    let lag_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(caught);
    let mut search_ms: Vec<f64> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let _ = loaded.search(&ConversationQuery { text: q, k: 5, ..Default::default() });
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    search_ms.sort_by(f64::total_cmp);
    batch_ms.sort_by(f64::total_cmp);
    let p = |v: &[f64], q: f64| v.get(((v.len().max(1) - 1) as f64 * q) as usize).copied().unwrap_or(f64::NAN);
    println!(
        "scale: {} exchanges in {} sessions, {} terms; index 200: p50 {:.2} ms; checkpoint {:.1} MB in {:.0} ms; \
load {:.1} ms ({:.1} ms with 2,000 exchanges to re-index); heap {:.1} MB built, {:.1} MB loaded; search p50 {:.2} ms p99 {:.2} ms ({} queries)",
        loaded.len(),
        loaded.session_count(),
        loaded.vocabulary_len(),
        p(&batch_ms, 0.5),
        bytes as f64 / 1e6,
        checkpoint_ms,
        load_ms,
        lag_ms,
        heap as f64 / 1e6,
        loaded_heap as f64 / 1e6,
        p(&search_ms, 0.5),
        p(&search_ms, 0.99),
        search_ms.len()
    );
    println!(
        "BENCH_JSON {}",
        serde_json::json!({"scale": {
            "exchanges": loaded.len(), "index200Ms": p(&batch_ms, 0.5), "checkpointBytes": bytes, "loadMs": load_ms, "loadWithLagMs": lag_ms,
            "heapBytes": loaded_heap, "searchP50Ms": p(&search_ms, 0.5), "searchP99Ms": p(&search_ms, 0.99),
        }})
    );
}
