//! Every operation and every error of the memory store, and its persistence.

mod common;

use hearth_memory::{
    BackendError, Bm25Params, InMemoryBackend, Kind, Limits, MemoryBackend, MemoryConfig, MemoryError, MemoryStore, Op,
    Tokenizer,
};

fn config() -> MemoryConfig {
    MemoryConfig::default()
}

fn store() -> MemoryStore<InMemoryBackend> {
    MemoryStore::open(InMemoryBackend::new(), config()).unwrap()
}

fn add(name: &str, content: &str) -> Op {
    Op::Add { name: name.into(), content: content.into(), kind: Kind::Note, created_at: 1_700_000_000_000 }
}

fn names(hits: &[hearth_memory::SearchHit<'_>]) -> Vec<String> {
    hits.iter().map(|h| h.entry.name.clone()).collect()
}

fn reopen(store: MemoryStore<InMemoryBackend>) -> MemoryStore<InMemoryBackend> {
    let config = *store.config();
    MemoryStore::open(store.into_backend(), config).unwrap()
}

/// Everything observable: entries and a few searches with scores.
fn observe(store: &MemoryStore<InMemoryBackend>) -> (Vec<hearth_memory::Entry>, Vec<Vec<(u64, f32)>>) {
    let entries = store.entries().cloned().collect();
    let searches = ["coffee", "luis spanish", "müller", "東京", "the"]
        .iter()
        .map(|q| store.search(q, 100).iter().map(|h| (h.entry.id, h.score)).collect())
        .collect();
    (entries, searches)
}

#[test]
fn add_assigns_monotonic_ids_and_resolves_by_name() {
    let mut s = store();
    let a = s.apply(add("coffee", "Luis drinks espresso")).unwrap();
    let b = s.apply(add("tea", "Ana prefers green tea")).unwrap();
    assert_eq!((a, b), (1, 2));
    let entry = s.get("coffee").unwrap();
    assert_eq!(entry.content, "Luis drinks espresso");
    assert_eq!(entry.kind, Kind::Note);
    assert_eq!(entry.created_at, 1_700_000_000_000);
    assert_eq!(s.get("  coffee ").unwrap().id, 1, "names are trimmed");
    assert_eq!(s.len(), 2);
}

#[test]
fn add_errors() {
    let mut s = store();
    s.apply(add("coffee", "x")).unwrap();
    assert!(matches!(s.apply(add("coffee", "y")), Err(MemoryError::DuplicateName { entry: 1, .. })));
    assert!(matches!(s.apply(add("   ", "y")), Err(MemoryError::EmptyName)));
    assert!(matches!(s.apply(add("", "y")), Err(MemoryError::EmptyName)));
    assert!(matches!(s.apply(add("a\nb", "y")), Err(MemoryError::InvalidName)));
    assert!(matches!(s.apply(add(&"n".repeat(257), "y")), Err(MemoryError::NameTooLong { len: 257, max: 256 })));
    let big = "x".repeat(256 * 1024 + 1);
    assert!(matches!(s.apply(add("big", &big)), Err(MemoryError::ContentTooLarge { .. })));
    assert_eq!(s.len(), 1);
    assert_eq!(s.backend().commits, 1, "failed operations write nothing");
}

#[test]
fn ids_are_never_reused() {
    let mut s = store();
    s.apply(add("a", "x")).unwrap();
    s.apply(Op::Remove { name: "a".into() }).unwrap();
    assert_eq!(s.apply(add("a", "x")).unwrap(), 2);
    let mut s = reopen(s);
    s.apply(Op::Remove { name: "a".into() }).unwrap();
    let mut s = reopen(s);
    assert_eq!(s.apply(add("b", "x")).unwrap(), 3);
}

#[test]
fn rename_changes_canonical_name_and_tokens() {
    let mut s = store();
    s.apply(add("coffee", "espresso")).unwrap();
    s.apply(add("tea", "green")).unwrap();
    s.apply(Op::Rename { name: "coffee".into(), new_name: "drinks luis".into() }).unwrap();
    assert!(s.get("coffee").is_none(), "the old name is released");
    assert_eq!(s.get("drinks luis").unwrap().id, 1);
    assert_eq!(names(&s.search("luis", 10)), vec!["drinks luis"], "the name's tokens are searchable");
    assert!(s.search("coffee", 10).is_empty());
    assert!(matches!(
        s.apply(Op::Rename { name: "tea".into(), new_name: "drinks luis".into() }),
        Err(MemoryError::DuplicateName { entry: 1, .. })
    ));
    assert!(matches!(
        s.apply(Op::Rename { name: "nope".into(), new_name: "x".into() }),
        Err(MemoryError::UnknownName(_))
    ));
    assert!(matches!(s.apply(Op::Rename { name: "tea".into(), new_name: " ".into() }), Err(MemoryError::EmptyName)));
    // Renaming to the current name is a no-op, to one of its own aliases a promotion.
    let commits = s.backend().commits;
    s.apply(Op::Rename { name: "tea".into(), new_name: "tea".into() }).unwrap();
    assert_eq!(s.backend().commits, commits);
    s.apply(Op::Alias { name: "tea".into(), alias: "green tea".into() }).unwrap();
    s.apply(Op::Rename { name: "tea".into(), new_name: "green tea".into() }).unwrap();
    let tea = s.get("green tea").unwrap();
    assert_eq!((tea.name.as_str(), tea.aliases.len()), ("green tea", 0));
}

#[test]
fn alias_resolves_but_adds_no_tokens() {
    let mut s = store();
    s.apply(add("coffee", "espresso")).unwrap();
    s.apply(add("tea", "green")).unwrap();
    s.apply(Op::Alias { name: "coffee".into(), alias: "café".into() }).unwrap();
    assert_eq!(s.get("café").unwrap().name, "coffee");
    assert!(s.search("café", 10).is_empty(), "aliases are resolution, not search");
    // Operations accept aliases.
    s.apply(Op::Write { name: "café".into(), content: "double espresso".into() }).unwrap();
    assert_eq!(s.get("coffee").unwrap().content, "double espresso");
    // Binding again to the same entry is a no-op; to another entry an error.
    s.apply(Op::Alias { name: "coffee".into(), alias: "café".into() }).unwrap();
    assert_eq!(s.get("coffee").unwrap().aliases, vec!["café"]);
    assert!(matches!(
        s.apply(Op::Alias { name: "tea".into(), alias: "café".into() }),
        Err(MemoryError::AliasAlreadyBound { entry: 1, .. })
    ));
    assert!(matches!(
        s.apply(Op::Alias { name: "tea".into(), alias: "coffee".into() }),
        Err(MemoryError::AliasAlreadyBound { entry: 1, .. })
    ));
    assert!(matches!(s.apply(Op::Alias { name: "nope".into(), alias: "x".into() }), Err(MemoryError::UnknownName(_))));
    assert!(matches!(s.apply(Op::Alias { name: "tea".into(), alias: "".into() }), Err(MemoryError::EmptyName)));
}

#[test]
fn too_many_aliases() {
    let limits = Limits { max_aliases: 2, ..Limits::default() };
    let mut s = MemoryStore::open(InMemoryBackend::new(), MemoryConfig { limits, ..config() }).unwrap();
    s.apply(add("a", "x")).unwrap();
    s.apply(Op::Alias { name: "a".into(), alias: "b".into() }).unwrap();
    s.apply(Op::Alias { name: "a".into(), alias: "c".into() }).unwrap();
    assert!(matches!(
        s.apply(Op::Alias { name: "a".into(), alias: "d".into() }),
        Err(MemoryError::TooManyAliases { max: 2 })
    ));
}

#[test]
fn write_replaces_content_and_reindexes() {
    let mut s = store();
    s.apply(add("coffee", "espresso every morning")).unwrap();
    s.apply(Op::Write { name: "coffee".into(), content: "now drinks tea".into() }).unwrap();
    assert!(s.search("espresso", 10).is_empty());
    assert_eq!(names(&s.search("tea", 10)), vec!["coffee"]);
    assert!(matches!(
        s.apply(Op::Write { name: "nope".into(), content: "x".into() }),
        Err(MemoryError::UnknownName(_))
    ));
    let big = "x".repeat(256 * 1024 + 1);
    assert!(matches!(
        s.apply(Op::Write { name: "coffee".into(), content: big }),
        Err(MemoryError::ContentTooLarge { .. })
    ));
    assert_eq!(s.get("coffee").unwrap().content, "now drinks tea");
}

#[test]
fn remove_deletes_entry_and_aliases() {
    let mut s = store();
    s.apply(add("coffee", "espresso")).unwrap();
    s.apply(Op::Alias { name: "coffee".into(), alias: "café".into() }).unwrap();
    s.apply(Op::Remove { name: "café".into() }).unwrap();
    assert!(s.get("coffee").is_none() && s.get("café").is_none());
    assert!(s.search("espresso", 10).is_empty());
    assert!(matches!(s.apply(Op::Remove { name: "coffee".into() }), Err(MemoryError::UnknownName(_))));
    // The names are free again.
    s.apply(add("café", "latte")).unwrap();
}

#[test]
fn newest_pages_through_entries_newest_first_across_a_checkpoint() {
    let page = |s: &MemoryStore<InMemoryBackend>, offset, limit| -> Vec<String> {
        s.newest(offset, limit).iter().map(|e| e.name.clone()).collect()
    };
    let mut s = store();
    for i in 0..5 {
        s.apply(add(&format!("n{i}"), "frozen")).unwrap();
    }
    s.checkpoint().unwrap();
    let mut s = reopen(s);
    // Some entries in the checkpoint, some added since, one removed, one edited.
    s.apply(add("n5", "fresh")).unwrap();
    s.apply(add("n6", "fresh")).unwrap();
    s.apply(Op::Remove { name: "n2".into() }).unwrap();
    s.apply(Op::Write { name: "n1".into(), content: "edited".into() }).unwrap();
    assert_eq!(page(&s, 0, 3), ["n6", "n5", "n4"]);
    assert_eq!(page(&s, 3, 3), ["n3", "n1", "n0"]);
    assert_eq!(page(&s, 5, 3), ["n0"]);
    assert!(page(&s, 6, 3).is_empty() && page(&s, 100, 3).is_empty() && page(&s, 0, 0).is_empty());
    assert_eq!(page(&s, 0, 100).len(), s.len());
    assert_eq!(s.newest(4, 1)[0].content, "edited");
}

#[test]
fn archives_and_notes_share_the_index() {
    let mut s = store();
    s.apply(add("coffee", "Luis drinks espresso")).unwrap();
    s.apply(Op::Add {
        name: "archive-2026-01-01".into(),
        content: "Summary: Luis asked about espresso machines".into(),
        kind: Kind::Archive,
        created_at: 5,
    })
    .unwrap();
    assert_eq!(s.search("espresso", 10).len(), 2);
    let notes = s.search_where("espresso", 10, |e| e.kind == Kind::Note);
    assert_eq!(names(&notes), vec!["coffee"]);
    let stats = s.stats();
    assert_eq!((stats.notes, stats.archives), (1, 1));
}

#[test]
fn search_ranks_ties_by_id_and_respects_k() {
    let mut s = store();
    for i in 0..5 {
        s.apply(add(&format!("n{i}"), "same words here")).unwrap();
    }
    let hits = s.search("words", 3);
    assert_eq!(hits.iter().map(|h| h.entry.id).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(hits.windows(2).all(|w| w[0].score == w[1].score));
    assert!(s.search("words", 0).is_empty());
    assert!(s.search("", 10).is_empty());
    assert!(s.search("🐙 !!", 10).is_empty());
}

#[test]
fn multilingual_notes_are_findable() {
    let mut s = store();
    s.apply(add("vermieter", "Herr Müller wohnt in der Hauptstraße 5")).unwrap();
    s.apply(add("música", "La canción favorita de Luis es Despacito")).unwrap();
    s.apply(add("旅行", "来月東京に行きます")).unwrap();
    s.apply(add("greek", "Η ΟΔΟΣ")).unwrap();
    assert_eq!(names(&s.search("MÜLLER", 10)), vec!["vermieter"]);
    assert_eq!(names(&s.search("cancion canción", 10)), vec!["música"]);
    assert_eq!(names(&s.search("東京", 10)), vec!["旅行"]);
    assert_eq!(names(&s.search("οδος", 10)), vec!["greek"], "final sigma lowercases the same");
}

#[test]
fn explain_matches_the_score() {
    let mut s = store();
    s.apply(add("coffee", "Luis drinks espresso, espresso and more espresso")).unwrap();
    s.apply(add("tea", "Ana drinks tea")).unwrap();
    let hits = s.search("drinks espresso", 10);
    for hit in &hits {
        let explanation = s.explain("drinks espresso", &hit.entry.name).unwrap();
        assert_eq!(explanation.value, hit.score);
    }
    let text = s.explain("espresso", "coffee").unwrap().to_string();
    assert!(text.contains("freq, occurrences of term within document"), "{text}");
    assert!(matches!(s.explain("x", "nope"), Err(MemoryError::UnknownName(_))));
}

#[test]
fn config_is_validated() {
    let bad = MemoryConfig { bm25: Bm25Params { k1: -1.0, b: 0.75 }, ..config() };
    assert!(matches!(MemoryStore::open(InMemoryBackend::new(), bad), Err(MemoryError::InvalidConfig(_))));
    let bad = MemoryConfig { bm25: Bm25Params { k1: 1.2, b: f32::NAN }, ..config() };
    assert!(matches!(MemoryStore::open(InMemoryBackend::new(), bad), Err(MemoryError::InvalidConfig(_))));
    let bad = MemoryConfig { limits: Limits { max_content_bytes: 3 << 20, ..Limits::default() }, ..config() };
    assert!(matches!(MemoryStore::open(InMemoryBackend::new(), bad), Err(MemoryError::InvalidConfig(_))));
}

fn populate(s: &mut MemoryStore<InMemoryBackend>) {
    s.apply(add("coffee", "Luis drinks espresso")).unwrap();
    s.apply(add("language", "Luis prefers Spanish but is fine switching to English")).unwrap();
    s.apply(add("landlord", "Herr Müller")).unwrap();
    s.apply(add("trip", "東京 next month")).unwrap();
    s.apply(Op::Alias { name: "coffee".into(), alias: "café".into() }).unwrap();
}

#[test]
fn survives_restart_from_the_log_alone() {
    let mut s = MemoryStore::open(InMemoryBackend::new(), MemoryConfig { checkpoint_after: None, ..config() }).unwrap();
    populate(&mut s);
    s.apply(Op::Remove { name: "landlord".into() }).unwrap();
    assert_eq!(s.backend().snapshot_chunks(), 0);
    let before = observe(&s);
    let s = reopen(s);
    assert_eq!(observe(&s), before);
    assert_eq!(s.get("café").unwrap().name, "coffee");
}

#[test]
fn survives_restart_from_checkpoint_plus_log() {
    let mut s = MemoryStore::open(InMemoryBackend::new(), MemoryConfig { checkpoint_after: None, ..config() }).unwrap();
    populate(&mut s);
    s.checkpoint().unwrap();
    assert_eq!(s.backend().log_rows(), 0);
    assert!(s.backend().snapshot_chunks() >= 1);
    // Changes after the checkpoint of every kind.
    s.apply(Op::Write { name: "coffee".into(), content: "Luis now drinks tea".into() }).unwrap();
    s.apply(Op::Rename { name: "language".into(), new_name: "languages luis".into() }).unwrap();
    s.apply(Op::Alias { name: "trip".into(), alias: "viaje".into() }).unwrap();
    s.apply(Op::Remove { name: "landlord".into() }).unwrap();
    s.apply(add("new", "coffee shop near Müller")).unwrap();
    let before = observe(&s);
    let mut s = reopen(s);
    assert_eq!(observe(&s), before);
    assert_eq!(s.stats().pending_log_rows, 5);
    s.checkpoint().unwrap();
    let s = reopen(s);
    assert_eq!(observe(&s), before);
    assert_eq!(s.stats().pending_log_rows, 0);
}

#[test]
fn automatic_checkpoints_bound_the_log() {
    let mut s =
        MemoryStore::open(InMemoryBackend::new(), MemoryConfig { checkpoint_after: Some(3), ..config() }).unwrap();
    for i in 0..10 {
        s.apply(add(&format!("n{i}"), &format!("note number {i}"))).unwrap();
    }
    assert!(s.backend().log_rows() < 3);
    let before = observe(&s);
    assert_eq!(observe(&reopen(s)), before);
}

#[test]
fn a_failed_write_leaves_everything_as_it_was() {
    let mut s = MemoryStore::open(InMemoryBackend::new(), MemoryConfig { checkpoint_after: None, ..config() }).unwrap();
    populate(&mut s);
    let before = observe(&s);
    let stored_before = s.backend_mut().load().unwrap();
    let ops = [
        add("another", "espresso"),
        Op::Rename { name: "coffee".into(), new_name: "drinks".into() },
        Op::Alias { name: "coffee".into(), alias: "kaffee".into() },
        Op::Write { name: "coffee".into(), content: "tea".into() },
        Op::Remove { name: "coffee".into() },
    ];
    for op in ops {
        s.backend_mut().fail_next_commits(1);
        assert!(matches!(s.apply(op.clone()), Err(MemoryError::Backend(BackendError(_)))), "{op:?}");
        assert_eq!(observe(&s), before, "RAM unchanged after a failed {op:?}");
        assert_eq!(s.backend_mut().load().unwrap(), stored_before, "storage unchanged");
        assert_eq!(s.get("coffee").unwrap().aliases, vec!["café"]);
    }
    // A failed checkpoint changes nothing either, and the store keeps working.
    s.backend_mut().fail_next_commits(1);
    assert!(s.checkpoint().is_err());
    assert_eq!(observe(&s), before);
    s.apply(Op::Remove { name: "coffee".into() }).unwrap();
    let after = observe(&s);
    assert_eq!(observe(&reopen(s)), after);
}

#[test]
fn a_failed_automatic_checkpoint_keeps_the_operation() {
    let mut s =
        MemoryStore::open(InMemoryBackend::new(), MemoryConfig { checkpoint_after: Some(2), ..config() }).unwrap();
    s.backend_mut().fail_checkpoints = true;
    for i in 0..5 {
        s.apply(add(&format!("n{i}"), "alpha")).unwrap();
    }
    assert_eq!(s.backend().snapshot_chunks(), 0);
    assert_eq!(s.backend().log_rows(), 5);
    s.backend_mut().fail_checkpoints = false;
    s.apply(add("n5", "alpha")).unwrap();
    assert_eq!((s.backend().snapshot_chunks(), s.backend().log_rows()), (1, 0), "retried on the next operation");
    let s = reopen(s);
    assert_eq!(s.search("alpha", 10).len(), 6);
}

#[test]
fn changing_the_tokenizer_reindexes_once() {
    let mut s = store();
    populate(&mut s);
    s.checkpoint().unwrap();
    let backend = s.into_backend();
    let s = MemoryStore::open(backend, MemoryConfig { tokenizer: Tokenizer::Reference, ..config() }).unwrap();
    // "is" and "to" are stop words for the reference tokenizer.
    assert!(s.search("is to", 10).is_empty());
    assert_eq!(names(&s.search("spanish", 10)), vec!["language"]);
}

#[test]
fn corrupt_storage_is_an_error_not_a_panic() {
    let mut s = store();
    populate(&mut s);
    s.apply(add("extra", "text")).unwrap();
    s.checkpoint().unwrap();
    s.apply(add("more", "text")).unwrap();
    let good = s.into_backend().load().unwrap();

    struct Fixed(hearth_memory::Persisted);
    impl MemoryBackend for Fixed {
        fn load(&mut self) -> Result<hearth_memory::Persisted, BackendError> {
            Ok(self.0.clone())
        }
        fn commit(&mut self, _: &hearth_memory::ChangeSet) -> Result<(), BackendError> {
            Ok(())
        }
    }
    let mut rng = common::Rng::new(7);
    for round in 0..2000 {
        let mut bad = good.clone();
        if round % 2 == 0 {
            let chunk = &mut bad.snapshot[0];
            let at = rng.below(chunk.len());
            match rng.below(3) {
                0 => chunk[at] ^= 1 << rng.below(8),
                1 => chunk.truncate(at),
                _ => chunk[at] = 0xff,
            }
        } else {
            let row = &mut bad.log[0].record;
            let at = rng.below(row.len());
            row[at] ^= 1 << rng.below(8);
        }
        // Either it loads (the flip hit something harmless, like a letter) or it is an Err.
        let _ = MemoryStore::open(Fixed(bad), config());
    }
    let empty_names = hearth_memory::Persisted { snapshot: vec![b"HMEM".to_vec()], log: vec![] };
    assert!(matches!(MemoryStore::open(Fixed(empty_names), config()), Err(MemoryError::Corrupt(_))));
}
