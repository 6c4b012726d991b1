//! The memory service against SQLite in memory (rusqlite): persistence,
//! atomicity, scopes, tool JSON, recall and the turn loop.

use super::tools::{self as mtools, MemoryToolContext};
use super::*;
use crate::ports::{MemoryService, SqlValue, StorageError};
use crate::protocol::memory::*;
use crate::testing::{InProcessMemory, MemSql};
use crate::workspace::Workspace;
use futures::executor::block_on;
use hearth_memory::{MemoryBackend, SNAPSHOT_CHUNK_BYTES};
use r2_layout::{AgentId, Scope, WorkspaceFile};
use serde_json::{json, Value};
use std::cell::Cell;

/// SQLite that fails the n-th write statement from now (counting from 0),
/// with the same savepoint rollback as `MemSql::exec_atomic`.
#[derive(Default)]
struct FlakySql {
    inner: MemSql,
    fail_in: Cell<Option<usize>>,
}

impl Sql for FlakySql {
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
        if !query.trim_start().to_ascii_uppercase().starts_with("SELECT") {
            if let Some(n) = self.fail_in.get() {
                if n == 0 {
                    self.fail_in.set(None);
                    return Err(StorageError("injected failure".into()));
                }
                self.fail_in.set(Some(n - 1));
            }
        }
        self.inner.exec(query, params)
    }
    fn exec_atomic(&self, statements: Vec<(String, Vec<SqlValue>)>) -> Result<(), StorageError> {
        let sp = |q: &str| self.inner.conn.execute_batch(q).map_err(|e| StorageError(e.to_string()));
        sp("SAVEPOINT t")?;
        for (q, p) in &statements {
            if let Err(e) = self.exec(q, p) {
                sp("ROLLBACK TO t; RELEASE t")?;
                return Err(e);
            }
        }
        sp("RELEASE t")
    }
}

fn add(name: &str, content: &str) -> Op {
    Op::Add { name: name.into(), content: content.into(), kind: Kind::Note, created_at: 1 }
}

fn count(sql: &impl Sql, table: &str) -> i64 {
    sql.exec(&format!("SELECT COUNT(*) FROM {table}"), &[]).unwrap()[0][0].as_i64().unwrap()
}

fn hub_on<S: Sql>(sql: &Rc<S>) -> MemoryHub<S> {
    let cfg = MemoryConfig { checkpoint_after: None, ..MemoryConfig::default() };
    MemoryHub::with_config(sql.clone(), cfg)
}

fn names(hub: &mut MemoryHub<impl Sql>, store: &str, q: &str) -> Vec<String> {
    match hub
        .call(MemoryCall::Search { store: store.into(), query: q.into(), k: 10, kind: None, record: false })
        .unwrap()
    {
        MemoryReply::Hits { hits } => hits.into_iter().map(|h| h.entry.name).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn store_survives_a_restart_with_log_and_checkpoint() {
    let sql = Rc::new(MemSql::default());
    {
        let mut hub = hub_on(&sql);
        let s = hub.store("main").unwrap();
        s.apply(add("tea", "Olga drinks oolong tea")).unwrap();
        s.apply(add("cat", "The cat is called Miso")).unwrap();
        s.checkpoint().unwrap();
        s.apply(add("bike", "A blue bicycle, Miso sits in its basket")).unwrap();
        s.apply(Op::Alias { name: "cat".into(), alias: "miso".into() }).unwrap();
        s.apply(Op::Remove { name: "tea".into() }).unwrap();
    }
    assert_eq!(count(&*sql, "memory_log"), 3, "three entries changed since the checkpoint");
    let mut hub = hub_on(&sql); // a cold object on the same database
    assert_eq!(names(&mut hub, "main", "miso"), vec!["cat", "bike"]);
    assert!(names(&mut hub, "main", "oolong").is_empty());
    let s = hub.store("main").unwrap();
    assert_eq!(s.get("miso").map(|e| e.name.as_str()), Some("cat"));
    let next = s.apply(add("new", "x")).unwrap();
    assert_eq!(next, 4, "ids are never reused");
}

#[test]
fn checkpoint_rows_stay_under_the_row_limit_and_reload() {
    let sql = Rc::new(MemSql::default());
    let mut hub = hub_on(&sql);
    let s = hub.store("main").unwrap();
    let text = "lorem ipsum dolor sit amet ".repeat(4000); // ~108 KB each
    for i in 0..30 {
        s.apply(add(&format!("n{i}"), &format!("{text} unique{i}"))).unwrap();
    }
    s.checkpoint().unwrap();
    let chunks = sql.exec("SELECT length(chunk) FROM memory_snapshot WHERE store = 'main'", &[]).unwrap();
    assert!(chunks.len() >= 3, "a 3 MB checkpoint is cut in chunks");
    assert!(chunks.iter().all(|r| r[0].as_i64().unwrap() as usize <= SNAPSHOT_CHUNK_BYTES));
    assert!(chunks.iter().all(|r| r[0].as_i64().unwrap() < 2_000_000));
    assert_eq!(count(&*sql, "memory_log"), 0);
    let mut hub = hub_on(&sql);
    assert_eq!(names(&mut hub, "main", "unique17"), vec!["n17"]);
}

#[test]
fn a_failed_write_leaves_the_previous_state_in_ram_and_storage() {
    let sql = Rc::new(FlakySql::default());
    let mut hub = hub_on(&sql);
    let s = hub.store("main").unwrap();
    s.apply(add("tea", "oolong")).unwrap();
    sql.fail_in.set(Some(0));
    let e = s.apply(add("coffee", "espresso")).unwrap_err();
    assert!(e.to_string().contains("injected"), "{e}");
    assert!(s.get("coffee").is_none());
    assert!(s.search("espresso", 5).is_empty());
    // The name is still free and the next write works.
    s.apply(add("coffee", "espresso")).unwrap();
    drop(hub);
    let mut hub = hub_on(&sql);
    assert_eq!(names(&mut hub, "main", "espresso oolong").len(), 2);
}

#[test]
fn a_checkpoint_failing_midway_rolls_back_every_statement() {
    let sql = Rc::new(FlakySql::default());
    let mut hub = hub_on(&sql);
    let s = hub.store("main").unwrap();
    let big = "word ".repeat(200_000 / 5);
    for i in 0..12 {
        s.apply(add(&format!("n{i}"), &format!("{big} tag{i}"))).unwrap();
    }
    s.checkpoint().unwrap();
    s.apply(add("late", "after the checkpoint")).unwrap();
    let before_chunks = count(&sql.inner, "memory_snapshot");
    assert!(before_chunks >= 2);
    // clear log, delete chunks, insert chunk 0 succeed; inserting chunk 1 fails.
    sql.fail_in.set(Some(3));
    assert!(s.checkpoint().is_err());
    assert_eq!(count(&sql.inner, "memory_snapshot"), before_chunks, "old checkpoint intact");
    assert_eq!(count(&sql.inner, "memory_log"), 1, "log not cleared");
    drop(hub);
    let mut hub = hub_on(&sql);
    assert_eq!(names(&mut hub, "main", "checkpoint"), vec!["late"]);
    assert_eq!(names(&mut hub, "main", "tag5"), vec!["n5"]);
}

#[test]
fn backend_load_reports_a_missing_chunk() {
    let sql = Rc::new(MemSql::default());
    backend::init_schema(&*sql).unwrap();
    let mut b = SqlMemoryBackend::new(sql.clone(), "main");
    b.commit(&hearth_memory::ChangeSet {
        replace_snapshot: Some(vec![vec![1], vec![2], vec![3]]),
        ..Default::default()
    })
    .unwrap();
    sql.exec("DELETE FROM memory_snapshot WHERE seq = 1", &[]).unwrap();
    assert!(b.load().is_err());
}

#[test]
fn stores_are_separate_per_scope() {
    use crate::inbound::SessionKey;
    let k = |s: &str| store_for(&SessionKey::parse(s).unwrap());
    assert_eq!(k("agent:main:main"), "main");
    assert_eq!(k("agent:main:heartbeat"), "main");
    assert_eq!(k("agent:main:telegram:group:-100"), "group:telegram:-100");
    assert_eq!(k("agent:main:telegram:group:-100:topic:7"), "group:telegram:-100");
    assert_eq!(k("agent:main:telegram:dm:77"), "dm:telegram:77");
    assert_eq!(k("agent:main:job:daily"), "job:daily");

    let sql = Rc::new(MemSql::default());
    let mut hub = hub_on(&sql);
    hub.call(MemoryCall::Op { store: "main".into(), op: add("secret", "the vault code is 1234") }).unwrap();
    hub.call(MemoryCall::Op { store: "group:telegram:-100".into(), op: add("secret", "group plans for the vault") })
        .unwrap();
    assert!(names(&mut hub, "group:telegram:-100", "code 1234").iter().all(|n| n == "secret"));
    match hub
        .call(MemoryCall::Get { store: "group:telegram:-100".into(), name: "secret".into(), record: false })
        .unwrap()
    {
        MemoryReply::Entry { entry: Some(e) } => assert!(!e.content.contains("1234")),
        other => panic!("{other:?}"),
    }
    assert!(names(&mut hub, "dm:telegram:77", "vault").is_empty());
}

#[test]
fn a_listing_pages_a_stores_entries_newest_first_with_a_short_summary() {
    let sql = Rc::new(MemSql::default());
    let mut hub = hub_on(&sql);
    let long = format!("\n  {}\nsecond line", "é".repeat(130));
    for (name, content) in [("old", "first note"), ("long", long.as_str()), ("new", "latest\nmore")] {
        hub.call(MemoryCall::Op { store: "main".into(), op: add(name, content) }).unwrap();
    }
    hub.call(MemoryCall::Op { store: "group:telegram:-100".into(), op: add("theirs", "group only") }).unwrap();
    let list = |hub: &mut MemoryHub<MemSql>, store: &str, offset, limit| {
        let reply = hub.call(MemoryCall::List { store: store.into(), offset, limit }).unwrap();
        serde_json::to_value(reply).unwrap()
    };
    let v = list(&mut hub, "main", 0, 2);
    assert_eq!(v["total"], 3);
    assert_eq!(
        v["notes"][0],
        json!({"name": "new", "kind": "note", "createdAt": 1, "summary": "latest", "length": 11})
    );
    let long_one = &v["notes"][1];
    assert_eq!(long_one["name"], "long");
    assert_eq!(long_one["summary"], format!("{}…", "é".repeat(120)), "the first non-empty line, cut");
    assert_eq!(long_one["length"], long.chars().count());
    let v = list(&mut hub, "main", 2, 2);
    assert_eq!(v["notes"].as_array().unwrap().iter().map(|n| n["name"].clone()).collect::<Vec<_>>(), [json!("old")]);
    // Each store lists its own entries only.
    let v = list(&mut hub, "group:telegram:-100", 0, 50);
    assert_eq!((v["total"].clone(), v["notes"][0]["name"].clone()), (json!(1), json!("theirs")));
    // Without offset and limit: the first 50; a huge limit is capped.
    for i in 0..(MAX_LIST + 5) {
        hub.call(MemoryCall::Op { store: "big".into(), op: add(&format!("n{i}"), "x") }).unwrap();
    }
    let defaults: MemoryCall = hearth_json::from_str(r#"{"call":"list","store":"big"}"#).unwrap();
    let v = serde_json::to_value(hub.call(defaults).unwrap()).unwrap();
    assert_eq!(
        (v["notes"].as_array().unwrap().len(), v["notes"][0]["name"].clone()),
        (50, json!(format!("n{}", MAX_LIST + 4)))
    );
    assert_eq!(list(&mut hub, "big", 0, 1_000_000)["notes"].as_array().unwrap().len(), MAX_LIST);
}

#[test]
fn calls_and_errors_as_the_agent_object_sends_them() {
    let sql = Rc::new(MemSql::default());
    let mut hub = MemoryHub::new(sql);
    let call = |json: &str| -> MemoryCall { hearth_json::from_str(json).unwrap() };
    let add = call(
        r#"{"call":"op","store":"main","op":{"op":"add","name":"tea","content":"oolong","kind":"note","created_at":5}}"#,
    );
    let reply = hub.call(add).unwrap();
    assert_eq!(serde_json::to_value(&reply).unwrap(), json!({"reply": "applied", "id": 1, "name": "tea"}));
    let again = call(
        r#"{"call":"op","store":"main","op":{"op":"add","name":"tea","content":"x","kind":"note","created_at":5}}"#,
    );
    let err = hub.call(again).unwrap_err();
    assert!(matches!(&err, MemoryCallError::Rejected(m) if m.contains("already used")), "{err:?}");
    assert_eq!(err.status(), 422);
    assert!(hearth_json::from_str::<MemoryCall>("{nonsense").is_err());
    let search = hub.call(call(r#"{"call":"search","store":"main","query":"OOLONG","k":3}"#)).unwrap();
    // The reply reads back as the Session's side reads it.
    let wire = serde_json::to_string(&search).unwrap();
    let MemoryReply::Hits { hits } = hearth_json::from_str(&wire).unwrap() else { panic!("{wire}") };
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entry.created_at, 5);
    assert!(hits[0].score > 0.0);
    let empty = hub.call(call(r#"{"call":"stats","store":""}"#)).unwrap_err();
    assert_eq!(empty.status(), 422, "empty store name refused");
}

#[test]
fn archives_get_unique_names_and_are_searchable() {
    let m = InProcessMemory::default();
    let n1 = block_on(m.add_archive("main", "compaction 2026-05-01", "We planned the trip to Lisbon", 10)).unwrap();
    let n2 = block_on(m.add_archive("main", "compaction 2026-05-01", "Booked the Lisbon hotel", 11)).unwrap();
    assert_eq!(n1, "compaction 2026-05-01");
    assert_eq!(n2, "compaction 2026-05-01 (2)");
    // The same add again (a retry whose reply was lost) adds nothing.
    let again = block_on(m.add_archive("main", "compaction 2026-05-01", "Booked the Lisbon hotel", 11)).unwrap();
    assert_eq!(again, "compaction 2026-05-01 (2)");
    let r = block_on(m.call(&MemoryCall::Search {
        store: "main".into(),
        query: "lisbon".into(),
        k: 5,
        kind: Some(Kind::Archive),
        record: false,
    }))
    .unwrap();
    let MemoryReply::Hits { hits } = r else { panic!() };
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.entry.kind == Kind::Archive));
}

#[test]
fn maintenance_checkpoints_stores_with_a_log() {
    let sql = Rc::new(MemSql::default());
    let mut hub = MemoryHub::new(sql.clone());
    for i in 0..MAINTENANCE_CHECKPOINT_AFTER {
        hub.call(MemoryCall::Op { store: "main".into(), op: add(&format!("n{i}"), "x") }).unwrap();
    }
    hub.call(MemoryCall::Op { store: "dm:telegram:5".into(), op: add("a", "b") }).unwrap();
    assert_eq!(hub.maintenance().unwrap(), vec!["main".to_owned()]);
    assert_eq!(count(&*sql, "memory_log"), 1, "only the small store's row is left");
    assert!(count(&*sql, "memory_snapshot") >= 1);
}

fn ctx<'a>(agent: &'a AgentId, store: &str, scope: Scope, ws: &'a Workspace) -> MemoryToolContext<'a> {
    MemoryToolContext {
        agent,
        store: store.into(),
        scope,
        model: "m",
        workspace: ws,
        now_ms: 42,
        timezone: "UTC",
        records_use: true,
    }
}

fn run(m: &InProcessMemory, c: &MemoryToolContext<'_>, tool: &str, args: Value) -> (Value, bool) {
    let o = block_on(mtools::run(m, c, tool, &args)).expect("a memory tool");
    (hearth_json::from_str(&o.text).unwrap_or(Value::String(o.text.clone())), o.is_error)
}

#[test]
fn tools_store_find_and_edit_notes_in_the_sessions_store_only() {
    let m = InProcessMemory::default();
    let agent = AgentId::parse("main").unwrap();
    let ws = Workspace::default();
    let main = ctx(&agent, "main", Scope::Main, &ws);
    let group = ctx(&agent, "group:telegram:-1", Scope::Shared, &ws);

    let (v, e) =
        run(&m, &main, "memory_add", json!({"name": "olga-coffee", "content": "Olga takes her coffee with oat milk"}));
    assert!(!e, "{v}");
    assert_eq!(v["name"], "olga-coffee");
    let (v, e) = run(&m, &main, "memory_add", json!({"name": "olga-coffee", "content": "again"}));
    assert!(e && v.as_str().unwrap().contains("already used"), "{v}");
    let (v, e) = run(&m, &main, "memory_alias", json!({"name": "olga-coffee", "alias": "coffee"}));
    assert!(!e, "{v}");
    let (v, _) = run(&m, &main, "memory_search", json!({"query": "oat milk"}));
    assert_eq!(v["hits"][0]["name"], "olga-coffee");
    assert_eq!(v["hits"][0]["aliases"], json!(["coffee"]));
    assert_eq!(v["hits"][0]["created_at"], 42);
    let (v, e) = run(&m, &main, "memory_write", json!({"name": "coffee", "content": "Olga now drinks tea"}));
    assert!(!e, "{v}");
    let (v, _) = run(&m, &main, "memory_get", json!({"name": "coffee"}));
    assert_eq!(v["content"], "Olga now drinks tea");
    let (v, e) = run(&m, &main, "memory_rename", json!({"name": "coffee", "new_name": "olga-drinks"}));
    assert!(!e, "{v}");
    assert_eq!(v["name"], "olga-drinks");

    // The group's store is another store.
    let (v, _) = run(&m, &group, "memory_search", json!({"query": "olga tea"}));
    assert_eq!(v["hits"], json!([]));
    let (v, e) = run(&m, &group, "memory_get", json!({"name": "olga-drinks"}));
    assert!(e, "{v}");
    let (v, e) = run(&m, &group, "what_do_i_know", json!({}));
    assert!(e, "{v}");

    let (v, e) = run(&m, &main, "memory_remove", json!({"name": "olga-drinks"}));
    assert!(!e, "{v}");
    let (v, e) = run(&m, &main, "memory_remove", json!({"name": "olga-drinks"}));
    assert!(e && v.as_str().unwrap().contains("no entry"), "{v}");
    let (v, e) = run(&m, &main, "memory_add", json!({"name": "x"}));
    assert!(e && v.as_str().unwrap().contains("content"), "{v}");
    assert!(block_on(mtools::run(&m, &main, "read_file", &json!({}))).is_none());

    m.unavailable.set(true);
    let (v, e) = run(&m, &main, "memory_search", json!({"query": "x"}));
    assert!(e && v.as_str().unwrap().contains("unavailable"), "{v}");
}

#[test]
fn tool_list_is_sorted_and_depends_on_scope_only() {
    let main: Vec<_> = crate::session::toolbox::tool_names(Scope::Main);
    let shared: Vec<_> = crate::session::toolbox::tool_names(Scope::Shared);
    let mut sorted = main.clone();
    sorted.sort();
    assert_eq!(main, sorted);
    for t in [
        "memory_add",
        "memory_alias",
        "memory_get",
        "memory_remove",
        "memory_rename",
        "memory_search",
        "memory_write",
        "my_stats",
        "who_am_i",
    ] {
        assert!(main.contains(&t) && shared.contains(&t), "{t}");
    }
    assert!(main.contains(&"what_do_i_know") && !shared.contains(&"what_do_i_know"));
    assert_eq!(main, crate::session::toolbox::tool_names(Scope::Main));
}

#[test]
fn self_report_tools() {
    let m = InProcessMemory::default();
    let agent = AgentId::parse("main").unwrap();
    let mut ws = Workspace::default();
    ws.files.insert(
        WorkspaceFile::Identity,
        "- **Name:** Ember\n- **Creature:** _(pick something)_\n- **Emoji:** 🔥".into(),
    );
    ws.files.insert(WorkspaceFile::Soul, "S".repeat(5000).into());
    let mut memory_md = String::from("Intro line\n## People\n");
    for i in 0..15 {
        memory_md.push_str(&format!("- person {i}\n"));
    }
    memory_md.push_str("## Open questions\n- What carrier?\n");
    for s in 0..40 {
        memory_md.push_str(&format!("## Topic {s}\n- {}\n", "y".repeat(200)));
    }
    ws.files.insert(WorkspaceFile::Memory, memory_md.into());
    let main = ctx(&agent, "main", Scope::Main, &ws);

    let (v, _) = run(&m, &main, "who_am_i", json!({}));
    assert_eq!(v["agent_id"], "main");
    assert_eq!(v["identity"], json!({"name": "Ember", "emoji": "🔥"}));
    assert!(v["soul_excerpt"].as_str().unwrap().chars().count() <= 2048);

    let (v, _) = run(&m, &main, "what_do_i_know", json!({"filter": "people"}));
    assert_eq!(v["sections"].as_array().unwrap().len(), 1);
    assert_eq!(v["sections"][0]["bullets"].as_array().unwrap().len(), 10);
    assert_eq!(v["truncated"], true);
    let (v, _) = run(&m, &main, "what_do_i_know", json!({"filter": "open"}));
    assert_eq!(v["sections"], json!([{"heading": "Open questions", "bullets": ["What carrier?"]}]));
    let o = block_on(mtools::run(&m, &main, "what_do_i_know", &json!({}))).unwrap();
    assert!(o.text.len() <= 6144, "{}", o.text.len());
    let v: Value = hearth_json::from_str(&o.text).unwrap();
    assert_eq!(v["truncated"], true);

    run(&m, &main, "memory_add", json!({"name": "a", "content": "b"}));
    let (v, _) = run(&m, &main, "my_stats", json!({}));
    assert_eq!(v["memories_stored"], 1);
    assert_eq!(v["workspace_files_present"], json!(["IDENTITY.md", "MEMORY.md", "SOUL.md"]));
}

#[test]
fn recall_is_main_scope_only() {
    use crate::inbound::SessionKey;
    let m = InProcessMemory::default();
    block_on(m.call(&MemoryCall::Op { store: "main".into(), op: add("vault", "The vault code is 7781") })).unwrap();
    let main = SessionKey::parse("agent:main:main").unwrap();
    let group = SessionKey::parse("agent:main:telegram:group:-5").unwrap();
    let r = block_on(recall(&m, &main, "what is the vault code?", "UTC")).unwrap();
    assert!(r.starts_with("<system-reminder>") && r.contains("[vault] The vault code is 7781"), "{r}");
    let calls = m.calls.borrow().len();
    assert!(block_on(recall(&m, &group, "what is the vault code?", "UTC")).is_none());
    assert_eq!(m.calls.borrow().len(), calls, "a group session does not even ask");
    assert!(block_on(recall(&m, &main, "nothing matches", "UTC")).is_none());
}

/// A store where a few words are in most notes, as "the" and "what" are in real ones.
fn everyday_store() -> InProcessMemory {
    let m = InProcessMemory::default();
    let notes = [
        ("olga-coffee", "What Olga orders: the oat flat white, no sugar"),
        ("dentist", "The dentist is on Tuesday, what a pain"),
        ("wifi", "The wifi password is on the fridge"),
        ("car", "The car is due for new tyres before the winter"),
        ("plants", "Water the ferns every Sunday, what fun it is"),
        ("books", "The library books are due on the 14th"),
        ("gym", "The gym is closed early on holidays"),
        ("bank", "What the bank said: the card arrives next week"),
    ];
    for (name, content) in notes {
        block_on(m.call(&MemoryCall::Op { store: "main".into(), op: add(name, content) })).unwrap();
    }
    m
}

fn recalled(m: &InProcessMemory, text: &str) -> Vec<String> {
    let main = crate::inbound::SessionKey::parse("agent:main:main").unwrap();
    let Some(block) = block_on(recall(m, &main, text, "UTC")) else { return Vec::new() };
    block
        .lines()
        .filter_map(|l| l.strip_prefix("- ["))
        .filter_map(|l| l.split_once(']'))
        .map(|(n, _)| n.to_owned())
        .collect()
}

#[test]
fn recall_ignores_common_words() {
    let m = everyday_store();
    // "the", "what" and "is" are in most notes: a message made of them recalls nothing...
    assert!(recalled(&m, "what is the plan?").is_empty());
    // ...although a plain search ranks notes for them.
    let hits = block_on(m.call(&MemoryCall::Search {
        store: "main".into(),
        query: "what is the plan?".into(),
        k: 3,
        kind: None,
        record: false,
    }))
    .unwrap();
    assert!(matches!(hits, MemoryReply::Hits { hits } if hits.len() == 3));
    // A specific word is enough for a short question.
    assert_eq!(recalled(&m, "What does Olga drink?"), vec!["olga-coffee"]);
    assert_eq!(recalled(&m, "when is the dentist?"), vec!["dentist"]);
}

#[test]
fn recall_needs_a_fair_share_of_a_longer_message() {
    let m = everyday_store();
    // Five specific words, each in a different note: no note is about this message.
    assert!(recalled(&m, "On Tuesday: tyres, library, gym and the bank").is_empty());
    // Two of three specific words in one note: that note.
    assert_eq!(recalled(&m, "are the library books due?"), vec!["books"]);
    // The car note holds two of the message's five specific words: enough; the others hold one.
    assert_eq!(recalled(&m, "On Tuesday: tyres for the car, library, gym and the bank"), vec!["car"]);
}

#[test]
fn scheduled_turns_recall_nothing() {
    use crate::inbound::SessionKey;
    let m = everyday_store();
    let calls = m.calls.borrow().len();
    for key in ["agent:main:heartbeat", "agent:main:job:morning"] {
        let key = SessionKey::parse(key).unwrap();
        assert!(block_on(recall(&m, &key, "Olga's coffee order", "UTC")).is_none());
    }
    assert_eq!(m.calls.borrow().len(), calls, "scheduled sessions do not even ask");
}

#[test]
fn bm25_parameters_apply_to_loaded_and_later_stores() {
    let scores = |hub: &mut MemoryHub<MemSql>, store: &str| match hub
        .call(MemoryCall::Search { store: store.into(), query: "tea olga".into(), k: 10, kind: None, record: false })
        .unwrap()
    {
        MemoryReply::Hits { hits } => hits.into_iter().map(|h| (h.entry.name, h.score)).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let fill = |hub: &mut MemoryHub<MemSql>, store: &str| {
        let s = hub.store(store).unwrap();
        s.apply(add("tea", "Olga drinks oolong tea, green tea and more tea")).unwrap();
        s.apply(add("olga", "Olga")).unwrap();
        s.apply(add("long", "Olga once had tea at a very long and winding garden party in the hills")).unwrap();
    };
    let params = hearth_memory::Bm25Params { k1: 0.9, b: 0.4 };
    let mut configured =
        MemoryHub::with_config(Rc::new(MemSql::default()), MemoryConfig { bm25: params, ..MemoryConfig::default() });
    fill(&mut configured, "main");
    let expected = scores(&mut configured, "main");

    let mut hub = hub_on(&Rc::new(MemSql::default()));
    fill(&mut hub, "main");
    let default_scores = scores(&mut hub, "main");
    assert_ne!(default_scores, expected);
    hub.set_bm25(params).unwrap();
    assert_eq!(scores(&mut hub, "main"), expected, "a loaded store");
    fill(&mut hub, "group:telegram:-1");
    assert_eq!(scores(&mut hub, "group:telegram:-1"), expected, "a store opened later");
    assert!(hub.set_bm25(hearth_memory::Bm25Params { k1: -1.0, b: 0.5 }).is_err());
    assert_eq!(scores(&mut hub, "main"), expected, "invalid parameters change nothing");
}

fn know(text: &str, filter: Option<&str>) -> (Value, usize) {
    let v = super::self_report::know_sections(text, filter);
    let bytes = serde_json::to_string(&v).unwrap().len();
    (v, bytes)
}

fn headings(v: &Value) -> Vec<String> {
    v["sections"].as_array().unwrap().iter().map(|s| s["heading"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn what_do_i_know_keeps_later_sections_when_one_is_huge() {
    let mut md = String::from("## Huge\n");
    for i in 0..10 {
        md.push_str(&format!("- {i} {}\n", "\"quoted\" and long ".repeat(150)));
    }
    md.push_str("## People\n- Luis prefers Spanish\n## Open questions\n- What carrier does Luis use?\n");
    let (v, bytes) = know(&md, None);
    assert!(bytes <= super::self_report::KNOW_MAX_BYTES, "{bytes}");
    assert_eq!(headings(&v), vec!["Huge", "People", "Open questions"]);
    assert_eq!(v["sections"][1]["bullets"], json!(["Luis prefers Spanish"]));
    assert_eq!(v["sections"][2]["bullets"], json!(["What carrier does Luis use?"]));
    assert_eq!(v["truncated"], true);
    let huge = v["sections"][0]["bullets"].as_array().unwrap();
    assert!(
        !huge.is_empty() && huge.iter().all(|b| b.as_str().unwrap().ends_with('…')),
        "long bullets are cut, not dropped"
    );
}

#[test]
fn what_do_i_know_shows_plain_lines_and_explains_a_filter_miss() {
    let (v, _) = know("Luis prefers Spanish.\nAna uses a Samsung.\n1. numbered item\n", None);
    assert_eq!(
        v["sections"],
        json!([{"heading": "", "bullets": ["Luis prefers Spanish.", "Ana uses a Samsung.", "numbered item"]}])
    );
    assert_eq!(v["truncated"], false);
    let (v, _) = know("## People\n- Luis\n## Places\n- Bogotá\n", Some("pets"));
    assert_eq!(v["sections"], json!([]));
    assert!(v["note"].as_str().unwrap().contains("People | Places"), "{v}");
}

/// Whatever MEMORY.md holds: within 6,144 bytes, at most 10 bullets per section,
/// never empty when there is content, and complete when it says it is not truncated.
#[test]
fn what_do_i_know_caps_hold_for_any_memory_md() {
    let pieces = [
        "Luis",
        "\"q\"",
        "back\\slash",
        "tab\there",
        "ctl\u{1}x",
        "東京",
        "🐙",
        "word",
        "a much longer phrase about coffee",
    ];
    let mut state = 7u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..300 {
        let mut md = String::new();
        let mut items = 0;
        for s in 0..next(12) {
            md.push_str(&format!("## Section {s} {}\n", pieces[next(pieces.len())]));
            for _ in 0..next(16) {
                let words: Vec<&str> = (0..1 + next(80)).map(|_| pieces[next(pieces.len())]).collect();
                md.push_str(&format!("- {}\n", words.join(" ")));
                items += 1;
            }
        }
        let (v, bytes) = know(&md, None);
        assert!(bytes <= super::self_report::KNOW_MAX_BYTES, "{bytes} bytes");
        let sections = v["sections"].as_array().unwrap();
        assert!(sections
            .iter()
            .all(|s| s["bullets"].as_array().unwrap().len() <= super::self_report::KNOW_MAX_BULLETS));
        if !md.is_empty() {
            assert!(!sections.is_empty());
        }
        if v["truncated"] == false {
            let shown: usize = sections.iter().map(|s| s["bullets"].as_array().unwrap().len()).sum();
            assert_eq!(shown, items, "nothing left out");
        }
    }
}

#[test]
fn my_stats_reports_seed_fields_honestly() {
    let day = 86_400_000;
    let sql = Rc::new(MemSql::default());
    let now = std::rc::Rc::new(Cell::new(20 * day));
    struct Clock(std::rc::Rc<Cell<i64>>);
    impl HubHost for Clock {
        fn now_ms(&self) -> i64 {
            self.0.get()
        }
        fn sessions_total(&self) -> Option<u64> {
            Some(4)
        }
    }
    let m = InProcessMemory {
        hub: std::cell::RefCell::new(MemoryHub::new(sql.clone()).with_host(Box::new(Clock(now.clone())))),
        sql,
        ..Default::default()
    };
    block_on(m.call(&MemoryCall::Op { store: "main".into(), op: add("vault", "The vault code is 7781") })).unwrap();
    let main = crate::inbound::SessionKey::parse("agent:main:main").unwrap();
    // Two recalls with a hit ten days ago, three today, one that found nothing.
    now.set(10 * day);
    for _ in 0..2 {
        assert!(block_on(recall(&m, &main, "vault code", "UTC")).is_some());
    }
    now.set(20 * day + 5);
    for _ in 0..3 {
        assert!(block_on(recall(&m, &main, "vault code", "UTC")).is_some());
    }
    assert!(block_on(recall(&m, &main, "nothing here", "UTC")).is_none());

    let agent = AgentId::parse("main").unwrap();
    let ws = Workspace::default();
    let (v, _) = run(&m, &ctx(&agent, "main", Scope::Main, &ws), "my_stats", json!({}));
    assert_eq!(v["sessions_total"], 4);
    assert_eq!(v["memories_stored"], 1);
    assert_eq!(v["recall_events_7d"], 3);
    for absent in ["memories_promoted", "last_dream_ts", "top_concept_tags_7d"] {
        assert!(v.get(absent).is_some_and(Value::is_null), "{absent}: {v}");
    }
    // Without a host (no clock), recalls are not counted rather than reported as 0.
    let plain = InProcessMemory::default();
    let (v, _) = run(&plain, &ctx(&agent, "main", Scope::Main, &ws), "my_stats", json!({}));
    assert!(v["recall_events_7d"].is_null() && v["sessions_total"].is_null(), "{v}");
}

#[test]
fn the_least_recently_used_store_is_checkpointed_and_unloaded() {
    let sql = Rc::new(MemSql::default());
    let mut hub = hub_on(&sql);
    let name = |i: usize| format!("group:telegram:-{i}");
    for i in 0..MAX_LOADED_STORES {
        hub.call(MemoryCall::Op { store: name(i), op: add("note", &format!("picnic number {i}")) }).unwrap();
    }
    // Store 0 is used again, so store 1 is now the least recently used.
    assert_eq!(names(&mut hub, &name(0), "picnic"), vec!["note"]);
    assert_eq!(hub.loaded().len(), MAX_LOADED_STORES);
    hub.call(MemoryCall::Op { store: "main".into(), op: add("vault", "The vault code is 7781") }).unwrap();

    let loaded = hub.loaded();
    assert_eq!(loaded.len(), MAX_LOADED_STORES, "{loaded:?}");
    assert!(!loaded.contains(&name(1)) && loaded.contains(&name(0)) && loaded.contains(&"main".to_owned()));
    let rows = |table: &str| {
        sql.exec(&format!("SELECT COUNT(*) FROM {table} WHERE store = ?"), &[name(1).into()]).unwrap()[0][0]
            .as_i64()
            .unwrap()
    };
    assert!(rows("memory_snapshot") > 0, "checkpointed before unloading");
    assert_eq!(rows("memory_log"), 0);
    // It loads again on its next use, with its note.
    assert_eq!(names(&mut hub, &name(1), "picnic"), vec!["note"]);
    assert_eq!(hub.loaded().len(), MAX_LOADED_STORES);
}

/// A hub with a settable clock, as the Agent object gives it.
fn clocked_memory(now: &std::rc::Rc<Cell<i64>>) -> InProcessMemory {
    struct Clock(std::rc::Rc<Cell<i64>>);
    impl HubHost for Clock {
        fn now_ms(&self) -> i64 {
            self.0.get()
        }
        fn sessions_total(&self) -> Option<u64> {
            None
        }
    }
    let sql = Rc::new(MemSql::default());
    InProcessMemory {
        hub: std::cell::RefCell::new(MemoryHub::new(sql.clone()).with_host(Box::new(Clock(now.clone())))),
        sql,
        ..Default::default()
    }
}

fn evidence_of(m: &InProcessMemory, store: &str) -> Vec<EvidenceView> {
    match block_on(m.call(&MemoryCall::Evidence { store: store.into(), limit: 10 })).unwrap() {
        MemoryReply::Evidence { entries } => entries,
        other => panic!("{other:?}"),
    }
}

#[test]
fn searches_reads_and_recalls_are_evidence_per_store() {
    let day = 86_400_000;
    let now = std::rc::Rc::new(Cell::new(100 * day));
    let m = clocked_memory(&now);
    for store in ["main", "group:telegram:-100"] {
        block_on(m.call(&MemoryCall::Op { store: store.into(), op: add("tz", "Olga's time zone is America/Bogota") }))
            .unwrap();
        block_on(m.call(&MemoryCall::Op { store: store.into(), op: add("cat", "The cat is called Miso") })).unwrap();
    }
    let agent = AgentId::parse("main").unwrap();
    let ws = Workspace::default();
    let main = ctx(&agent, "main", Scope::Main, &ws);
    // Day 100: two searches that are one question, and a read by name.
    run(&m, &main, "memory_search", json!({"query": "time zone Olga"}));
    run(&m, &main, "memory_search", json!({"query": "Olga?? ZONE, time"}));
    run(&m, &main, "memory_get", json!({"name": "tz"}));
    // Day 101: another question, and a recall into a turn.
    now.set(101 * day);
    run(&m, &main, "memory_search", json!({"query": "Bogota"}));
    let key = crate::inbound::SessionKey::parse("agent:main:main").unwrap();
    assert!(block_on(recall(&m, &key, "what time is it in bogota?", "UTC")).is_some());
    // The owner's searches (admin API, MCP) are not the agent's use.
    block_on(m.call(&MemoryCall::Search {
        store: "main".into(),
        query: "bogota".into(),
        k: 5,
        kind: None,
        record: false,
    }))
    .unwrap();

    let ev = evidence_of(&m, "main");
    assert_eq!(ev.len(), 1, "only the time zone note was used: {ev:?}");
    let tz = &ev[0];
    assert_eq!(tz.name.as_deref(), Some("tz"));
    assert_eq!((tz.hits, tz.distinct_queries, tz.distinct_days), (5, 3, 2), "{tz:?}");
    let score = tz.last_score.unwrap();
    assert!(score > 0.0 && score < 1.0, "a share of what the question could score: {score}");
    assert_eq!(tz.last_at, 101 * day);

    // The group's store has its own, untouched evidence; its use counts there only.
    assert!(evidence_of(&m, "group:telegram:-100").is_empty());
    let group = ctx(&agent, "group:telegram:-100", Scope::Shared, &ws);
    run(&m, &group, "memory_search", json!({"query": "cat"}));
    let g = evidence_of(&m, "group:telegram:-100");
    assert_eq!((g.len(), g[0].name.as_deref(), g[0].hits), (1, Some("cat"), 1));
    assert_eq!(evidence_of(&m, "main")[0].hits, 5, "main is unchanged");

    // Evidence survives the object (a cold hub on the same database), and a
    // removed entry's evidence goes with it.
    let sql = m.sql.clone();
    let cold = InProcessMemory {
        hub: std::cell::RefCell::new(MemoryHub::new(sql.clone()).with_host(Box::new(ClockOnly(now.clone())))),
        sql,
        ..Default::default()
    };
    run(&cold, &main, "memory_get", json!({"name": "tz"}));
    assert_eq!(evidence_of(&cold, "main")[0].hits, 6, "read from SQLite, then counted");
    run(&cold, &main, "memory_remove", json!({"name": "tz"}));
    assert!(evidence_of(&cold, "main").is_empty());
}

#[test]
fn a_heartbeats_or_a_jobs_memory_use_is_no_evidence() {
    use crate::inbound::SessionKey;
    let now = std::rc::Rc::new(Cell::new(100 * 86_400_000));
    let m = clocked_memory(&now);
    block_on(m.call(&MemoryCall::Op { store: "main".into(), op: add("tz", "Olga's time zone is America/Bogota") }))
        .unwrap();
    let agent = AgentId::parse("main").unwrap();
    let ws = Workspace::default();
    for key in ["agent:main:heartbeat", "agent:main:job:daily-digest"] {
        let key = SessionKey::parse(key).unwrap();
        let c = MemoryToolContext {
            records_use: MemoryToolContext::records_use_of(&key),
            ..ctx(&agent, &crate::protocol::memory::store_for(&key), key.scope(), &ws)
        };
        let (found, _) = run(&m, &c, "memory_search", json!({"query": "Olga time zone"}));
        run(&m, &c, "memory_get", json!({"name": "tz"}));
        assert_eq!(evidence_of(&m, &c.store).len(), 0, "{key:?} found {found} and counted nothing");
    }
    // The owner's conversation counts.
    let key = SessionKey::parse("agent:main:main").unwrap();
    let c = MemoryToolContext {
        records_use: MemoryToolContext::records_use_of(&key),
        ..ctx(&agent, "main", Scope::Main, &ws)
    };
    run(&m, &c, "memory_search", json!({"query": "Olga time zone"}));
    assert_eq!(evidence_of(&m, "main")[0].hits, 1);
}

struct ClockOnly(std::rc::Rc<Cell<i64>>);
impl HubHost for ClockOnly {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
    fn sessions_total(&self) -> Option<u64> {
        None
    }
}

#[test]
fn an_agent_that_never_used_its_memory_has_no_evidence_and_no_error() {
    // The nightly sweep and the admin view read evidence before anything
    // opened the memory (and made its tables): nothing to read, no error.
    let sql = crate::testing::MemSql::default();
    let gates = crate::settings::dreaming::DEFAULT_GATES;
    assert!(super::evidence::passing(&sql, "main", &gates).unwrap().is_empty());
    assert!(super::evidence::top(&sql, "main", 10).unwrap().is_empty());
}

/// A memory call's `op` reads as hearth-memory's own (derived) reader reads
/// an `Op`: the same value, the same refusal.
#[test]
fn op_in_a_call_reads_as_op_does() {
    for op in [
        r#"{"op": "add", "name": "a", "content": "b", "kind": "note", "created_at": 5}"#,
        r#"{"name": "a", "op": "rename", "new_name": "b"}"#,
        r#"{"op": "remove", "name": "a", "extra": [1]}"#,
        r#"{"op": "write", "name": "a"}"#,
        r#"{"op": "drop", "name": "a"}"#,
        r#"{"name": "a"}"#,
        r#"{}"#,
        r#""add""#,
    ] {
        let alone = hearth_json::from_str::<Op>(op).map_err(|e| hearth_json::unplaced(&e));
        let call = format!(r#"{{"call": "op", "store": "main", "op": {op}}}"#);
        let within = hearth_json::from_str::<MemoryCall>(&call).map_err(|e| hearth_json::unplaced(&e));
        let within = within.map(|c| match c {
            MemoryCall::Op { op, .. } => op,
            other => panic!("{other:?}"),
        });
        assert_eq!(within, alone, "{op}");
    }
    // The one difference, as for every enum `read_tagged!` reads: a tag that
    // is not a string is refused as "expected a string", not "expected
    // variant identifier".
    let call = r#"{"call": "op", "store": "main", "op": {"op": 1}}"#;
    let refused = hearth_json::from_str::<MemoryCall>(call).unwrap_err();
    assert_eq!(hearth_json::unplaced(&refused), "invalid type: integer `1`, expected a string");
}
