//! The lent conversation against one built from scratch, and its cost.

use super::*;
use crate::llm::wire::WireMemo;
use crate::llm::{build_request, CacheTtl, ChatRequest, Hydrated};
use crate::session::context::text_tokens;
use crate::session::replay::{conversation, keep_strict_form};
use crate::session::store::CompactMarker;
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
