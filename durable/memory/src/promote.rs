//! Which entries deserve a place in MEMORY.md: the candidate selection of
//! Hearth's nightly sweep ("dreaming").
//!
//! A candidate has [`Evidence`] that passes every [`Thresholds`] gate (last
//! score, hits, distinct queries, distinct days), was not settled before
//! (the caller's `settled`: promoted or rejected while its content was the
//! same), and is not something MEMORY.md already says ([`AlreadySaid`]).
//! The best [`Thresholds::max_candidates`] by score, then hits, go to the
//! sweep's one LLM call; the rest wait for another night.
//!
//! "Already says" is judged on words, not spelling: a text is said by a
//! MEMORY.md line when at least [`SAID_SHARE`] of its distinct words are in
//! that line (a short note restated in a bullet), or when the two share
//! [`SAME_SHARE`] of their words together (the same fact, worded a little
//! differently). A long archive summary is rarely said by one line; the
//! model then distils it, and its fact is checked again.

use crate::backend::MemoryBackend;
use crate::entry::{Entry, EntryId};
use crate::evidence::Evidence;
use crate::store::MemoryStore;
use crate::tokenize::Tokenizer;

/// A text is said by a line holding this share of its distinct words.
pub const SAID_SHARE: f32 = 0.8;
/// ...or sharing this share of their words together (Jaccard).
pub const SAME_SHARE: f32 = 0.6;

/// The gates of a candidate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Last normalised score (0–1).
    pub min_score: f32,
    pub min_hits: u32,
    pub min_queries: usize,
    pub min_days: usize,
    /// Most candidates one sweep considers.
    pub max_candidates: usize,
}

impl Thresholds {
    /// Whether `e` passes every gate.
    pub fn passes(&self, e: &Evidence) -> bool {
        e.hits >= self.min_hits
            && e.distinct_queries() >= self.min_queries
            && e.distinct_days() >= self.min_days
            && e.last_score.unwrap_or(0.0) >= self.min_score
    }
}

/// FNV-1a (64 bit) of an entry's content: a promotion or rejection holds
/// while the content is the same; a rewritten entry is judged again.
pub fn content_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn word_hashes(tokenizer: Tokenizer, text: &str) -> Vec<u64> {
    let mut v = Vec::new();
    tokenizer.for_each_token(text, &mut |t| v.push(content_hash(t)));
    v.sort_unstable();
    v.dedup();
    v
}

fn common(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The lines of a MEMORY.md, as sets of words, to ask whether it already
/// says something. Headings count as lines too.
pub struct AlreadySaid {
    tokenizer: Tokenizer,
    lines: Vec<Vec<u64>>,
}

impl AlreadySaid {
    pub fn new(tokenizer: Tokenizer, memory_md: &str) -> Self {
        let lines = memory_md.lines().map(|l| word_hashes(tokenizer, l)).filter(|w| !w.is_empty()).collect();
        AlreadySaid { tokenizer, lines }
    }

    /// Adds a line (a fact just promoted, so the same sweep does not add it twice).
    pub fn add(&mut self, line: &str) {
        let w = word_hashes(self.tokenizer, line);
        if !w.is_empty() {
            self.lines.push(w);
        }
    }

    /// Whether some line already says `text` (see the module's rules).
    pub fn says(&self, text: &str) -> bool {
        let words = word_hashes(self.tokenizer, text);
        if words.is_empty() {
            return true;
        }
        self.lines.iter().any(|line| {
            let both = common(&words, line) as f32;
            let union = (words.len() + line.len()) as f32 - both;
            both / words.len() as f32 >= SAID_SHARE || (union > 0.0 && both / union >= SAME_SHARE)
        })
    }
}

/// One entry chosen for the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate<'a> {
    pub entry: &'a Entry,
    pub evidence: &'a Evidence,
    pub content_hash: u64,
}

/// What a selection found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection<'a> {
    /// Best first, at most `max_candidates`.
    pub candidates: Vec<Candidate<'a>>,
    /// Entries with evidence that passed the gates.
    pub passed: usize,
    /// Of those: settled before, or said by MEMORY.md.
    pub settled: usize,
    pub already_said: usize,
    /// Evidence of entries the store no longer has (the caller may drop it).
    pub gone: Vec<EntryId>,
}

/// Picks the candidates among `evidence` (per entry id). `settled(id, hash)`
/// says whether the entry with this content was promoted or rejected before.
pub fn select<'a, B: MemoryBackend>(
    store: &'a MemoryStore<B>,
    evidence: impl IntoIterator<Item = (EntryId, &'a Evidence)>,
    gates: &Thresholds,
    said: &AlreadySaid,
    settled: &dyn Fn(EntryId, u64) -> bool,
) -> Selection<'a> {
    let mut out = Selection::default();
    let mut passing: Vec<(EntryId, &'a Evidence)> = evidence.into_iter().filter(|(_, e)| gates.passes(e)).collect();
    out.passed = passing.len();
    passing.sort_by(|a, b| {
        let score = |e: &Evidence| e.last_score.unwrap_or(0.0);
        score(b.1).total_cmp(&score(a.1)).then(b.1.hits.cmp(&a.1.hits)).then(a.0.cmp(&b.0))
    });
    for (id, ev) in passing {
        if out.candidates.len() >= gates.max_candidates {
            break;
        }
        let Some(entry) = store.get_by_id(id) else {
            out.gone.push(id);
            continue;
        };
        let hash = content_hash(&entry.content);
        if settled(id, hash) {
            out.settled += 1;
            continue;
        }
        if said.says(&entry.content) {
            out.already_said += 1;
            continue;
        }
        out.candidates.push(Candidate { entry, evidence: ev, content_hash: hash });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Use;
    use crate::{InMemoryBackend, Kind, MemoryConfig, Op};

    const DAY: i64 = 86_400_000;

    fn store(notes: &[(&str, &str)]) -> MemoryStore<InMemoryBackend> {
        let mut s = MemoryStore::open(InMemoryBackend::default(), MemoryConfig::default()).unwrap();
        for (name, content) in notes {
            let op = Op::Add { name: (*name).into(), content: (*content).into(), kind: Kind::Note, created_at: 1 };
            s.apply(op).unwrap();
        }
        s
    }

    fn used(hits: u32, queries: u32, days: i64, score: f32) -> Evidence {
        let mut e = Evidence::default();
        for i in 0..hits {
            let at = i64::from(i) % days.max(1) * DAY;
            e.record(&Use { at_ms: at, query: Some(i % queries.max(1)), score: Some(score) });
        }
        e
    }

    const GATES: Thresholds =
        Thresholds { min_score: 0.3, min_hits: 3, min_queries: 2, min_days: 2, max_candidates: 2 };

    #[test]
    fn only_entries_with_evidence_past_every_gate_are_chosen_best_first() {
        let s = store(&[
            ("tz", "Olga's time zone is America/Bogota"),
            ("once", "Pat asked about the weather once"),
            ("short", "Olga prefers short replies on WhatsApp"),
            ("weak", "The plumber's number"),
            ("oneday", "Olga's sister is Ana"),
        ]);
        let ev = [
            (1, used(5, 3, 3, 0.42)),
            (2, used(1, 1, 1, 0.9)),
            (3, used(4, 2, 2, 0.38)),
            (4, used(6, 3, 3, 0.1)),
            (5, used(6, 3, 1, 0.9)),
        ];
        let said = AlreadySaid::new(Tokenizer::Unicode, "## People\n- Luis prefers Spanish.\n");
        let sel = select(&s, ev.iter().map(|(id, e)| (*id, e)), &GATES, &said, &|_, _| false);
        let names: Vec<&str> = sel.candidates.iter().map(|c| c.entry.name.as_str()).collect();
        assert_eq!(names, ["tz", "short"], "score first; one hit, weak score, one day: not enough");
        assert_eq!(sel.passed, 2);
    }

    #[test]
    fn what_memory_md_says_and_what_was_settled_are_left_out() {
        let s = store(&[("tz", "Olga's time zone is America/Bogota"), ("tea", "Olga likes green tea")]);
        // Entry ids start at 1.
        let ev = [(1, used(5, 3, 3, 0.5)), (2, used(5, 3, 3, 0.5))];
        let said = AlreadySaid::new(Tokenizer::Unicode, "# Memory\n- Olga's time zone: America/Bogota\n");
        let sel = select(&s, ev.iter().map(|(id, e)| (*id, e)), &GATES, &said, &|_, _| false);
        assert_eq!(sel.candidates.len(), 1);
        assert_eq!(sel.already_said, 1);
        let tea_hash = content_hash("Olga likes green tea");
        let sel = select(&s, ev.iter().map(|(id, e)| (*id, e)), &GATES, &said, &|id, h| id == 2 && h == tea_hash);
        assert!(sel.candidates.is_empty());
        assert_eq!(sel.settled, 1);
        // Rewritten content is judged again.
        let sel = select(&s, ev.iter().map(|(id, e)| (*id, e)), &GATES, &said, &|id, h| id == 2 && h == 7);
        assert_eq!(sel.candidates.len(), 1);
    }

    #[test]
    fn said_is_about_words_not_spelling() {
        let mut said = AlreadySaid::new(
            Tokenizer::Unicode,
            "- User's timezone is America/Bogota _(score=0.42, hits=5, days=3)_\n",
        );
        assert!(said.says("user's TIMEZONE: america/bogota"));
        assert!(!said.says("User prefers short replies on WhatsApp"));
        said.add("- Prefers short replies on WhatsApp");
        assert!(said.says("prefers short replies on whatsapp"));
        assert!(said.says("   "), "nothing to say is said");
        assert!(!said.says("Olga's sister Ana lives in Lima and likes to paint on Sundays"));
    }

    #[test]
    fn evidence_of_removed_entries_is_reported() {
        let s = store(&[("a", "alpha")]);
        let ev = [(1, used(5, 3, 3, 0.5)), (9, used(5, 3, 3, 0.9))];
        let said = AlreadySaid::new(Tokenizer::Unicode, "");
        let sel = select(&s, ev.iter().map(|(id, e)| (*id, e)), &GATES, &said, &|_, _| false);
        assert_eq!(sel.gone, vec![9]);
        assert_eq!(sel.candidates.len(), 1);
    }
}
