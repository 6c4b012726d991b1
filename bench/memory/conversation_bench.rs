//! Conversation index figures, natively:
//!
//! - **quality** on LoCoMo (conversations 42, 43, 44, 47, 48, 49, 50; questions of
//!   categories 1–4): evidence-turn recall at 5 and 10 of [`ConversationIndex::search`]
//!   beside plain BM25 over one entry per turn. This reads the data directly (one
//!   exchange per LoCoMo turn); `npm run bench` drives the same data through the Worker.
//! - **scale** at 100,000 exchanges (LoCoMo turns repeated into more sessions): indexing
//!   200 exchanges, checkpoint size and time, load time, search latency, heap bytes.
//!
//! ```text
//! cargo run --release -p hearth-memory --example conversation_bench -- [LOCOMO_DIR] [EXCHANGES]
//! ```
//!
//! `LOCOMO_DIR` holds LoCoMo's `{id}.json` files (default `.bench/locomo/locomo10_v2`);
//! LoCoMo is CC BY-NC 4.0, so it is never committed: without it this prints a note and
//! exits. Prints a table and one `BENCH_JSON {...}` line.
#![allow(clippy::disallowed_methods)] // a native bench program: the upload's JSON rule does not apply

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hearth_memory::{Bm25Index, Bm25Params, ConversationIndex, ConversationQuery, Tokenizer, TurnDoc};
use serde_json::Value;

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

/// The conversations the benchmark uses; 26, 30 and 41 are kept for checks.
const CONVERSATIONS: [u32; 7] = [42, 43, 44, 47, 48, 49, 50];

struct Turn {
    dia: String,
    session: u32,
    text: String,
}

struct Question {
    category: u64,
    text: String,
    evidence: Vec<String>,
}

/// A LoCoMo turn as text: the speaker, the words, and a shared image's caption.
fn turn_text(t: &Value) -> String {
    let mut text = format!("{}: {}", t["speaker"].as_str().unwrap_or(""), t["text"].as_str().unwrap_or(""));
    if let Some(c) = t["blip_caption"].as_str() {
        text.push_str(&format!(" [shares {c}]"));
    }
    text
}

fn load(dir: &str, id: u32) -> Option<(Vec<Turn>, Vec<Question>)> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(format!("{dir}/{id}.json")).ok()?).ok()?;
    let mut turns = Vec::new();
    for n in 1.. {
        let Some(session) = v[format!("session_{n}")].as_array() else { break };
        for t in session {
            turns.push(Turn { dia: t["dia_id"].as_str()?.to_owned(), session: n - 1, text: turn_text(t) });
        }
    }
    let questions = v["qa"]
        .as_array()?
        .iter()
        .filter(|q| (1..=4).contains(&q["category"].as_u64().unwrap_or(0)))
        .map(|q| Question {
            category: q["category"].as_u64().unwrap_or(0),
            text: q["question"].as_str().unwrap_or("").to_owned(),
            evidence: q["evidence"]
                .as_array()
                .map_or(vec![], |e| e.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect()),
        })
        .collect();
    Some((turns, questions))
}

#[derive(Default, Clone)]
struct Tally {
    questions: usize,
    /// Share of evidence turns among the hits themselves.
    hit: f64,
    /// Share of evidence turns among the hits and the exchange before and after each.
    shown: f64,
    all_shown: usize,
    session: usize,
}

impl Tally {
    fn add(&mut self, evidence: &[usize], hits: &[usize], turns: &[Turn]) {
        let shown: BTreeSet<usize> = hits
            .iter()
            .flat_map(|&h| [h.wrapping_sub(1), h, h + 1])
            .filter(|&i| hits.iter().any(|&h| turns.get(i).is_some_and(|t| t.session == turns[h].session)))
            .collect();
        let found = |set: &dyn Fn(usize) -> bool| evidence.iter().filter(|&&e| set(e)).count() as f64;
        let n = evidence.len() as f64;
        self.questions += 1;
        self.hit += found(&|e| hits.contains(&e)) / n;
        let seen = found(&|e| shown.contains(&e));
        self.shown += seen / n;
        self.all_shown += usize::from(seen == n);
        let sessions: BTreeSet<u32> = hits.iter().map(|&h| turns[h].session).collect();
        self.session += usize::from(evidence.iter().any(|&e| sessions.contains(&turns[e].session)));
    }
    fn row(&self) -> String {
        let q = self.questions.max(1) as f64;
        format!(
            "hit {:.3}  shown {:.3}  all shown {:.3}  session {:.3}",
            self.hit / q,
            self.shown / q,
            self.all_shown as f64 / q,
            self.session as f64 / q
        )
    }
}

fn quality(dir: &str) -> Option<Value> {
    let mut ours: HashMap<(usize, u64), Tally> = HashMap::new();
    let mut floor: HashMap<(usize, u64), Tally> = HashMap::new();
    for id in CONVERSATIONS {
        let (turns, questions) = load(dir, id)?;
        let mut ix = ConversationIndex::new();
        let docs: Vec<TurnDoc<'_>> = turns
            .iter()
            .enumerate()
            .map(|(i, t)| TurnDoc { id: i as u64 + 1, session: t.session, at: i as i64, text: &t.text })
            .collect();
        ix.add(&docs).ok()?;
        let mut plain = Bm25Index::new(Tokenizer::Unicode);
        for (i, t) in turns.iter().enumerate() {
            plain.insert(i as u64 + 1, &[&t.text]);
        }
        let at: HashMap<&str, usize> = turns.iter().enumerate().map(|(i, t)| (t.dia.as_str(), i)).collect();
        for q in &questions {
            let evidence: Vec<usize> = q.evidence.iter().filter_map(|e| at.get(e.as_str()).copied()).collect();
            if evidence.is_empty() {
                continue;
            }
            for k in [5, 10] {
                let hits: Vec<usize> = ix
                    .search(&ConversationQuery { text: &q.text, k, ..Default::default() })
                    .iter()
                    .map(|h| h.id as usize - 1)
                    .collect();
                let base: Vec<usize> =
                    plain.search(&q.text, Bm25Params::default(), k).iter().map(|h| h.0 as usize - 1).collect();
                for cat in [0, q.category] {
                    ours.entry((k, cat)).or_default().add(&evidence, &hits, &turns);
                    floor.entry((k, cat)).or_default().add(&evidence, &base, &turns);
                }
            }
        }
    }
    println!("LoCoMo {CONVERSATIONS:?}, categories 1-4, evidence turns (natively, one exchange per turn)");
    for k in [5, 10] {
        for cat in [0, 1, 2, 3, 4] {
            let label = if cat == 0 { "all".to_owned() } else { format!("cat {cat}") };
            if let (Some(o), Some(f)) = (ours.get(&(k, cat)), floor.get(&(k, cat))) {
                println!("  @{k:<2} {label:6} n={:4}  ours: {}", o.questions, o.row());
                println!("  @{k:<2} {label:6}         plain: {}", f.row());
            }
        }
    }
    let pick = |t: &HashMap<(usize, u64), Tally>, k| {
        let x = &t[&(k, 0)];
        let q = x.questions as f64;
        serde_json::json!({"hit": x.hit / q, "shown": x.shown / q, "session": x.session as f64 / q})
    };
    Some(serde_json::json!({"at5": pick(&ours, 5), "at10": pick(&ours, 10), "plain5": pick(&floor, 5)}))
}

fn scale(dir: &str, target: usize) -> Option<Value> {
    let mut pool: Vec<Vec<String>> = Vec::new();
    let mut questions = Vec::new();
    for id in CONVERSATIONS {
        let (turns, qs) = load(dir, id)?;
        let mut by_session: Vec<Vec<String>> = Vec::new();
        for t in turns {
            if by_session.len() <= t.session as usize {
                by_session.resize(t.session as usize + 1, Vec::new());
            }
            by_session[t.session as usize].push(t.text);
        }
        pool.extend(by_session);
        questions.extend(qs.into_iter().map(|q| q.text));
    }
    let before = LIVE.load(Ordering::Relaxed);
    let mut ix = ConversationIndex::new();
    let (mut id, mut session, mut batch_ms) = (0u64, 0u32, Vec::new());
    while (id as usize) < target {
        let texts = &pool[session as usize % pool.len()];
        // Batches of 200 exchanges, as a long session's reset indexes them.
        for chunk in texts.chunks(200) {
            let docs: Vec<TurnDoc<'_>> = chunk
                .iter()
                .map(|text| {
                    id += 1;
                    TurnDoc { id, session, at: id as i64 * 60_000, text }
                })
                .collect();
            let t = Instant::now();
            ix.add(&docs).ok()?;
            batch_ms.push(t.elapsed().as_secs_f64() * 1e3 * 200.0 / docs.len() as f64);
        }
        session += 1;
    }
    let heap = LIVE.load(Ordering::Relaxed) - before;
    let t = Instant::now();
    let chunks = ix.checkpoint();
    let checkpoint_ms = t.elapsed().as_secs_f64() * 1e3;
    let bytes: usize = chunks.iter().map(Vec::len).sum();
    drop(ix);
    let before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    let loaded = ConversationIndex::from_checkpoint(chunks.concat()).ok()?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let loaded_heap = LIVE.load(Ordering::Relaxed) - before;
    let mut search_ms: Vec<f64> = questions
        .iter()
        .map(|q| {
            let t = Instant::now();
            let _ = loaded.search(&ConversationQuery { text: q, k: 5, ..Default::default() });
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    search_ms.sort_by(f64::total_cmp);
    batch_ms.sort_by(f64::total_cmp);
    let p = |v: &[f64], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    println!(
        "scale: {} exchanges in {} sessions; index 200: p50 {:.2} ms; checkpoint {:.1} MB in {:.0} ms; \
load {:.1} ms; heap {:.1} MB built, {:.1} MB loaded; search p50 {:.2} ms p99 {:.2} ms",
        loaded.len(),
        session,
        p(&batch_ms, 0.5),
        bytes as f64 / 1e6,
        checkpoint_ms,
        load_ms,
        heap as f64 / 1e6,
        loaded_heap as f64 / 1e6,
        p(&search_ms, 0.5),
        p(&search_ms, 0.99)
    );
    Some(serde_json::json!({
        "exchanges": loaded.len(), "index200Ms": p(&batch_ms, 0.5), "checkpointBytes": bytes,
        "loadMs": load_ms, "heapBytes": loaded_heap, "searchP50Ms": p(&search_ms, 0.5), "searchP99Ms": p(&search_ms, 0.99),
    }))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| ".bench/locomo/locomo10_v2".into());
    let target = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    if !std::path::Path::new(&format!("{dir}/42.json")).exists() {
        println!("LoCoMo is not in {dir} (CC BY-NC 4.0: fetched into .bench/, never committed): skipped");
        return;
    }
    let q = quality(&dir);
    let s = if target > 0 { scale(&dir, target) } else { None };
    println!("BENCH_JSON {}", serde_json::json!({"quality": q, "scale": s}));
}
