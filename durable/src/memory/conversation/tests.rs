//! Conversation memory over SQLite in memory (rusqlite) and an R2 double: adding once,
//! reloading, privacy between stores, the backfill, and the tools' JSON.

use super::backfill::{self, BackfillReport, Indexer, ARCHIVES_PER_RUN, IDLE_MS, SKIPPED_STORE};
use super::shelf::Shelf;
use super::store::Conversations;
use crate::memory::tools::{self as mtools, MemoryToolContext};
use crate::memory::MemoryHub;
use crate::ports::{MemoryService, ObjectStore, PutOptions, Sql, SqlValue};
use crate::protocol::memory::*;
use crate::testing::{InProcessMemory, MemSql, MemStore};
use crate::workspace::Workspace;
use futures::executor::block_on;
use hearth_memory::ConversationQuery;
use r2_layout::{archive, AgentId, Message, Scope};
use serde_json::{json, Value};
use std::rc::Rc;

const DAY: i64 = 86_400_000;
/// 2026-11-02 12:00 UTC, a Monday.
const T0: i64 = 1_793_620_800_000;

fn ex(at: i64, speaker: &str, text: &str, reply: &str) -> Exchange {
    Exchange { at, speaker: speaker.into(), channel: String::new(), text: text.into(), reply: reply.into() }
}

fn source(session: &str, key: &str) -> ConversationSource {
    ConversationSource {
        source: format!("agents/main/sessions/{session}.jsonl.gz"),
        session_id: session.into(),
        session_key: key.into(),
        channel: "telegram".into(),
    }
}

fn shelf() -> (Rc<MemSql>, Shelf<MemSql>) {
    let sql = Rc::new(MemSql::default());
    (sql.clone(), Shelf::new(sql))
}

fn search(s: &mut Shelf<MemSql>, store: &str, text: &str) -> Vec<ConversationHitView> {
    s.search(store, &ConversationQuery { text, k: 5, ..Default::default() }, false).unwrap()
}

fn filler(at: i64) -> Vec<Exchange> {
    (0..6).map(|i| ex(at + i, "Ana", "good morning, how are you today", "fine thanks")).collect()
}

#[test]
fn what_was_said_is_found_with_its_session_time_and_neighbours() {
    let (_, mut s) = shelf();
    let mut talk = filler(T0);
    talk.push(ex(T0 + 100, "Ana", "what should I bring to the picnic?", "Maybe a salad"));
    talk.push(ex(T0 + 200, "Ana", "I will bake my lemon cake for the picnic", "Lovely!"));
    talk.push(ex(T0 + 300, "Ana", "see you later", ""));
    assert_eq!(s.add("main", &source("s1", "agent:main:main"), &talk, T0).unwrap(), 9);
    let hits = search(&mut s, "main", "lemon cake");
    let top = &hits[0];
    assert_eq!((top.exchange.text.as_str(), top.exchange.at), ("I will bake my lemon cake for the picnic", T0 + 200));
    assert_eq!(
        (top.session_id.as_str(), top.session_key.as_str(), top.channel.as_str()),
        ("s1", "agent:main:main", "telegram")
    );
    let texts = |c: &[Exchange]| c.iter().map(|e| e.text.clone()).collect::<Vec<_>>();
    assert_eq!(texts(&top.before), ["good morning, how are you today", "what should I bring to the picnic?"]);
    assert_eq!(texts(&top.after), ["see you later"], "the session ends there");
    assert_eq!(top.exchange.channel, "telegram", "the session's channel when the exchange had none");
}

#[test]
fn a_batch_is_added_once_and_survives_a_restart() {
    let (sql, mut s) = shelf();
    let talk = vec![ex(T0, "Ana", "the plumber comes on Thursday", "Noted")];
    let from = source("s1", "agent:main:main");
    assert_eq!(s.add("main", &from, &talk, T0).unwrap(), 1);
    assert_eq!(s.add("main", &from, &talk, T0).unwrap(), 0, "the same source again adds nothing");
    // An evicted object: a new shelf over the same SQLite (no checkpoint yet: the rows).
    let mut again = Shelf::new(sql.clone());
    assert_eq!(search(&mut again, "main", "plumber").len(), 1);
    // After a checkpoint, and more exchanges after it.
    let mut c = Conversations::open(sql.clone(), "main").unwrap();
    c.checkpoint().unwrap();
    c.add(&source("s2", "agent:main:main"), &[ex(T0 + DAY, "Ana", "the plumber fixed the sink", "")], T0).unwrap();
    let mut third = Shelf::new(sql.clone());
    let texts: Vec<String> = search(&mut third, "main", "plumber").into_iter().map(|h| h.exchange.text).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    // A damaged checkpoint costs a re-index, not the text.
    sql.exec("UPDATE conv_checkpoint SET chunk = X'00'", &[]).unwrap();
    let mut fourth = Shelf::new(sql);
    assert_eq!(search(&mut fourth, "main", "plumber").len(), 2);
}

#[test]
fn a_settled_store_is_checkpointed_at_the_next_look() {
    let (sql, mut s) = shelf();
    let checkpoints = || sql.exec("SELECT COUNT(*) FROM conv_checkpoint", &[]).unwrap()[0][0].as_i64();
    s.add("main", &source("s1", "agent:main:main"), &filler(T0), T0).unwrap();
    assert!(s.maintenance().unwrap().is_empty(), "just added: it may still be growing");
    assert_eq!(checkpoints(), Some(0));
    assert_eq!(s.maintenance().unwrap(), ["main"], "nothing added since the last look: settled");
    assert!(checkpoints().unwrap_or(0) > 0);
    assert!(s.maintenance().unwrap().is_empty(), "nothing pending: nothing to write");
    // Still growing at every look: no checkpoint until CHECKPOINT_AFTER.
    for day in 1..4 {
        s.add("main", &source(&format!("s{}", day + 1), "agent:main:main"), &filler(T0 + day * DAY), T0).unwrap();
        assert!(s.maintenance().unwrap().is_empty());
    }
}

#[test]
fn a_failed_write_adds_nothing_and_the_retry_adds_it_all() {
    let (sql, mut s) = shelf();
    let talk = vec![ex(T0, "Ana", "my passport number ends in 42", ""), ex(T0 + 1, "Ana", "and expires in May", "")];
    *sql.fail_writes_containing.borrow_mut() = Some("INSERT INTO conv_source".into());
    assert!(s.add("main", &source("s1", "agent:main:main"), &talk, T0).is_err());
    assert!(search(&mut s, "main", "passport").is_empty());
    assert!(Shelf::new(sql.clone())
        .search("main", &ConversationQuery { text: "passport", k: 5, ..Default::default() }, false)
        .unwrap()
        .is_empty());
    *sql.fail_writes_containing.borrow_mut() = None;
    assert_eq!(s.add("main", &source("s1", "agent:main:main"), &talk, T0).unwrap(), 2);
    let found = search(&mut s, "main", "passport");
    assert_eq!(found[0].exchange.text, "my passport number ends in 42");
    assert_eq!(found.len(), 2, "and the exchange after it, through its window, once: {found:?}");
}

#[test]
fn a_store_finds_only_its_own_conversations() {
    let (_, mut s) = shelf();
    s.add("main", &source("owner", "agent:main:main"), &[ex(T0, "Ana", "my bank pin is 4711", "")], T0).unwrap();
    let group = source("grp", "agent:main:telegram:group:-100");
    s.add("group:telegram:-100", &group, &[ex(T0, "Bo", "the picnic is on Sunday", "")], T0).unwrap();
    assert!(search(&mut s, "group:telegram:-100", "bank pin 4711").is_empty(), "a group never finds the owner's words");
    assert!(search(&mut s, "dm:telegram:777", "bank pin").is_empty(), "nor does a friend's DM");
    assert!(search(&mut s, "main", "picnic sunday").is_empty(), "and the owner's search stays in its store");
    // Only the owner's session_logs asks for every store.
    let all = s.search("main", &ConversationQuery { text: "pin picnic", k: 5, ..Default::default() }, true).unwrap();
    let stores: Vec<&str> = all.iter().map(|h| h.store.as_str()).collect();
    assert_eq!(stores.len(), 2, "{stores:?}");
}

#[test]
fn every_store_is_ranked_by_comparable_scores() {
    // A group's store (listed first) has a weak match (one word of four) among small
    // talk; the owner's has all four words. Each store's best used to be scaled to the
    // same top score, so the merge put whichever store was listed first on top.
    let (_, mut s) = shelf();
    let mut chat = filler(T0);
    chat.push(ex(T0 + 10, "Bo", "the sauna at the hotel was too hot", ""));
    s.add("group:telegram:-100", &source("grp", "agent:main:telegram:group:-100"), &chat, T0).unwrap();
    let talk = [ex(T0, "Ana", "my gym locker code is 3301, by the sauna", ""), ex(T0 + 1, "Ana", "see you at six", "")];
    s.add("main", &source("owner", "agent:main:main"), &talk, T0).unwrap();
    let q = ConversationQuery { text: "gym locker code sauna", k: 5, ..Default::default() };
    let all = s.search("main", &q, true).unwrap();
    assert_eq!(all[0].exchange.text, "my gym locker code is 3301, by the sauna", "{all:?}");
    let weak = all.iter().find(|h| h.store.starts_with("group:")).expect("the group's weak match is there too");
    assert!(weak.score < all[0].score * 0.6, "{} vs {}", weak.score, all[0].score);
}

#[test]
fn a_date_window_keeps_what_was_said_then() {
    let (_, mut s) = shelf();
    for (i, when) in [T0 - 40 * DAY, T0 - 10 * DAY, T0].iter().enumerate() {
        let talk = vec![ex(*when, "Ana", &format!("dentist appointment number {i}"), "")];
        s.add("main", &source(&format!("s{i}"), "agent:main:main"), &talk, T0).unwrap();
    }
    let q = ConversationQuery {
        text: "dentist",
        k: 5,
        since: Some(T0 - 20 * DAY),
        until: Some(T0 - DAY),
        ..Default::default()
    };
    let hits = s.search("main", &q, false).unwrap();
    assert_eq!(hits.iter().map(|h| h.exchange.text.as_str()).collect::<Vec<_>>(), ["dentist appointment number 1"]);
}

fn tool_ctx<'a>(agent: &'a AgentId, store: &str, scope: Scope, ws: &'a Workspace) -> MemoryToolContext<'a> {
    MemoryToolContext {
        agent,
        store: store.into(),
        scope,
        model: "m",
        workspace: ws,
        now_ms: T0,
        timezone: "Europe/Paris",
        records_use: true,
    }
}

fn tool(m: &InProcessMemory, c: &MemoryToolContext<'_>, name: &str, args: Value) -> (Value, bool) {
    let o = if name == "session_logs" {
        block_on(mtools::search_transcripts(m, c, &args))
    } else {
        block_on(mtools::run(m, c, name, &args)).expect("a memory tool")
    };
    (hearth_json::from_str(&o.text).unwrap_or(Value::String(o.text)), o.is_error)
}

fn add_via(m: &InProcessMemory, store: &str, from: ConversationSource, exchanges: Vec<Exchange>) {
    block_on(m.call(&MemoryCall::AddConversation { store: store.into(), from, exchanges })).unwrap();
}

#[test]
fn memory_search_answers_with_when_who_and_the_exchanges_around() {
    let m = InProcessMemory::default();
    let mut talk = filler(T0 - 30 * DAY);
    talk.push(ex(T0 - 30 * DAY + 100, "Ana", "remind me: the boiler code is 8812", "Got it"));
    talk.push(ex(T0 - 30 * DAY + 200, "Ana", "thanks!", "Anytime"));
    add_via(&m, "main", source("s1", "agent:main:main"), talk);
    let (agent, ws) = (AgentId::parse("main").unwrap(), Workspace::default());
    let c = tool_ctx(&agent, "main", Scope::Main, &ws);
    let (v, is_error) = tool(&m, &c, "memory_search", json!({"query": "boiler code", "since": "last month"}));
    assert!(!is_error, "{v}");
    let hit = &v["conversations"][0];
    assert_eq!(hit["said"], "remind me: the boiler code is 8812", "{v}");
    assert_eq!(hit["speaker"], "Ana");
    assert_eq!(hit["reply"], "Got it");
    assert_eq!(hit["when"], "2026-10-03 14:00 (Saturday) CEST", "in the agent's zone");
    assert_eq!(hit["session"], "s1");
    assert_eq!(hit["after"][0]["said"], "thanks!");
    assert_eq!(hit["before"].as_array().map(Vec::len), Some(2), "two exchanges before it: {v}");
    assert!(v["hits"].as_array().is_some(), "notes are still answered: {v}");
    // This week has nothing; a bad range is a clear error.
    let (v, _) = tool(&m, &c, "memory_search", json!({"query": "boiler code", "since": "this week"}));
    assert_eq!(v["conversations"], json!([]), "{v}");
    let (v, is_error) = tool(&m, &c, "memory_search", json!({"query": "boiler", "until": "next tuesday"}));
    assert!(is_error && v.as_str().unwrap().contains("until"), "{v}");
}

#[test]
fn session_logs_search_is_ranked_over_every_conversation_for_the_owner_only() {
    let m = InProcessMemory::default();
    add_via(&m, "main", source("s1", "agent:main:main"), vec![ex(T0, "Ana", "the red kayak is in the garage", "")]);
    let g = source("g1", "agent:main:telegram:group:-100");
    add_via(&m, "group:telegram:-100", g, vec![ex(T0, "Bo", "who has the kayak paddles?", "")]);
    let (agent, ws) = (AgentId::parse("main").unwrap(), Workspace::default());
    let (v, _) = tool(
        &m,
        &tool_ctx(&agent, "main", Scope::Main, &ws),
        "session_logs",
        json!({"action": "search", "query": "kayak"}),
    );
    let keys: Vec<&str> = v["hits"].as_array().unwrap().iter().filter_map(|h| h["session_key"].as_str()).collect();
    assert_eq!(keys.len(), 2, "{v}");
    let (v, is_error) = tool(
        &m,
        &tool_ctx(&agent, "group:telegram:-100", Scope::Shared, &ws),
        "session_logs",
        json!({"action": "search", "query": "kayak"}),
    );
    assert!(is_error, "{v}");
}

#[test]
fn recall_brings_an_exchange_that_is_clearly_about_the_message() {
    let m = InProcessMemory::default();
    let mut talk = filler(T0 - 3 * DAY);
    talk.push(ex(T0 - 3 * DAY + 50, "Ana", "my sister Olga lands in Lisbon on the 14th", "I'll remember"));
    add_via(&m, "main", source("s1", "agent:main:main"), talk);
    let main = crate::inbound::SessionKey::parse("agent:main:main").unwrap();
    let block = block_on(crate::memory::recall(&m, &main, "when does Olga land in Lisbon?", "UTC")).expect("recalled");
    assert!(block.contains("[said 2026-10-30") && block.contains("by Ana] my sister Olga lands in Lisbon"), "{block}");
    assert!(
        block_on(crate::memory::recall(&m, &main, "good morning", "UTC")).is_none(),
        "one common word recalls nothing"
    );
    let group = crate::inbound::SessionKey::parse("agent:main:telegram:group:-100").unwrap();
    assert!(block_on(crate::memory::recall(&m, &group, "Olga Lisbon", "UTC")).is_none(), "never in a group");
}

// ------------------------------------------------------------------ backfill

struct HubIndexer<'h>(&'h mut MemoryHub<MemSql>, i64);

impl Indexer for HubIndexer<'_> {
    fn add(&mut self, store: &str, from: &ConversationSource, e: &[Exchange]) -> Result<usize, MemoryCallError> {
        let now = self.1;
        self.0.conversations().add(store, from, e, now)
    }
}

fn put_archive(r2: &MemStore, name: &str, session_key: Option<&str>, messages: &[Message]) {
    let mut metadata = vec![("sessionId".to_owned(), name.split("-part").next().unwrap_or(name).to_owned())];
    if let Some(k) = session_key {
        metadata.push(("sessionKey".to_owned(), k.to_owned()));
    }
    let key = format!("agents/main/sessions/{name}.jsonl.gz");
    let opts = PutOptions { content_type: None, custom_metadata: metadata };
    block_on(r2.put(&key, archive::encode(messages), opts)).unwrap();
}

fn said(text: &str, at: i64) -> Message {
    Message::user_text(text, at)
}

fn run_backfill(r2: &MemStore, hub: &mut MemoryHub<MemSql>, sql: &MemSql, now: i64) -> BackfillReport {
    let agent = AgentId::parse("main").unwrap();
    let mut indexer = HubIndexer(hub, now);
    block_on(backfill::run(r2, sql, &agent, now, &mut indexer, &|_, _| {})).unwrap()
}

#[test]
fn archives_already_in_r2_are_indexed_once_in_the_background() {
    let r2 = MemStore::default();
    let sql = Rc::new(MemSql::default());
    let mut hub = MemoryHub::new(sql.clone());
    put_archive(&r2, "old1", Some("agent:main:main"), &[said("[Ana]: we adopted a cat named Miso", T0)]);
    put_archive(&r2, "old1-part100", Some("agent:main:main"), &[said("the vet is Dr. Petrov", T0 - 5)]);
    put_archive(&r2, "grp", Some("agent:main:telegram:group:-7"), &[said("[Bo]: bring the cat toys", T0)]);
    put_archive(&r2, "hb", Some("agent:main:heartbeat"), &[said("check HEARTBEAT.md", T0)]);
    put_archive(&r2, "nokey", None, &[said("who am I?", T0)]);
    let key = "agents/main/sessions/broken.jsonl.gz";
    block_on(r2.put(
        key,
        b"not gzip".to_vec(),
        PutOptions { content_type: None, custom_metadata: vec![("sessionKey".into(), "agent:main:main".into())] },
    ))
    .unwrap();
    let first = run_backfill(&r2, &mut hub, &sql, T0);
    assert_eq!((first.archives, first.exchanges, first.skipped, first.more), (3, 3, 3, false), "{first:?}");
    let q = |text| ConversationQuery { text, k: 5, ..Default::default() };
    // The reset archive and its compaction part, one session.
    let cat = hub.conversations().search("main", &q("cat miso"), false).unwrap();
    assert_eq!((cat[0].exchange.speaker.as_str(), cat[0].session_id.as_str()), ("Ana", "old1"), "{cat:?}");
    let vet = hub.conversations().search("main", &q("vet petrov"), false).unwrap();
    assert_eq!((vet[0].exchange.text.as_str(), vet[0].session_id.as_str()), ("the vet is Dr. Petrov", "old1"));
    assert_eq!(
        hub.conversations().search("group:telegram:-7", &q("cat toys"), false).unwrap().len(),
        1,
        "in its own store"
    );
    // Nothing twice, and no listing at all for a day.
    let ops = r2.ops.borrow().len();
    assert_eq!(run_backfill(&r2, &mut hub, &sql, T0 + 1), BackfillReport { idle: true, ..Default::default() });
    assert_eq!(r2.ops.borrow().len(), ops, "an idle run makes no R2 operation");
    let later = run_backfill(&r2, &mut hub, &sql, T0 + IDLE_MS + 1);
    assert_eq!((later.archives, later.skipped), (0, 0), "{later:?}");
    let skipped = sql.exec("SELECT COUNT(*) FROM conv_source WHERE store = ?", &[SKIPPED_STORE.into()]).unwrap();
    assert_eq!(skipped[0][0], SqlValue::Int(3));
}

#[test]
fn a_long_backfill_goes_in_bounded_runs_and_a_cut_run_loses_nothing() {
    let r2 = MemStore::default();
    let sql = Rc::new(MemSql::default());
    let mut hub = MemoryHub::new(sql.clone());
    let n = ARCHIVES_PER_RUN * 2 + 3;
    for i in 0..n {
        put_archive(
            &r2,
            &format!("s{i:03}"),
            Some("agent:main:main"),
            &[said(&format!("topic number t{i}"), T0 + i as i64)],
        );
    }
    let first = run_backfill(&r2, &mut hub, &sql, T0);
    assert_eq!((first.archives, first.more), (ARCHIVES_PER_RUN, true));
    // The next run's R2 read fails after one archive: the run stops, nothing is marked.
    let agent = AgentId::parse("main").unwrap();
    r2.inject(crate::testing::Fault::nth(crate::testing::StoreOp::Get, 2));
    let mut indexer = HubIndexer(&mut hub, T0);
    assert!(block_on(backfill::run(&r2, &*sql, &agent, T0, &mut indexer, &|_, _| {})).is_err());
    let mut runs = 0;
    while run_backfill(&r2, &mut hub, &sql, T0).more {
        runs += 1;
        assert!(runs < 10);
    }
    let total = sql.exec("SELECT COUNT(*) FROM conv_turn", &[]).unwrap();
    assert_eq!(total[0][0], SqlValue::Int(n as i64), "each archive once");
    let hits = hub
        .conversations()
        .search("main", &ConversationQuery { text: "t7", k: 5, ..Default::default() }, false)
        .unwrap();
    assert_eq!(hits.len(), 1);
}
