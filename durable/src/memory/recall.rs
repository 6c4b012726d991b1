//! Per-turn recall: the few notes of the owner's store that are clearly about the
//! user's message, put in the prompt as a `<system-reminder>`.
//!
//! Search ranks everything that shares a word with the query; recall must be pickier,
//! or nearly every message drags three unrelated notes into the prompt. Two rules,
//! both from the store's own statistics ([`relevant`], answered by the Agent object):
//!
//! 1. **Common words do not count.** A query term found in more than a quarter of the
//!    store's notes (and in more than two) says little about any one of them ("the",
//!    "what", "you": the multilingual tokenizer keeps stop words). Recall searches with
//!    the remaining terms only; a message made of common words recalls nothing.
//! 2. **A note must match a fair share of what is specific in the message.** A term can
//!    add at most its idf to a score (BM25's term score saturates below idf), and one
//!    occurrence in a note of average length adds `idf / (1 + k1)`. The reference is a
//!    note holding each of the message's (up to) five most specific terms once:
//!    `Σ idf / (1 + k1)` over those terms. A recalled note must score at least
//!    [`RECALL_MIN_SHARE`] of it: for a one- or two-word question one matching word is
//!    enough, for a longer message it takes about a third of its specific words.
//!    Capping the reference at five terms keeps long messages from needing a note that
//!    matches everything.
//!
//! Scheduled turns (heartbeats, jobs) recall nothing: their text is a fixed prompt, not
//! something the owner said, and recall would put the same notes in every run.
//!
//! **An empty memory is not asked every turn.** A recall is a round trip to the Agent
//! object. When its reply says the `main` store holds nothing (`empty`: no note, no
//! conversation), the main session keeps that in RAM ([`RecallGate`]) and asks nothing
//! until the Agent object tells it something was stored (`MemoryStored`, sent by the
//! write that ends the emptiness, whoever made it: a memory tool, the API, MCP, an
//! archive, the backfill), or until [`EMPTY_TRUSTED_MS`] passed (a tell that was lost).

use crate::inbound::SessionKey;
use crate::ports::MemoryService;
use crate::protocol::memory::{MemoryCall, MemoryReply, MAIN_STORE};
use hearth_memory::{bm25, MemoryBackend, MemoryStore, SearchHit};
use std::cell::Cell;

/// Notes recalled into a main-session turn (at most).
pub const RECALL_K: usize = 3;
/// Characters of each recalled note put in the prompt.
pub const RECALL_CHARS: usize = 400;
/// Exchanges of earlier conversations recalled into a turn (at most), each with up
/// to two exchanges of context each side (see `hearth_memory::conversation::recall`).
pub const RECALL_CONVERSATIONS: usize = 1;
/// Characters of each context exchange of a recalled one.
pub const RECALL_CONTEXT_CHARS: usize = 240;
/// Rule 1: a term in more than this share of the notes is common...
pub const COMMON_TERM_SHARE: f64 = 0.25;
/// ...when it is also in more than this many notes (tiny stores have no common words).
pub const COMMON_TERM_MIN_NOTES: u64 = 2;
/// Rule 2: the most specific terms the reference note holds.
pub const RECALL_REFERENCE_TERMS: usize = 5;
/// Rule 2: the share of the reference score a recalled note must reach.
pub const RECALL_MIN_SHARE: f32 = 0.3;

/// How long the main session trusts a reply that its memory is empty without
/// hearing of a change (a tell that failed costs recall at most this long).
pub const EMPTY_TRUSTED_MS: i64 = 10 * 60_000;

/// What the main session knows of its memory between turns: kept in RAM by its
/// object (a new one asks on its first turn).
#[derive(Debug, Default)]
pub struct RecallGate {
    /// When a recall answered that the store is empty (None: ask).
    empty_at: Cell<Option<i64>>,
    /// Tells heard ([`RecallGate::stored`]): a recall a tell overlapped does not
    /// trust its own "empty", which may have been true only before the write.
    tells: Cell<u64>,
}

impl RecallGate {
    /// The Agent object says the store holds something now.
    pub fn stored(&self) {
        self.tells.set(self.tells.get().wrapping_add(1));
        self.empty_at.set(None);
    }

    /// Whether a recall at `now_ms` has to ask (the store may hold something).
    pub fn asks(&self, now_ms: i64) -> bool {
        self.empty_at.get().is_none_or(|at| now_ms < at || now_ms - at >= EMPTY_TRUSTED_MS)
    }
}

/// The best notes of `store` for `text` that pass both rules, best first (at most `k`).
pub fn relevant<'s, B: MemoryBackend>(store: &'s MemoryStore<B>, text: &str, k: usize) -> Vec<SearchHit<'s>> {
    relevant_with_ceiling(store, text, k).0
}

/// [`relevant`], and the most a note could score for the terms recall
/// searched with (`Σ idf`: recall evidence records scores as a share of it).
pub fn relevant_with_ceiling<'s, B: MemoryBackend>(
    store: &'s MemoryStore<B>,
    text: &str,
    k: usize,
) -> (Vec<SearchHit<'s>>, f32) {
    let index = store.index();
    let notes = index.doc_count();
    if notes == 0 {
        return (Vec::new(), 0.0);
    }
    // (term, idf) of the terms that occur and are not common (rule 1).
    let mut specific: Vec<(String, f32)> = index
        .tokenizer()
        .query_terms(text)
        .into_iter()
        .filter_map(|term| {
            let df = index.doc_freq(&term);
            let common = df > COMMON_TERM_MIN_NOTES && df as f64 > COMMON_TERM_SHARE * notes as f64;
            (df > 0 && !common).then(|| (term, bm25::idf(df, notes)))
        })
        .collect();
    if specific.is_empty() {
        return (Vec::new(), 0.0);
    }
    crate::order::sort_by(&mut specific, |a, b| b.1.total_cmp(&a.1));
    let ceiling: f32 = specific.iter().map(|(_, idf)| idf).sum();
    let params = store.config().bm25;
    let reference: f32 = specific.iter().take(RECALL_REFERENCE_TERMS).map(|(_, idf)| idf / (1.0 + params.k1)).sum();
    let floor = RECALL_MIN_SHARE * reference;
    let terms: Vec<String> = specific.into_iter().map(|(term, _)| term).collect();
    let hits = index
        .search_terms(&terms, params, k, &|_| true)
        .into_iter()
        .filter(|&(_, score)| score >= floor)
        .filter_map(|(id, score)| store.get_by_id(id).map(|entry| SearchHit { entry, score }))
        .collect();
    (hits, ceiling)
}

/// The recall block for a turn: the notes of the `main` store that are about the
/// user's text, and at most [`RECALL_CONVERSATIONS`] exchange of an earlier conversation
/// when the text asks something it clearly matches (with its context), as a
/// `<system-reminder>`. Only for the owner's own messages in the main session (not
/// groups, other DMs, heartbeats or jobs); None when nothing is relevant or the memory
/// is unavailable (a turn never fails for recall). `tz` dates the exchange.
pub async fn recall<M: MemoryService>(memory: &M, key: &SessionKey, text: &str, tz: &str) -> Option<String> {
    recall_gated(memory, &RecallGate::default(), 0, key, text, tz).await
}

/// [`recall`], asking nothing while `gate` knows the store is empty (at `now_ms`).
pub async fn recall_gated<M: MemoryService>(
    memory: &M,
    gate: &RecallGate,
    now_ms: i64,
    key: &SessionKey,
    text: &str,
    tz: &str,
) -> Option<String> {
    if !matches!(key, SessionKey::Main(_)) || text.trim().is_empty() || !gate.asks(now_ms) {
        return None;
    }
    let call = MemoryCall::Recall {
        store: MAIN_STORE.to_owned(),
        query: text.to_owned(),
        k: RECALL_K,
        conversations: RECALL_CONVERSATIONS,
    };
    let tells = gate.tells.get();
    let Ok(MemoryReply::Recalled { hits, conversations, empty }) = memory.call(&call).await else { return None };
    if empty && gate.tells.get() == tells {
        gate.empty_at.set(Some(now_ms));
    }
    if hits.is_empty() && conversations.is_empty() {
        return None;
    }
    let mut out =
        String::from("Possibly relevant, from your memory (memory_get for a whole entry, memory_search for more):");
    for h in hits {
        let content = crate::text::truncate_chars(&h.entry.content, RECALL_CHARS);
        out.push_str(&format!("\n- [{}] {}", h.entry.name, content.replace('\n', " ")));
    }
    for c in conversations {
        // The date leads each line: "when did we…" is answered by it.
        let line = |e: &crate::protocol::memory::Exchange, chars: usize, lead: &str| {
            let said = crate::text::truncate_chars(&e.text, chars).replace('\n', " ");
            let when = crate::clock::datetime_string(e.at, tz);
            let mut s = format!("\n{lead}[said {when} by {}] {said}", e.speaker);
            if !e.reply.is_empty() {
                let reply = crate::text::truncate_chars(&e.reply, chars / 2).replace('\n', " ");
                s.push_str(&format!(" (you answered: {reply})"));
            }
            s
        };
        for e in &c.before {
            out.push_str(&line(e, RECALL_CONTEXT_CHARS, "  before it: "));
        }
        out.push_str(&line(&c.exchange, RECALL_CHARS, "- "));
        for e in &c.after {
            out.push_str(&line(e, RECALL_CONTEXT_CHARS, "  after it: "));
        }
    }
    Some(crate::text::reminder(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::MemoryService;
    use crate::protocol::memory::MemoryCallError;
    use crate::testing::InProcessMemory;
    use futures::executor::block_on;
    use hearth_memory::{Kind, Op};

    fn main_key() -> SessionKey {
        SessionKey::parse("agent:main:main").unwrap()
    }

    fn add(m: &InProcessMemory, name: &str, content: &str) {
        let op = Op::Add { name: name.into(), content: content.into(), kind: Kind::Note, created_at: 1 };
        block_on(m.call(&MemoryCall::Op { store: MAIN_STORE.into(), op })).unwrap();
    }

    fn asked(m: &InProcessMemory) -> usize {
        m.calls.borrow().iter().filter(|c| matches!(c, MemoryCall::Recall { .. })).count()
    }

    const ASK: &str = "where is the vault key?";

    #[test]
    fn an_empty_memory_is_asked_once_until_something_is_stored() {
        let m = InProcessMemory::default();
        let gate = RecallGate::default();
        let key = main_key();
        let recall = |now| block_on(recall_gated(&m, &gate, now, &key, ASK, "UTC"));
        assert!(recall(1_000).is_none());
        assert!(recall(2_000).is_none());
        assert_eq!(asked(&m), 1, "the second turn asks nothing");
        // A fresh hub owes the first write to main a tell (a session may have
        // heard "empty" before an eviction): taken once.
        add(&m, "vault", "The vault key is under the mat");
        assert!(m.hub.borrow_mut().take_main_tell());
        assert!(!m.hub.borrow_mut().take_main_tell(), "once");
        assert!(recall(3_000).is_none(), "not told yet: not asked");
        gate.stored();
        let got = recall(4_000).expect("recalled on the turn after the tell");
        assert!(got.contains("[vault] The vault key is under the mat"), "{got}");
        assert!(recall(5_000).is_some(), "a store with notes is asked every turn");
        assert_eq!(asked(&m), 3);
        add(&m, "more", "more");
        assert!(!m.hub.borrow_mut().take_main_tell(), "no tell while nobody was told it is empty");
    }

    #[test]
    fn empty_is_trusted_for_a_while_and_only_from_a_call_no_tell_overlapped() {
        let m = InProcessMemory::default();
        let gate = RecallGate::default();
        let key = main_key();
        assert!(block_on(recall_gated(&m, &gate, 0, &key, ASK, "UTC")).is_none());
        assert!(!gate.asks(EMPTY_TRUSTED_MS - 1));
        assert!(gate.asks(EMPTY_TRUSTED_MS), "a lost tell costs recall at most this long");
        assert!(gate.asks(-1), "a clock that went back asks");

        /// Tells the gate while the call is under way (a write made just
        /// after the Agent object answered "empty").
        struct ToldDuring<'a>(&'a InProcessMemory, &'a RecallGate);
        impl MemoryService for ToldDuring<'_> {
            async fn call(&self, call: &MemoryCall) -> Result<MemoryReply, MemoryCallError> {
                let reply = self.0.call(call).await;
                self.1.stored();
                reply
            }
        }
        let gate = RecallGate::default();
        let told = ToldDuring(&m, &gate);
        assert!(block_on(recall_gated(&told, &gate, 0, &key, ASK, "UTC")).is_none());
        assert!(gate.asks(1), "an empty reply a tell overlapped is not trusted");
    }

    #[test]
    fn a_store_with_only_a_removed_note_or_an_archive_is_judged_by_what_it_holds() {
        let m = InProcessMemory::default();
        let reply = |m: &InProcessMemory| {
            let call = MemoryCall::Recall { store: MAIN_STORE.into(), query: ASK.into(), k: 3, conversations: 1 };
            match block_on(m.call(&call)).unwrap() {
                MemoryReply::Recalled { empty, .. } => empty,
                other => panic!("{other:?}"),
            }
        };
        assert!(reply(&m));
        add(&m, "x", "unrelated words");
        assert!(!reply(&m), "a note that matches nothing still makes the store not empty");
        block_on(m.call(&MemoryCall::Op { store: MAIN_STORE.into(), op: Op::Remove { name: "x".into() } })).unwrap();
        assert!(reply(&m), "removed: empty again");
        let archive = MemoryCall::AddArchive {
            store: MAIN_STORE.into(),
            name: "session 1".into(),
            summary: "we talked".into(),
            created_at: 1,
        };
        block_on(m.call(&archive)).unwrap();
        assert!(!reply(&m));
        let group = MemoryCall::Recall { store: "group:telegram:-5".into(), query: ASK.into(), k: 3, conversations: 0 };
        assert!(
            matches!(block_on(m.call(&group)).unwrap(), MemoryReply::Recalled { empty: false, .. }),
            "only main is ever told, so only main says empty"
        );
    }
}
