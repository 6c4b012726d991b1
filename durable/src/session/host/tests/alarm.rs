//! The Session object's host with a runtime of doubles: what the alarm
//! leaves behind for the outbox.

use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::ports::{LogLevel, SendOutcome, StorageError};
use crate::protocol::session::{EnqueueRequest, SessionTouch};
use crate::session::host::{AlarmOutcome, SessionHost, SessionRuntime};
use crate::settings::AgentConfig;
use crate::testing::{MemSql, TestPlatform};
use futures::executor::block_on;
use serde_json::json;
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

/// The alarm as workerd keeps it: one time, cleared when it fires.
struct Runtime {
    p: Rc<TestPlatform>,
    vars: HashMap<String, String>,
    alarm: Cell<Option<i64>>,
}

impl SessionRuntime for Runtime {
    type Sql = MemSql;
    type Vars = HashMap<String, String>;
    type Platform = Rc<TestPlatform>;
    fn sql(&self) -> &MemSql {
        &self.p.sql
    }
    fn vars(&self) -> &Self::Vars {
        &self.vars
    }
    fn platform(&self, _: &AgentConfig, _: &SessionKey) -> Result<Rc<TestPlatform>, StorageError> {
        Ok(self.p.clone())
    }
    async fn wake(&self) -> Result<(), StorageError> {
        self.alarm.set(Some(self.p.now.get()));
        Ok(())
    }
    async fn wake_at(&self, at_ms: i64) -> Result<(), StorageError> {
        if self.alarm.get().is_none_or(|a| a > at_ms) {
            self.alarm.set(Some(at_ms));
        }
        Ok(())
    }
    async fn register(&self, _: &SessionTouch) -> Result<(), StorageError> {
        Ok(())
    }
    fn now_ms(&self) -> i64 {
        self.p.now.get()
    }
    fn new_uuid(&self) -> String {
        "00000000-0000-4000-8000-000000000000".into()
    }
    fn log(&self, _: LogLevel, _: &str) {}
}

fn host() -> SessionHost<Runtime> {
    // Usage goes to the ledger at once: no settlement alarm besides the outbox's.
    let vars = [("OWNER_IDS", "telegram:1"), ("LLM_API_KEY", "k"), ("USAGE_SETTLE_MS", "0")];
    SessionHost::new(Runtime {
        p: Rc::new(TestPlatform::default()),
        vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        alarm: Cell::new(None),
    })
}

fn message(n: u32) -> EnqueueRequest {
    let inbound = Inbound {
        dedupe_key: format!("telegram:update:{n}"),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Direct,
        chat_id: "7".into(),
        sender_id: "7".into(),
        sender_name: "Pat".into(),
        text: format!("message {n}"),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "7".into(), ..Default::default() },
        received_at: 0,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    };
    EnqueueRequest {
        session_key: SessionKey::parse("agent:main:telegram:dm:7").unwrap(),
        inbound,
        if_idle: false,
        fresh: false,
        next_run_in_ms: None,
    }
}

/// Fires the alarm if it is due at the platform's time.
fn fire(h: &SessionHost<Runtime>) -> Option<AlarmOutcome> {
    let rt = h.runtime();
    let due = rt.alarm.get().is_some_and(|a| a <= rt.p.now.get());
    due.then(|| {
        rt.alarm.set(None);
        block_on(h.alarm()).unwrap()
    })
}

#[test]
fn the_alarm_is_set_again_for_a_reply_that_waits_and_delivers_it_then() {
    let h = host();
    let p = h.runtime().p.clone();
    p.http.push_json(
        200,
        json!({"content": [{"type": "text", "text": "hi Pat"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    p.channel.fail_next(SendOutcome::Retry { after_ms: Some(120_000), why: "telegram 429".into() });
    block_on(h.enqueue(&message(1))).unwrap();
    assert!(matches!(fire(&h), Some(AlarmOutcome::Drained(_))));
    assert_eq!(h.runtime().alarm.get(), Some(120_000), "the alarm waits for the platform's retry_after");
    let status = h.status(true).unwrap();
    assert_eq!(status.open, 0, "the turn is done; its reply waits in the outbox");
    assert_eq!(status.outbox.waiting.len(), 1);
    assert_eq!(status.outbox.waiting[0].next_attempt_at, Some(120_000));
    assert_eq!(status.outbox.waiting[0].last_error.as_deref(), Some("telegram 429"));

    p.now.set(60_000);
    assert!(fire(&h).is_none(), "not before it is due");
    p.now.set(120_000);
    fire(&h);
    assert_eq!(p.channel.texts(), ["hi Pat"]);
    assert_eq!(h.runtime().alarm.get(), None, "nothing left to wait for");
    assert!(h.status(true).unwrap().outbox.waiting.is_empty());
}

#[test]
fn a_message_arriving_while_a_reply_waits_runs_at_once_and_the_retry_stays_planned() {
    let h = host();
    let p = h.runtime().p.clone();
    p.channel.fail_next(SendOutcome::Retry { after_ms: Some(120_000), why: "telegram 429".into() });
    for text in ["one", "two"] {
        p.http.push_json(
            200,
            json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}}),
        );
    }
    block_on(h.enqueue(&message(1))).unwrap();
    fire(&h);
    p.now.set(1_000);
    block_on(h.enqueue(&message(2))).unwrap();
    assert_eq!(h.runtime().alarm.get(), Some(1_000), "a new message wakes the object now");
    fire(&h);
    assert!(p.channel.texts().is_empty(), "the second answer waits behind the first");
    assert_eq!(h.runtime().alarm.get(), Some(120_000));
    p.now.set(120_000);
    fire(&h);
    assert_eq!(p.channel.texts(), ["one", "two"]);
}
