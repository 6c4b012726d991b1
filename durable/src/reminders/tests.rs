//! The Agent object's reminders against SQLite in memory: what is kept, what
//! the alarm claims and posts, and what it costs with many pending.

use super::fire::{self, GIVE_UP_MS, POSTS_PER_ALARM, RETRY_MS};
use super::store::ReminderStore;
use super::*;
use crate::inbound::{ChannelKind, Inbound, ReplyTarget, SessionKey};
use crate::protocol::reminders::Reminder;
use crate::protocol::session::{PostMode, PostReply, PostRequest};
use crate::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
use crate::testing::MemSql;
use futures::executor::block_on;
use std::cell::{Cell, RefCell};

const NOW: i64 = 1_780_480_800_000;
const MIN: i64 = 60_000;

fn new(key: &str, text: &str, first_at: i64) -> Reminder {
    Reminder {
        session_key: key.into(),
        target: Some(ReplyTarget { channel: ChannelKind::Telegram, chat_id: "42".into(), ..Default::default() }),
        chat: "your private chat".into(),
        text: text.into(),
        mode: PostMode::Say,
        next_at: Some(first_at),
        timezone: "UTC".into(),
        ..Default::default()
    }
}

/// Sessions that take posts, or fail while `down` is set.
#[derive(Default)]
struct Sessions {
    posts: RefCell<Vec<PostRequest>>,
    down: Cell<bool>,
}

impl SessionQueue for Sessions {
    async fn enqueue(&self, _: &SessionKey, _: &Inbound, _: EnqueueOptions) -> Result<EnqueueOutcome, StorageError> {
        Ok(EnqueueOutcome::Queued)
    }
    async fn usage(&self, _: &SessionKey) -> Result<SessionCounters, StorageError> {
        Ok(SessionCounters::default())
    }
    async fn post(&self, req: &PostRequest) -> Result<PostReply, StorageError> {
        if self.down.get() {
            return Err(StorageError("session unreachable".into()));
        }
        self.posts.borrow_mut().push(req.clone());
        Ok(PostReply { queued: true, target: None })
    }
}

fn fire_at(sql: &MemSql, sessions: &Sessions, now: i64) -> fire::FireReport {
    block_on(fire::fire(sql, sessions, now, &|_, _| {})).unwrap()
}

#[test]
fn a_post_that_fails_is_tried_again_with_the_same_id_never_fired_twice() {
    let sql = MemSql::default();
    set(&sql, &new("agent:main:main", "stand up", NOW + MIN), NOW, 200).unwrap();
    let sessions = Sessions::default();
    sessions.down.set(true);
    let report = fire_at(&sql, &sessions, NOW + MIN);
    assert_eq!((report.claimed, report.posted, report.failed), (1, 0, 1));
    assert_eq!(report.next_wake, Some(NOW + MIN + RETRY_MS), "the retry sets the alarm");
    // Up again: the same fire goes, once; the reminder itself is not fired again.
    sessions.down.set(false);
    let report = fire_at(&sql, &sessions, NOW + MIN + RETRY_MS);
    assert_eq!((report.claimed, report.posted), (0, 1));
    assert_eq!(report.next_wake, None, "nothing left");
    assert_eq!(sessions.posts.borrow()[0].id, format!("reminder:r1:{}", NOW + MIN));
    assert_eq!(fire_at(&sql, &sessions, NOW + 10 * MIN).posted, 0);
    // A session down for a day: the post is given up (and listed).
    set(&sql, &new("agent:main:main", "later", NOW + 20 * MIN), NOW, 200).unwrap();
    sessions.down.set(true);
    fire_at(&sql, &sessions, NOW + 20 * MIN);
    fire_at(&sql, &sessions, NOW + 20 * MIN + GIVE_UP_MS);
    let store = ReminderStore::open(&sql).unwrap();
    assert_eq!(store.failed_fires(5).unwrap().len(), 1);
    assert_eq!(store.next_wake().unwrap(), None, "no retry after giving up");
}

#[test]
fn more_due_than_one_alarm_posts_are_taken_by_the_next_at_once() {
    let sql = MemSql::default();
    let n = POSTS_PER_ALARM as usize + 5;
    for i in 0..n {
        set(&sql, &new(&format!("agent:main:telegram:dm:{i}"), "same minute", NOW + MIN), NOW, 1000).unwrap();
    }
    let sessions = Sessions::default();
    let first = fire_at(&sql, &sessions, NOW + MIN);
    assert!(first.more && first.posted as i64 == POSTS_PER_ALARM);
    let second = fire_at(&sql, &sessions, NOW + MIN + 5);
    assert!(!second.more);
    assert_eq!(sessions.posts.borrow().len(), n, "each once");
    let mut ids: Vec<String> = sessions.posts.borrow().iter().map(|p| p.id.clone()).collect();
    ids.dedup();
    assert_eq!(ids.len(), n);
}

#[test]
fn the_limit_is_per_agent_and_cancelled_ones_do_not_count() {
    let sql = MemSql::default();
    let ok = |r: ReminderReply| r.error.is_none();
    assert!(ok(set(&sql, &new("agent:main:main", "a", NOW + MIN), NOW, 2).unwrap()));
    assert!(ok(set(&sql, &new("agent:main:telegram:dm:7", "b", NOW + MIN), NOW, 2).unwrap()));
    let refused = set(&sql, &new("agent:main:main", "c", NOW + MIN), NOW, 2).unwrap();
    assert!(refused.error.unwrap().contains("REMINDERS_MAX=2"));
    let store = ReminderStore::open(&sql).unwrap();
    assert_eq!(store.cancel("r2", Some("agent:main:main"), NOW).unwrap().len(), 0, "another chat's");
    assert_eq!(store.cancel("r2", Some("agent:main:telegram:dm:7"), NOW).unwrap().len(), 1);
    assert!(ok(set(&sql, &new("agent:main:main", "c", NOW + MIN), NOW, 2).unwrap()));
    assert_eq!(store.pending_one("r1", Some("agent:main:main")).unwrap().map(|r| r.text), Some("a".into()));
    assert!(store.pending_one("r1", Some("agent:main:telegram:dm:7")).unwrap().is_none(), "another chat's");
    assert!(store.pending_one("r2", None).unwrap().is_none(), "cancelled");
    assert_eq!(store.cancel("all", None, NOW).unwrap().len(), 2);
    assert_eq!(store.cancel("nonsense", None, NOW).unwrap().len(), 0);
}

#[test]
fn what_the_agent_object_refuses() {
    let at = |ms: i64| new("agent:main:main", "x", ms);
    assert!(check(&at(NOW), NOW).unwrap_err().contains("has passed"));
    assert!(check(&at(NOW + MAX_AHEAD_MS + 1), NOW).unwrap_err().contains("5 years"));
    assert!(check(&at(NOW + MAX_AHEAD_MS), NOW).is_ok());
    let mut cron = at(NOW + MIN);
    cron.cron = Some("* * *".into());
    assert!(check(&cron, NOW).unwrap_err().contains("5 fields"));
    let mut every = at(NOW + MIN);
    every.every_ms = Some(1000);
    assert!(check(&every, NOW).is_err());
    let mut nowhere = at(NOW + MIN);
    nowhere.target = None;
    assert!(check(&nowhere, NOW).unwrap_err().contains("its chat"));
    let mut zone = at(NOW + MIN);
    zone.timezone = "Nowhere/City".into();
    assert!(check(&zone, NOW).unwrap_err().contains("Nowhere/City"));
    let vars: std::collections::HashMap<String, String> = [("REMINDERS_MAX".to_owned(), "lots".to_owned())].into();
    assert!(max_pending(&vars, "main").unwrap_err().contains("REMINDERS_MAX"));
    assert_eq!(max_pending(&std::collections::HashMap::<String, String>::new(), "main"), Ok(200));
}

#[test]
fn with_10000_pending_what_is_due_and_what_is_next_are_index_lookups() {
    let sql = MemSql::default();
    for i in 0..10_000 {
        set(&sql, &new("agent:main:main", "later", NOW + (i + 2) * MIN), NOW, 20_000).unwrap();
    }
    let plan = |q: &str| -> String {
        let rows = crate::ports::Sql::exec(&sql, &format!("EXPLAIN QUERY PLAN {q}"), &[]).unwrap();
        format!("{rows:?}")
    };
    let due = plan("SELECT seq FROM reminders WHERE state = 'pending' AND next_at <= 0 ORDER BY next_at LIMIT 40");
    assert!(due.contains("reminders_due") && !due.contains("SCAN reminders"), "{due}");
    let next = plan("SELECT MIN(next_at) FROM reminders WHERE state = 'pending'");
    assert!(next.contains("reminders_due"), "{next}");
    // The alarm that fires one of them.
    let sessions = Sessions::default();
    let started = std::time::Instant::now();
    let report = fire_at(&sql, &sessions, NOW + 2 * MIN);
    let took = started.elapsed();
    assert_eq!((report.claimed, report.posted), (1, 1));
    assert_eq!(report.next_wake, Some(NOW + 3 * MIN));
    eprintln!("native: the alarm firing 1 of 10,000 pending took {took:?}");
}

#[test]
fn a_background_task_or_a_delegated_request_cannot_set_one_and_nothing_is_asked() {
    let p = crate::testing::TestPlatform::default();
    let agent = r2_layout::AgentId::parse("main").unwrap();
    for raw in ["agent:main:task:main:t1", "agent:main:from:ops:1:abc"] {
        let key = SessionKey::parse(raw).unwrap();
        let ctx = tool::ReminderContext {
            agent: &agent,
            key: &key,
            target: None,
            timezone: "UTC",
            now_ms: NOW,
            speaker: None,
        };
        let args = serde_json::json!({"in": "1h", "text": "check back"});
        let out = block_on(tool::run(&p, &ctx, &args));
        assert!(out.is_error && out.text.contains("background task"), "{raw}: {}", out.text);
    }
}
