//! The conversation a turn replays, kept beside the [`HistoryCache`]'s rows
//! between turns, so a warm turn pays for what is new, not for the whole
//! history: the new rows are paired and measured, the rest is lent as it was.
//!
//! What it holds is, by construction, what [`super::replay::conversation`]
//! builds from scratch: the latest summary, then the rows, every tool call
//! answered. [`pair_tool_calls`] decides each message from the calls of the
//! latest user or assistant message before it alone (it forgets every open
//! call at one), so pairing the rows from the last such message on gives
//! what pairing them all gives; only that last part is paired again when
//! rows are added. Anything but an append (a compaction, a reset, a
//! rewrite, another session) bumps the cache's epoch and builds it afresh.

use super::history::HistoryCache;
use super::replay::summary_message;
use super::store::{CompactMarker, SessionStore};
use crate::llm::rules::pair_tool_calls;
use crate::ports::{Sql, StorageError};
use r2_layout::Message;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The paired conversation and what is known of each message.
#[derive(Debug)]
pub struct Replay {
    session_id: String,
    /// The cache's epoch it was built in (see [`HistoryCache::epoch`]).
    epoch: u64,
    summary: Option<CompactMarker>,
    /// Rows of the cache paired so far, and the number of the last of them.
    rows_used: usize,
    last_seq: Option<i64>,
    /// Where the last part starts that a new row can change: its first row
    /// (a user or assistant message, or the first row) and first message.
    seg_row: usize,
    seg_msg: usize,
    messages: Vec<Message>,
    /// Each message's text tokens ([`super::context::text_tokens`]) and their sum.
    tokens: Vec<u64>,
    total: u64,
    /// Each message's stamp ([`crate::llm::ChatRequest::stamps`]).
    stamps: Vec<u64>,
}

/// The next stamp: one counter for the object, so a stamp never names two
/// messages, whichever cache or replay made them.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

impl Replay {
    fn new(session_id: &str, epoch: u64, summary: Option<CompactMarker>) -> Self {
        let mut r = Replay {
            session_id: session_id.to_owned(),
            epoch,
            summary: None,
            rows_used: 0,
            last_seq: None,
            seg_row: 0,
            seg_msg: 0,
            messages: Vec::new(),
            tokens: Vec::new(),
            total: 0,
            stamps: Vec::new(),
        };
        if let Some(marker) = &summary {
            r.push(summary_message(marker));
        }
        r.seg_msg = r.messages.len();
        r.summary = summary;
        r
    }

    /// Whether it still stands for `rows` of `session_id` after `summary`
    /// (rows only added since it was built).
    fn follows(&self, session_id: &str, epoch: u64, summary: &Option<CompactMarker>, rows: &[(i64, Message)]) -> bool {
        self.session_id == session_id
            && self.epoch == epoch
            && self.summary == *summary
            && self.rows_used <= rows.len()
            && self.last_seq == self.rows_used.checked_sub(1).map(|i| rows[i].0)
    }

    fn push(&mut self, m: Message) {
        let t = super::context::text_tokens(&m);
        self.total += t;
        self.tokens.push(t);
        self.stamps.push(NEXT_STAMP.fetch_add(1, Ordering::Relaxed));
        self.messages.push(m);
    }

    fn truncate(&mut self, len: usize) {
        self.total -= self.tokens[len.min(self.tokens.len())..].iter().sum::<u64>();
        self.tokens.truncate(len);
        self.stamps.truncate(len);
        self.messages.truncate(len);
    }

    /// Pairs the rows added since, re-pairing only the last part.
    fn catch_up(&mut self, rows: &[(i64, Message)]) {
        if self.rows_used == rows.len() {
            return;
        }
        let start = self.seg_row;
        self.truncate(self.seg_msg);
        let last = (start..rows.len())
            .rev()
            .find(|&i| matches!(rows[i].1, Message::User { .. } | Message::Assistant { .. }))
            .unwrap_or(start);
        let owned = |part: &[(i64, Message)]| part.iter().map(|(_, m)| m.clone()).collect();
        for m in pair_tool_calls(owned(&rows[start..last])) {
            self.push(m);
        }
        self.seg_row = last;
        self.seg_msg = self.messages.len();
        for m in pair_tool_calls(owned(&rows[last..])) {
            self.push(m);
        }
        self.rows_used = rows.len();
        self.last_seq = rows.last().map(|(seq, _)| *seq);
    }
}

/// The conversation lent to a turn: read as a slice; the turn's own
/// messages are pushed after it and dropped when it goes back to the cache
/// (the next turn reads them as rows). Going back happens on drop, whatever
/// way the turn ends; while it is out, another reader builds its own.
pub struct Lent<'c> {
    cache: &'c RefCell<HistoryCache>,
    replay: Option<Replay>,
    /// Messages that came from the cache (the rest the turn pushed).
    cached: usize,
}

impl<'c> Lent<'c> {
    /// The conversation of `session_id`, up to date with SQLite.
    pub fn take<S: Sql>(
        cache: &'c RefCell<HistoryCache>,
        store: &SessionStore<'_, S>,
        session_id: &str,
    ) -> Result<Self, StorageError> {
        let summary = store.latest_compaction(session_id)?;
        let mut c = cache.borrow_mut();
        c.rows(store, session_id)?;
        let epoch = c.epoch();
        let kept = c.replay.take().filter(|r| r.follows(session_id, epoch, &summary, c.cached_rows()));
        let mut replay = kept.unwrap_or_else(|| Replay::new(session_id, epoch, summary));
        replay.catch_up(c.cached_rows());
        drop(c);
        Ok(Lent { cache, cached: replay.messages.len(), replay: Some(replay) })
    }

    /// Gives this one back and takes it again, up to date (after the turn
    /// compacted or rewrote the history).
    pub fn renew<S: Sql>(&mut self, store: &SessionStore<'_, S>, session_id: &str) -> Result<(), StorageError> {
        self.give_back();
        *self = Lent::take(self.cache, store, session_id)?;
        Ok(())
    }

    pub fn push(&mut self, m: Message) {
        if let Some(r) = &mut self.replay {
            r.messages.push(m);
        }
    }

    pub fn extend(&mut self, ms: impl IntoIterator<Item = Message>) {
        if let Some(r) = &mut self.replay {
            r.messages.extend(ms);
        }
    }

    /// The text tokens of every message ([`super::context::text_tokens`]):
    /// the cached sum, plus the turn's own messages.
    pub fn text_tokens(&self) -> u64 {
        self.replay
            .as_ref()
            .map_or(0, |r| r.total + r.messages[self.cached..].iter().map(super::context::text_tokens).sum::<u64>())
    }

    /// The stamps of the messages that came from the cache (the first ones).
    pub fn stamps(&self) -> &[u64] {
        self.replay.as_ref().map_or(&[], |r| &r.stamps)
    }

    fn give_back(&mut self) {
        if let Some(mut r) = self.replay.take() {
            r.messages.truncate(self.cached);
            // Busy (it never is between turns) or already refilled: let it go.
            if let Ok(mut c) = self.cache.try_borrow_mut() {
                if c.replay.is_none() {
                    c.replay = Some(r);
                }
            }
        }
    }
}

impl std::ops::Deref for Lent<'_> {
    type Target = [Message];
    fn deref(&self) -> &[Message] {
        self.replay.as_ref().map_or(&[], |r| &r.messages)
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::wire::WireMemo;
    use crate::llm::{build_request, CacheTtl, ChatRequest, Hydrated};
    use crate::session::context::text_tokens;
    use crate::session::replay::{conversation, keep_strict_form};
    use crate::testing::MemSql;
    use r2_layout::{AssistantBlock, ResultBlock, UserBlock, UserContent};

    fn assistant(content: Vec<AssistantBlock>, t: i64) -> Message {
        Message::Assistant { content, timestamp: t, model: None, stop_reason: None, usage: None }
    }
    fn text(s: &str, t: i64) -> Message {
        assistant(vec![AssistantBlock::Text { text: s.into() }], t)
    }
    fn calls(ids: &[&str], t: i64) -> Message {
        let blocks = ids
            .iter()
            .map(|id| AssistantBlock::ToolCall {
                id: (*id).into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "x", "n": 1.5}),
            })
            .collect();
        assistant(blocks, t)
    }
    fn result(id: &str, t: i64) -> Message {
        Message::ToolResult {
            tool_call_id: id.into(),
            tool_name: "read_file".into(),
            content: vec![ResultBlock::Text { text: format!("result of {id} \"quoted\" \u{e9}") }],
            is_error: false,
            timestamp: t,
        }
    }
    fn image(t: i64) -> Message {
        Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                UserBlock::Text { text: "what is this?".into() },
            ]),
            sender: None,
            channel: None,
            timestamp: t,
        }
    }

    /// The request bodies both providers would get from `messages`.
    fn bodies(messages: &[Message], stamps: &[u64], memos: Option<&[RefCell<WireMemo>; 2]>) -> Vec<Vec<u8>> {
        bodies_with(messages, stamps, memos, &Hydrated::new())
    }

    fn bodies_with(
        messages: &[Message],
        stamps: &[u64],
        memos: Option<&[RefCell<WireMemo>; 2]>,
        media: &Hydrated,
    ) -> Vec<Vec<u8>> {
        let cfgs = [
            crate::testing::llm_config(&[("LLM_API_KEY", "k")]),
            crate::testing::llm_config(&[("LLM_API_KEY", "k"), ("LLM_PROVIDER", "openai"), ("LLM_MODEL", "gpt-4o")]),
        ];
        cfgs.iter()
            .enumerate()
            .map(|(i, cfg)| {
                let req = ChatRequest {
                    system: "s",
                    messages,
                    tools: &[],
                    media,
                    appended_user: None,
                    memo: memos.map(|m| &m[i]),
                    stamps,
                    prefix_ttl: CacheTtl::FiveMinutes,
                };
                build_request(cfg, &req).unwrap().body
            })
            .collect()
    }

    /// What the cache lends is what a fresh read builds, and so is the
    /// request made from it (through the session's wire memo).
    fn same_as_scratch(
        store: &SessionStore<'_, MemSql>,
        cache: &RefCell<HistoryCache>,
        memos: &[RefCell<WireMemo>; 2],
        id: &str,
    ) {
        let lent = Lent::take(cache, store, id).unwrap();
        let fresh = conversation(store, &RefCell::default(), id).unwrap();
        assert_eq!(&*lent, &fresh[..]);
        assert_eq!(lent.text_tokens(), fresh.iter().map(text_tokens).sum::<u64>());
        assert_eq!(lent.stamps().len(), lent.len());
        assert_eq!(bodies(&lent, lent.stamps(), Some(memos)), bodies(&fresh, &[], None));
        // As the turn sends it: through the media notes (an image no longer
        // stored becomes a note, the history rewritten), stamped only when
        // the history is sent as lent.
        let p = crate::testing::TestPlatform::default();
        let vars = [("OWNER_IDS", "telegram:1"), ("LLM_API_KEY", "k")].map(|(k, v)| (k.to_owned(), v.to_owned()));
        let cfg =
            crate::settings::AgentConfig::load(&vars.into_iter().collect::<std::collections::HashMap<_, _>>(), "main")
                .unwrap();
        let media_cache = RefCell::new(crate::media::MediaCache::default());
        let view = futures::executor::block_on(crate::media::prepare(&p, &cfg, &media_cache, &lent));
        let fresh_view = futures::executor::block_on(crate::media::prepare(&p, &cfg, &media_cache, &fresh));
        let stamps = match view.messages {
            std::borrow::Cow::Borrowed(_) => lent.stamps(),
            std::borrow::Cow::Owned(_) => &[],
        };
        assert_eq!(
            bodies_with(&view.messages, stamps, Some(memos), &view.media),
            bodies_with(&fresh_view.messages, &[], None, &fresh_view.media)
        );
    }

    #[test]
    fn the_lent_conversation_and_its_request_are_those_built_from_scratch() {
        let sql = MemSql::default();
        let store = SessionStore::new(&sql);
        store.init().unwrap();
        let cache = RefCell::new(HistoryCache::default());
        let memos = [RefCell::new(WireMemo::default()), RefCell::new(WireMemo::default())];
        let check = || same_as_scratch(&store, &cache, &memos, "s");
        let append = |m: Message| store.append("s", &m).unwrap();
        check();
        append(Message::user_text("hi", 1));
        append(text("hello", 2));
        check();
        // A call waiting for its result is answered as interrupted, then by its result.
        append(Message::user_text("read it", 3));
        append(calls(&["c1"], 4));
        check();
        append(result("c1", 5));
        check();
        // Two calls, one answered, then the user again; an orphan result; an image.
        append(calls(&["c2", ""], 6));
        append(result("c2", 7));
        check();
        append(Message::user_text("and?", 8));
        append(result("nobody", 9));
        append(image(10));
        check();
        // A turn pushes its own messages: they are dropped on the way back
        // and come again as rows.
        {
            let mut lent = Lent::take(&cache, &store, "s").unwrap();
            let n = lent.len();
            lent.push(text("seen", 11));
            lent.extend([Message::user_text("x", 12)]);
            assert_eq!(lent.len(), n + 2);
        }
        append(text("seen", 11));
        check();
        // The turn's own messages after the stamped ones are checked and
        // paired as ever (a call with no result yet).
        {
            let mut lent = Lent::take(&cache, &store, "s").unwrap();
            let mut fresh = conversation(&store, &RefCell::default(), "s").unwrap();
            for m in [Message::user_text("more", 12), calls(&["c9"], 13)] {
                lent.push(m.clone());
                fresh.push(m);
            }
            assert_eq!(bodies(&lent, lent.stamps(), Some(&memos)), bodies(&fresh, &[], None));
        }
        // A compaction, then appends after it.
        let seq = store.history_rows_after("s", 0).unwrap().0[5].0;
        let marker = CompactMarker { archive_name: "a".into(), archived_at: 20, summary: "sum".into() };
        store.record_compaction(&marker, "s", seq).unwrap();
        check();
        append(Message::user_text("after", 21));
        append(calls(&["c3"], 22));
        check();
        // The strict form rewrites rows in place.
        keep_strict_form(&store, &cache, "s").unwrap();
        check();
        append(result("c3", 23));
        check();
        // A reset, then a new conversation; another session in between.
        store.clear_history("s").unwrap();
        check();
        store.append("t", &Message::user_text("other", 30)).unwrap();
        same_as_scratch(&store, &cache, &memos, "t");
        append(Message::user_text("again", 31));
        check();
    }

    /// The history's share of a warm turn, by history length: from scratch
    /// as before (a copy, paired, measured, compared) and lent. Run with
    /// `cargo test --release -p durable --lib -- --ignored --nocapture history_cost`.
    #[test]
    #[ignore]
    fn history_cost() {
        let cfg = crate::testing::llm_config(&[("LLM_API_KEY", "k")]);
        let media = Hydrated::new();
        fn req<'a>(
            messages: &'a [Message],
            stamps: &'a [u64],
            memo: &'a RefCell<WireMemo>,
            media: &'a Hydrated,
        ) -> ChatRequest<'a> {
            ChatRequest {
                system: "s",
                messages,
                tools: &[],
                media,
                appended_user: None,
                memo: Some(memo),
                stamps,
                prefix_ttl: CacheTtl::FiveMinutes,
            }
        }
        let line = "a sentence of an ordinary chat, about forty-odd bytes. ".repeat(5);
        for n in [100, 500, 1000, 2000] {
            let sql = MemSql::default();
            let store = SessionStore::new(&sql);
            store.init().unwrap();
            let mut t = 0;
            let mut add = |store: &SessionStore<'_, MemSql>| {
                t += 1;
                store.append("s", &Message::user_text(format!("{line}{t}"), t)).unwrap();
                store.append("s", &text(&format!("{line}{t}"), t)).unwrap();
            };
            for _ in 0..n / 2 {
                add(&store);
            }
            let (old_cache, new_cache) = (RefCell::new(HistoryCache::default()), RefCell::new(HistoryCache::default()));
            let (old_memo, new_memo) = (RefCell::new(WireMemo::default()), RefCell::new(WireMemo::default()));
            let (mut old, mut new, mut body_only) = (0u128, 0u128, 0u128);
            let turns = 30;
            for i in 0..turns + 3 {
                add(&store);
                let start = std::time::Instant::now();
                let conv = conversation(&store, &old_cache, "s").unwrap();
                let size = crate::session::context::estimate_tokens("s", &conv, 0, &media);
                let a = build_request(&cfg, &req(&conv, &[], &old_memo, &media)).unwrap().body;
                let mid = std::time::Instant::now();
                let lent = Lent::take(&new_cache, &store, "s").unwrap();
                let size2 = crate::session::context::estimate_known("s", &lent, lent.text_tokens(), 0, &media);
                let lent_at = std::time::Instant::now();
                let b = build_request(&cfg, &req(&lent, lent.stamps(), &new_memo, &media)).unwrap().body;
                let end = std::time::Instant::now();
                assert_eq!((size, &a), (size2, &b));
                if i >= 3 {
                    old += (mid - start).as_micros();
                    new += (end - mid).as_micros();
                    body_only += (end - lent_at).as_micros();
                }
            }
            let per = |x: u128| x as f64 / turns as f64;
            println!(
                "history {n:>5}: before {:>8.1} µs/turn, lent {:>8.1} µs/turn (of which the body {:>8.1})",
                per(old),
                per(new),
                per(body_only)
            );
        }
    }

    #[test]
    fn a_warm_take_pairs_only_the_new_part() {
        let sql = MemSql::default();
        let store = SessionStore::new(&sql);
        store.init().unwrap();
        let cache = RefCell::new(HistoryCache::default());
        for i in 0..50 {
            store.append("s", &Message::user_text(format!("m{i}"), i)).unwrap();
            store.append("s", &text("a", i)).unwrap();
        }
        drop(Lent::take(&cache, &store, "s").unwrap());
        store.append("s", &Message::user_text("new", 99)).unwrap();
        drop(Lent::take(&cache, &store, "s").unwrap());
        let c = cache.borrow();
        let r = c.replay.as_ref().unwrap();
        assert_eq!(r.seg_row, 100, "the last part is the new row");
        assert_eq!(r.messages.len(), 101);
    }
}
