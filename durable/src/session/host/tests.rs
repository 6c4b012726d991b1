//! The Session object's host against in-memory doubles: what the Worker's
//! thin `Session` class does, tested without workerd.

use super::{AlarmOutcome, SessionHost, SessionRuntime, REGISTRY_REFRESH_MS};
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::ports::{LogLevel, StorageError};
use crate::protocol::session::{EnqueueRequest, SessionTouch};
use crate::settings::AgentConfig;
use crate::testing::{MemSql, TestPlatform};
use futures::executor::block_on;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

pub(in crate::session) struct TestRuntime {
    pub(in crate::session) p: Rc<TestPlatform>,
    vars: HashMap<String, String>,
    wakes: Cell<u32>,
    wake_ats: RefCell<Vec<i64>>,
    registered: RefCell<Vec<SessionTouch>>,
    published: RefCell<Vec<(String, String)>>,
}

impl SessionRuntime for TestRuntime {
    type Sql = MemSql;
    type Vars = HashMap<String, String>;
    type Platform = Rc<TestPlatform>;
    fn sql(&self) -> &MemSql {
        &self.p.sql
    }
    fn vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn platform(&self, _: &AgentConfig, _: &SessionKey) -> Result<Rc<TestPlatform>, StorageError> {
        Ok(self.p.clone())
    }
    async fn wake(&self) -> Result<(), StorageError> {
        self.wakes.set(self.wakes.get() + 1);
        Ok(())
    }
    async fn wake_at(&self, at_ms: i64) -> Result<(), StorageError> {
        self.wake_ats.borrow_mut().push(at_ms);
        Ok(())
    }
    async fn register(&self, touch: &SessionTouch) -> Result<(), StorageError> {
        self.registered.borrow_mut().push(touch.clone());
        Ok(())
    }
    async fn publish(&self, key: &SessionKey, notices: &[String]) -> Result<(), StorageError> {
        self.published.borrow_mut().extend(notices.iter().map(|n| (key.render(), n.clone())));
        Ok(())
    }
    fn now_ms(&self) -> i64 {
        self.p.now.get()
    }
    fn new_uuid(&self) -> String {
        crate::ports::Platform::new_uuid(&*self.p)
    }
    fn log(&self, _: LogLevel, msg: &str) {
        self.p.logs.borrow_mut().push(msg.to_owned());
    }
}

pub(in crate::session) fn host(vars: &[(&str, &str)]) -> SessionHost<TestRuntime> {
    let mut all: HashMap<String, String> =
        [("OWNER_IDS", "telegram:1"), ("LLM_API_KEY", "k"), ("RESET_DAILY_AT", "off")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    SessionHost::new(TestRuntime {
        p: Rc::new(TestPlatform::default()),
        vars: all,
        wakes: Cell::new(0),
        wake_ats: RefCell::default(),
        registered: RefCell::default(),
        published: RefCell::default(),
    })
}

pub(in crate::session) fn request(n: u32, text: &str) -> EnqueueRequest {
    EnqueueRequest {
        session_key: SessionKey::parse("agent:main:main").unwrap(),
        inbound: Inbound {
            dedupe_key: format!("telegram:update:{n}"),
            channel: ChannelKind::Telegram,
            kind: ChatKind::Direct,
            chat_id: "1".into(),
            sender_id: "1".into(),
            sender_name: "Ana".into(),
            text: text.into(),
            addressed: true,
            thread_id: None,
            reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
            received_at: 0,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        },
        if_idle: false,
        fresh: false,
        next_run_in_ms: None,
    }
}

pub(in crate::session) fn answer(p: &TestPlatform, text: &str) {
    p.http.push_json(
        200,
        json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "model": "m",
               "usage": {"input_tokens": 10, "output_tokens": 5}}),
    );
}

#[test]
fn a_message_is_queued_once_wakes_the_alarm_and_is_answered_by_it() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    assert!(block_on(h.enqueue(&request(1, "hi"))).unwrap().queued);
    assert!(!block_on(h.enqueue(&request(1, "hi"))).unwrap().queued, "a redelivery is acknowledged, not queued");
    assert_eq!(h.runtime().wakes.get(), 1);
    assert_eq!(h.status(true).unwrap().open, 1);
    answer(&p, "hello Ana");
    assert!(matches!(block_on(h.alarm()).unwrap(), AlarmOutcome::Drained(r) if r.turns == 1));
    assert_eq!(p.channel.sent.borrow().iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(), ["hello Ana"]);
    let status = h.status(false).unwrap();
    assert_eq!((status.open, status.message_count), (0, 2));
    assert_eq!(status.session_key.map(|k| k.render()).as_deref(), Some("agent:main:main"));
    assert_eq!(status.messages.map(|m| m.len()), Some(2));
    assert!(h.status(true).unwrap().messages.is_none(), "the brief status leaves the messages out");
}

#[test]
fn heartbeat_options_skip_a_busy_session_and_start_fresh_runs() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    block_on(h.enqueue(&request(1, "first"))).unwrap();
    let busy = EnqueueRequest { if_idle: true, ..request(2, "heartbeat") };
    let reply = block_on(h.enqueue(&busy)).unwrap();
    assert!(reply.busy && !reply.queued, "mid-turn: the heartbeat slot is released");
    answer(&p, "done");
    block_on(h.alarm()).unwrap();
    assert_eq!(h.status(true).unwrap().message_count, 2);
    let fresh = EnqueueRequest { fresh: true, ..request(3, "job run") };
    assert!(block_on(h.enqueue(&fresh)).unwrap().queued);
    assert_eq!(h.status(true).unwrap().message_count, 0, "the previous run's history is dropped first");
}

#[test]
fn an_admin_reset_needs_a_session_and_runs_through_the_queue() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    assert!(block_on(h.admin_reset()).unwrap().is_none(), "no message yet: nothing to reset");
    block_on(h.enqueue(&request(1, "remember me"))).unwrap();
    answer(&p, "sure");
    block_on(h.alarm()).unwrap();
    let reply = block_on(h.admin_reset()).unwrap().expect("queued");
    assert_eq!(reply.session_key.render(), "agent:main:main");
    // The extraction call before the reset archives.
    answer(&p, "NONE");
    block_on(h.alarm()).unwrap();
    assert_eq!(h.status(true).unwrap().message_count, 0);
    assert!(p.store.objects.borrow().keys().any(|k| k.starts_with("agents/main/sessions/")), "archived");
}

#[test]
fn the_registry_is_told_of_a_session_once_then_when_it_moves_on() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    for n in 1..=3 {
        block_on(h.enqueue(&request(n, "hi"))).unwrap();
        answer(&p, "hello");
        block_on(h.alarm()).unwrap();
    }
    assert_eq!(h.runtime().registered.borrow().len(), 1, "not a call to the Agent object on every turn");
    p.now.set(p.now.get() + REGISTRY_REFRESH_MS + 1);
    block_on(h.enqueue(&request(4, "later"))).unwrap();
    answer(&p, "hello again");
    block_on(h.alarm()).unwrap();
    assert_eq!(h.runtime().registered.borrow().len(), 2, "activity past the refresh time is reported");
    // Who the chat is with, and its last message, for the console's listing.
    let touch = h.runtime().registered.borrow().last().cloned().unwrap();
    assert_eq!(touch.title.as_deref(), Some("Ana"));
    let last = touch.last.unwrap();
    assert_eq!((last.role.as_str(), last.text.as_str()), ("assistant", "hello again"));
}

#[test]
fn broken_settings_keep_the_messages_queued() {
    let h = host(&[("LLM_PROVIDER", "gemini")]);
    block_on(h.enqueue(&request(1, "hi"))).unwrap();
    assert_eq!(block_on(h.alarm()).unwrap(), AlarmOutcome::Misconfigured);
    assert_eq!(h.status(true).unwrap().open, 1, "nothing lost");
    assert!(h.runtime().p.logs.borrow().iter().any(|l| l.contains("LLM_PROVIDER")));
    let empty = host(&[]);
    assert_eq!(block_on(empty.alarm()).unwrap(), AlarmOutcome::Empty);
}

mod alarm;

pub(in crate::session) mod api;

mod stop;

mod post;

/// A heartbeat run (its session, a fresh run) that comes again `next` ms later.
fn heartbeat_run(n: u32, next: Option<i64>) -> EnqueueRequest {
    let mut req = request(n, "[Heartbeat] check the open items");
    req.session_key = SessionKey::parse("agent:main:heartbeat").unwrap();
    EnqueueRequest { fresh: true, if_idle: true, next_run_in_ms: next, ..req }
}

/// The system prompt's `cache_control` and the `anthropic-beta` header of request `i`.
fn cache_of(p: &TestPlatform, i: usize) -> (serde_json::Value, Option<String>) {
    let req = &p.http.requests.borrow()[i];
    let body: serde_json::Value = hearth_json::from_slice(&req.body).unwrap();
    let beta = req.headers.iter().find(|(n, _)| n == "anthropic-beta").map(|(_, v)| v.clone());
    (body["system"][0]["cache_control"].clone(), beta)
}

#[test]
fn a_heartbeat_every_half_hour_caches_its_prompt_for_an_hour_and_pays_the_hours_rate() {
    let h = host(&[("LLM_MODEL", "claude-sonnet-4-5"), ("USAGE_SETTLE_MS", "0")]);
    let p = h.runtime().p.clone();
    assert!(block_on(h.enqueue(&heartbeat_run(1, Some(30 * 60_000)))).unwrap().queued);
    // The first run writes the prompt for an hour (2× input), its message for 5 minutes.
    p.http.push_json(
        200,
        json!({"content": [{"type": "text", "text": "HEARTBEAT_OK"}], "stop_reason": "end_turn", "model": "claude-sonnet-4-5",
               "usage": {"input_tokens": 4, "output_tokens": 5, "cache_read_input_tokens": 0,
                         "cache_creation_input_tokens": 8_100,
                         "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 8_000}}}),
    );
    block_on(h.alarm()).unwrap();
    let beta = Some(crate::llm::EXTENDED_CACHE_TTL_BETA.to_owned());
    assert_eq!(cache_of(&p, 0), (json!({"type": "ephemeral", "ttl": "1h"}), beta));
    // Its call is in the ledger with the hour's writes apart, priced at $6 (not $3.75) a million.
    let report = p.usage.book.borrow_mut().report(
        &p.usage.sql,
        crate::usage::period::Period::parse("all").unwrap(),
        None,
        p.now.get(),
    );
    let report = report.unwrap();
    assert_eq!((report.cache_write_tokens, report.cache_write_1h_tokens), (8_100, 8_000));
    let want = (4.0 * 3.0 + 5.0 * 15.0 + 100.0 * 3.75 + 8_000.0 * 6.0) / 1e6;
    assert!((report.total_cost - want).abs() < 1e-6, "{} vs {want}", report.total_cost);
    assert_eq!(report.by_kind["heartbeat"].cache_write_1h_tokens, 8_000);

    // Every 90 minutes: the hour would not last, 5 minutes it is.
    assert!(block_on(h.enqueue(&heartbeat_run(2, Some(90 * 60_000)))).unwrap().queued);
    answer(&p, "HEARTBEAT_OK");
    block_on(h.alarm()).unwrap();
    assert_eq!(cache_of(&p, 1), (json!({"type": "ephemeral"}), None));
    // A run queued without a hint (a retried one) too.
    assert!(block_on(h.enqueue(&heartbeat_run(3, None))).unwrap().queued);
    answer(&p, "HEARTBEAT_OK");
    block_on(h.alarm()).unwrap();
    assert_eq!(cache_of(&p, 2).1, None);
}

#[test]
fn llm_cache_ttl_turns_the_hour_off_or_on_for_conversations() {
    let h = host(&[("LLM_CACHE_TTL", "5m")]);
    let p = h.runtime().p.clone();
    block_on(h.enqueue(&heartbeat_run(1, Some(30 * 60_000)))).unwrap();
    answer(&p, "HEARTBEAT_OK");
    block_on(h.alarm()).unwrap();
    assert_eq!(cache_of(&p, 0), (json!({"type": "ephemeral"}), None));
    // By default a conversation keeps 5 minutes; `1h` gives its prefix an hour.
    for (setting, want) in [("auto", json!({"type": "ephemeral"})), ("1h", json!({"type": "ephemeral", "ttl": "1h"}))] {
        let h = host(&[("LLM_CACHE_TTL", setting)]);
        let p = h.runtime().p.clone();
        block_on(h.enqueue(&request(1, "hi"))).unwrap();
        answer(&p, "hello");
        block_on(h.alarm()).unwrap();
        assert_eq!(cache_of(&p, 0).0, want, "LLM_CACHE_TTL={setting}");
    }
}
