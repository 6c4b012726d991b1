//! The ledger and budget of an Agent object, against SQLite in memory.

use super::book::UsageBook;
use super::period::Period;
use crate::ports::LogLevel;
use crate::protocol::usage::{CallRecord, Decision, MeterRequest, Reserve, UsageKind};
use crate::settings::usage::{Budget, ModelPrice, UsageSettings};
use crate::testing::MemSql;
use std::cell::RefCell;

const H: i64 = 3_600_000;
/// 2026-11-24 12:00 UTC.
const NOON: i64 = 1_795_521_600_000;

/// $1 per million of every kind of token: costs read as token counts.
fn flat() -> Vec<(String, ModelPrice)> {
    vec![(
        "flat".into(),
        ModelPrice { input: 1.0, output: 1.0, cache_read: 1.0, cache_write: 1.0, cache_write_1h: 1.0 },
    )]
}

fn settings(budget: Budget) -> UsageSettings {
    UsageSettings { budget, prices: flat(), ..Default::default() }
}

fn daily(usd: f64) -> Budget {
    Budget { daily_usd: Some(usd), background_percent: 90, ..Default::default() }
}

fn call(thread: &str, seq: i64, at: i64, model: &str, kind: UsageKind, tokens: u64) -> CallRecord {
    CallRecord {
        thread: thread.into(),
        session_id: "s1".into(),
        seq,
        at,
        kind,
        model: model.into(),
        input: tokens / 2,
        output: tokens / 4,
        cache_read: tokens / 4,
        cache_write: 0,
        cache_write_1h: 0,
    }
}

struct Ledger {
    book: UsageBook,
    sql: MemSql,
    logs: RefCell<Vec<String>>,
}

impl Ledger {
    fn new(tz: &str, s: UsageSettings) -> Self {
        Ledger { book: UsageBook::new("main", tz, s), sql: MemSql::default(), logs: RefCell::default() }
    }
    fn meter(&mut self, req: MeterRequest, now: i64) -> crate::protocol::usage::MeterReply {
        let log = |_: LogLevel, m: &str| self.logs.borrow_mut().push(m.to_owned());
        self.book.meter(&self.sql, &req, now, &log).unwrap()
    }
    fn settle(&mut self, calls: Vec<CallRecord>, now: i64) -> crate::protocol::usage::MeterReply {
        self.meter(MeterRequest { agent: "main".into(), settle: calls, ..Default::default() }, now)
    }
    fn reserve(&mut self, thread: &str, kind: UsageKind, now: i64, release: Vec<u64>) -> Decision {
        let reserve = Reserve {
            thread: thread.into(),
            kind,
            model: "flat".into(),
            prompt_tokens: 30_000,
            max_output_tokens: 1_000,
        };
        let req = MeterRequest { agent: "main".into(), reserve: Some(reserve), release, ..Default::default() };
        self.meter(req, now).decision.unwrap()
    }
}

#[test]
fn calls_are_priced_once_and_an_unknown_model_keeps_its_tokens_with_a_null_cost() {
    let mut l = Ledger::new("UTC", settings(Budget::default()));
    let a = call("agent:main:main", 1, NOON, "flat", UsageKind::Conversation, 1_000_000);
    let b = call("agent:main:main", 2, NOON, "mystery-1", UsageKind::ToolRound, 400);
    let c = call("agent:main:main", 3, NOON, "mystery-1", UsageKind::ToolRound, 400);
    assert_eq!(l.settle(vec![a.clone(), b], NOON).settled, 2);
    assert_eq!(l.settle(vec![a, c], NOON).settled, 1, "a call sent again is not counted twice");
    let r = l.book.report(&l.sql, Period::Today, None, NOON).unwrap();
    assert_eq!((r.calls, r.total_tokens, r.total_cost), (3, 1_000_800, 1.0));
    assert_eq!(r.by_model["mystery-1"].cost, None);
    assert_eq!(r.by_model["mystery-1"].tokens, 800);
    assert_eq!(r.by_model["flat"].cost, Some(1.0));
    assert_eq!(r.by_kind["toolRound"].calls, 2);
    assert_eq!(r.unpriced_models, ["mystery-1"]);
    let warnings = l.logs.borrow().iter().filter(|m| m.contains("no price for model \"mystery-1\"")).count();
    assert_eq!(warnings, 1, "one warning: {:?}", l.logs.borrow());
}

#[test]
fn the_owner_is_warned_once_at_eighty_percent() {
    let mut l = Ledger::new("UTC", settings(daily(1.0)));
    let thread = "agent:main:main";
    assert_eq!(l.settle(vec![call(thread, 1, NOON, "flat", UsageKind::Conversation, 700_000)], NOON).notice, None);
    let notice = l.settle(vec![call(thread, 2, NOON, "flat", UsageKind::Conversation, 120_000)], NOON).notice;
    let notice = notice.expect("82% spent");
    assert!(notice.contains("82% of my daily budget") && notice.contains("$0.8200 of $1.00"), "{notice}");
    assert_eq!(l.settle(vec![call(thread, 3, NOON, "flat", UsageKind::Conversation, 10_000)], NOON).notice, None);
    // A new object (after an eviction) remembers it too.
    let sql = std::mem::take(&mut l.sql);
    let mut again = Ledger { sql, ..Ledger::new("UTC", settings(daily(1.0))) };
    assert_eq!(again.settle(vec![call(thread, 4, NOON, "flat", UsageKind::Conversation, 1_000)], NOON).notice, None);
    // The next day starts a new period: told again when it gets there.
    let tomorrow = NOON + 24 * H;
    let notice =
        again.settle(vec![call(thread, 5, tomorrow, "flat", UsageKind::Conversation, 900_000)], tomorrow).notice;
    assert!(notice.is_some_and(|n| n.contains("90%")));
}

#[test]
fn concurrent_sessions_cannot_overshoot_by_more_than_the_calls_in_flight() {
    let mut l = Ledger::new("UTC", settings(daily(0.1)));
    l.settle(vec![call("agent:main:telegram:dm:1", 1, NOON, "flat", UsageKind::Conversation, 80_000)], NOON);
    // Three sessions at once: one goes, the others wait for it.
    let Decision::Go { reservation, tight } =
        l.reserve("agent:main:telegram:dm:1", UsageKind::Conversation, NOON, vec![])
    else {
        panic!()
    };
    assert!(tight, "the limit is near: release promptly");
    for t in ["agent:main:telegram:dm:2", "agent:main:telegram:dm:3"] {
        assert!(matches!(l.reserve(t, UsageKind::Conversation, NOON, vec![]), Decision::Wait { .. }));
    }
    // The call cost 30,000 tokens' worth: over the limit by that call only.
    let req = MeterRequest {
        agent: "main".into(),
        settle: vec![call("agent:main:telegram:dm:1", 2, NOON, "flat", UsageKind::Conversation, 30_000)],
        release: vec![reservation],
        ..Default::default()
    };
    l.meter(req, NOON);
    for t in ["agent:main:telegram:dm:2", "agent:main:telegram:dm:3"] {
        let Decision::Stop(stop) = l.reserve(t, UsageKind::Conversation, NOON, vec![]) else { panic!() };
        assert!(stop.message.contains("daily budget is used up ($0.1100 of $0.1000)"), "{}", stop.message);
        assert!(stop.message.contains("2026-11-25 00:00"), "{}", stop.message);
        assert_eq!(stop.resets_at, NOON + 12 * H);
    }
    // Nothing to wake while the limit holds; the next day wakes both.
    assert!(l.book.wake_due(&l.sql, NOON + H).unwrap().is_empty());
    let woken = l.book.wake_due(&l.sql, NOON + 12 * H).unwrap();
    assert_eq!(woken, ["agent:main:telegram:dm:2", "agent:main:telegram:dm:3"]);
    assert!(l.book.wake_due(&l.sql, NOON + 12 * H).unwrap().is_empty(), "woken once");
}

#[test]
fn a_raised_limit_wakes_the_stopped_threads() {
    let mut l = Ledger::new("UTC", settings(daily(0.01)));
    l.settle(vec![call("agent:main:main", 1, NOON, "flat", UsageKind::Conversation, 20_000)], NOON);
    assert!(matches!(l.reserve("agent:main:main", UsageKind::Conversation, NOON, vec![]), Decision::Stop(_)));
    // A deploy with a higher limit: a new object, the same SQLite.
    let sql = std::mem::take(&mut l.sql);
    let mut raised = Ledger { sql, ..Ledger::new("UTC", settings(daily(5.0))) };
    assert_eq!(raised.book.wake_due(&raised.sql, NOON + 60_000).unwrap(), ["agent:main:main"]);
    assert!(matches!(raised.reserve("agent:main:main", UsageKind::Conversation, NOON, vec![]), Decision::Go { .. }));
}

#[test]
fn background_work_stops_at_its_share_and_is_never_woken() {
    let mut l = Ledger::new("UTC", settings(daily(1.0)));
    l.settle(vec![call("agent:main:main", 1, NOON, "flat", UsageKind::Conversation, 910_000)], NOON);
    let Decision::Stop(stop) = l.reserve("agent:main:heartbeat", UsageKind::Heartbeat, NOON, vec![]) else { panic!() };
    assert!(stop.background && stop.message.contains("stops at 90%"), "{}", stop.message);
    assert!(matches!(l.reserve("agent:main:dreaming", UsageKind::Dreaming, NOON, vec![]), Decision::Stop(_)));
    assert!(matches!(l.reserve("agent:main:main", UsageKind::Conversation, NOON, vec![]), Decision::Go { .. }));
    assert!(
        l.book.wake_due(&l.sql, NOON + 12 * H).unwrap().is_empty(),
        "background runs come back with their schedule"
    );
    let r = l.book.report(&l.sql, Period::Today, None, NOON).unwrap();
    let daily = r.budget.unwrap().daily.unwrap();
    assert!(daily.background_stopped && !daily.reached && (daily.percent - 91.0).abs() < 1e-9);
}

#[test]
fn periods_follow_the_agents_time_zone_across_midnight() {
    // 22:30 UTC on the 24th is already the 25th in Tokyo.
    let late = NOON + 10 * H + 30 * 60_000;
    let early = NOON - 2 * H;
    for (tz, today_calls, on_the_24th) in [("UTC", 2, 2), ("Asia/Tokyo", 1, 1)] {
        let mut l = Ledger::new(tz, settings(Budget::default()));
        l.settle(
            vec![
                call("agent:main:main", 1, early, "flat", UsageKind::Conversation, 100),
                call("agent:main:main", 2, late, "flat", UsageKind::Conversation, 100),
            ],
            late,
        );
        let today = l.book.report(&l.sql, Period::Today, None, late).unwrap();
        assert_eq!(today.calls, today_calls, "{tz}");
        assert_eq!(l.book.report(&l.sql, Period::Month, None, late).unwrap().calls, 2, "{tz}");
        let the_24th = l.book.report(&l.sql, Period::parse("2026-11-24").unwrap(), None, late).unwrap();
        assert_eq!(the_24th.calls, on_the_24th, "{tz}");
        assert_eq!(today.timezone, tz);
    }
}

#[test]
fn a_threads_steady_state_leaves_out_each_conversations_first_calls_and_cold_ones() {
    let mut l = Ledger::new("UTC", settings(Budget::default()));
    let t = "agent:main:main";
    let mut calls: Vec<CallRecord> = (0..5)
        .map(|i| {
            let mut c = call(t, i + 1, NOON + i * 60_000, "flat", UsageKind::Conversation, 0);
            (c.input, c.cache_read) = if i < 2 { (1_000, 0) } else { (100, 900) };
            c
        })
        .collect();
    // After 10 minutes idle the cache is cold: not steady state.
    let mut cold = call(t, 6, NOON + 15 * 60_000, "flat", UsageKind::Conversation, 0);
    cold.input = 1_000;
    calls.push(cold);
    l.settle(calls, NOON + H);
    let r = l.book.report(&l.sql, Period::All, Some(t), NOON + H).unwrap();
    let steady = r.steady_state.unwrap();
    assert_eq!((steady.calls, steady.cache_hit_rate), (3, Some(0.9)));
    assert_eq!(r.calls, 6);
    assert!(r.cache_hit_rate.unwrap() < 0.5);
    assert_eq!(r.thread.as_deref(), Some(t));
}

#[test]
fn threads_are_session_keys_main_or_api_thread_ids() {
    use super::thread_key;
    assert_eq!(thread_key("main", "main").as_deref(), Some("agent:main:main"));
    assert_eq!(thread_key("main", "agent:main:telegram:dm:42").as_deref(), Some("agent:main:telegram:dm:42"));
    assert_eq!(thread_key("main", "agent:main:api:t1").as_deref(), Some("agent:main:api:t1"));
    assert_eq!(thread_key("main", "t1").as_deref(), Some("agent:main:api:t1"));
    for bad in ["agent:work:main", "agent:main:api:", "a:b", "", "x/y", "agent:main:bogus"] {
        assert_eq!(thread_key("main", bad), None, "{bad:?}");
    }
}

#[test]
fn by_day_puts_each_call_on_its_local_day_even_at_half_hour_offsets_and_short_days() {
    const MIN: i64 = 60_000;
    // Kolkata is UTC+5:30: the 25th starts at 18:30 UTC on the 24th (NOON + 6h30).
    let mut l = Ledger::new("Asia/Kolkata", settings(Budget::default()));
    let t = "agent:main:main";
    let other = "agent:main:api:x";
    l.settle(
        vec![
            call(t, 1, NOON - 20 * H, "flat", UsageKind::Conversation, 400), // 23rd, 21:30 local
            call(t, 2, NOON + 6 * H + 20 * MIN, "flat", UsageKind::Conversation, 100), // 24th, 23:50
            call(t, 3, NOON + 6 * H + 29 * MIN, "flat", UsageKind::ToolRound, 100), // 24th, 23:59
            call(t, 4, NOON + 6 * H + 30 * MIN, "flat", UsageKind::Conversation, 200), // 25th, 00:00
            call(other, 1, NOON + 7 * H, "flat", UsageKind::Conversation, 1_000), // 25th, 00:30
            call(other, 2, NOON + 7 * H + MIN, "unpriced-model", UsageKind::Conversation, 8), // no cost
        ],
        NOON + 8 * H,
    );
    let days = l.book.by_day(&l.sql, None, None, None).unwrap();
    let got: Vec<(&str, u64, u64, f64)> =
        days.iter().map(|d| (d.date.as_str(), d.calls, d.tokens, d.cost_usd)).collect();
    // $1 per million tokens: the cost is the priced tokens over a million.
    assert_eq!(got, [("2026-11-23", 1, 400, 0.0004), ("2026-11-24", 2, 200, 0.0002), ("2026-11-25", 3, 1_208, 0.0012)]);
    // The days add up to the report of the same period, and one thread has its own.
    let month = l.book.report(&l.sql, Period::Month, None, NOON + 8 * H).unwrap();
    let days = l.book.by_day(&l.sql, month.from, month.until, None).unwrap();
    assert_eq!(days.iter().map(|d| d.calls).sum::<u64>(), month.calls);
    assert_eq!(days.iter().map(|d| d.tokens).sum::<u64>(), month.total_tokens);
    let mine = l.book.by_day(&l.sql, month.from, month.until, Some(other)).unwrap();
    assert_eq!(mine.iter().map(|d| (d.date.as_str(), d.calls)).collect::<Vec<_>>(), [("2026-11-25", 2)]);
    // One day's period has one entry at most.
    let the_24th = l.book.report(&l.sql, Period::parse("2026-11-24").unwrap(), None, NOON).unwrap();
    let one = l.book.by_day(&l.sql, the_24th.from, the_24th.until, None).unwrap();
    assert_eq!(one.iter().map(|d| (d.date.as_str(), d.calls)).collect::<Vec<_>>(), [("2026-11-24", 2)]);

    // Paris on 29 March 2026 has 23 hours (clocks go forward): 21:50 UTC is
    // 23:50 that day, 22:10 UTC already 00:10 on the 30th.
    let utc = |d: i8, h: i8, m: i8| {
        jiff::civil::date(2026, 3, d)
            .at(h, m, 0, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_millisecond()
    };
    let mut l = Ledger::new("Europe/Paris", settings(Budget::default()));
    l.settle(
        vec![
            call(t, 1, utc(28, 22, 59), "flat", UsageKind::Conversation, 100), // 23:59 on the 28th
            call(t, 2, utc(28, 23, 0), "flat", UsageKind::Conversation, 100),  // 00:00 on the 29th
            call(t, 3, utc(29, 21, 50), "flat", UsageKind::Conversation, 100),
            call(t, 4, utc(29, 22, 10), "flat", UsageKind::Conversation, 100),
        ],
        utc(30, 12, 0),
    );
    let days = l.book.by_day(&l.sql, None, None, None).unwrap();
    assert_eq!(
        days.iter().map(|d| (d.date.as_str(), d.calls)).collect::<Vec<_>>(),
        [("2026-03-28", 1), ("2026-03-29", 2), ("2026-03-30", 1)]
    );
}
