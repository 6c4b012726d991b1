//! The sweep against in-memory doubles: evidence made by real searches, a
//! scripted model, the in-memory bucket.

use super::approval::{self, Tap, TapContext, Telegram};
use super::state::DreamStore;
use super::sweep::{night, Night, Outcome, Report};
use super::*;
use crate::memory::{HubHost, MemoryHub};
use crate::protocol::memory::{MemoryCall, MemoryReply};
use crate::settings::dreaming::{DreamConfig, DEFAULT_GATES};
use crate::testing::{MemSql, MemStore, ScriptedHttp};
use crate::workspace::history::{self, Actor};
use futures::executor::block_on;
use hearth_memory::{Kind, Op};
use r2_layout::AgentId;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

const DAY: i64 = 86_400_000;
/// 2026-04-23 03:00 UTC.
const NIGHT: i64 = 1_776_913_200_000;

struct Clock(Rc<Cell<i64>>);
impl HubHost for Clock {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
    fn sessions_total(&self) -> Option<u64> {
        None
    }
}

struct Host {
    store: MemStore,
    sql: Rc<MemSql>,
    hub: RefCell<MemoryHub<MemSql>>,
    now: Rc<Cell<i64>>,
    answers: RefCell<VecDeque<Result<String, String>>>,
    calls: RefCell<Vec<String>>,
    permit: RefCell<Permit>,
    settled: RefCell<Vec<u64>>,
    /// Runs while the model "thinks" (a change made during the sweep).
    during_call: RefCell<Option<DuringCall>>,
}

type DuringCall = Box<dyn Fn(&MemStore)>;

impl Host {
    fn new() -> Self {
        let sql = Rc::new(MemSql::default());
        let now = Rc::new(Cell::new(NIGHT - 3 * DAY));
        Host {
            store: MemStore::default(),
            hub: RefCell::new(MemoryHub::new(sql.clone()).with_host(Box::new(Clock(now.clone())))),
            sql,
            now,
            answers: RefCell::default(),
            calls: RefCell::default(),
            permit: RefCell::new(Permit::Go(7)),
            settled: RefCell::default(),
            during_call: RefCell::default(),
        }
    }

    fn note(&self, name: &str, content: &str) {
        let op = Op::Add { name: name.into(), content: content.into(), kind: Kind::Note, created_at: 1 };
        self.hub.borrow_mut().call(MemoryCall::Op { store: "main".into(), op }).unwrap();
    }

    /// The agent's `memory_search` for `query` at `at`.
    fn search(&self, query: &str, at: i64) -> usize {
        self.now.set(at);
        let call = MemoryCall::Search { store: "main".into(), query: query.into(), k: 5, kind: None, record: true };
        match self.hub.borrow_mut().call(call).unwrap() {
            MemoryReply::Hits { hits } => hits.len(),
            other => panic!("{other:?}"),
        }
    }

    fn answer(&self, text: serde_json::Value) {
        self.answers.borrow_mut().push_back(Ok(text.to_string()));
    }

    fn text(&self, path: &str) -> Option<String> {
        self.store.objects.borrow().get(&format!("agents/main/{path}")).map(|o| String::from_utf8_lossy(&o.body).into())
    }

    fn run(&self, cfg: &DreamConfig, at: i64) -> Option<Report> {
        self.now.set(at);
        let agent = AgentId::parse("main").unwrap();
        block_on(night(self, &Night { cfg, agent: &agent, template: None, keep: 50, now: at })).unwrap()
    }

    fn dreams(&self) -> DreamStore<'_, MemSql> {
        DreamStore::new(&*self.sql)
    }
}

impl DreamHost for Host {
    type Store = MemStore;
    type Sql = MemSql;
    fn store(&self) -> &MemStore {
        &self.store
    }
    fn sql(&self) -> &MemSql {
        &self.sql
    }
    fn select(
        &self,
        memory_md: &str,
        gates: &hearth_memory::promote::Thresholds,
        settled: &std::collections::HashSet<(u64, u64)>,
    ) -> Result<Picked, String> {
        pick(&mut self.hub.borrow_mut(), memory_md, gates, settled)
    }
    async fn complete(&self, system: &str, user: &str, _max: u32) -> Result<Completion, String> {
        assert!(system.contains("MEMORY.md"));
        self.calls.borrow_mut().push(user.to_owned());
        if let Some(f) = self.during_call.borrow().as_ref() {
            f(&self.store);
        }
        let text = self.answers.borrow_mut().pop_front().unwrap_or_else(|| Err("no scripted answer".into()))?;
        Ok(Completion { text, usage: r2_layout::Usage::new(300, 40, 0, 0), model: "m".into() })
    }
    fn reserve(&self, _prompt: u64, _out: u64) -> Permit {
        self.permit.borrow().clone()
    }
    fn settle(&self, reservation: u64, _c: &Completion, _at: i64) {
        self.settled.borrow_mut().push(reservation);
    }
    fn log(&self, _: crate::ports::LogLevel, _: &str) {}
}

fn cfg() -> DreamConfig {
    DreamConfig {
        enabled: true,
        at: (3, 0),
        timezone: "UTC".into(),
        gates: DEFAULT_GATES,
        approval: false,
        approval_hours: 24,
    }
}

/// Three days of searches that keep finding the time zone note (and once the cat).
fn used(h: &Host) {
    h.note("tz", "Olga's time zone is America/Bogota (she moved in March)");
    h.note("cat", "The cat is called Miso");
    h.note("plumber", "The plumber's number is 555-0100");
    for (d, q) in [(3, "Olga's time zone"), (2, "America Bogota"), (1, "moved in March")] {
        assert_eq!(h.search(q, NIGHT - d * DAY + 3_600_000), 1, "{q}");
    }
    h.search("miso", NIGHT - DAY);
}

fn promote_tz(h: &Host) {
    let id = match h.hub.borrow_mut().call(MemoryCall::Get { store: "main".into(), name: "tz".into(), record: false }) {
        Ok(MemoryReply::Entry { entry: Some(e) }) => e.id,
        other => panic!("{other:?}"),
    };
    h.answer(json!({"decisions": [{"id": id, "promote": true, "fact": "Olga's time zone is America/Bogota"}]}));
}

#[test]
fn a_sweep_promotes_what_kept_coming_up_once_per_night() {
    let h = Host::new();
    h.store.put_text("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n");
    used(&h);
    promote_tz(&h);
    let r = h.run(&cfg(), NIGHT + 60_000).expect("tonight's sweep");
    assert_eq!((r.outcome.clone(), r.llm_calls), (Outcome::Done, 1));
    assert_eq!(h.calls.borrow().len(), 1);
    let sent = &h.calls.borrow()[0];
    assert!(sent.contains("America/Bogota") && !sent.contains("Miso"), "only the candidate: {sent}");
    let memory = h.text("MEMORY.md").unwrap();
    assert!(memory.starts_with("## People\n- Luis prefers Spanish.\n\n## Dreamed 2026-04-23 03:01 UTC\n"), "{memory}");
    assert!(memory.contains("- Olga's time zone is America/Bogota _(score="), "{memory}");
    assert!(memory.ends_with(", hits=3, days=3)_\n"), "{memory}");
    let diary = h.text("DREAMS.md").unwrap();
    assert!(diary.contains("## 2026-04-23 03:01 UTC") && diary.contains("✅ Promoted \"Olga's time zone"), "{diary}");
    assert_eq!(h.dreams().promoted_total().unwrap(), 1);
    assert_eq!(h.dreams().last_dream_ts().unwrap(), Some(NIGHT + 60_000));
    assert_eq!(*h.settled.borrow(), vec![7], "the reservation is given back");
    // The change is in the workspace history, by dreaming.
    let agent = AgentId::parse("main").unwrap();
    let v = block_on(history::view::versions(&h.store, &agent, "MEMORY.md", 5)).unwrap();
    assert_eq!((v.len(), v[0].actor), (1, Actor::Dreaming));
    // A repeated tick the same night: nothing runs.
    assert!(h.run(&cfg(), NIGHT + 5 * 60_000).is_none());
    assert!(h.run(&cfg(), NIGHT + 20 * 3_600_000).is_none());
    // The next night: the fact is settled, nothing new, no call.
    let r = h.run(&cfg(), NIGHT + DAY).unwrap();
    assert_eq!((r.outcome, r.llm_calls, h.calls.borrow().len()), (Outcome::NothingNew, 0, 1));
}

#[test]
fn a_night_with_nothing_new_makes_no_call_and_writes_nothing() {
    let h = Host::new();
    h.note("cat", "The cat is called Miso");
    h.search("miso", NIGHT - DAY);
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!((r.outcome, r.llm_calls), (Outcome::NothingNew, 0));
    assert!(h.calls.borrow().is_empty());
    assert!(h.text("MEMORY.md").is_none() && h.text("DREAMS.md").is_none());
    assert!(!h.store.ops.borrow().iter().any(|o| o.starts_with("put ")), "{:?}", h.store.ops.borrow());
    // Off: not even that.
    let off = DreamConfig { enabled: false, ..cfg() };
    assert!(h.run(&off, NIGHT + DAY).is_none());
}

#[test]
fn what_memory_md_already_says_is_no_candidate() {
    let h = Host::new();
    h.store.put_text("agents/main/MEMORY.md", "- Olga's time zone is America/Bogota (she moved in March)\n");
    used(&h);
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!((r.outcome, r.already_said), (Outcome::NothingNew, 1));
    assert!(h.calls.borrow().is_empty());
}

#[test]
fn rejections_are_remembered_and_written_down() {
    let h = Host::new();
    used(&h);
    h.answer(json!({"decisions": [{"id": 1, "promote": false, "reason": "she may move again"}]}));
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!(r.verdicts[0].verdict, "rejected");
    assert!(h.text("MEMORY.md").is_none(), "nothing promoted, nothing written");
    assert!(h.text("DREAMS.md").unwrap().contains("❌ Rejected `tz`: she may move again"));
    // More evidence the next days does not bring it back while the note is the same.
    h.search("olga bogota time", NIGHT + DAY / 2);
    assert_eq!(h.run(&cfg(), NIGHT + DAY).unwrap().outcome, Outcome::NothingNew);
    // A rewritten note is judged again.
    let op = Op::Write { name: "tz".into(), content: "Olga's time zone is Europe/Madrid now".into() };
    h.hub.borrow_mut().call(MemoryCall::Op { store: "main".into(), op }).unwrap();
    h.answer(json!({"decisions": []}));
    let r = h.run(&cfg(), NIGHT + 2 * DAY).unwrap();
    assert_eq!((r.llm_calls, r.verdicts[0].verdict), (1, "no_answer"));
}

#[test]
fn a_sweep_that_would_remove_a_line_is_refused() {
    let h = Host::new();
    h.store.put_text("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n");
    used(&h);
    promote_tz(&h);
    // While the model thinks, the owner adds a line to MEMORY.md.
    *h.during_call.borrow_mut() = Some(Box::new(|s: &MemStore| {
        s.put_text("agents/main/MEMORY.md", "## People\n- Luis prefers Spanish.\n- Ana uses a Samsung.\n")
    }));
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!(r.outcome, Outcome::Refused);
    assert_eq!(h.text("MEMORY.md").unwrap(), "## People\n- Luis prefers Spanish.\n- Ana uses a Samsung.\n");
    let diary = h.text("DREAMS.md").unwrap();
    assert!(diary.contains("**Refused**") && diary.contains("\"- Ana uses a Samsung.\""), "{diary}");
    assert_eq!(h.dreams().promoted_total().unwrap(), 0);
    // Nothing was settled: the next night it is a candidate again, and goes in.
    *h.during_call.borrow_mut() = None;
    promote_tz(&h);
    let r = h.run(&cfg(), NIGHT + DAY).unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert!(h.text("MEMORY.md").unwrap().contains("- Ana uses a Samsung.\n\n## Dreamed"));
}

#[test]
fn conflicts_are_reported_not_written() {
    let h = Host::new();
    h.store.put_text("agents/main/MEMORY.md", "- Olga lives in Lima.\n");
    used(&h);
    h.answer(json!({"decisions": [{"id": 1, "promote": false, "reason": "updates a line",
        "conflicts_with": "- Olga lives in Lima."}]}));
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!(r.verdicts[0].verdict, "conflict");
    assert_eq!(h.text("MEMORY.md").unwrap(), "- Olga lives in Lima.\n");
    assert!(h.text("DREAMS.md").unwrap().contains("never changes a MEMORY.md line"));
}

#[test]
fn a_full_memory_md_or_a_spent_budget_costs_no_call() {
    let h = Host::new();
    h.store.put_text("agents/main/MEMORY.md", &format!("- {}\n", "x".repeat(crate::prompt::MAX_FILE_CHARS - 10)));
    used(&h);
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!((r.outcome, r.llm_calls), (Outcome::MemoryFull, 0));
    let h = Host::new();
    used(&h);
    *h.permit.borrow_mut() = Permit::Skip("the daily budget's background share is spent".into());
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!((r.outcome, h.calls.borrow().len()), (Outcome::SkippedBudget, 0));
    assert!(r.note.unwrap().contains("background"));
}

#[test]
fn facts_that_would_pass_the_budget_wait() {
    let h = Host::new();
    let full = format!("- {}\n", "x".repeat(crate::prompt::MAX_FILE_CHARS - 120));
    h.store.put_text("agents/main/MEMORY.md", &full);
    used(&h);
    h.answer(json!({"decisions": [{"id": 1, "promote": true, "fact": "y".repeat(200)}]}));
    let r = h.run(&cfg(), NIGHT).unwrap();
    assert_eq!(r.verdicts[0].verdict, "no_room");
    assert_eq!(h.text("MEMORY.md").unwrap(), full, "MEMORY.md never grows past its budget");
}

fn tg() -> Telegram {
    let api = crate::channels::telegram::client::TelegramApi {
        base: "https://tg.test".into(),
        token: "T".into(),
        backoff: crate::retry::Backoff { attempts: 1, base_ms: 1, max_ms: 1 },
    };
    Telegram { api, owner: "4242".into() }
}

#[test]
fn with_approval_only_what_the_owner_approves_is_written() {
    let h = Host::new();
    used(&h);
    h.note("sister", "Olga's sister Ana lives in Lima and paints on Sundays");
    for (d, q) in [(3, "olga sister"), (2, "ana paints"), (1, "ana lima")] {
        h.search(q, NIGHT - d * DAY + 7_200_000);
    }
    h.answer(json!({"decisions": [
        {"id": 1, "promote": true, "fact": "Olga's time zone is America/Bogota"},
        {"id": 4, "promote": true, "fact": "Olga's sister Ana lives in Lima"}]}));
    let approve = DreamConfig { approval: true, ..cfg() };
    let r = h.run(&approve, NIGHT).unwrap();
    assert_eq!(r.verdicts.iter().filter(|v| v.verdict == "proposed").count(), 2, "{r:?}");
    assert!(h.text("MEMORY.md").is_none(), "nothing written before an answer");
    assert!(h.text("DREAMS.md").unwrap().contains("📨 Proposed to you on Telegram"));

    // Both go to the owner with two buttons each.
    let open = h.dreams().proposals_in("new").unwrap();
    let id_of = |needle: &str| open.iter().find(|p| p.fact.contains(needle)).unwrap().id;
    let (tz, sister) = (id_of("Bogota"), id_of("sister"));
    let http = ScriptedHttp::default();
    http.push_json(200, json!({"ok": true, "result": {"message_id": 501}}));
    http.push_json(200, json!({"ok": true, "result": {"message_id": 502}}));
    let log = |_: crate::ports::LogLevel, _: &str| {};
    assert_eq!(block_on(approval::send_new(&h.dreams(), &http, &tg(), &log)).unwrap(), 2);
    let first = http.request_json(0);
    assert_eq!(first["chat_id"], "4242");
    let buttons = &first["reply_markup"]["inline_keyboard"][0];
    assert_eq!(buttons[0]["callback_data"], format!("dream:{}:a", open[0].id));
    assert_eq!(buttons[1]["callback_data"], format!("dream:{}:r", open[0].id));
    assert!(first["text"].as_str().unwrap().contains(&open[0].fact));
    let mid = |id: i64| if id == open[0].id { 501 } else { 502 };

    let agent = AgentId::parse("main").unwrap();
    let telegram = tg();
    let cx =
        |now| TapContext { store: &h.store, io: &http, tg: &telegram, agent: &agent, template: None, keep: 50, now };
    let tap = |from: &str, id: i64, action: char| Tap {
        agent: "main".into(),
        channel: crate::inbound::ChannelKind::Telegram,
        respond_to: None,
        callback_id: "cb".into(),
        from: from.into(),
        data: format!("dream:{id}:{action}"),
        chat: Some("4242".into()),
        message_id: Some(mid(id)),
    };
    // A stranger's tap changes nothing.
    let o = block_on(approval::tap(&h.dreams(), &cx(NIGHT + 60_000), &tap("777", tz, 'a'), &log)).unwrap();
    assert!(o.note.contains("Only my owner") && o.state.is_none());
    // The owner approves the time zone, rejects the sister.
    let o = block_on(approval::tap(&h.dreams(), &cx(NIGHT + 60_000), &tap("4242", tz, 'a'), &log)).unwrap();
    assert_eq!(o.state.as_deref(), Some("approved"));
    let o = block_on(approval::tap(&h.dreams(), &cx(NIGHT + 90_000), &tap("4242", sister, 'r'), &log)).unwrap();
    assert_eq!(o.state.as_deref(), Some("rejected"));
    let memory = h.text("MEMORY.md").unwrap();
    assert!(memory.starts_with("## Dreamed 2026-04-23 03:00 UTC\n- Olga's time zone is America/Bogota _(score="));
    assert!(!memory.contains("sister"), "{memory}");
    assert_eq!(h.dreams().promoted_total().unwrap(), 1);
    // Telegram was answered and the buttons show the outcome.
    let methods: Vec<String> =
        http.requests.borrow().iter().map(|r| r.url.rsplit('/').next().unwrap().into()).collect();
    assert_eq!(
        methods,
        [
            "sendMessage",
            "sendMessage",
            "answerCallbackQuery",
            "answerCallbackQuery",
            "editMessageReplyMarkup",
            "answerCallbackQuery",
            "editMessageReplyMarkup"
        ]
    );
    assert_eq!(http.request_json(4)["reply_markup"]["inline_keyboard"][0][0]["text"], "✅ Approved: in MEMORY.md");
    // A second tap on an answered proposal changes nothing.
    let o = block_on(approval::tap(&h.dreams(), &cx(NIGHT + 99_000), &tap("4242", sister, 'a'), &log)).unwrap();
    assert_eq!(o.state.as_deref(), Some("rejected"));
    assert!(!h.text("MEMORY.md").unwrap().contains("sister"));

    // The rejected fact is not proposed again, even from another note saying it.
    h.note("ana", "Ana, Olga's sister, lives in Lima");
    for (d, q) in [(1, "ana sister lima"), (0, "where does ana live"), (0, "ana olga sister")] {
        h.search(q, NIGHT + d * DAY + 3_600_000);
    }
    h.answer(json!({"decisions": [{"id": 5, "promote": true, "fact": "Olga's sister Ana lives in Lima"}]}));
    let r = h.run(&approve, NIGHT + 2 * DAY).unwrap();
    let v = r.verdicts.iter().find(|v| v.entry == "ana").unwrap();
    assert_eq!(v.verdict, "rejected");
    assert!(v.reason.as_deref().unwrap().contains("refused"), "{v:?}");
}

#[test]
fn unanswered_proposals_expire() {
    let h = Host::new();
    used(&h);
    promote_tz(&h);
    let approve = DreamConfig { approval: true, approval_hours: 2, ..cfg() };
    h.run(&approve, NIGHT).unwrap();
    let http = ScriptedHttp::default();
    http.push_json(200, json!({"ok": true, "result": {"message_id": 9}}));
    http.push_json(200, json!({"ok": true, "result": true}));
    let log = |_: crate::ports::LogLevel, _: &str| {};
    block_on(approval::send_new(&h.dreams(), &http, &tg(), &log)).unwrap();
    assert_eq!(block_on(approval::expire(&h.dreams(), &http, Some(&tg()), NIGHT + 3_600_000, &log)).unwrap(), 0);
    assert_eq!(block_on(approval::expire(&h.dreams(), &http, Some(&tg()), NIGHT + 2 * 3_600_000, &log)).unwrap(), 1);
    assert_eq!(http.request_json(1)["reply_markup"]["inline_keyboard"][0][0]["text"], "⌛ Expired: not written");
    assert!(h.text("MEMORY.md").is_none());
    // An expired fact may come back another night (it was not refused).
    promote_tz(&h);
    let r = h.run(&approve, NIGHT + DAY).unwrap();
    assert_eq!(r.verdicts[0].verdict, "proposed");
}

/// Polls `fut` once (the in-memory bucket answers each operation after one poll).
fn poll_once<F: std::future::Future + ?Sized>(fut: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    let waker = futures::task::noop_waker();
    fut.poll(&mut std::task::Context::from_waker(&waker))
}

#[test]
fn two_overlapping_taps_on_approve_write_the_fact_once() {
    let h = Host::new();
    used(&h);
    promote_tz(&h);
    h.run(&DreamConfig { approval: true, ..cfg() }, NIGHT).unwrap();
    let id = h.dreams().proposals_in("new").unwrap()[0].id;
    let http = ScriptedHttp::default();
    let log = |_: crate::ports::LogLevel, _: &str| {};
    let agent = AgentId::parse("main").unwrap();
    let telegram = tg();
    let cx =
        TapContext { store: &h.store, io: &http, tg: &telegram, agent: &agent, template: None, keep: 50, now: NIGHT };
    let tap = Tap {
        agent: "main".into(),
        channel: crate::inbound::ChannelKind::Telegram,
        respond_to: None,
        callback_id: "cb".into(),
        from: "4242".into(),
        data: format!("dream:{id}:a"),
        chat: Some("4242".into()),
        message_id: Some(9),
    };
    // The first tap is slow: it has written MEMORY.md and records the change
    // when the second arrives (the owner tapped twice).
    h.store.pending_polls.set(1);
    let dreams = h.dreams();
    let mut first = Box::pin(approval::tap(&dreams, &cx, &tap, &log));
    while h.text("MEMORY.md").is_none() {
        assert!(poll_once(first.as_mut()).is_pending(), "the first tap still runs");
    }
    h.store.pending_polls.set(0);
    let second = block_on(approval::tap(&h.dreams(), &cx, &tap, &log)).unwrap();
    assert_ne!(second.state.as_deref(), Some("approved"), "the second tap does not approve it again: {second:?}");
    let first = block_on(first).unwrap();
    assert_eq!(first.state.as_deref(), Some("approved"));
    let memory = h.text("MEMORY.md").unwrap();
    assert_eq!(memory.matches("Olga's time zone is America/Bogota").count(), 1, "{memory}");
    assert_eq!(h.dreams().promoted_total().unwrap(), 1);
    // A tap after that says so, and writes nothing.
    let again = block_on(approval::tap(&h.dreams(), &cx, &tap, &log)).unwrap();
    assert!(again.note.contains("Already approved"), "{again:?}");
    assert_eq!(h.text("MEMORY.md").unwrap(), memory);
}

#[test]
fn an_approval_whose_write_fails_can_be_tapped_again() {
    let h = Host::new();
    used(&h);
    promote_tz(&h);
    h.run(&DreamConfig { approval: true, ..cfg() }, NIGHT).unwrap();
    let id = h.dreams().proposals_in("new").unwrap()[0].id;
    let http = ScriptedHttp::default();
    let log = |_: crate::ports::LogLevel, _: &str| {};
    let agent = AgentId::parse("main").unwrap();
    let telegram = tg();
    let cx =
        TapContext { store: &h.store, io: &http, tg: &telegram, agent: &agent, template: None, keep: 50, now: NIGHT };
    let tap = Tap {
        agent: "main".into(),
        channel: crate::inbound::ChannelKind::Telegram,
        respond_to: None,
        callback_id: "cb".into(),
        from: "4242".into(),
        data: format!("dream:{id}:a"),
        chat: None,
        message_id: None,
    };
    h.store.inject(crate::testing::Fault::once(crate::testing::StoreOp::Put, "agents/main/MEMORY.md"));
    assert!(block_on(approval::tap(&h.dreams(), &cx, &tap, &log)).is_err());
    assert_eq!(h.dreams().proposal(id).unwrap().unwrap().state, "new", "open again");
    let o = block_on(approval::tap(&h.dreams(), &cx, &tap, &log)).unwrap();
    assert_eq!(o.state.as_deref(), Some("approved"));
    assert_eq!(h.text("MEMORY.md").unwrap().matches("America/Bogota").count(), 1);
}

#[test]
fn a_sweep_that_fails_after_its_call_is_not_run_again_that_night() {
    use crate::scheduled::store::ScheduleStore;
    let h = Host::new();
    used(&h);
    promote_tz(&h);
    // The model answered; writing MEMORY.md fails.
    h.store.inject(crate::testing::Fault::always(crate::testing::StoreOp::Put, "agents/main/MEMORY.md"));
    let agent = AgentId::parse("main").unwrap();
    let (c, at) = (cfg(), NIGHT);
    h.now.set(at);
    assert!(block_on(night(&h, &Night { cfg: &c, agent: &agent, template: None, keep: 50, now: at })).is_err());
    assert_eq!(h.calls.borrow().len(), 1);
    // Past the time a `running` claim is taken again: the night is over all the same.
    h.store.clear_faults();
    promote_tz(&h);
    assert!(h.run(&c, NIGHT + super::sweep::STALE_RUN_MS + 60_000).is_none());
    assert_eq!(h.calls.borrow().len(), 1, "no second LLM call the same night");
    let sched = ScheduleStore::new(&*h.sql);
    assert_eq!(sched.failed().unwrap(), ["dream:2026-04-23"]);
    let spent = sched.ledger_totals().unwrap();
    assert_eq!((spent[0].kind.as_str(), spent[0].usage.total_tokens), ("dream", 340), "its tokens are counted");
    let last: serde_json::Value = hearth_json::from_str(&h.dreams().get("last").unwrap().unwrap()).unwrap();
    assert_eq!(last["outcome"], "failed");
    // The next night it runs.
    assert_eq!(h.run(&c, NIGHT + DAY).unwrap().outcome, Outcome::Done);
}
