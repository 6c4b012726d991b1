//! Bench entry points for V8: plain `extern "C"` functions over linear memory.
//! The host writes UTF-8 into buffers from [`alloc`] and times the calls.
#![allow(clippy::missing_safety_doc)]

use hearth_memory::{Bm25Index, Bm25Params, InMemoryBackend, Kind, MemoryConfig, MemoryStore, Op, Tokenizer};
use std::cell::RefCell;

thread_local! {
    static INDEX: RefCell<Option<Bm25Index>> = const { RefCell::new(None) };
    static STORE: RefCell<Option<MemoryStore<InMemoryBackend>>> = const { RefCell::new(None) };
    static SAVED: RefCell<Option<InMemoryBackend>> = const { RefCell::new(None) };
    static PREPARED: RefCell<Option<InMemoryBackend>> = const { RefCell::new(None) };
}

#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    let mut v = Vec::<u8>::with_capacity(len.max(1));
    let p = v.as_mut_ptr();
    std::mem::forget(v);
    p
}

unsafe fn text<'a>(ptr: *const u8, len: usize) -> &'a str {
    std::str::from_utf8(std::slice::from_raw_parts(ptr, len)).unwrap_or("")
}

/// Indexes Cranfield documents separated by NUL bytes (reference tokenizer).
#[no_mangle]
pub unsafe extern "C" fn cranfield_load(ptr: *const u8, len: usize) -> u32 {
    let mut index = Bm25Index::new(Tokenizer::Reference);
    let mut n = 0;
    for (i, doc) in text(ptr, len).split('\0').enumerate() {
        index.insert(i as u64 + 1, &[doc]);
        n += 1;
    }
    INDEX.with(|x| *x.borrow_mut() = Some(index));
    n
}

/// Top 10 for one query; returns the best doc id (0: none).
#[no_mangle]
pub unsafe extern "C" fn cranfield_query(ptr: *const u8, len: usize, k1: f32, b: f32) -> u64 {
    let q = text(ptr, len);
    INDEX.with(|x| {
        x.borrow().as_ref().and_then(|ix| ix.search(q, Bm25Params { k1, b }, 10).first().map(|h| h.0)).unwrap_or(0)
    })
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn note(rng: &mut Rng, words: &[String], cumulative: &[f64]) -> String {
    let total = cumulative[cumulative.len() - 1];
    (0..100)
        .map(|_| {
            let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
            let i = cumulative.partition_point(|c| *c < u).min(words.len() - 1);
            words[i].as_str()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn generator() -> (Vec<String>, Vec<f64>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let letters = b"etaoinshrdlcumwfgypbvkjxqz";
    let words = (0..30_000)
        .map(|_| {
            let len = 2 + (rng.next() % 9) as usize;
            (0..len).map(|_| letters[(rng.next() % 26) as usize] as char).collect()
        })
        .collect();
    let mut total = 0.0;
    let cumulative = (1..=30_000).map(|r| {
        total += 1.0 / r as f64;
        total
    });
    (words, cumulative.collect())
}

/// Builds a store of `n` notes of 100 Zipf-distributed tokens and checkpoints it.
/// Returns the checkpoint's bytes.
#[no_mangle]
pub extern "C" fn notes_build(n: u32) -> u32 {
    let (words, cumulative) = generator();
    let mut rng = Rng(42);
    let config = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
    let Ok(mut store) = MemoryStore::open(InMemoryBackend::new(), config) else { return 0 };
    for i in 0..n {
        let op = Op::Add { name: format!("note-{i}"), content: note(&mut rng, &words, &cumulative), kind: Kind::Note, created_at: 0 };
        if store.apply(op).is_err() {
            return 0;
        }
    }
    if store.checkpoint().is_err() {
        return 0;
    }
    let bytes = store.backend().stored_bytes() as u32;
    SAVED.with(|s| *s.borrow_mut() = Some(store.backend().clone()));
    STORE.with(|s| *s.borrow_mut() = Some(store));
    bytes
}

/// Readies a cold load outside the timed call: drops the loaded store (a cold object
/// has none to free) and copies the saved rows into a fresh backend.
#[no_mangle]
pub extern "C" fn notes_cold_prepare() {
    STORE.with(|s| *s.borrow_mut() = None);
    let backend = SAVED.with(|s| s.borrow().clone());
    PREPARED.with(|p| *p.borrow_mut() = backend);
}

/// Opens the prepared backend as a cold object would (the backend's `load` copies the
/// rows, as reading them from SQLite does); returns the entry count.
#[no_mangle]
pub extern "C" fn notes_cold_load() -> u32 {
    let Some(backend) = PREPARED.with(|p| p.borrow_mut().take()) else { return 0 };
    let config = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
    match MemoryStore::open(backend, config) {
        Ok(store) => {
            let n = store.len() as u32;
            STORE.with(|s| *s.borrow_mut() = Some(store));
            n
        }
        Err(_) => 0,
    }
}

/// Searches the loaded store for the first three words of the text from
/// [`notes_prepare`] (kept); returns the number of hits (top 10).
#[no_mangle]
pub extern "C" fn notes_search() -> u32 {
    let query: String = PENDING.with(|p| p.borrow().split(' ').take(3).collect::<Vec<_>>().join(" "));
    STORE.with(|s| s.borrow().as_ref().map_or(0, |st| st.search(&query, 10).len() as u32))
}

/// Generates the text the next [`notes_op`] uses (kept out of the timed call).
#[no_mangle]
pub extern "C" fn notes_prepare(seed: u64) {
    let content = GEN.with(|g| {
        let mut g = g.borrow_mut();
        let (words, cumulative) = g.get_or_insert_with(generator);
        note(&mut Rng(seed | 1), words, cumulative)
    });
    PENDING.with(|p| *p.borrow_mut() = content);
}

/// One operation on the loaded store: 0 add, 1 write, 2 remove (of note `i`).
#[no_mangle]
pub extern "C" fn notes_op(kind: u32, i: u32) -> u32 {
    let content = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let op = match kind {
        0 => Op::Add { name: format!("extra-{i}"), content, kind: Kind::Note, created_at: 0 },
        1 => Op::Write { name: format!("note-{i}"), content },
        _ => Op::Remove { name: format!("note-{i}") },
    };
    STORE.with(|s| s.borrow_mut().as_mut().map(|st| st.apply(op).is_ok() as u32).unwrap_or(0))
}

thread_local! {
    static GEN: RefCell<Option<(Vec<String>, Vec<f64>)>> = const { RefCell::new(None) };
    static PENDING: RefCell<String> = const { RefCell::new(String::new()) };
}

thread_local! {
    /// Evidence rows as SQLite would hand them over: (entry id, hits, last score, queries text, days text).
    static EVIDENCE: RefCell<Vec<(u64, u32, f32, String, String)>> = const { RefCell::new(Vec::new()) };
    static MEMORY_MD: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Readies a dreaming sweep over the loaded store (from [`notes_build`]):
/// evidence for every note (all past the count gates: the worst case, as
/// if SQLite's pre-filter let every row through) and a MEMORY.md at its
/// 12,000-character budget. Returns the number of evidence rows.
#[no_mangle]
pub extern "C" fn dream_prepare() -> u32 {
    let n = STORE.with(|s| s.borrow().as_ref().map_or(0, |st| st.len() as u64));
    let mut rng = Rng(7);
    let rows: Vec<(u64, u32, f32, String, String)> = (1..=n)
        .map(|id| {
            let queries: Vec<String> = (0..4).map(|_| (rng.next() as u32).to_string()).collect();
            let days: Vec<String> = (0..3).map(|d| (20_000 + d).to_string()).collect();
            (id, 3 + (rng.next() % 20) as u32, (rng.next() % 1000) as f32 / 1000.0, queries.join(","), days.join(","))
        })
        .collect();
    let (words, cumulative) = generator();
    let mut md = String::from("# Memory\n");
    let mut r = Rng(9);
    while md.chars().count() < 11_900 {
        md.push_str("- ");
        md.push_str(&note(&mut r, &words, &cumulative)[..60]);
        md.push('\n');
    }
    let count = rows.len() as u32;
    EVIDENCE.with(|e| *e.borrow_mut() = rows);
    MEMORY_MD.with(|m| *m.borrow_mut() = md);
    count
}

/// The timed part of a sweep's selection: evidence rows decoded, MEMORY.md
/// read into word sets, the gates, the order, the "already said" checks
/// ([`hearth_memory::promote::select`]). Returns the candidates chosen.
#[no_mangle]
pub extern "C" fn dream_select() -> u32 {
    use hearth_memory::evidence::{decode_set, Evidence};
    use hearth_memory::promote::{select, AlreadySaid, Thresholds};
    let gates = Thresholds { min_score: 0.3, min_hits: 3, min_queries: 2, min_days: 2, max_candidates: 10 };
    let evidence: Vec<(u64, Evidence)> = EVIDENCE.with(|e| {
        e.borrow()
            .iter()
            .map(|(id, hits, score, q, d)| {
                (*id, Evidence { hits: *hits, last_score: Some(*score), last_at: 0, queries: decode_set(q), days: decode_set(d) })
            })
            .collect()
    });
    STORE.with(|s| {
        let store = s.borrow();
        let Some(store) = store.as_ref() else { return 0 };
        let said = MEMORY_MD.with(|m| AlreadySaid::new(store.index().tokenizer(), &m.borrow()));
        select(store, evidence.iter().map(|(id, e)| (*id, e)), &gates, &said, &|_, _| false).candidates.len() as u32
    })
}
