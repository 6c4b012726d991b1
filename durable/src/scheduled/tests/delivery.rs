//! Exactly once between the Agent object and the Session objects: a run
//! whose message could not be queued, or whose object stopped halfway, is
//! queued again and still runs once.

use super::*;
use futures::FutureExt;

const MIN: i64 = 60_000;

fn one_job(f: &Fx) {
    f.store.put_text("agents/main/cron.json", r#"[{"name":"brief","message":"Brief me","cron":"0 8 * * *"}]"#);
}

fn queued_ids(f: &Fx) -> Vec<String> {
    f.queue.queued.borrow().iter().map(|(_, i, _)| i.dedupe_key.clone()).collect()
}

#[test]
fn a_job_whose_enqueue_fails_is_not_lost() {
    let f = Fx::new(&[("HEARTBEAT_ENABLED", "false")]);
    one_job(&f);
    let slot = utc(2026, 2, 2, 8, 0);
    f.tick(slot - 5 * MIN);
    // The Session cannot be reached at the job's tick: the tick fails (the
    // alarm retries) and the run stays claimed, pending.
    f.queue.fail.set(true);
    let err = f.try_tick(slot).unwrap_err();
    assert!(err.0.contains(&format!("job:brief:{slot}")), "{err}");
    assert_eq!(f.claims(), [format!("job:brief:{slot} pending")]);
    assert!(f.logs.borrow().iter().any(|l| l.contains("could not queue job:brief")));
    // The alarm's retries fail too; the job window has moved on all the same.
    assert!(f.try_tick(slot).is_err());
    assert_eq!(f.state().last_tick().unwrap(), Some(slot));
    // Five minutes later the Session answers: the run is queued, once.
    f.queue.fail.set(false);
    let r = f.tick(slot + 5 * MIN);
    assert!(r.jobs_queued.is_empty(), "not a new slot");
    assert_eq!(queued_ids(&f), [format!("job:brief:{slot}")]);
    assert_eq!(f.claims(), [format!("job:brief:{slot} queued")]);
    f.tick(slot + 10 * MIN);
    f.tick(slot);
    assert_eq!(queued_ids(&f).len(), 1);
}

#[test]
fn the_alarm_retry_of_a_failed_tick_queues_the_run() {
    let f = Fx::new(&[]);
    f.store.put_text(HB, "- [ ] look at the calendar");
    let t = utc(2026, 1, 5, 10, 0);
    f.queue.fail.set(true);
    assert!(f.try_tick(t).is_err());
    assert_eq!(
        f.state().get("heartbeat_last").unwrap().unwrap(),
        format!(r#"{{"outcome":"retrying: storage: session unreachable","tick":{t}}}"#)
    );
    f.queue.fail.set(false);
    // The retry runs the same tick again.
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::NotDue);
    assert_eq!(f.keys(), [format!("agent:main:heartbeat heartbeat:{t}")]);
    assert_eq!(f.claims(), [format!("heartbeat:{t} queued")]);
}

/// Polls one tick once and drops it where it waits on the Session: the
/// object stopped with the claim committed and the enqueue in flight.
fn tick_and_crash(f: &Fx, now: i64, crash: Crash) {
    f.queue.crash.set(Some(crash));
    let log = |_: LogLevel, _: &str| {};
    assert!(
        tick(&f.store, &f.sql, &f.queue, &f.cfg, now, &log).now_or_never().is_none(),
        "the tick waits on the Session"
    );
    f.queue.crash.set(None);
}

#[test]
fn a_crash_between_claim_and_enqueue_still_runs_the_slot_exactly_once() {
    for crash in [Crash::Lost, Crash::Delivered] {
        // A heartbeat: the message never reached the Session, or reached it
        // and the answer was lost.
        let f = Fx::new(&[]);
        f.store.put_text(HB, "- [ ] look at the calendar");
        let t = utc(2026, 1, 5, 10, 0);
        tick_and_crash(&f, t, crash);
        assert_eq!(f.claims(), [format!("heartbeat:{t} pending")], "{crash:?}");
        // The next tick (a new alarm, same slot) queues it once, and only
        // once, even while the heartbeat session is busy (with this very
        // message, when it was delivered).
        f.queue.busy.set(true);
        f.tick(t + 5 * MIN);
        f.queue.busy.set(false);
        f.tick(t + 10 * MIN);
        assert_eq!(f.keys(), [format!("agent:main:heartbeat heartbeat:{t}")], "{crash:?}");
        assert_eq!(f.claims(), [format!("heartbeat:{t} queued")], "{crash:?}");

        // A job, retried by the alarm at the same tick.
        let f = Fx::new(&[("HEARTBEAT_ENABLED", "false")]);
        one_job(&f);
        let slot = utc(2026, 2, 2, 8, 0);
        f.tick(slot - 5 * MIN);
        tick_and_crash(&f, slot, crash);
        assert_eq!(f.claims(), [format!("job:brief:{slot} pending")], "{crash:?}");
        f.tick(slot);
        f.tick(slot + 5 * MIN);
        assert_eq!(queued_ids(&f), [format!("job:brief:{slot}")], "{crash:?}");
        assert_eq!(f.claims(), [format!("job:brief:{slot} queued")], "{crash:?}");
    }
}

#[test]
fn a_run_that_cannot_be_queued_for_a_day_is_given_up_and_reported() {
    let f = Fx::new(&[("HEARTBEAT_ENABLED", "false")]);
    one_job(&f);
    let slot = utc(2026, 2, 2, 8, 0);
    f.tick(slot - 5 * MIN);
    f.queue.fail.set(true);
    assert!(f.try_tick(slot).is_err());
    assert!(f.try_tick(slot + 23 * 60 * MIN).is_err(), "still retried after 23 hours");
    // Ticks still do the rest of their work meanwhile; after a day it is given up.
    f.queue.fail.set(false);
    f.tick(slot + 24 * 60 * MIN + 5 * MIN);
    assert_eq!(f.state().failed().unwrap(), [format!("job:brief:{slot}")]);
    assert!(f.logs.borrow().iter().any(|l| l.contains("given up")));
    // The next day's run is unaffected.
    assert_eq!(queued_ids(&f), [format!("job:brief:{}", slot + 24 * 60 * MIN)]);
}

#[test]
fn an_old_trigger_delivered_late_moves_nothing_backwards() {
    let f = Fx::new(&[("HEARTBEAT_ACTIVE_HOURS", "08:00-22:00"), ("TIMEZONE", "Europe/Paris")]);
    f.store.put_text(HB, "- [ ] look at the calendar");
    let t = utc(2026, 1, 5, 10, 0);
    f.tick(t);
    let last = f.state().get("heartbeat_last").unwrap();
    // 05:00 UTC is outside the active hours: handled now, it would say "inactive".
    let r = f.tick(utc(2026, 1, 5, 5, 0));
    assert!(r.stale);
    assert_eq!(f.state().get("heartbeat_last").unwrap(), last);
    assert_eq!(f.state().last_processed_tick().unwrap(), Some(t));
    assert_eq!(f.state().last_tick().unwrap(), Some(t));
    // The store refuses to go back on its own too.
    f.state().advance_tick(t - MIN).unwrap();
    f.state().set_heartbeat_outcome(t - MIN, &HeartbeatOutcome::Inactive).unwrap();
    assert_eq!(f.state().last_processed_tick().unwrap(), Some(t));
    assert_eq!(f.state().get("heartbeat_last").unwrap(), last);
    // The same tick again (an alarm retry) is not old.
    assert!(!f.tick(t).stale);
}

#[test]
fn version_one_tables_are_migrated_in_place() {
    let f = Fx::new(&[]);
    for stmt in [
        "CREATE TABLE sched_claims (slot_id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, slot_ms INTEGER NOT NULL, claimed_at INTEGER NOT NULL)",
        "CREATE TABLE sched_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "INSERT INTO sched_claims VALUES ('heartbeat:1000', 'heartbeat', 'heartbeat', 1000, 1000)",
    ] {
        f.sql.exec(stmt, &[]).unwrap();
    }
    f.state().init().unwrap();
    f.state().init().unwrap();
    assert_eq!(f.claims(), ["heartbeat:1000 done"]);
    assert_eq!(f.state().last_heartbeat_slot().unwrap(), Some(1000));
}
