//! Memory store figures at 10,000 notes of ~100 tokens: add / write / remove latency,
//! checkpoint cost, cold-load time, search latency and bytes of storage per note.
//!
//! ```text
//! cargo run --release -p hearth-memory --example memory_bench [-- notes]
//! ```
//!
//! Prints a table and one `BENCH_JSON {...}` line for the bench script.

use std::time::{Duration, Instant};

use hearth_memory::{InMemoryBackend, Kind, MemoryConfig, MemoryStore, Op, DEFAULT_CHECKPOINT_AFTER};

const TOKENS_PER_NOTE: usize = 100;
const VOCABULARY: usize = 30_000;
const TIMED_OPS: usize = 1_000;

/// xorshift64*: reproducible text without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Words with a Zipf-like frequency (rank^-1), as in natural text: a few very common
/// words in every note, a long tail of rare ones.
struct TextGenerator {
    words: Vec<String>,
    cumulative: Vec<f64>,
    rng: Rng,
}

impl TextGenerator {
    fn new() -> Self {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let letters = b"etaoinshrdlcumwfgypbvkjxqz";
        let words = (0..VOCABULARY)
            .map(|_| {
                let len = 2 + (rng.next() % 9) as usize;
                (0..len).map(|_| letters[(rng.unit().powi(2) * 26.0) as usize % 26] as char).collect()
            })
            .collect();
        let mut total = 0.0;
        let cumulative = (1..=VOCABULARY)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        TextGenerator { words, cumulative, rng }
    }

    fn note(&mut self) -> String {
        let total = *self.cumulative.last().unwrap_or(&1.0);
        let mut out = String::with_capacity(TOKENS_PER_NOTE * 7);
        for i in 0..TOKENS_PER_NOTE {
            let target = self.rng.unit() * total;
            let rank = self.cumulative.partition_point(|c| *c < target).min(VOCABULARY - 1);
            if i > 0 {
                out.push_str(if i % 12 == 0 { ". " } else { " " });
            }
            out.push_str(&self.words[rank]);
        }
        out
    }
}

struct Latencies(Vec<Duration>);
impl Latencies {
    fn micros(&self, quantile: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort();
        let at = ((sorted.len() as f64 - 1.0) * quantile).round() as usize;
        sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e6)
    }
    fn mean_micros(&self) -> f64 {
        self.0.iter().map(Duration::as_secs_f64).sum::<f64>() / self.0.len().max(1) as f64 * 1e6
    }
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let notes: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut text = TextGenerator::new();
    // Operation latencies without automatic checkpoints (their cost is reported apart).
    let config = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
    let mut store = MemoryStore::open(InMemoryBackend::new(), config).expect("open");

    let contents: Vec<String> = (0..notes + 2 * TIMED_OPS).map(|_| text.note()).collect();
    let mut add = Latencies(Vec::with_capacity(notes));
    for (i, content) in contents.iter().take(notes).enumerate() {
        let op =
            Op::Add { name: format!("note-{i}"), content: content.clone(), kind: Kind::Note, created_at: i as i64 };
        let (result, elapsed) = time(|| store.apply(op));
        result.expect("add");
        add.0.push(elapsed);
    }
    // Only the last TIMED_OPS adds are "at 10,000 notes".
    let add_at_size = Latencies(add.0[notes.saturating_sub(TIMED_OPS)..].to_vec());

    let (checkpoint, checkpoint_time) = time(|| store.checkpoint());
    checkpoint.expect("checkpoint");
    let snapshot_bytes = store.backend().stored_bytes();
    let content_bytes: usize = store.entries().map(|e| e.content.len() + e.name.len()).sum();

    let mut write = Latencies(Vec::new());
    for i in 0..TIMED_OPS {
        let op = Op::Write { name: format!("note-{}", (i * 7919) % notes), content: contents[notes + i].clone() };
        let (result, elapsed) = time(|| store.apply(op));
        result.expect("write");
        write.0.push(elapsed);
    }
    let mut remove = Latencies(Vec::new());
    for i in 0..TIMED_OPS {
        let op = Op::Remove { name: format!("note-{}", (i * 104_729 + 13) % notes) };
        let (result, elapsed) = time(|| store.apply(op));
        if result.is_ok() {
            remove.0.push(elapsed);
        }
    }
    // Back to `notes` entries so the load figures are at full size.
    for i in 0..remove.0.len() {
        let op = Op::Add {
            name: format!("extra-{i}"),
            content: contents[notes + TIMED_OPS + i].clone(),
            kind: Kind::Note,
            created_at: 0,
        };
        store.apply(op).expect("re-add");
    }
    store.checkpoint().expect("checkpoint");
    let per_note = store.backend().stored_bytes() as f64 / store.len() as f64;

    let queries: Vec<String> = (0..200).map(|_| text.note().split(' ').take(3).collect::<Vec<_>>().join(" ")).collect();
    let (hits, search_time) = time(|| queries.iter().map(|q| store.search(q, 10).len()).sum::<usize>());
    std::hint::black_box(hits);
    let search_micros = search_time.as_secs_f64() * 1e6 / queries.len() as f64;

    // Cold load right after a checkpoint, and with a full log (the worst case).
    let backend = store.into_backend();
    let load = |backend: &InMemoryBackend| {
        let mut samples = Vec::new();
        for _ in 0..15 {
            let copy = backend.clone();
            let (opened, elapsed) = time(|| MemoryStore::open(copy, config));
            let opened = opened.expect("open");
            std::hint::black_box(opened.search("note", 1).len());
            samples.push(elapsed);
        }
        median_ms(samples)
    };
    let cold_load_ms = load(&backend);
    // What a cold load defers: the first search (binary search over the checkpoint's
    // terms) and the first change (hashes them for the write path).
    let mut store = MemoryStore::open(backend.clone(), config).expect("open");
    let (_, first_search) = time(|| store.search(&queries[0], 10).len());
    let op =
        Op::Add { name: "first-after-load".into(), content: contents[notes].clone(), kind: Kind::Note, created_at: 0 };
    let (added, first_add) = time(|| store.apply(op));
    added.expect("first add");
    let mut store = MemoryStore::open(backend, config).expect("open");
    for i in 0..DEFAULT_CHECKPOINT_AFTER {
        let op = Op::Write { name: format!("note-{}", (i * 31 + 5) % notes), content: contents[notes + i].clone() };
        let _ = store.apply(op);
    }
    let full_log_load_ms = load(store.backend());
    let entries = store.len();

    let amortised_checkpoint_us = checkpoint_time.as_secs_f64() * 1e6 / DEFAULT_CHECKPOINT_AFTER as f64;
    println!("hearth-memory at {entries} notes of {TOKENS_PER_NOTE} tokens (Zipf over {VOCABULARY} words), native:");
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| add, all {notes}: mean / p50 / p99 | {:.1} / {:.1} / {:.1} µs |",
        add.mean_micros(),
        add.micros(0.5),
        add.micros(0.99)
    );
    println!(
        "| add at {notes}: mean / p50 / p99 | {:.1} / {:.1} / {:.1} µs |",
        add_at_size.mean_micros(),
        add_at_size.micros(0.5),
        add_at_size.micros(0.99)
    );
    println!(
        "| write: mean / p50 / p99 | {:.1} / {:.1} / {:.1} µs |",
        write.mean_micros(),
        write.micros(0.5),
        write.micros(0.99)
    );
    println!(
        "| remove: mean / p50 / p99 | {:.1} / {:.1} / {:.1} µs |",
        remove.mean_micros(),
        remove.micros(0.5),
        remove.micros(0.99)
    );
    println!(
        "| checkpoint (whole store) | {:.2} ms ({:.1} µs per op amortised over {DEFAULT_CHECKPOINT_AFTER}) |",
        checkpoint_time.as_secs_f64() * 1e3,
        amortised_checkpoint_us
    );
    println!("| cold load after checkpoint (median) | {cold_load_ms:.2} ms |");
    println!("| cold load with {DEFAULT_CHECKPOINT_AFTER} log rows (median) | {full_log_load_ms:.2} ms |");
    println!(
        "| first search / first add after a cold load | {:.1} µs / {:.2} ms |",
        first_search.as_secs_f64() * 1e6,
        first_add.as_secs_f64() * 1e3
    );
    println!("| search, 3-word query, top 10 | {search_micros:.1} µs |");
    println!(
        "| storage per note (checkpoint) | {per_note:.0} bytes ({:.0} bytes of name + content) |",
        content_bytes as f64 / notes as f64
    );
    println!("| checkpoint size | {:.2} MB |", snapshot_bytes as f64 / 1e6);
    println!(
        "BENCH_JSON {{\"bench\":\"memory\",\"engine\":\"hearth-memory\",\"target\":\"native\",\"notes\":{entries},\"tokens_per_note\":{TOKENS_PER_NOTE},\
\"add_us_mean\":{:.2},\"add_us_p50\":{:.2},\"add_us_p99\":{:.2},\"write_us_mean\":{:.2},\"write_us_p50\":{:.2},\"write_us_p99\":{:.2},\
\"remove_us_mean\":{:.2},\"remove_us_p50\":{:.2},\"remove_us_p99\":{:.2},\"checkpoint_ms\":{:.3},\"checkpoint_amortised_us\":{amortised_checkpoint_us:.2},\
\"cold_load_ms\":{cold_load_ms:.3},\"cold_load_full_log_ms\":{full_log_load_ms:.3},\"first_search_after_load_us\":{:.1},\"first_add_after_load_ms\":{:.3},\"search_us\":{search_micros:.2},\"bytes_per_note\":{per_note:.1},\"content_bytes_per_note\":{:.1}}}",
        add_at_size.mean_micros(), add_at_size.micros(0.5), add_at_size.micros(0.99),
        write.mean_micros(), write.micros(0.5), write.micros(0.99),
        remove.mean_micros(), remove.micros(0.5), remove.micros(0.99),
        checkpoint_time.as_secs_f64() * 1e3,
        first_search.as_secs_f64() * 1e6,
        first_add.as_secs_f64() * 1e3,
        content_bytes as f64 / notes as f64,
    );
}
