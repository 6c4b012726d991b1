//! What leaves a session's history stays findable: resets and compactions add their
//! exchanges to the conversation memory of the session's scope, once.

use super::{anthropic_text, inbound, Fixture};
use crate::inbound::SessionKey;
use crate::protocol::memory::{ConversationHitView, MemoryCall, MemoryReply};

fn found(f: &Fixture, store: &str, query: &str) -> Vec<ConversationHitView> {
    let call = MemoryCall::SearchConversations {
        store: store.into(),
        query: query.into(),
        more: Vec::new(),
        k: 10,
        since: None,
        until: None,
        every_store: false,
    };
    match f.p.memory.hub.borrow_mut().call(call) {
        Ok(MemoryReply::Conversations { hits }) => hits,
        other => panic!("{other:?}"),
    }
}

fn added_calls(f: &Fixture) -> usize {
    f.p.memory.calls.borrow().iter().filter(|c| matches!(c, MemoryCall::AddConversation { .. })).count()
}

#[test]
fn a_reset_keeps_what_was_said_findable_with_who_said_it() {
    let f = Fixture::new();
    f.say(1, "my locker code at the gym is 3301", "Noted, 3301.");
    f.say(2, "and the spare key is under the blue pot", "Got it.");
    let sid = f.session_id().unwrap();
    f.say(3, "/reset", "NONE");
    let hits = found(&f, "main", "gym locker code");
    let top = &hits[0];
    assert_eq!(top.exchange.text, "my locker code at the gym is 3301");
    assert_eq!(top.exchange.reply, "Noted, 3301.");
    assert_eq!((top.exchange.speaker.as_str(), top.exchange.channel.as_str()), ("Ana", "telegram"));
    assert_eq!(top.session_id, sid);
    assert!(!top.exchange.text.contains("system-reminder"), "reminders stay out");
    let texts: Vec<String> = found(&f, "main", "reset").into_iter().map(|h| h.exchange.text).collect();
    assert!(texts.is_empty(), "the /reset command is not part of the conversation: {texts:?}");
}

#[test]
fn a_compacted_prefix_is_findable_before_the_reset_and_nothing_twice_after() {
    let mut f = Fixture::new();
    f.long_history();
    f.p.http.push_json(200, anthropic_text("## Summary\nQuestions.\n## Memories\nNONE"));
    f.say(99, "and now?", "fine");
    assert!(!found(&f, "main", "question 0").is_empty(), "the compacted exchanges, before any reset");
    f.say(100, "/reset", "NONE");
    let all: Vec<String> = found(&f, "main", "question words").into_iter().map(|h| h.exchange.text).collect();
    let mut distinct = all.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), all.len(), "no exchange indexed twice: {all:?}");
    assert!(!found(&f, "main", "now").is_empty(), "the exchanges after the compaction, at the reset");
    assert_eq!(added_calls(&f), 2, "one batch per archive");
}

#[test]
fn a_groups_conversation_stays_in_the_groups_memory() {
    let mut f = Fixture::new();
    f.key = SessionKey::parse("agent:main:telegram:group:-100").unwrap();
    f.say(1, "the picnic is at the old oak on Sunday", "Sounds lovely");
    f.say(2, "/reset", "NONE");
    assert_eq!(found(&f, "group:telegram:-100", "picnic oak").len(), 1);
    assert!(found(&f, "main", "picnic oak").is_empty(), "not in the owner's store");
}

#[test]
fn heartbeats_are_not_conversations() {
    let mut f = Fixture::new();
    f.key = SessionKey::parse("agent:main:heartbeat").unwrap();
    f.say(1, "Read HEARTBEAT.md and act on it", "HEARTBEAT_OK");
    let archive = format!("agents/main/sessions/{}.jsonl.gz", f.session_id().unwrap());
    f.say(2, "/reset", "NONE");
    assert!(f.object(&archive).is_some(), "the heartbeat session was archived");
    assert_eq!(added_calls(&f), 0, "but its prompt is not a conversation");
}

#[test]
fn a_memory_that_cannot_be_reached_does_not_stop_the_reset() {
    let f = Fixture::new();
    f.say(1, "the wifi password is orange-42", "ok");
    f.p.memory.unavailable.set(true);
    f.say(2, "/reset", "NONE");
    assert!(f.session_id().is_none(), "the session was reset");
    let archived = f.p.store.objects.borrow().keys().any(|k| k.starts_with("agents/main/sessions/"));
    assert!(archived, "and archived: the daily backfill indexes it later");
    f.p.memory.unavailable.set(false);
    assert!(found(&f, "main", "wifi").is_empty());
}

#[test]
fn a_reset_retried_after_a_storage_error_indexes_once() {
    let f = Fixture::new();
    f.say(1, "the dog's vet is on Elm street", "ok");
    *f.p.sql.fail_writes_containing.borrow_mut() = Some("DELETE FROM history".into());
    f.p.http.push_json(200, anthropic_text("NONE"));
    f.enqueue(&inbound(2, "/reset"));
    assert!(f.try_drain().is_err(), "the clear failed: the alarm retries");
    *f.p.sql.fail_writes_containing.borrow_mut() = None;
    f.drain();
    assert_eq!(found(&f, "main", "vet elm").len(), 1);
    let added: usize =
        f.p.memory.calls.borrow().iter().filter(|c| matches!(c, MemoryCall::AddConversation { .. })).count();
    assert_eq!(added, 1, "the retry knew the exchanges were in");
}
