//! The tick against in-memory doubles: slots claimed once, no LLM work when
//! there is nothing to do, jobs at the right instant, notifications filtered.

use super::*;
use crate::inbound::{ChannelKind, Inbound, ReplyTarget, SessionKey};
use crate::ports::{LogLevel, ObjectStore, Sql, StorageError};
use crate::settings::Principal;
use crate::testing::{MemSql, MemStore};
use futures::executor::block_on;
use hearth_schedule::timing::HeartbeatConfig;
use r2_layout::Usage;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

mod delivery;
mod heartbeat_source;
mod ledger_and_settings;

#[derive(Default)]
struct MemQueue {
    queued: RefCell<Vec<(String, Inbound, EnqueueOptions)>>,
    busy: Cell<bool>,
    fail: Cell<bool>,
    /// The object stops while the call is in flight: before the Session got
    /// the message (`Lost`) or after (`Delivered`, the answer is lost).
    crash: Cell<Option<Crash>>,
    /// Per session key: usage counters, as the Session object reports them.
    counters: RefCell<HashMap<String, SessionCounters>>,
    usage_calls: Cell<u32>,
}

#[derive(Clone, Copy, Debug)]
enum Crash {
    Lost,
    Delivered,
}

impl MemQueue {
    /// The Session `key` ran its open messages, spending `usage`.
    fn run_turns(&self, key: &str, usage: Usage) {
        let mut c = self.counters.borrow_mut();
        let e = c.entry(key.to_owned()).or_default();
        e.open = 0;
        e.total.add(&usage);
    }

    /// The Session `key` finished its oldest open message, spending `usage`
    /// (the others are still queued).
    fn finish_one(&self, key: &str, usage: Usage) {
        let mut c = self.counters.borrow_mut();
        let e = c.entry(key.to_owned()).or_default();
        e.open = (e.open - 1).max(0);
        e.total.add(&usage);
    }
}

impl SessionQueue for MemQueue {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        opts: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError> {
        if self.fail.get() {
            return Err(StorageError("session unreachable".into()));
        }
        if let Some(Crash::Lost) = self.crash.get() {
            futures::future::pending::<()>().await;
        }
        let open = self.counters.borrow().get(&key.render()).map_or(0, |c| c.open);
        if opts.if_idle && (self.busy.get() || open > 0) {
            return Ok(EnqueueOutcome::Busy);
        }
        let outcome = {
            let mut q = self.queued.borrow_mut();
            if q.iter().any(|(_, i, _)| i.dedupe_key == inbound.dedupe_key) {
                EnqueueOutcome::Repeat
            } else {
                q.push((key.render(), inbound.clone(), opts));
                self.counters.borrow_mut().entry(key.render()).or_default().open += 1;
                EnqueueOutcome::Queued
            }
        };
        if let Some(Crash::Delivered) = self.crash.get() {
            futures::future::pending::<()>().await;
        }
        Ok(outcome)
    }

    async fn usage(&self, key: &SessionKey) -> Result<SessionCounters, StorageError> {
        self.usage_calls.set(self.usage_calls.get() + 1);
        if self.fail.get() {
            return Err(StorageError("session unreachable".into()));
        }
        Ok(self.counters.borrow().get(&key.render()).copied().unwrap_or_default())
    }
}

fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> i64 {
    jiff::civil::date(y, mo, d).at(h, mi, 0, 0).to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp().as_millisecond()
}

struct Fx {
    store: MemStore,
    sql: MemSql,
    queue: MemQueue,
    cfg: ScheduleConfig,
    logs: RefCell<Vec<String>>,
}

impl Fx {
    fn new(vars: &[(&str, &str)]) -> Self {
        let v: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Fx {
            store: MemStore::default(),
            sql: MemSql::default(),
            queue: MemQueue::default(),
            cfg: ScheduleConfig::load(&v, "main").unwrap(),
            logs: RefCell::default(),
        }
    }
    fn tick(&self, now: i64) -> TickReport {
        self.try_tick(now).unwrap()
    }
    fn try_tick(&self, now: i64) -> Result<TickReport, StorageError> {
        let log = |_: LogLevel, m: &str| self.logs.borrow_mut().push(m.to_owned());
        block_on(tick(&self.store, &self.sql, &self.queue, &self.cfg, now, &log))
    }
    /// Ticks at `t` and, if the heartbeat was queued, lets its turn finish.
    fn tick_and_run(&self, t: i64) -> TickReport {
        let r = self.tick(t);
        self.queue.run_turns("agent:main:heartbeat", Usage::default());
        r
    }
    /// `slot_id state` of every claim, in slot order.
    fn claims(&self) -> Vec<String> {
        self.sql
            .exec("SELECT slot_id, state FROM sched_claims ORDER BY slot_ms, slot_id", &[])
            .unwrap()
            .into_iter()
            .map(|r| format!("{} {}", r[0].as_str().unwrap(), r[1].as_str().unwrap()))
            .collect()
    }
    fn state(&self) -> ScheduleStore<'_, MemSql> {
        ScheduleStore::new(&self.sql)
    }
    fn keys(&self) -> Vec<String> {
        self.queue.queued.borrow().iter().map(|(k, i, _)| format!("{k} {}", i.dedupe_key)).collect()
    }
}

const HB: &str = "agents/main/HEARTBEAT.md";

#[test]
fn settings_and_their_errors() {
    let f = Fx::new(&[("HEARTBEAT_ACTIVE_HOURS", "08:00-22:00"), ("TIMEZONE", "Europe/Paris")]);
    let hb = f.cfg.heartbeat.as_ref().unwrap();
    assert_eq!(hb.interval_minutes(), 30);
    assert!(f.cfg.heartbeat_enabled);
    let v: HashMap<String, String> = [("HEARTBEAT_INTERVAL_MINUTES", "soon"), ("HEARTBEAT_ENABLED", "false")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let c = ScheduleConfig::load(&v, "main").unwrap();
    assert!(c.heartbeat.unwrap_err().contains("HEARTBEAT_INTERVAL_MINUTES"));
    assert!(!c.heartbeat_enabled);
    assert!(ScheduleConfig::load(&v, "other").is_err());
    let f = Fx::new(&[("TIMEZONE", "Mars/Olympus")]);
    assert_eq!(f.tick(utc(2026, 1, 5, 10, 0)).heartbeat.label().split(':').next(), Some("misconfigured"));
}

#[test]
fn heartbeat_runs_once_per_slot_in_its_own_session() {
    let f = Fx::new(&[]);
    f.store.put_text(HB, "- [ ] check the inbox");
    let t = utc(2026, 1, 5, 10, 0);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Queued);
    // Same slot: a repeat trigger, a later tick in the slot.
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::NotDue);
    assert_eq!(f.tick(t + 5 * 60_000).heartbeat, HeartbeatOutcome::NotDue);
    assert_eq!(f.keys(), [format!("agent:main:heartbeat heartbeat:{t}")]);
    let (_, inbound, opts) = f.queue.queued.borrow()[0].clone();
    assert_eq!(inbound.reply_target.channel, ChannelKind::Notify);
    assert_eq!(inbound.channel, ChannelKind::System);
    assert!(inbound.text.contains("HEARTBEAT_OK"));
    assert_eq!(opts, EnqueueOptions { if_idle: true, fresh: true, next_run_in_ms: Some(30 * 60_000) });
    // Next slot, once the first run is over.
    f.queue.run_turns("agent:main:heartbeat", Usage::default());
    assert_eq!(f.tick(t + 30 * 60_000).heartbeat, HeartbeatOutcome::Queued);
    assert_eq!(f.keys().len(), 2);
}

#[test]
fn no_work_without_something_to_do() {
    let f = Fx::new(&[("HEARTBEAT_ACTIVE_HOURS", "08:00-22:00"), ("TIMEZONE", "Europe/Paris")]);
    let t = utc(2026, 1, 5, 10, 0);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("absent".into()));
    f.store.put_text(HB, "# Heartbeat\n\n<!-- add tasks here -->\n- [ ]\n");
    assert_eq!(f.tick(t + 60_000).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    f.store.put_text(HB, "- [x] done already");
    assert_eq!(f.tick(t + 120_000).heartbeat, HeartbeatOutcome::Skipped("all_done".into()));
    // A skipped slot is not claimed: filling the file in runs it on the next tick.
    f.store.put_text(HB, "- [ ] water the plants");
    let ops = f.store.op_count();
    assert_eq!(f.tick(utc(2026, 1, 5, 22, 30)).heartbeat, HeartbeatOutcome::Inactive); // 23:30 Paris
    assert_eq!(f.store.op_count() - ops, 1, "only cron.json is read outside active hours");
    assert!(f.queue.queued.borrow().is_empty());
    assert_eq!(f.tick(utc(2026, 1, 6, 7, 0)).heartbeat, HeartbeatOutcome::Queued);
    // 08:00 Paris
}

#[test]
fn a_busy_heartbeat_session_skips_and_releases_the_slot() {
    let f = Fx::new(&[]);
    f.store.put_text(HB, "- [ ] check the weather and tell me if it rains");
    let t = utc(2026, 1, 5, 10, 0);
    f.queue.busy.set(true);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Busy);
    assert!(f.claims().is_empty(), "the slot is free again");
    f.queue.busy.set(false);
    assert_eq!(f.tick(t + 5 * 60_000).heartbeat, HeartbeatOutcome::Queued);
    assert_eq!(f.claims(), [format!("heartbeat:{t} queued")]);
}

fn paris_jobs(f: &Fx) {
    f.store.put_text(
        "agents/main/cron.json",
        r#"[{"name":"morning","message":"Brief me","cron":"0 8 * * *","timezone":"Europe/Paris"},
            {"name":"broken","message":"x","cron":"every day"},
            {"name":"hourly","message":"Check","cron":"0 * * * *"}]"#,
    );
}

/// Ticks every 5 minutes over [from, to] and returns the ticks where `job` was queued.
fn ticks_queuing(f: &Fx, job: &str, from: i64, to: i64) -> Vec<i64> {
    let mut hits = vec![];
    let mut t = from;
    while t <= to {
        let r = f.tick(t);
        if r.jobs_queued.iter().any(|id| id.starts_with(&format!("job:{job}:"))) {
            hits.push(t);
        }
        t += 5 * 60_000;
    }
    hits
}

#[test]
fn a_paris_job_fires_once_at_the_right_utc_tick_across_dst() {
    // Winter (UTC+1): 07:00 UTC. Summer (from 29 March, UTC+2): 06:00 UTC. Back on 25 October.
    // Each day on a fresh object, so no missed slot of the day between is caught up.
    let days = [(3, 28, 7), (3, 30, 6), (10, 24, 6), (10, 26, 7)];
    for (mo, d, hour) in days {
        let f = Fx::new(&[]);
        paris_jobs(&f);
        let hits = ticks_queuing(&f, "morning", utc(2026, mo, d, 5, 0), utc(2026, mo, d, 8, 0));
        assert_eq!(hits, [utc(2026, mo, d, hour, 0)], "2026-{mo}-{d}");
        let q = f.queue.queued.borrow();
        let morning: Vec<_> = q.iter().filter(|(k, _, _)| k == "agent:main:job:morning").collect();
        assert_eq!(morning.len(), 1);
        assert_eq!(morning[0].1.dedupe_key, format!("job:morning:{}", utc(2026, mo, d, hour, 0)));
        assert!(morning[0].1.text.contains("Brief me"));
        assert_eq!(morning[0].1.reply_target.extra.as_deref(), Some("job:morning"));
    }
    // Ticking straight through the change: one run a day, the day's right instant.
    let f = Fx::new(&[]);
    paris_jobs(&f);
    let hits = ticks_queuing(&f, "morning", utc(2026, 3, 28, 5, 0), utc(2026, 3, 30, 8, 0));
    assert_eq!(hits, [utc(2026, 3, 28, 7, 0), utc(2026, 3, 29, 6, 0), utc(2026, 3, 30, 6, 0)]);
}

#[test]
fn missed_slots_run_once_and_bad_jobs_are_reported_not_fatal() {
    let f = Fx::new(&[]);
    paris_jobs(&f);
    let r = f.tick(utc(2026, 2, 1, 5, 0));
    assert_eq!(r.job_errors.len(), 1);
    assert!(r.job_errors[0].contains("broken"), "{:?}", r.job_errors);
    assert_eq!(f.logs.borrow().iter().filter(|l| l.contains("broken")).count(), 1);
    // Two days without ticks: each job runs once, for its latest slot.
    let r = f.tick(utc(2026, 2, 3, 9, 30));
    let mut ids = r.jobs_queued.clone();
    ids.sort();
    assert_eq!(
        ids,
        [format!("job:hourly:{}", utc(2026, 2, 3, 9, 0)), format!("job:morning:{}", utc(2026, 2, 3, 7, 0))]
    );
    // The error is logged once, not on every tick.
    f.tick(utc(2026, 2, 3, 9, 35));
    assert_eq!(f.logs.borrow().iter().filter(|l| l.contains("broken")).count(), 1);
    // A late, older trigger does not reopen slots; a redelivered one does nothing.
    assert!(f.tick(utc(2026, 2, 3, 9, 0)).jobs_queued.is_empty());
    assert!(f.tick(utc(2026, 2, 3, 9, 30)).jobs_queued.is_empty());
    // Not an array: one error, no jobs, no panic.
    f.store.put_text("agents/main/cron.json", "{\"name\": 1}");
    let r = f.tick(utc(2026, 2, 3, 10, 0));
    assert!(r.jobs_queued.is_empty());
    assert!(r.job_errors[0].starts_with("cron.json"), "{:?}", r.job_errors);
}

#[test]
fn a_claimed_job_slot_is_not_run_again_even_if_the_tick_state_is_lost() {
    let f = Fx::new(&[]);
    paris_jobs(&f);
    let t = utc(2026, 2, 1, 7, 0);
    f.tick(t - 5 * 60_000);
    assert_eq!(f.tick(t).jobs_queued.len(), 2);
    ScheduleStore::new(&f.sql).delete("last_tick").unwrap();
    assert!(f.tick(t).jobs_queued.is_empty());
    assert_eq!(ScheduleStore::new(&f.sql).last_job_slots().unwrap().len(), 2);
}

#[test]
fn next_heartbeat_skips_inactive_hours() {
    let c = HeartbeatConfig::new(30, Some("08:00-22:00"), Some("Europe/Paris")).unwrap();
    assert_eq!(next_heartbeat(utc(2026, 1, 5, 10, 10), &c), Some(utc(2026, 1, 5, 10, 30)));
    assert_eq!(next_heartbeat(utc(2026, 1, 5, 21, 10), &c), Some(utc(2026, 1, 6, 7, 0)));
}

#[test]
fn notify_drops_ok_and_repeats_and_targets_the_owner() {
    let sql = MemSql::default();
    let owner = Principal { channel: ChannelKind::Telegram, id: "42".into() };
    let now = 1_780_000_000_000;
    assert_eq!(notify::decide(&sql, Some(&owner), " HEARTBEAT_OK. ", now).unwrap(), notify::NotifyDecision::Silent);
    assert_eq!(
        notify::decide(&sql, Some(&owner), "All quiet. HEARTBEAT_OK", now).unwrap(),
        notify::NotifyDecision::Silent
    );
    let d = notify::decide(&sql, Some(&owner), "Rain at 3pm", now).unwrap();
    assert_eq!(
        d,
        notify::NotifyDecision::Send(ReplyTarget {
            channel: ChannelKind::Telegram,
            chat_id: "42".into(),
            ..Default::default()
        })
    );
    notify::record(&sql, "Rain at 3pm", now).unwrap();
    assert_eq!(
        notify::decide(&sql, Some(&owner), "Rain  at 3pm\n", now + 3_600_000).unwrap(),
        notify::NotifyDecision::Duplicate
    );
    assert!(matches!(
        notify::decide(&sql, Some(&owner), "Rain at 3pm", now + 7 * 3_600_000).unwrap(),
        notify::NotifyDecision::Send(_)
    ));
    assert_eq!(notify::decide(&sql, None, "Something", now).unwrap(), notify::NotifyDecision::NoOwner);
}

/// What the runs queued so far say about when they come again (minutes).
fn next_runs(f: &Fx) -> Vec<(String, Option<i64>)> {
    let q = f.queue.queued.borrow();
    q.iter().map(|(k, _, o)| (k.clone(), o.next_run_in_ms.map(|ms| ms / 60_000))).collect()
}

#[test]
fn each_run_says_when_its_prompt_comes_again() {
    // Every 30 minutes from 08:00 to 22:00 in Paris (UTC+1 in January).
    let f = Fx::new(&[("HEARTBEAT_ACTIVE_HOURS", "08:00-22:00"), ("TIMEZONE", "Europe/Paris")]);
    f.store.put_text(HB, "- [ ] check the inbox");
    f.store.put_text(
        "agents/main/cron.json",
        r#"[{"name":"every20","message":"Look","cron":"*/20 * * * *"},
            {"name":"odd","message":"Look","cron":"7,19 * * * *"},
            {"name":"daily","message":"Brief me","cron":"0 8 * * *","timezone":"Europe/Paris"}]"#,
    );
    f.tick_and_run(utc(2026, 1, 5, 7, 0)); // 08:00 in Paris
    assert_eq!(
        next_runs(&f),
        [
            ("agent:main:heartbeat".into(), Some(30)),
            ("agent:main:job:every20".into(), Some(20)),
            ("agent:main:job:daily".into(), Some(24 * 60)),
        ]
    );
    // A job at :07 runs at the :10 trigger; its :19 slot at the :20 one.
    f.queue.queued.borrow_mut().clear();
    f.tick_and_run(utc(2026, 1, 5, 7, 10));
    assert_eq!(next_runs(&f), [("agent:main:job:odd".into(), Some(10))]);
    // The last heartbeat of the day (21:30): the next slot is outside the
    // active hours, the next run hours away.
    f.queue.queued.borrow_mut().clear();
    f.tick_and_run(utc(2026, 1, 5, 20, 30));
    let hb: Vec<_> = next_runs(&f).into_iter().filter(|(k, _)| k.ends_with(":heartbeat")).collect();
    assert_eq!(hb, [("agent:main:heartbeat".into(), None)]);
}
