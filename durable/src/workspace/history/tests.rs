//! The workspace history against the in-memory bucket.

use super::view::{self, Undo, Version};
use super::*;
use crate::testing::MemStore;
use futures::executor::block_on;

fn agent() -> AgentId {
    AgentId::parse("main").unwrap()
}

fn text(s: &MemStore, key: &str) -> Option<String> {
    s.objects.borrow().get(key).map(|o| String::from_utf8_lossy(&o.body).into_owned())
}

fn write(s: &MemStore, path: &str, body: &str, actor: Actor, why: &str, at: i64) -> Option<Change> {
    block_on(apply(s, &agent(), Edit::write(path, body, actor, why), at, DEFAULT_KEEP)).unwrap()
}

fn keys_under(s: &MemStore, prefix: &str) -> Vec<String> {
    s.objects.borrow().keys().filter(|k| k.starts_with(prefix)).cloned().collect()
}

#[test]
fn a_write_keeps_the_version_it_replaced_with_who_and_why() {
    let s = MemStore::default();
    s.put_text("agents/main/SOUL.md", "# Soul\nCalm.\n");
    let c = write(&s, "SOUL.md", "# Soul\nCheerful.\n", Actor::Agent, "edit_file", 1_000).unwrap();
    assert_eq!(text(&s, "agents/main/SOUL.md").as_deref(), Some("# Soul\nCheerful.\n"));
    assert_eq!((c.actor, c.why.as_str(), c.at), (Actor::Agent, "edit_file", 1_000));
    let old = c.previous.clone().unwrap();
    assert_eq!(text(&s, &format!("history/main/blobs/{old}")).as_deref(), Some("# Soul\nCalm.\n"));
    let listed = block_on(view::versions(&s, &agent(), "SOUL.md", 10)).unwrap();
    assert_eq!(listed, vec![c.clone()]);
    let recent = block_on(view::recent(&s, &agent(), 10)).unwrap();
    assert_eq!(recent, vec![c.clone()]);
    // The same bytes again are no change, and no record.
    assert!(write(&s, "SOUL.md", "# Soul\nCheerful.\n", Actor::Agent, "write_file", 2_000).is_none());
    assert_eq!(block_on(view::versions(&s, &agent(), "SOUL.md", 10)).unwrap().len(), 1);
    // Reading versions back: the change's own, the replaced one, the current file.
    let read = |v: Version| block_on(view::content(&s, &agent(), "SOUL.md", &v)).unwrap().map(String::from_utf8);
    assert_eq!(read(Version::Rev(c.rev.clone())), Some(Ok("# Soul\nCheerful.\n".into())));
    assert_eq!(read(Version::Sha(old)), Some(Ok("# Soul\nCalm.\n".into())));
    assert_eq!(read(Version::Current), Some(Ok("# Soul\nCheerful.\n".into())));
}

#[test]
fn identical_versions_are_stored_once() {
    let s = MemStore::default();
    write(&s, "a.md", "same", Actor::Owner, "w", 1).unwrap();
    write(&s, "b.md", "same", Actor::Owner, "w", 2).unwrap();
    write(&s, "a.md", "other", Actor::Owner, "w", 3).unwrap();
    write(&s, "a.md", "same", Actor::Owner, "w", 4).unwrap();
    assert_eq!(keys_under(&s, "history/main/blobs/").len(), 2, "two distinct contents");
    assert_eq!(block_on(view::versions(&s, &agent(), "a.md", 10)).unwrap().len(), 3);
}

#[test]
fn restore_and_diff_and_deletes() {
    let s = MemStore::default();
    let v1 = write(&s, "MEMORY.md", "# Memory\n- tea\n", Actor::Agent, "write_file", 10).unwrap();
    let v2 = write(&s, "MEMORY.md", "# Memory\n- green tea\n- cats\n", Actor::Agent, "edit_file", 20).unwrap();
    let d = block_on(view::diff(&s, &agent(), "MEMORY.md", &Version::Rev(v1.rev.clone()), &Version::Current)).unwrap();
    assert!(d.contains("-- tea\n+- green tea\n+- cats\n"), "{d}");
    let r = block_on(view::restore(
        &s,
        &agent(),
        "MEMORY.md",
        &Version::Rev(v1.rev.clone()),
        Actor::Owner,
        "",
        30,
        DEFAULT_KEEP,
    ))
    .unwrap()
    .unwrap();
    assert_eq!(text(&s, "agents/main/MEMORY.md").as_deref(), Some("# Memory\n- tea\n"));
    assert_eq!((r.actor, r.previous.as_deref()), (Actor::Owner, v2.sha256.as_deref()));
    assert!(r.why.starts_with("restore of "), "a restore is a new version: {}", r.why);
    // Deleting keeps the last content; restoring the deletion's before brings it back.
    let del =
        block_on(apply(&s, &agent(), Edit::delete("MEMORY.md", Actor::Agent, "delete_file"), 40, 50)).unwrap().unwrap();
    assert!(text(&s, "agents/main/MEMORY.md").is_none());
    assert_eq!(del.sha256, None);
    let sha = Version::Sha(del.previous.clone().unwrap());
    block_on(view::restore(&s, &agent(), "MEMORY.md", &sha, Actor::Owner, "oops", 50, 50)).unwrap().unwrap();
    assert_eq!(text(&s, "agents/main/MEMORY.md").as_deref(), Some("# Memory\n- tea\n"));
    assert!(matches!(Version::parse("nonsense"), Err(HistoryError::Refused(_))));
    assert!(matches!(
        block_on(view::content(&s, &agent(), "MEMORY.md", &Version::Rev("0000000000001-zz".into()))),
        Err(HistoryError::NotFound(_))
    ));
}

#[test]
fn undo_reverts_the_agents_last_change_and_walks_back() {
    let s = MemStore::default();
    let tz = "UTC";
    assert_eq!(block_on(view::undo(&s, &agent(), 1, 50)).unwrap(), Undo::Nothing);
    s.put_text("agents/main/USER.md", "Olga\n");
    write(&s, "USER.md", "Olga, tea\n", Actor::Agent, "edit_file", 10).unwrap();
    write(&s, "notes/x.md", "x\n", Actor::Agent, "write_file", 20).unwrap();
    write(&s, "SOUL.md", "owner's soul\n", Actor::Owner, "admin write", 30).unwrap();
    // The last agent change: notes/x.md was created, so undo deletes it.
    let u = block_on(view::undo(&s, &agent(), 40, 50)).unwrap();
    let Undo::Reverted { undone, change } = &u else { panic!("{u:?}") };
    assert_eq!((undone.path.as_str(), change.actor), ("notes/x.md", Actor::Owner));
    assert!(text(&s, "agents/main/notes/x.md").is_none());
    let said = view::describe(&u, tz);
    assert!(said.contains("deleted notes/x.md again") && said.contains("write_file"), "{said}");
    // Again: the edit of USER.md before it.
    let u = block_on(view::undo(&s, &agent(), 50, 50)).unwrap();
    assert!(matches!(&u, Undo::Reverted { undone, .. } if undone.path == "USER.md"), "{u:?}");
    assert_eq!(text(&s, "agents/main/USER.md").as_deref(), Some("Olga\n"));
    assert!(view::describe(&u, tz).contains("put USER.md back as it was"));
    assert_eq!(block_on(view::undo(&s, &agent(), 60, 50)).unwrap(), Undo::Nothing);
    // A change the owner made on top of the agent's is not thrown away.
    write(&s, "TOOLS.md", "agent's\n", Actor::Agent, "write_file", 70).unwrap();
    write(&s, "TOOLS.md", "owner's fix\n", Actor::Owner, "admin write", 80).unwrap();
    let u = block_on(view::undo(&s, &agent(), 90, 50)).unwrap();
    assert!(matches!(&u, Undo::ChangedSince { since, .. } if since.actor == Actor::Owner), "{u:?}");
    assert_eq!(text(&s, "agents/main/TOOLS.md").as_deref(), Some("owner's fix\n"));
    assert!(view::describe(&u, tz).contains("did not undo"));
}

#[test]
fn undo_takes_back_what_dreaming_wrote_to_memory_md_but_not_its_diary() {
    let s = MemStore::default();
    s.put_text("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n");
    write(&s, "notes/x.md", "x\n", Actor::Agent, "write_file", 10).unwrap();
    let dreamed =
        "## People\n- Luis prefers Spanish.\n\n## Dreamed 2026-04-23 03:00 UTC\n- Olga's zone is America/Bogota\n";
    write(&s, "MEMORY.md", dreamed, Actor::Dreaming, "dreaming 2026-04-23: 1 fact(s) promoted", 20).unwrap();
    write(&s, "DREAMS.md", "## 2026-04-23\n- promoted 1\n", Actor::Dreaming, "dreaming 2026-04-23: diary", 21).unwrap();
    // The newest change is the diary: passed over; the facts go.
    let u = block_on(view::undo(&s, &agent(), 30, 50)).unwrap();
    let Undo::Reverted { undone, change } = &u else { panic!("{u:?}") };
    assert_eq!((undone.path.as_str(), undone.actor, change.actor), ("MEMORY.md", Actor::Dreaming, Actor::Owner));
    assert_eq!(text(&s, "agents/main/MEMORY.md").as_deref(), Some("## People\n- Luis prefers Spanish.\n"));
    assert!(text(&s, "agents/main/DREAMS.md").is_some(), "the diary stays");
    assert!(change.why.starts_with("/undo of dreaming 2026-04-23: 1 fact(s) promoted ("), "{}", change.why);
    let said = view::describe(&u, "UTC");
    assert!(said.contains("took the facts my dreaming added back out of MEMORY.md"), "{said}");
    assert!(said.contains("dreaming 2026-04-23: 1 fact(s) promoted"), "{said}");
    // Then the agent's own change before it.
    let u = block_on(view::undo(&s, &agent(), 40, 50)).unwrap();
    assert!(matches!(&u, Undo::Reverted { undone, .. } if undone.path == "notes/x.md"), "{u:?}");
    assert_eq!(block_on(view::undo(&s, &agent(), 50, 50)).unwrap(), Undo::Nothing);
}

#[test]
fn retention_keeps_the_last_versions_and_the_clean_up_drops_orphan_blobs() {
    let s = MemStore::default();
    let keep = 3;
    for i in 0..6 {
        let e = Edit::write("HEARTBEAT.md", format!("v{i}"), Actor::Agent, "write_file");
        block_on(apply(&s, &agent(), e, 100 + i, keep)).unwrap().unwrap();
    }
    let kept = block_on(view::versions(&s, &agent(), "HEARTBEAT.md", 10)).unwrap();
    assert_eq!(kept.iter().map(|c| c.at).collect::<Vec<_>>(), vec![105, 104, 103]);
    assert_eq!(keys_under(&s, "history/main/log/").len(), 3, "the log follows");
    assert_eq!(keys_under(&s, "history/main/blobs/").len(), 6, "blobs stay until the clean-up");
    // Blobs uploaded at 0 (the double's clock): old enough at GC_GRACE_MS.
    let report = block_on(collect_garbage(&s, &agent(), GC_GRACE_MS)).unwrap();
    // Kept changes name v2..v5 (v2 as the oldest kept one's before).
    assert_eq!((report.records, report.blobs, report.blobs_deleted), (3, 6, 2));
    let left: Vec<String> = keys_under(&s, "history/main/blobs/")
        .iter()
        .map(|k| text(&s, k).unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(left, ["v2", "v3", "v4", "v5"]);
    // Young blobs are left alone (a write in flight).
    write(&s, "x.md", "a", Actor::Agent, "w", 1);
    let r = block_on(collect_garbage(&s, &agent(), GC_GRACE_MS - 1)).unwrap();
    assert_eq!(r.blobs_deleted, 0);
}

#[test]
fn long_paths_and_nested_paths_keep_separate_histories() {
    let s = MemStore::default();
    write(&s, "notes", "a file named notes", Actor::Agent, "w", 1).unwrap();
    write(&s, "notes/inner.md", "inside", Actor::Agent, "w", 2).unwrap();
    assert_eq!(block_on(view::versions(&s, &agent(), "notes", 10)).unwrap().len(), 1);
    assert_eq!(block_on(view::versions(&s, &agent(), "notes/inner.md", 10)).unwrap().len(), 1);
    let long = format!("deep/{}.md", "x".repeat(900));
    write(&s, &long, "far", Actor::Agent, "w", 3).unwrap();
    let v = block_on(view::versions(&s, &agent(), &long, 10)).unwrap();
    assert_eq!(v[0].path, long);
    assert!(s.objects.borrow().keys().all(|k| k.len() <= 1024));
}

#[test]
fn undo_reads_the_log_only_as_far_as_the_agents_last_change() {
    let s = MemStore::default();
    for i in 0..30 {
        write(&s, &format!("notes/{i}.md"), "x\n", Actor::Agent, "write_file", 100 + i).unwrap();
    }
    s.ops.borrow_mut().clear();
    let u = block_on(view::undo(&s, &agent(), 200, 50)).unwrap();
    assert!(matches!(&u, Undo::Reverted { undone, .. } if undone.path == "notes/29.md"), "{u:?}");
    assert_eq!(s.ops_matching("get history/main/log/"), 1, "one record read: {:?}", s.ops.borrow());
}
