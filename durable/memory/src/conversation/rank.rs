//! Ranking exchanges for a question.
//!
//! People ask about conversations by a few specific words, and the answer to a question
//! is often the exchange after the one that shares its words ("what did you bake?" / "a
//! coconut ice cream"). So an exchange is scored three ways, each plain BM25 (Lucene's
//! formula, `k1` 1.2, `b` 0.75, every query term, weighted by its idf in the store: no
//! stop words, no common-word rule):
//!
//! 1. **itself**: BM25 over the exchange's text;
//! 2. **its window**: BM25 over the exchange and the ones just before and after it in
//!    its session, as one text (the window's document frequencies and lengths are the
//!    windows' own);
//! 3. **its session**: BM25 over the whole session as one text.
//!
//! Each is divided by the most the query could score at that level (the sum of its
//! terms' idf there, which a BM25 score approaches but never reaches), so each is a
//! share from 0 to 1 whatever the store: the fused score `own + window × w +
//! session × s` ([`Ranking`]) means the same in every store, which is what lets
//! `session_logs` merge the results of several stores by it. The results are then taken
//! best first, a session's next one competing with its score times
//! [`Ranking::next_in_session`] per result already taken from it.
//!
//! A date range (`since`/`until`) applies to all three: only exchanges in it count,
//! for the session part too (a session's words outside the range do not lift it).
//!
//! Several phrasings of one question ([`ConversationQuery::more`]) are ranked each and
//! fused by reciprocal rank (`Σ 1 / (60 + rank)`, Cormack, Clarke and Büttcher 2009).
//!
//! What was measured, and what was tried and not kept (query-term weights from the
//! share of sessions a term is in, RM3 feedback, one result per session, the session
//! first and then its exchanges), is in `docs/conversation-memory.md`, from
//! `npm run bench -- conversations`.

use super::{ConversationIndex, Ranking, Scratch, SessionOrd, TurnId};
use crate::bm25::{self, Bm25Params, NormCache};
use crate::index::rank_top_k;

/// Exchanges of context shown on each side of a hit: a hit is shown as at most five.
pub const CONTEXT: usize = 2;
/// Reciprocal-rank fusion's constant (Cormack et al. 2009).
pub const RRF_K: f32 = 60.0;
/// Candidates the selection (and a fusion) looks at, best by score.
const SELECTION_POOL: usize = 200;
/// Exchanges scored for one phrasing at most: past this, commoner words only add to
/// those already scored (a conversation of a few thousand exchanges never gets there).
pub const MAX_CANDIDATES: usize = 4096;
const CANDIDATE: u8 = 1;
const NEAR: u8 = 2;

/// A search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConversationQuery<'a> {
    pub text: &'a str,
    /// More phrasings of the same question (the model's `queries`), fused with `text`.
    pub more: &'a [String],
    /// Results wanted.
    pub k: usize,
    /// Only exchanges at or after this time (ms).
    pub since: Option<i64>,
    /// Only exchanges before this time (ms).
    pub until: Option<i64>,
}

/// One result.
#[derive(Clone, Debug, PartialEq)]
pub struct ConversationHit {
    pub id: TurnId,
    pub session: SessionOrd,
    pub at: i64,
    /// The fused score (a sum of shares, see the module docs; with several phrasings,
    /// their reciprocal-rank sum): comparable across stores for one query.
    pub score: f32,
    /// The exchange's own BM25 as a share of the most it could score for the query's
    /// words the store has (0–1).
    pub match_share: f32,
    /// Its window's BM25 as a share of the most a window could score for those words
    /// (0–1): how clearly this part of the conversation is about the query. Per-turn
    /// recall's floor.
    pub window_share: f32,
    /// Its window's BM25 itself (what the share is of).
    pub window_score: f32,
    /// Up to [`CONTEXT`] exchanges indexed just before it in the same batch of its
    /// session, oldest first, and up to [`CONTEXT`] after it, in order (fewer at a
    /// batch's edge, where the host asks its storage).
    pub before: Vec<TurnId>,
    pub after: Vec<TurnId>,
}

/// One phrasing's candidates.
struct Scored {
    /// (slot, fused score), best first, at most [`SELECTION_POOL`].
    pool: Vec<(u64, f32)>,
    /// Of the pool's slots: (slot, own share, window share, window BM25).
    shares: Vec<(u64, f32, f32, f32)>,
}

impl Scored {
    fn shares_of(&self, slot: u64) -> (f32, f32, f32) {
        self.shares.iter().find(|x| x.0 == slot).map_or((0.0, 0.0, 0.0), |x| (x.1, x.2, x.3))
    }
}

impl ConversationIndex {
    /// The best exchanges for `q` by the default [`Ranking`].
    pub fn search(&self, q: &ConversationQuery<'_>) -> Vec<ConversationHit> {
        self.search_with(q, &Ranking::default())
    }

    /// The best exchanges for `q` (see the module docs).
    pub fn search_with(&self, q: &ConversationQuery<'_>, ranking: &Ranking) -> Vec<ConversationHit> {
        if q.k == 0 || self.index.doc_count() == 0 {
            return Vec::new();
        }
        let Some(first) = self.score(q.text, q, ranking) else {
            return Vec::new();
        };
        let pool = if q.more.iter().all(|m| m.trim().is_empty()) {
            first.pool.clone()
        } else {
            let mut fused: std::collections::HashMap<u64, f32> = std::collections::HashMap::new();
            let mut add = |pool: &[(u64, f32)]| {
                for (rank, (slot, _)) in pool.iter().enumerate() {
                    *fused.entry(*slot).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
                }
            };
            add(&first.pool);
            for text in q.more.iter().filter(|m| !m.trim().is_empty()) {
                if let Some(other) = self.score(text, q, ranking) {
                    add(&other.pool);
                }
            }
            let mut pool: Vec<(u64, f32)> = fused.into_iter().collect();
            rank_top_k(&mut pool, SELECTION_POOL);
            pool
        };
        self.select(pool, q.k, ranking, &first)
    }

    /// Scores every exchange the phrasing `text` touches; None when no term occurs.
    fn score(&self, text: &str, q: &ConversationQuery<'_>, ranking: &Ranking) -> Option<Scored> {
        let n = self.index.doc_count();
        let params = Bm25Params::default();
        let cache = NormCache::new(params, self.index.avgdl());
        let slots = &self.index.slots;
        let in_range = |at: i64| q.since.is_none_or(|s| at >= s) && q.until.is_none_or(|u| at < u);
        let same_session = |a: usize, b: usize| self.turns[a].session == self.turns[b].session;

        let sessions = self.session_len.len();
        let session_count = self.session_count() as u64;
        let session_avg = bm25::avg_field_length(self.session_len.iter().sum(), session_count);
        let window_avg = bm25::avg_field_length(self.window_total, n);
        let mut local = Scratch::default();
        let mut borrowed = self.scratch.try_borrow_mut();
        let scratch = match borrowed.as_mut() {
            Ok(s) => &mut **s,
            Err(_) => &mut local,
        };
        for v in [&mut scratch.own, &mut scratch.window] {
            v.resize(slots.len(), 0.0);
        }
        scratch.window_tf.resize(slots.len(), 0);
        scratch.marks.resize(slots.len(), 0);
        let Scratch { own, window, window_tf, marks } = scratch;
        let mut session_score = vec![0.0f32; sessions];
        let mut session_tf = vec![0u32; sessions];
        // The last term (its number + 1) that counted each session / window: distinct counts.
        let mut session_seen = vec![0u32; sessions];
        let mut candidates: Vec<u32> = Vec::new();
        // `marks` per slot: CANDIDATE (its window is scored), NEAR (in a candidate's window).
        let mut touched_windows: Vec<u32> = Vec::new();
        let mut touched_sessions: Vec<SessionOrd> = Vec::new();
        // The most the query's words the store has could score at each level, and what
        // the words it never saw would have added.
        let (mut own_ceiling, mut window_ceiling, mut session_ceiling) = (0.0f32, 0.0f32, 0.0f32);
        let (mut absent, mut absent_sessions) = (0.0f32, 0.0f32);
        let mut terms: Vec<(String, Option<&crate::index::Term>)> = self
            .index
            .tokenizer()
            .query_terms(text)
            .into_iter()
            .map(|t| {
                let term = self.index.term(&t).filter(|x| x.df > 0);
                (t, term)
            })
            .collect();
        // Words in most exchanges (pronouns, the speakers of a two-person store, a reply
        // every exchange has) weigh less than ln 2 each and would cost a posting per
        // exchange: they are left out, unless the query has nothing else.
        let majority = |t: &crate::index::Term| u64::from(t.df) * 2 > n;
        if !terms.iter().all(|(_, t)| t.is_none_or(majority)) {
            terms.retain(|(_, t)| !t.is_some_and(majority));
        }
        // Rarest first: once MAX_CANDIDATES exchanges are candidates, commoner words
        // only add to those (Moffat and Zobel's "continue" strategy).
        terms.sort_by_key(|(_, t)| t.map_or(0, |t| t.df));
        for (number, (_, term)) in terms.iter().enumerate() {
            let Some(term) = term else {
                // A word the store never saw: the most it could have added, so a store
                // that has one of the query's four words does not score like one with all.
                absent += bm25::idf(0, n);
                absent_sessions += bm25::idf(0, session_count);
                continue;
            };
            let mark = number as u32 + 1;
            let idf = bm25::idf(u64::from(term.df), n);
            own_ceiling += idf;
            let mut session_df = 0u64;
            let open_at_start = candidates.len() < MAX_CANDIDATES;
            for posting in self.index.postings(term) {
                let s = posting.slot as usize;
                let (Some(slot), Some(meta)) = (slots.get(s), self.turns.get(s)) else { continue };
                if !slot.live {
                    continue;
                }
                let at = meta.session as usize;
                if session_seen[at] != mark {
                    session_seen[at] = mark;
                    session_df += 1;
                }
                if !in_range(meta.at) {
                    continue;
                }
                if session_tf[at] == 0 {
                    touched_sessions.push(meta.session);
                }
                session_tf[at] += posting.tf;
                let open = candidates.len() < MAX_CANDIDATES;
                if !open && marks[s] == 0 {
                    continue;
                }
                // The windows holding this exchange: its own, and its neighbours' in its session.
                for nb in [s.wrapping_sub(1), s, s + 1] {
                    if nb >= slots.len() || !slots[nb].live || !same_session(nb, s) || !in_range(self.turns[nb].at) {
                        continue;
                    }
                    if marks[nb] & CANDIDATE == 0 {
                        if !open {
                            continue;
                        }
                        marks[nb] |= CANDIDATE;
                        candidates.push(nb as u32);
                        for x in [nb.wrapping_sub(1), nb, nb + 1] {
                            if let Some(m) = marks.get_mut(x) {
                                *m |= NEAR;
                            }
                        }
                    }
                    if window_tf[nb] == 0 {
                        touched_windows.push(nb as u32);
                    }
                    window_tf[nb] += posting.tf;
                }
                if marks[s] & CANDIDATE != 0 {
                    own[s] += bm25::term_score(idf, posting.tf as f32, cache.inverse(slot.norm));
                }
            }
            // The windows holding the word: counted while every one was scored; once
            // only candidates are, what independently placed occurrences would give.
            let window_df = if open_at_start && candidates.len() < MAX_CANDIDATES {
                touched_windows.len() as u64
            } else {
                let p = u64::from(term.df) as f64 / n.max(1) as f64;
                (n as f64 * (1.0 - (1.0 - p).powi(3))).round() as u64
            };
            let window_idf = bm25::idf(window_df.min(n), n);
            window_ceiling += window_idf;
            for &w in &touched_windows {
                let w = w as usize;
                let tf = std::mem::take(&mut window_tf[w]) as f32;
                let norm = params.k1 * (1.0 - params.b + params.b * self.window_len(w) as f32 / window_avg);
                window[w] += window_idf * tf / (tf + norm);
            }
            touched_windows.clear();
            let session_idf = bm25::idf(session_df, session_count);
            session_ceiling += session_idf;
            for &session in &touched_sessions {
                let at = session as usize;
                let tf = std::mem::take(&mut session_tf[at]) as f32;
                let norm = params.k1 * (1.0 - params.b + params.b * self.session_len[at] as f32 / session_avg);
                session_score[at] += session_idf * tf / (tf + norm);
            }
            touched_sessions.clear();
        }
        let share = |v: f32, ceiling: f32| if ceiling > 0.0 { (v / ceiling).min(1.0) } else { 0.0 };
        // The fused score is of the whole query (comparable across stores); the shares
        // a hit reports are of what this store could match (recall's floor: a young
        // store has not seen most words yet).
        let mut pool: Vec<(u64, f32)> = candidates
            .iter()
            .map(|&s| {
                let s = s as usize;
                let session = share(session_score[self.turns[s].session as usize], session_ceiling + absent_sessions);
                let fused = share(own[s], own_ceiling + absent)
                    + ranking.window * share(window[s], window_ceiling + absent)
                    + ranking.session * session;
                (s as u64, fused)
            })
            .collect();
        rank_top_k(&mut pool, SELECTION_POOL);
        let shares = pool
            .iter()
            .map(|&(s, _)| {
                let i = s as usize;
                (s, share(own[i], own_ceiling), share(window[i], window_ceiling), window[i])
            })
            .collect();
        for &c in &candidates {
            let c = c as usize;
            own[c] = 0.0;
            window[c] = 0.0;
            for x in [c.wrapping_sub(1), c, c + 1] {
                if let Some(m) = marks.get_mut(x) {
                    *m = 0;
                }
            }
        }
        (!candidates.is_empty()).then_some(Scored { pool, shares })
    }

    /// Tokens in the ±1 window of slot `w` (its session's exchanges beside it).
    fn window_len(&self, w: usize) -> u64 {
        let slots = &self.index.slots;
        [w.wrapping_sub(1), w, w + 1]
            .into_iter()
            .filter(|&x| x < slots.len() && slots[x].live && self.turns[x].session == self.turns[w].session)
            .map(|x| u64::from(slots[x].len))
            .sum()
    }

    /// The best `k` of a sorted pool, a session's next result at its score times
    /// [`Ranking::next_in_session`] per result taken from it.
    fn select(&self, mut pool: Vec<(u64, f32)>, k: usize, ranking: &Ranking, first: &Scored) -> Vec<ConversationHit> {
        let slots = &self.index.slots;
        let mut per_session: Vec<(SessionOrd, i32)> = Vec::new();
        let taken_in = |per: &[(SessionOrd, i32)], session: SessionOrd| {
            per.iter().find(|(s, _)| *s == session).map_or(0, |(_, n)| *n)
        };
        let mut out = Vec::new();
        while out.len() < k && !pool.is_empty() {
            let mut best: Option<(usize, f32)> = None;
            for (i, &(s, f)) in pool.iter().enumerate() {
                let already = taken_in(&per_session, self.turns[s as usize].session);
                let effective = f * ranking.next_in_session.powi(already);
                if best.is_none_or(|(_, b)| effective > b) {
                    best = Some((i, effective));
                }
                if already == 0 || ranking.next_in_session >= 1.0 {
                    // The pool is sorted: nothing later beats an unpenalised candidate.
                    break;
                }
            }
            let Some((i, _)) = best else { break };
            let (s, f) = pool.remove(i);
            let s = s as usize;
            let meta = self.turns[s];
            match per_session.iter_mut().find(|(x, _)| *x == meta.session) {
                Some((_, count)) => *count += 1,
                None => per_session.push((meta.session, 1)),
            }
            let same = |x: usize| x < slots.len() && slots[x].live && self.turns[x].session == meta.session;
            let mut before: Vec<TurnId> =
                (1..=CONTEXT).map_while(|d| s.checked_sub(d).filter(|&x| same(x))).map(|x| slots[x].doc).collect();
            before.reverse();
            let after = (1..=CONTEXT).map_while(|d| Some(s + d).filter(|&x| same(x))).map(|x| slots[x].doc).collect();
            out.push(ConversationHit {
                id: slots[s].doc,
                session: meta.session,
                at: meta.at,
                score: f,
                match_share: first.shares_of(s as u64).0,
                window_share: first.shares_of(s as u64).1,
                window_score: first.shares_of(s as u64).2,
                before,
                after,
            });
        }
        out
    }
}
