//! What each LLM call costs reaches the Agent object's ledger, and a budget
//! holds a conversation without losing it (issue 14).

use super::*;
use crate::inbound::ChannelKind;
use crate::protocol::usage::UsageKind;
use crate::settings::usage::{Budget, ModelPrice, UsageSettings};
use crate::usage::period::Period;

/// An answer whose usage is `input` fresh tokens and 100 output.
fn costly(text: &str, input: u64) -> serde_json::Value {
    json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "model": "m",
           "usage": {"input_tokens": input, "output_tokens": 100}})
}

fn tool_call() -> serde_json::Value {
    json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "SOUL.md"}}],
           "stop_reason": "tool_use", "model": "m", "usage": {"input_tokens": 1000, "output_tokens": 20}})
}

/// Model `m` at $1 per million tokens of every kind: a cost reads as tokens.
fn with_budget(f: &mut Fixture, budget: Budget) {
    let settings = UsageSettings {
        budget,
        prices: vec![(
            "m".into(),
            ModelPrice { input: 1.0, output: 1.0, cache_read: 1.0, cache_write: 1.0, cache_write_1h: 1.0 },
        )],
        // Every drain settles at once (the batching has its own test).
        settle_ms: 0,
        ..Default::default()
    };
    f.p.usage.configure(settings.clone(), "UTC");
    f.cfg.usage = settings;
}

fn daily(usd: f64) -> Budget {
    Budget { daily_usd: Some(usd), background_percent: 90, ..Default::default() }
}

fn report(f: &Fixture) -> crate::protocol::usage::UsageReport {
    f.p.usage.book.borrow_mut().report(&f.p.usage.sql, Period::All, None, f.p.now.get()).unwrap()
}

/// What the chat got (the owner's budget warnings go to the notify channel).
/// What the chat was told, without the owner's budget notices (the owner is
/// this chat's person too: notices reach them through the outbox, marked 💸).
fn chat(f: &Fixture) -> Vec<String> {
    f.p.channel.sent.borrow().iter().filter(|(_, t)| !t.starts_with('💸')).map(|(_, t)| t.clone()).collect()
}

fn open(f: &Fixture) -> i64 {
    SessionStore::new(&f.p.sql).open_count().unwrap()
}

#[test]
fn without_a_budget_calls_wait_in_the_session_and_go_in_one_batch_a_minute_later() {
    let f = Fixture::new();
    f.p.now.set(1_000);
    f.p.http.push_json(200, tool_call());
    f.p.http.push_json(200, costly("done", 2_000));
    f.enqueue(&inbound(1, "read your soul"));
    assert_eq!(f.drain().llm_calls, 2);
    assert_eq!(f.p.usage.requests.borrow().len(), 0, "no request per call, nor per turn");
    assert_eq!(super::super::meter::next_settle(&f.deps()), Some(61_000), "due a minute after the first call");
    f.say(2, "hi", "hello");
    assert_eq!(f.p.usage.requests.borrow().len(), 0);
    // The alarm the host set for then: one request with all three calls.
    f.p.now.set(61_000);
    f.drain();
    let requests = f.p.usage.requests.borrow().clone();
    assert_eq!(requests.len(), 1, "one batch");
    assert_eq!(requests[0].settle.len(), 3);
    assert_eq!(super::super::meter::next_settle(&f.deps()), None, "nothing waits");
    assert_eq!(report(&f).calls, 3);
}

#[test]
fn with_settle_ms_zero_a_drain_settles_all_its_calls_in_one_request() {
    let mut f = Fixture::new();
    f.cfg.usage.settle_ms = 0;
    f.p.http.push_json(200, tool_call());
    f.p.http.push_json(200, costly("done", 2_000));
    f.enqueue(&inbound(1, "read your soul"));
    assert_eq!(f.drain().llm_calls, 2);
    let requests = f.p.usage.requests.borrow().clone();
    assert_eq!(requests.len(), 1, "one request for the whole drain, none per call");
    let kinds: Vec<UsageKind> = requests[0].settle.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [UsageKind::Conversation, UsageKind::ToolRound]);
    assert!(requests[0].reserve.is_none());
    let r = report(&f);
    assert_eq!((r.calls, r.prompt_tokens, r.completion_tokens), (2, 3_000, 120));
    assert_eq!(r.unpriced_models, ["m"], "m has no price here: tokens kept, cost null");
    // Settled calls are not sent again.
    f.say(2, "hi", "hello");
    assert_eq!(f.p.usage.requests.borrow()[1].settle.len(), 1);
    assert_eq!(report(&f).calls, 3);
}

#[test]
fn with_a_budget_each_call_reserves_and_carries_the_previous_settlement() {
    let mut f = Fixture::new();
    with_budget(&mut f, daily(10.0));
    f.p.http.push_json(200, tool_call());
    f.p.http.push_json(200, costly("done", 2_000));
    f.enqueue(&inbound(1, "read your soul"));
    f.drain();
    let requests = f.p.usage.requests.borrow().clone();
    assert_eq!(requests.len(), 3, "a reservation per call, then what is left");
    assert!(requests[0].reserve.is_some() && requests[0].settle.is_empty());
    assert_eq!(requests[1].settle.len(), 1, "the first call rides on the second reservation");
    assert_eq!(requests[1].release.len(), 1);
    assert_eq!((requests[2].settle.len(), requests[2].release.len()), (1, 1));
    assert!(requests[2].reserve.is_none());
    assert_eq!(report(&f).total_cost, 0.00312);
}

#[test]
fn at_the_limit_no_call_is_made_the_user_is_told_and_the_message_waits_for_a_raised_limit() {
    let mut f = Fixture::new();
    with_budget(&mut f, daily(0.005));
    f.p.http.push_json(200, costly("first answer", 5_000));
    f.enqueue(&inbound(1, "first"));
    f.drain();
    assert_eq!(chat(&f), ["first answer"]);
    // $0.0051 spent of $0.005: the next message gets no call.
    f.enqueue(&inbound(2, "second question"));
    f.drain();
    assert_eq!(f.requests(), 1, "no LLM call at the limit");
    let told = chat(&f)[1].clone();
    assert!(told.contains("daily budget is used up") && told.contains("BUDGET_DAILY_USD"), "{told}");
    assert!(told.contains("1970-01-02 00:00"), "says when it resets: {told}");
    assert!(f.history().iter().any(|m| m.text().contains("second question")), "the message is in the history");
    assert_eq!(open(&f), 1, "and still waiting");
    // Woken again (a tick, another message): still held, not told twice…
    f.drain();
    assert_eq!(chat(&f).len(), 2);
    // …but a new message is told, and /usage is answered while held.
    f.enqueue(&inbound(3, "third"));
    f.enqueue(&inbound(4, "/usage"));
    f.drain();
    assert_eq!(chat(&f).len(), 4, "{:?}", chat(&f));
    assert!(chat(&f)[2].contains("budget is used up"));
    assert!(chat(&f)[3].contains("Usage") && chat(&f)[3].contains("Daily budget"), "{}", chat(&f)[3]);
    assert_eq!((open(&f), f.requests()), (2, 1));
    // A deploy raises the limit: the held messages are answered, in order.
    with_budget(&mut f, daily(5.0));
    f.p.http.push_json(200, costly("second answer", 100));
    f.p.http.push_json(200, costly("third answer", 100));
    let report_drain = f.drain();
    assert_eq!(report_drain.llm_calls, 2);
    assert_eq!(&chat(&f)[4..], ["second answer", "third answer"]);
    assert_eq!(open(&f), 0);
    let store = SessionStore::new(&f.p.sql);
    assert!(store.meta("budget_blocked").unwrap().is_none());
}

#[test]
fn a_held_message_is_not_given_up_after_the_attempt_limit() {
    let mut f = Fixture::new();
    with_budget(&mut f, daily(0.0));
    f.enqueue(&inbound(1, "hello"));
    for _ in 0..(super::super::drain::MAX_ATTEMPTS_PER_MESSAGE + 2) {
        f.drain();
    }
    assert_eq!(chat(&f).len(), 1, "told once: {:?}", chat(&f));
    assert!(!chat(&f).iter().any(|t| t.contains("after several tries")));
    with_budget(&mut f, daily(1.0));
    f.p.http.push_json(200, costly("finally", 10));
    f.drain();
    assert_eq!(chat(&f).last().unwrap(), "finally");
}

#[test]
fn heartbeats_stop_at_the_background_share_silently() {
    let mut f = Fixture::new();
    with_budget(&mut f, daily(0.01));
    f.p.http.push_json(200, costly("answer", 9_000));
    f.enqueue(&inbound(1, "hi"));
    f.drain();
    f.key = SessionKey::parse("agent:main:heartbeat").unwrap();
    let mut hb = crate::scheduled::heartbeat_inbound("heartbeat:1".into(), "now", 0);
    hb.dedupe_key = "heartbeat:1".into();
    f.enqueue(&hb);
    f.drain();
    assert_eq!(f.requests(), 1, "91% spent: no heartbeat call");
    assert_eq!(chat(&f).len(), 1, "nobody is told");
    assert_eq!(open(&f), 0, "the run is over, not held");
    let reserve = f.p.usage.requests.borrow().iter().rev().find_map(|r| r.reserve.clone()).unwrap();
    assert_eq!(reserve.kind, UsageKind::Heartbeat);
}

#[test]
fn the_owner_is_warned_at_eighty_percent_on_the_notify_channel() {
    let mut f = Fixture::new();
    with_budget(&mut f, daily(0.01));
    f.p.http.push_json(200, costly("answer", 8_000));
    f.enqueue(&inbound(1, "hi"));
    f.drain();
    let sent = f.p.channel.sent.borrow().clone();
    assert_eq!(sent.len(), 2, "{sent:?}");
    // The notify channel's notice reaches the first owner (OWNER_IDS=telegram:1).
    assert_eq!((sent[1].0.channel, sent[1].0.chat_id.as_str()), (ChannelKind::Telegram, "1"));
    assert!(sent[1].1.contains("81% of my daily budget"), "{}", sent[1].1);
}

#[test]
fn an_unreachable_ledger_does_not_silence_the_agent_and_loses_nothing() {
    let mut f = Fixture::new();
    with_budget(&mut f, daily(1.0));
    f.p.usage.unavailable.set(true);
    f.say(1, "hi", "hello");
    assert_eq!(f.sent(), ["hello"]);
    assert_eq!(report(&f).calls, 0);
    f.p.usage.unavailable.set(false);
    f.say(2, "again", "hello again");
    assert_eq!(report(&f).calls, 2, "the first call is settled with the next request");
}

#[test]
fn the_footer_shows_the_turns_tokens_cost_and_model_when_asked() {
    let mut f = Fixture::new();
    f.p.http.push_json(200, costly("plain", 10));
    f.enqueue(&inbound(1, "hi"));
    f.drain();
    assert_eq!(f.sent(), ["plain"], "off by default");
    with_budget(&mut f, Budget::default());
    f.cfg.usage.footer = true;
    f.p.http.push_json(200, tool_call());
    f.p.http.push_json(200, costly("with footer", 2_000));
    f.enqueue(&inbound(2, "read"));
    f.drain();
    assert_eq!(
        f.sent()[1],
        "with footer\n\n[tokens: 3000 prompt + 120 completion | cost: $0.0031 | model: m]",
        "both calls of the turn"
    );
    let history = f.history();
    assert!(!history.iter().any(|m| m.text().contains("[tokens:")), "the footer is not part of the conversation");
}

#[test]
fn usage_is_for_the_owner_only_and_makes_no_llm_call() {
    let f = Fixture::new();
    f.say(1, "hi", "hello");
    let mut stranger = inbound(2, "/usage");
    stranger.sender_id = "99".into();
    f.enqueue(&stranger);
    f.enqueue(&inbound(3, "/usage@hearth_bot"));
    f.drain();
    assert_eq!(f.requests(), 1);
    assert_eq!(f.sent()[1], "Only my owner can see what I cost.");
    let text = &f.sent()[2];
    assert!(text.contains("Today:") && text.contains("This month:") && text.contains("No budget set"), "{text}");
    assert!(text.contains("1 calls") && text.contains("cache hit rate"), "includes this session's call: {text}");
    assert_eq!(f.history().len(), 2, "/usage is not part of the conversation");
}

#[test]
fn a_steady_session_whose_cache_misses_is_logged_with_the_cause() {
    let f = Fixture::new();
    f.p.store.put_text("agents/main/SOUL.md", "I am calm.");
    let cached = |text: &str, read: u64, input: u64| {
        json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "model": "m",
               "usage": {"input_tokens": input, "output_tokens": 10, "cache_read_input_tokens": read}})
    };
    for (i, (read, input)) in [(0, 3_000), (2_900, 200), (3_000, 200)].into_iter().enumerate() {
        f.p.http.push_json(200, cached("ok", read, input));
        f.enqueue(&inbound(i as u32 + 1, "hi"));
        f.drain();
    }
    assert!(!f.p.logs.borrow().iter().any(|l| l.contains("cache hit rate")));
    f.p.store.put_text("agents/main/SOUL.md", "I am calm, and now different.");
    f.p.http.push_json(200, cached("ok", 0, 3_300));
    f.enqueue(&inbound(9, "hi"));
    f.drain();
    let logs = f.p.logs.borrow();
    let line = logs.iter().find(|l| l.contains("cache hit rate")).expect("logged");
    assert!(line.contains("0.00 below 0.7") && line.contains("system prompt changed"), "{line}");
}

#[test]
fn a_usage_table_from_before_the_ledger_gains_its_columns_and_its_old_rows_stay_out() {
    let p = TestPlatform::default();
    use crate::ports::Sql;
    // The table as it was before issue 14, with a call in it.
    p.sql
        .exec(
            "CREATE TABLE usage (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, session_id TEXT NOT NULL, \
             model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL, \
             cache_write INTEGER NOT NULL)",
            &[],
        )
        .unwrap();
    p.sql.exec("INSERT INTO usage (at, session_id, model, input, output, cache_read, cache_write) VALUES (1, 's', 'm', 5, 5, 0, 0)", &[]).unwrap();
    let store = SessionStore::new(&p.sql);
    store.init().unwrap();
    store.init().unwrap();
    assert!(store.unsettled(10).unwrap().is_empty(), "old calls were never meant for the ledger");
    let u = r2_layout::Usage::new(1, 2, 3, 4).with_1h_writes(3);
    let seq = store.record_call(2, "s", "m", "toolRound", &u).unwrap();
    let waiting = store.unsettled(10).unwrap();
    assert_eq!((waiting.len(), waiting[0].seq, waiting[0].kind.as_str()), (1, seq, "toolRound"));
    assert_eq!(waiting[0].usage, u, "the hour's writes kept apart");
    assert_eq!(store.usage_totals_all().unwrap().total_tokens, 20, "the session's own totals keep both");
    store.mark_settled(seq).unwrap();
    assert!(store.unsettled(10).unwrap().is_empty());
}

#[test]
fn a_voice_reply_is_in_the_ledger_only_when_the_speech_was_made() {
    let mut f = Fixture::new();
    with_budget(&mut f, Budget::default());
    f.cfg.voice.base_url = Some("https://tts.example/v1".into());
    f.p.now.set(1_000);
    f.enqueue(&inbound(1, "/voice on"));
    f.drain();
    // The TTS endpoint fails: the text goes out, and no speech is billed.
    f.p.http.push_json(200, costly("spoken answer", 100));
    f.p.http.push_json(503, json!({"error": {"message": "overloaded"}}));
    f.enqueue(&inbound(2, "say it"));
    f.drain();
    assert!(chat(&f).iter().any(|t| t == "spoken answer"), "{:?}", chat(&f));
    let r = report(&f);
    assert!(!r.by_kind.contains_key(UsageKind::Tts.as_str()), "{:?}", r.by_kind.keys());
    assert!(!r.by_kind.is_empty(), "the LLM call is in the ledger");
    // Speech made: billed by its characters.
    f.p.http.push_json(200, costly("again", 100));
    f.p.http.responses.borrow_mut().push_back(Ok(crate::ports::HttpResponse {
        status: 200,
        headers: vec![],
        body: b"OggS-and-some-opus".to_vec(),
    }));
    f.enqueue(&inbound(3, "once more"));
    f.drain();
    let r = report(&f);
    assert_eq!(r.by_kind.get(UsageKind::Tts.as_str()).map(|t| t.calls), Some(1), "{:?}", r.by_kind.keys());
}
