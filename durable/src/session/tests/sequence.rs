//! The drain answering in the order sent (`sequence`), against in-memory
//! doubles: which message each model call answered, and when.

use super::{anthropic_text, Fixture};
use crate::inbound::{Earlier, Inbound, SendOrder};
use crate::session::store::SessionStore;
use crate::settings::DEFAULT_ORDER_HOLD_MS;

const HOLD: i64 = DEFAULT_ORDER_HOLD_MS as i64;

/// A Telegram message of chat 1: update `u`, message id `u`.
fn tg(u: i64, text: &str) -> Inbound {
    crate::testing::telegram_dm(format!("telegram:update:{u}"), text, Some(SendOrder::telegram(1, u, u)))
}

fn k(u: i64) -> Inbound {
    tg(u, &format!("K-{u}"))
}

/// Queues `m` as the session would at the fixture's current time.
fn arrives(f: &Fixture, m: &Inbound) -> bool {
    let store = SessionStore::new(&f.p.sql);
    store.enqueue(&m.dedupe_key, &serde_json::to_string(m).unwrap(), f.p.now.get()).unwrap()
}

fn later(f: &Fixture, ms: i64) {
    f.p.now.set(f.p.now.get() + ms);
}

/// The `K-n` each model call answered (the last user message of the request).
fn answered(f: &Fixture) -> Vec<String> {
    (0..f.requests())
        .filter_map(|i| {
            let req = f.p.http.request_json(i);
            let last = req["messages"].as_array()?.last()?.to_string();
            let at = last.find("K-")?;
            let n: String = last[at + 2..].chars().take_while(char::is_ascii_digit).collect();
            Some(format!("K-{n}"))
        })
        .collect()
}

fn script(f: &Fixture, n: usize) {
    for _ in 0..n {
        f.p.http.push_json(200, anthropic_text("ok"));
    }
}

/// `m` as the Worker tells it: what it saw of the updates before it.
fn seen(mut m: Inbound, earlier: Earlier) -> Inbound {
    m.order.as_mut().unwrap().earlier = Some(earlier);
    m
}

#[test]
fn a_message_that_overtook_one_the_worker_saw_missing_waits_for_it_and_no_longer() {
    let f = Fixture::new();
    script(&f, 2);
    let t0 = f.p.now.get();
    // K-2 overtook K-1 on another connection: the Worker saw 1 missing.
    arrives(&f, &seen(k(2), Earlier::Missing));
    let report = f.drain();
    assert_eq!((report.turns, f.requests()), (0, 0), "it waits");
    assert_eq!(report.wake_at, Some(t0 + HOLD), "and says when to look again");
    later(&f, 5);
    // K-1 comes (everything before it had arrived): both go now, in order.
    arrives(&f, &seen(k(1), Earlier::Arrived));
    let report = f.drain();
    assert_eq!((report.turns, report.wake_at), (2, None), "the hold ended when the straggler came");
    assert_eq!(answered(&f), ["K-1", "K-2"]);
    // The second turn saw the first in its history.
    assert!(f.p.http.request_json(1).to_string().contains("K-1"));
}

#[test]
fn a_message_after_a_pause_starts_at_once() {
    let f = Fixture::new();
    script(&f, 4);
    // The Worker saw everything before it arrive (a new chat in a warm isolate).
    arrives(&f, &seen(k(1), Earlier::Arrived));
    let report = f.drain();
    assert_eq!((report.turns, report.wake_at), (1, None), "no hold");
    // Nothing known either way (a new isolate), and nothing in the last second: at once too.
    later(&f, 60_000);
    arrives(&f, &k(3));
    let report = f.drain();
    assert_eq!((report.turns, report.wake_at), (1, None), "no hold");
    // Update 4 follows update 3, which was taken: nothing can be missing.
    later(&f, 60_000);
    arrives(&f, &k(4));
    assert_eq!(f.drain().turns, 1);
    // Update 6 a moment after 4 (5 went to another chat, or is still
    // coming), nothing known: a burst, so it is held.
    later(&f, 200);
    arrives(&f, &k(6));
    assert_eq!(f.drain().turns, 0);
    later(&f, HOLD);
    assert_eq!(f.drain().turns, 1);
    assert_eq!(answered(&f), ["K-1", "K-3", "K-4", "K-6"]);
}

#[test]
fn a_message_sent_before_one_that_started_without_a_hold_is_answered_first_if_it_comes_before_the_model_call() {
    use std::future::Future;
    use std::task::{Context, Poll};
    let f = Fixture::new();
    script(&f, 2);
    f.p.channel.typing_yields.set(true);
    // K-2 arrives first; nothing known, nothing in the last second: it starts.
    arrives(&f, &k(2));
    let deps = f.deps();
    let mut drain = std::pin::pin!(crate::session::drain::drain(&f.p, &deps));
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(drain.as_mut().poll(&mut cx).is_pending(), "its turn prepares (\"typing…\")");
    // K-1 comes meanwhile, before the model call.
    arrives(&f, &k(1));
    let report = loop {
        if let Poll::Ready(r) = drain.as_mut().poll(&mut cx) {
            break r.unwrap();
        }
    };
    assert_eq!((report.turns, f.requests()), (0, 0), "K-2 gave way, K-1 is held for its own stragglers");
    later(&f, HOLD);
    assert_eq!(f.drain().turns, 2);
    assert_eq!(answered(&f), ["K-1", "K-2"]);
    let history: Vec<String> = f.history().iter().map(|m| m.text()).collect();
    assert_eq!(history.iter().filter(|t| t.contains("K-2")).count(), 1, "K-2 is in the history once: {history:?}");
}

#[test]
fn a_reset_in_a_burst_cuts_the_conversation_where_it_was_sent() {
    let f = Fixture::new();
    // Nine messages, the fifth a /reset, arriving shuffled.
    script(&f, 4);
    f.p.http.push_json(200, anthropic_text("- nothing to keep"));
    script(&f, 4);
    for u in [2, 1, 4, 6, 5, 3, 9, 7, 8] {
        let m = if u == 5 { tg(5, "/reset") } else { k(u) };
        arrives(&f, &m);
        later(&f, 3);
    }
    later(&f, HOLD);
    let report = f.drain();
    assert_eq!(report.turns, 9);
    let turns: Vec<String> = answered(&f);
    // Four answers, the reset's memory extraction (its last user message
    // is the extraction prompt, K-4 before it), then four more.
    assert_eq!(turns, ["K-1", "K-2", "K-3", "K-4", "K-6", "K-7", "K-8", "K-9"]);
    let sent = f.sent();
    assert!(sent[4].contains("archived our conversation (8 messages)"), "{sent:?}");
    // The new session starts at K-6 and holds nothing from before the reset.
    let history: Vec<String> = f.history().iter().map(|m| m.text()).collect();
    assert_eq!(history.len(), 8, "{history:?}");
    assert!(history[0].contains("K-6") && !history.iter().any(|t| t.contains("K-4")), "{history:?}");
}

#[test]
fn messages_that_queued_behind_a_turn_are_taken_in_the_order_sent() {
    let f = Fixture::new();
    script(&f, 6);
    arrives(&f, &k(1));
    later(&f, HOLD);
    f.drain();
    // While nothing drains (a turn runs), five arrive out of order; each
    // waited longer than the hold by the time the turn is over.
    for u in [3, 2, 5, 6, 4] {
        arrives(&f, &k(u));
    }
    later(&f, HOLD);
    assert_eq!(f.drain().turns, 5);
    assert_eq!(answered(&f), ["K-1", "K-2", "K-3", "K-4", "K-5", "K-6"]);
}

#[test]
fn a_redelivery_long_after_is_answered_once_and_reorders_nothing_answered() {
    let f = Fixture::new();
    script(&f, 3);
    arrives(&f, &k(1));
    later(&f, HOLD);
    f.drain();
    // Update 2's webhook failed (Telegram retries it later); 3 comes.
    arrives(&f, &k(3));
    later(&f, HOLD);
    f.drain();
    assert_eq!(answered(&f), ["K-1", "K-3"]);
    // A minute on, Telegram delivers 2 again, and repeats 3.
    later(&f, 60_000);
    assert!(arrives(&f, &k(2)));
    assert!(!arrives(&f, &k(3)), "a repeat is not queued again");
    let report = f.drain();
    assert_eq!((report.turns, report.wake_at), (1, None), "update 1 was taken: no hold");
    assert_eq!(answered(&f), ["K-1", "K-3", "K-2"]);
    assert_eq!(f.sent().len(), 3);
}
