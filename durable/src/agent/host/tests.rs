//! The Agent object's host against in-memory doubles.

use super::{AgentHost, AgentRuntime, PinsAnswer, PinsCall};
use crate::inbound::{Inbound, SessionKey};
use crate::ports::{LogLevel, StorageError};
use crate::protocol::agent::{PinsRequest, TickRequest};
use crate::protocol::session::SessionTouch;
use crate::scheduled::view::TicksRun;
use crate::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
use crate::serving::Incoming;
use crate::testing::{MemSql, MemStore, TestStreams};
use futures::executor::block_on;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Default)]
pub(in crate::agent) struct Queue {
    queued: RefCell<Vec<(String, Inbound)>>,
    pub(in crate::agent) woken: RefCell<Vec<String>>,
    pub(in crate::agent) admitted: RefCell<Vec<(String, bool)>>,
    posts: RefCell<Vec<crate::protocol::session::PostRequest>>,
    /// Sessions told their memory holds something (`MemoryStored`).
    pub(in crate::agent) told: RefCell<Vec<String>>,
    /// Tells fail (the session cannot be reached).
    pub(in crate::agent) tells_fail: Cell<bool>,
}

impl SessionQueue for Queue {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        _: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError> {
        self.queued.borrow_mut().push((key.render(), inbound.clone()));
        Ok(EnqueueOutcome::Queued)
    }
    async fn usage(&self, _: &SessionKey) -> Result<SessionCounters, StorageError> {
        Ok(SessionCounters::default())
    }
    async fn wake(&self, key: &SessionKey) -> Result<(), StorageError> {
        self.woken.borrow_mut().push(key.render());
        Ok(())
    }
    async fn memory_stored(&self, key: &SessionKey) -> Result<(), StorageError> {
        if self.tells_fail.get() {
            return Err(StorageError("unreachable".into()));
        }
        self.told.borrow_mut().push(key.render());
        Ok(())
    }
    async fn admit(&self, key: &SessionKey, open: bool) -> Result<(), StorageError> {
        self.admitted.borrow_mut().push((key.render(), open));
        Ok(())
    }

    async fn post(
        &self,
        req: &crate::protocol::session::PostRequest,
    ) -> Result<crate::protocol::session::PostReply, StorageError> {
        self.posts.borrow_mut().push(req.clone());
        Ok(crate::protocol::session::PostReply { queued: true, target: None })
    }
}

pub(in crate::agent) struct Runtime {
    sql: Rc<MemSql>,
    pub(in crate::agent) store: Rc<MemStore>,
    vars: HashMap<String, String>,
    pub(in crate::agent) queue: Queue,
    wakes: Cell<u32>,
    uuids: Cell<u64>,
    wake_ats: RefCell<Vec<i64>>,
    pub(in crate::agent) now: Rc<Cell<i64>>,
    pub(in crate::agent) http: crate::testing::ScriptedHttp,
}

impl AgentRuntime for Runtime {
    type Sql = MemSql;
    type Store = Rc<MemStore>;
    type Vars = HashMap<String, String>;
    type Queue = Queue;
    type Http = crate::testing::ScriptedHttp;
    fn http(&self) -> &crate::testing::ScriptedHttp {
        &self.http
    }
    fn sql(&self) -> &Rc<MemSql> {
        &self.sql
    }
    fn store(&self) -> Result<Rc<MemStore>, StorageError> {
        Ok(self.store.clone())
    }
    fn vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn queue(&self) -> &Queue {
        &self.queue
    }
    async fn wake(&self) -> Result<(), StorageError> {
        self.wakes.set(self.wakes.get() + 1);
        Ok(())
    }
    async fn wake_at(&self, at_ms: i64) -> Result<(), StorageError> {
        self.wake_ats.borrow_mut().push(at_ms);
        Ok(())
    }
    async fn sleep(&self, _: u64) {}
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    fn new_uuid(&self) -> String {
        let n = self.now.get() as u64 ^ (self.queue.queued.borrow().len() as u64) ^ self.uuids.get();
        self.uuids.set(self.uuids.get().wrapping_add(0x9E37_79B9_7F4A_7C15));
        format!("{:016x}{:016x}", n.wrapping_mul(0x2545_F491_4F6C_DD1D), self.uuids.get())
    }
    fn clock(&self) -> Box<dyn Fn() -> i64> {
        let now = self.now.clone();
        Box::new(move || now.get())
    }
    fn log(&self, _: LogLevel, _: &str) {}
}

/// A memory call through the object's route, as a Session sends it: the
/// status and the JSON answer.
pub(in crate::agent) fn memory(h: &AgentHost<Runtime>, call: &serde_json::Value) -> (u16, serde_json::Value) {
    let req = Incoming::post(crate::protocol::memory::CALL_PATH, call.to_string()).with_query("agent", "main");
    let answer = block_on(crate::agent::serve::serve(h, &req, &TestStreams::default())).answer().unwrap();
    (answer.status, hearth_json::from_slice(&answer.body).unwrap())
}

pub(in crate::agent) fn host(vars: &[(&str, &str)]) -> AgentHost<Runtime> {
    AgentHost::new(Runtime {
        sql: Rc::new(MemSql::default()),
        store: Rc::new(MemStore::default()),
        vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        queue: Queue::default(),
        wakes: Cell::new(0),
        uuids: Cell::new(1),
        wake_ats: RefCell::default(),
        now: Rc::new(Cell::new(1_773_543_600_000)),
        http: Default::default(),
    })
}

#[test]
fn the_mcp_catalog_is_the_agents_own_with_its_own_secrets() {
    use crate::protocol::mcp::McpToolsRequest;
    let h = host(&[("AGENTS", "main,work"), ("TOKEN", "shared"), ("TOKEN__WORK", "work-only")]);
    let store = h.runtime().store.clone();
    store.put_text(
        "agents/work/mcp.json",
        r#"{"mcpServers": {"s": {"url": "https://s.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}"#,
    );
    let refused = block_on(h.mcp_catalog(&McpToolsRequest { agent: "nobody".into() }, false)).unwrap_err();
    assert_eq!(refused.status, 404);
    let main = block_on(h.mcp_catalog(&McpToolsRequest { agent: "main".into() }, false)).unwrap();
    assert!(main.servers.is_empty(), "main has no mcp.json");
    // The server is down: the listing fails, but with the agent's own secret.
    h.runtime().http.responses.borrow_mut().push_back(Err(crate::ports::HttpError::Network("refused".into())));
    let work = block_on(h.mcp_catalog(&McpToolsRequest { agent: "work".into() }, false)).unwrap();
    assert_eq!(work.listed_now, 1);
    let sent = h.runtime().http.requests.borrow();
    assert!(sent[0].headers.contains(&("Authorization".into(), "Bearer work-only".into())), "{:?}", sent[0].headers);
    // The admin view lists nothing.
    drop(sent);
    let cached = block_on(h.mcp_catalog(&McpToolsRequest { agent: "work".into() }, true)).unwrap();
    assert_eq!((cached.listed_now, h.runtime().http.requests.borrow().len()), (0, 1));
}

#[test]
fn sessions_register_and_list() {
    let h = host(&[]);
    let touch = SessionTouch {
        session_key: SessionKey::parse("agent:main:main").unwrap(),
        session_id: Some("s1".into()),
        updated_at: Some(5),
        title: None,
        last: None,
    };
    h.touch(&touch).unwrap();
    h.touch(&touch).unwrap();
    let list = h.sessions().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].key().map(|k| k.render()).as_deref(), Some("agent:main:main"));
}

#[test]
fn pins_without_a_template_pin_nothing_and_refuse_accepts() {
    let h = host(&[]);
    let req = PinsRequest { agent: "main".into(), ..Default::default() };
    assert!(matches!(block_on(h.pins(PinsCall::Get, &req)).unwrap(), PinsAnswer::Pins(p) if p.files.is_empty()));
    let accept = PinsRequest { file: Some("GUARDRAILS.md".into()), ..req.clone() };
    assert_eq!(block_on(h.pins(PinsCall::Accept, &accept)).unwrap_err().status, 409);
    let stranger = PinsRequest { agent: "other".into(), ..Default::default() };
    assert_eq!(block_on(h.pins(PinsCall::Get, &stranger)).unwrap_err().status, 404);
}

#[test]
fn a_tick_is_recorded_woken_and_run_by_the_alarm() {
    let h = host(&[("OWNER_IDS", "telegram:1"), ("HEARTBEAT_ACTIVE_HOURS", "00:00-23:59")]);
    h.runtime().store.put_text("agents/main/HEARTBEAT.md", "- [ ] water the plants\n");
    assert!(block_on(h.schedule_status()).unwrap().is_none(), "no trigger yet");
    let at = h.runtime().now.get();
    assert_eq!(block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: at })).unwrap().pending, at);
    assert_eq!(h.runtime().wakes.get(), 1);
    assert_eq!(block_on(h.alarm()).unwrap(), TicksRun::Ran { ticks: 1, more: false });
    let queued = h.runtime().queue.queued.borrow();
    assert_eq!(queued.len(), 1, "one heartbeat run queued");
    assert_eq!(queued[0].0, "agent:main:heartbeat");
    drop(queued);
    let status = block_on(h.schedule_status()).unwrap().expect("a view");
    assert_eq!(status.last_processed_tick, Some(at));
}

#[test]
fn the_alarm_fires_due_reminders_beside_the_ticks_and_is_set_for_the_next() {
    use crate::protocol::reminders::{Reminder, ReminderCall};
    use crate::protocol::session::PostMode;
    let h = host(&[("OWNER_IDS", "telegram:1"), ("HEARTBEAT_ENABLED", "false"), ("REMINDERS_MAX", "5")]);
    let now = h.runtime().now.get();
    let set = |text: &str, at: i64| {
        let reminder = Reminder {
            session_key: "agent:main:main".into(),
            target: Some(crate::inbound::ReplyTarget {
                channel: crate::inbound::ChannelKind::Telegram,
                chat_id: "1".into(),
                ..Default::default()
            }),
            chat: "your private chat".into(),
            text: text.into(),
            mode: PostMode::Say,
            next_at: Some(at),
            timezone: "UTC".into(),
            ..Default::default()
        };
        block_on(h.reminders(&ReminderCall::set("main", reminder))).unwrap()
    };
    assert_eq!(set("soon", now + 60_000).reminders[0].id, "r1");
    set("later", now + 3_600_000);
    // Each sets the alarm for its time (the runtime keeps the earlier).
    assert_eq!(h.runtime().wake_ats.borrow().as_slice(), [now + 60_000, now + 3_600_000]);
    // A tick is pending too: one alarm does both.
    block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: now })).unwrap();
    h.runtime().now.set(now + 60_000);
    assert_eq!(block_on(h.alarm()).unwrap(), TicksRun::Ran { ticks: 1, more: false });
    let posts = h.runtime().queue.posts.borrow().clone();
    assert_eq!(posts.len(), 1);
    assert_eq!(
        (posts[0].id.as_str(), posts[0].text.as_str()),
        (format!("reminder:r1:{}", now + 60_000).as_str(), "⏰ soon")
    );
    assert_eq!(h.runtime().wake_ats.borrow().last(), Some(&(now + 3_600_000)), "then set for the next");
    // The same alarm again (a retry, a redelivery): nothing more.
    block_on(h.alarm()).unwrap();
    assert_eq!(h.runtime().queue.posts.borrow().len(), 1);
    let listed = block_on(h.reminders(&ReminderCall::list("main", None))).unwrap();
    assert_eq!((listed.matched, listed.pending, listed.limit), (1, 1, 5));
}

#[test]
fn the_nightly_tick_dreams_once_with_one_llm_call() {
    let day = 86_400_000;
    // 2026-04-23 03:00 UTC, the default DREAM_AT.
    let night = 1_776_913_200_000;
    let h = host(&[("OWNER_IDS", "telegram:1"), ("HEARTBEAT_ENABLED", "false"), ("LLM_API_KEY", "k")]);
    let add = json!({"call": "op", "store": "main", "op": {"op": "add", "name": "tz", "content": "Olga's time zone is America/Bogota", "kind": "note", "created_at": 1}});
    memory(&h, &add);
    for (d, q) in [(3, "Olga's time zone"), (2, "America Bogota"), (1, "bogota time zone")] {
        h.runtime().now.set(night - d * day);
        let search = json!({"call": "search", "store": "main", "query": q, "k": 5, "record": true});
        assert_eq!(memory(&h, &search).0, 200);
    }
    let answer = json!({"decisions": [{"id": 1, "promote": true, "fact": "Olga's time zone is America/Bogota"}]});
    h.runtime().http.push_json(
        200,
        json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-test",
               "content": [{"type": "text", "text": answer.to_string()}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 300, "output_tokens": 40}}),
    );
    let tick = |at: i64| {
        h.runtime().now.set(at);
        block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: at })).unwrap();
        block_on(h.alarm()).unwrap();
    };
    tick(night);
    tick(night + 5 * 60_000);
    tick(night + day - 60_000); // 02:59 the next night: still the same night's slot
    assert_eq!(h.runtime().http.requests.borrow().len(), 1, "one LLM call, once per night");
    let memory = h.runtime().store.objects.borrow().get("agents/main/MEMORY.md").map(|o| o.body.clone()).unwrap();
    let memory = String::from_utf8(memory).unwrap();
    assert!(memory.starts_with("## Dreamed 2026-04-23 03:00 UTC\n- Olga's time zone is America/Bogota _(score="));
    // my_stats' figures come from the sweep; the tokens are in the schedule's ledger.
    let (_, stats) = super::tests::memory(&h, &json!({"call": "stats", "store": "main"}));
    assert_eq!(
        (stats["stats"]["memories_promoted"].as_u64(), stats["stats"]["last_dream_ts"].as_i64()),
        (Some(1), Some(night))
    );
    let status = block_on(h.schedule_status()).unwrap().unwrap();
    assert_eq!((status.tokens.dreaming.runs, status.tokens.dreaming.usage.total_tokens), (1, 340));
    let usage = h.usage_report("main", "all", None).unwrap();
    assert_eq!((usage.by_kind["dreaming"].calls, usage.by_kind["dreaming"].tokens), (1, 340), "its own kind");
    let view = h.dream_status("main").unwrap();
    assert_eq!(view["last"]["outcome"], "done");
    assert_eq!(view["memoriesPromoted"], 1);
    // The next night: nothing new, no call.
    tick(night + day);
    assert_eq!(h.runtime().http.requests.borrow().len(), 1);
    assert_eq!(h.dream_status("main").unwrap()["last"]["outcome"], "nothingNew");
}

/// A call of `tokens` fresh input tokens of model `m`.
fn call(
    thread: &str,
    seq: i64,
    at: i64,
    kind: crate::protocol::usage::UsageKind,
    tokens: u64,
) -> crate::protocol::usage::CallRecord {
    crate::protocol::usage::CallRecord {
        thread: thread.into(),
        session_id: "s".into(),
        seq,
        at,
        kind,
        model: "m".into(),
        input: tokens,
        output: 0,
        cache_read: 0,
        cache_write: 0,
        cache_write_1h: 0,
    }
}

const FLAT: &str = r#"{"m": {"input": 1, "output": 1}}"#;

#[test]
fn sessions_meter_through_the_agents_ledger_and_bad_reports_are_refused() {
    use crate::protocol::usage::{MeterRequest, UsageKind};
    let h = host(&[("LLM_PRICES", FLAT), ("TIMEZONE", "Europe/Paris")]);
    let now = h.runtime().now.get();
    let req = MeterRequest {
        agent: "main".into(),
        settle: vec![call("agent:main:main", 1, now, UsageKind::Conversation, 500_000)],
        summary: true,
        ..Default::default()
    };
    let reply = h.meter(&req).unwrap();
    assert_eq!(reply.settled, 1);
    assert_eq!(reply.summary.unwrap().today.total_cost, 0.5);
    let r = h.usage_report("main", "today", None).unwrap();
    assert_eq!((r.calls, r.timezone.as_str()), (1, "Europe/Paris"));
    assert_eq!(h.usage_report("main", "all", Some("main")).unwrap().thread.as_deref(), Some("agent:main:main"));
    assert_eq!(h.usage_report("main", "yesterday", None).unwrap_err().status, 400);
    assert_eq!(h.usage_report("main", "all", Some("agent:other:main")).unwrap_err().status, 400);
    assert_eq!(h.usage_report("nobody", "all", None).unwrap_err().status, 404);
    assert_eq!(h.meter(&MeterRequest { agent: "nobody".into(), ..Default::default() }).unwrap_err().status, 404);
    let broken = host(&[("BUDGET_DAILY_USD", "lots")]);
    let e = broken.usage_report("main", "all", None).unwrap_err();
    assert!(e.status == 500 && e.message.contains("BUDGET_DAILY_USD"), "{e:?}");
}

#[test]
fn dreaming_keeps_to_the_background_share_and_is_recorded_as_its_own_kind() {
    use crate::protocol::usage::{Decision, UsageKind};
    let h = host(&[("LLM_PRICES", FLAT), ("BUDGET_DAILY_USD", "1")]);
    let now = h.runtime().now.get();
    let Decision::Go { reservation, .. } = h.reserve_call("main", UsageKind::Dreaming, "m", 1_000, 100).unwrap() else {
        panic!("room for it")
    };
    let notice = h
        .settle_call("main", call("agent:main:dreaming", now, now, UsageKind::Dreaming, 850_000), reservation)
        .unwrap();
    assert!(notice.is_some_and(|n| n.contains("85% of my daily budget")), "the owner's warning comes back to send");
    let r = h.usage_report("main", "today", None).unwrap();
    assert_eq!(r.by_kind["dreaming"].cost, Some(0.85));
    // At 90 %: dreaming is skipped, conversations still go.
    h.settle_call("main", call("agent:main:main", 2, now, UsageKind::Conversation, 60_000), 0).unwrap();
    assert!(
        matches!(h.reserve_call("main", UsageKind::Dreaming, "m", 1_000, 100).unwrap(), Decision::Stop(s) if s.background)
    );
    assert!(matches!(h.reserve_call("main", UsageKind::Conversation, "m", 1_000, 100).unwrap(), Decision::Go { .. }));
}

#[test]
fn a_tick_wakes_the_sessions_a_limit_held_once_the_period_turned() {
    use crate::protocol::usage::{Decision, MeterRequest, Reserve, UsageKind};
    let h = host(&[("LLM_PRICES", FLAT), ("BUDGET_DAILY_USD", "0.1")]);
    let now = h.runtime().now.get();
    let spent = MeterRequest {
        agent: "main".into(),
        settle: vec![call("agent:main:telegram:dm:5", 1, now, UsageKind::Conversation, 100_000)],
        ..Default::default()
    };
    h.meter(&spent).unwrap();
    let ask = MeterRequest {
        agent: "main".into(),
        reserve: Some(Reserve {
            thread: "agent:main:telegram:dm:5".into(),
            kind: UsageKind::Conversation,
            model: "m".into(),
            prompt_tokens: 10,
            max_output_tokens: 10,
        }),
        ..Default::default()
    };
    assert!(matches!(h.meter(&ask).unwrap().decision, Some(Decision::Stop(_))));
    let tick = |at: i64| block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: at })).unwrap();
    tick(now);
    assert!(h.runtime().queue.woken.borrow().is_empty(), "still the same day");
    h.runtime().now.set(now + 24 * 3_600_000);
    tick(now + 24 * 3_600_000);
    assert_eq!(*h.runtime().queue.woken.borrow(), ["agent:main:telegram:dm:5"]);
    tick(now + 24 * 3_600_000 + 300_000);
    assert_eq!(h.runtime().queue.woken.borrow().len(), 1, "woken once");
}

#[test]
fn the_sweep_is_skipped_when_the_budgets_background_share_is_spent() {
    use crate::protocol::usage::UsageKind;
    let day = 86_400_000;
    let night = 1_776_913_200_000;
    let h = host(&[("LLM_PRICES", FLAT), ("BUDGET_DAILY_USD", "1"), ("HEARTBEAT_ENABLED", "false")]);
    let add = json!({"call": "op", "store": "main", "op": {"op": "add", "name": "tz", "content": "Olga's time zone is America/Bogota", "kind": "note", "created_at": 1}});
    memory(&h, &add);
    for (d, q) in [(3, "Olga's time zone"), (2, "America Bogota"), (1, "bogota time zone")] {
        h.runtime().now.set(night - d * day);
        let search = json!({"call": "search", "store": "main", "query": q, "k": 5, "record": true});
        memory(&h, &search);
    }
    h.runtime().now.set(night);
    // 95 % of today's budget is spent by conversations: background work stops at 90 %.
    h.settle_call("main", call("agent:main:main", 1, night, UsageKind::Conversation, 950_000), 0).unwrap();
    block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: night })).unwrap();
    block_on(h.alarm()).unwrap();
    assert!(h.runtime().http.requests.borrow().is_empty(), "no LLM call");
    let view = h.dream_status("main").unwrap();
    assert_eq!(view["last"]["outcome"], "skippedBudget");
    assert!(view["last"]["note"].as_str().unwrap().contains("BUDGET_BACKGROUND_PERCENT"), "{view}");
}

#[test]
fn the_history_is_cleaned_daily_even_when_the_agent_does_not_dream() {
    use crate::workspace::history::{self, Actor, Edit};
    let day = 86_400_000;
    for vars in [
        &[("DREAMING", "off"), ("HEARTBEAT_ENABLED", "false")][..],
        // Approval asked for, but no Telegram owner: no sweep, still the clean-up.
        &[("DREAM_APPROVAL", "telegram"), ("HEARTBEAT_ENABLED", "false")][..],
    ] {
        let h = host(vars);
        let store = h.runtime().store.clone();
        let agent = r2_layout::AgentId::parse("main").unwrap();
        let now = h.runtime().now.get();
        for text in ["v1", "v2"] {
            block_on(history::apply(&*store, &agent, Edit::write("SOUL.md", text, Actor::Agent, "w"), now, 50))
                .unwrap();
        }
        let blob = |text: &str| format!("history/main/blobs/{}", crate::text::sha256_hex(text.as_bytes()));
        // A blob no kept change names (its records were pruned), stored long ago.
        store.put_text(&blob("orphan"), "orphan");
        let tick = |at: i64| {
            h.runtime().now.set(at);
            block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: at })).unwrap();
            block_on(h.alarm()).unwrap();
        };
        tick(now);
        let has = |key: &str| store.objects.borrow().contains_key(key);
        assert!(!has(&blob("orphan")), "the orphan is deleted ({vars:?})");
        assert!(has(&blob("v1")) && has(&blob("v2")), "what a kept change names stays");
        // Once a day: a later tick the same day leaves a new orphan alone; the next day takes it.
        store.put_text(&blob("orphan 2"), "orphan 2");
        tick(now + 5 * 60_000);
        assert!(has(&blob("orphan 2")), "once a day");
        tick(now + day);
        assert!(!has(&blob("orphan 2")), "the next day");
    }
}

#[test]
fn the_history_clean_up_runs_once_per_day_of_the_agents_time_zone() {
    // 23:30 in Tokyo on the 15th (14:30 UTC), then four more ticks.
    let h = host(&[("DREAMING", "off"), ("HEARTBEAT_ENABLED", "false"), ("TIMEZONE", "Asia/Tokyo")]);
    let store = h.runtime().store.clone();
    let at = |iso: &str| iso.parse::<jiff::Timestamp>().unwrap().as_millisecond();
    let blob = |text: &str| format!("history/main/blobs/{}", crate::text::sha256_hex(text.as_bytes()));
    let has = |key: &str| store.objects.borrow().contains_key(key);
    let tick = |iso: &str| {
        let t = at(iso);
        h.runtime().now.set(t);
        block_on(h.tick(&TickRequest { agent: "main".into(), scheduled_time: t })).unwrap();
        block_on(h.alarm()).unwrap();
    };
    store.put_text(&blob("a"), "a");
    tick("2026-03-15T14:30:00Z");
    assert!(!has(&blob("a")), "the 15th in Tokyo: cleaned");
    store.put_text(&blob("b"), "b");
    tick("2026-03-15T15:10:00Z");
    assert!(!has(&blob("b")), "00:10 on the 16th in Tokyo (still the 15th in UTC): a new day, cleaned");
    store.put_text(&blob("c"), "c");
    tick("2026-03-16T00:10:00Z");
    assert!(has(&blob("c")), "09:10 on the 16th in Tokyo (a new UTC day): the same local day, left for tomorrow");
    tick("2026-03-16T15:05:00Z");
    assert!(!has(&blob("c")), "the 17th in Tokyo");
}

mod session_start {
    use super::*;
    use crate::protocol::workspace::{SessionStartRequest, WorkspaceSnapshot};

    fn start(key: &str, workspace: bool, mcp: bool) -> SessionStartRequest {
        SessionStartRequest {
            session_key: SessionKey::parse(key).unwrap(),
            today: "2026-03-15".into(),
            yesterday: "2026-03-14".into(),
            workspace,
            mcp,
        }
    }

    fn texts(snap: &WorkspaceSnapshot) -> String {
        serde_json::to_string(snap).unwrap()
    }

    fn seeded() -> AgentHost<Runtime> {
        let h = host(&[("AGENTS", "main")]);
        let s = &h.runtime().store;
        s.put_text("agents/main/SOUL.md", "SOUL-TEXT");
        s.put_text("agents/main/USER.md", "PRIVATE-USER");
        s.put_text("agents/main/MEMORY.md", "PRIVATE-MEMORY");
        s.put_text("agents/main/memory/2026-03-15.md", "PRIVATE-TODAY");
        s.put_text("_catalog/defaults/workspace/AGENTS.md", "DEFAULT-AGENTS");
        s.put_text("skills/tidy/SKILL.md", "---\nname: tidy\ndescription: Tidies.\n---\nBody");
        h
    }

    #[test]
    fn a_session_gets_what_its_scope_may_see_in_one_call() {
        let h = seeded();
        let main = block_on(h.session_start(&start("agent:main:main", true, true))).unwrap();
        let all = texts(main.workspace.as_ref().unwrap());
        for t in ["SOUL-TEXT", "PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-TODAY", "DEFAULT-AGENTS", "Tidies."] {
            assert!(all.contains(t), "{t}");
        }
        let catalog = main.mcp.unwrap();
        assert!(catalog.servers.is_empty() && catalog.config_error.is_none());
        // Listings (root, defaults, both skill folders, notes) and the files;
        // no mcp.json read: the root listing said there is none.
        assert_eq!(main.r2_ops, 5 + 6);
        assert_eq!(h.runtime().store.ops_matching("agents/main/mcp.json"), 0);
        // A friend's DM, a moment later: the root listed again, nothing read, nothing private.
        let dm = block_on(h.session_start(&start("agent:main:telegram:dm:7", true, false))).unwrap();
        assert_eq!(dm.r2_ops, 1);
        assert!(dm.mcp.is_none());
        let shared = texts(dm.workspace.as_ref().unwrap());
        for t in ["PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-TODAY", "agents/main/memory/"] {
            assert!(!shared.contains(t), "{t} left for a shared session");
        }
        assert!(shared.contains("SOUL-TEXT") && shared.contains("Tidies."));
        // The owner's cache kept its notes meanwhile.
        let again = block_on(h.session_start(&start("agent:main:heartbeat", true, false))).unwrap();
        assert_eq!(again.r2_ops, 1);
        assert!(texts(again.workspace.as_ref().unwrap()).contains("PRIVATE-TODAY"));
        assert_eq!(block_on(h.session_start(&start("agent:other:main", true, false))).unwrap_err().status, 404);
    }

    #[test]
    fn an_evicted_agent_object_reads_nothing_unchanged_again() {
        let h = seeded();
        block_on(h.session_start(&start("agent:main:main", true, false))).unwrap();
        // Evicted: a new host on the same SQLite.
        let woken = AgentHost::new(Runtime {
            sql: h.runtime().sql.clone(),
            store: h.runtime().store.clone(),
            vars: h.runtime().vars.clone(),
            queue: Queue::default(),
            wakes: Cell::new(0),
            uuids: Cell::new(7),
            wake_ats: RefCell::default(),
            now: Rc::new(Cell::new(h.runtime().now.get() + 10_000)),
            http: Default::default(),
        });
        let reply = block_on(woken.session_start(&start("agent:main:main", true, false))).unwrap();
        assert_eq!(reply.r2_ops, 1, "within the TTLs: the root listing only");
        assert!(texts(reply.workspace.as_ref().unwrap()).contains("PRIVATE-TODAY"));
        // Past every TTL, and SOUL.md edited from outside: the listings and that file.
        woken.runtime().now.set(woken.runtime().now.get() + 10 * 60_000);
        woken.runtime().store.put_text("agents/main/SOUL.md", "SOUL-EDITED");
        let reply = block_on(woken.session_start(&start("agent:main:main", true, false))).unwrap();
        assert_eq!(reply.r2_ops, 5 + 1);
        assert!(texts(reply.workspace.as_ref().unwrap()).contains("SOUL-EDITED"));
    }
}
