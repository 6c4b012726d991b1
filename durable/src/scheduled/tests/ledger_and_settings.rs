//! The usage ledger, the interval settings and their warnings, and active
//! hours across a daylight-saving change.

use super::*;

const MIN: i64 = 60_000;
const HB_KEY: &str = "agent:main:heartbeat";

fn usage(input: u64, output: u64) -> Usage {
    r2_layout::Usage::new(input, output, 0, 0)
}

#[test]
fn each_run_gets_a_usage_row_that_outlives_its_job() {
    let f = Fx::new(&[]);
    f.store.put_text(HB, "- [ ] check the calendar");
    f.store.put_text("agents/main/cron.json", r#"[{"name":"brief","message":"Brief me","cron":"0 8 * * *"}]"#);
    let t = utc(2026, 2, 2, 7, 30);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Queued);
    // Still running: nothing is recorded yet.
    f.tick(t + 5 * MIN);
    assert_eq!(ledger::report(&f.state()).unwrap(), ledger::LedgerReport::default());
    f.queue.run_turns(HB_KEY, usage(100, 10));
    f.tick(t + 10 * MIN);
    let r = ledger::report(&f.state()).unwrap();
    assert_eq!((r.heartbeat.runs, r.heartbeat.usage.input, r.heartbeat.usage.output), (1, 100, 10));
    assert_eq!(f.claims(), [format!("heartbeat:{t} done")]);
    // Recorded once: asking again adds nothing.
    f.tick(t + 15 * MIN);
    assert_eq!(ledger::report(&f.state()).unwrap().heartbeat.usage.input, 100);
    let calls = f.queue.usage_calls.get();
    f.tick(t + 20 * MIN);
    assert_eq!(f.queue.usage_calls.get(), calls, "no Session is asked when nothing is outstanding");

    // 08:00: a heartbeat and the job; then the job leaves cron.json.
    let r8 = f.tick(utc(2026, 2, 2, 8, 0));
    assert_eq!(r8.jobs_queued.len(), 1);
    f.queue.run_turns(HB_KEY, usage(120, 12));
    f.queue.run_turns("agent:main:job:brief", usage(300, 30));
    f.store.put_text("agents/main/cron.json", "[]");
    f.tick(utc(2026, 2, 2, 8, 5));
    let r = ledger::report(&f.state()).unwrap();
    assert_eq!((r.heartbeat.runs, r.heartbeat.usage.input), (2, 220));
    assert_eq!((r.jobs.runs, r.jobs.usage.input, r.jobs.usage.output), (1, 300, 30));
    assert_eq!(r.by_job["brief"].usage.total_tokens, 330);
    // Months later every claim is pruned; the ledger keeps the history.
    f.tick(utc(2026, 5, 1, 8, 0));
    assert!(f.state().last_job_slots().unwrap().is_empty());
    let later = ledger::report(&f.state()).unwrap();
    assert_eq!(later.by_job["brief"], r.by_job["brief"]);
    assert_eq!(later.jobs, r.jobs);
    let json = serde_json::to_value(&later).unwrap();
    assert_eq!(json["byJob"]["brief"]["input"], 300);
    assert_eq!(json["heartbeat"]["runs"], 2);
}

#[test]
fn runs_of_a_job_that_overran_share_one_delta() {
    let f = Fx::new(&[("HEARTBEAT_ENABLED", "false")]);
    f.store.put_text("agents/main/cron.json", r#"[{"name":"poll","message":"Poll","cron":"*/5 * * * *"}]"#);
    let t = utc(2026, 2, 2, 9, 0);
    f.tick(t);
    f.tick(t + 5 * MIN); // the first run is still going: the second queues behind it
    f.queue.run_turns("agent:main:job:poll", usage(50, 5));
    f.tick(t + 6 * MIN);
    let r = ledger::report(&f.state()).unwrap();
    assert_eq!((r.jobs.runs, r.jobs.usage.input), (2, 50));
}

#[test]
fn a_job_that_always_overlaps_itself_still_gets_its_runs_recorded() {
    // Every run takes longer than the 5-minute period: the Session is never idle.
    let f = Fx::new(&[("HEARTBEAT_ENABLED", "false")]);
    f.store.put_text("agents/main/cron.json", r#"[{"name":"poll","message":"Poll","cron":"*/5 * * * *"}]"#);
    let key = "agent:main:job:poll";
    let t = utc(2026, 2, 2, 9, 0);
    f.tick(t);
    f.tick(t + 5 * MIN);
    assert_eq!(ledger::report(&f.state()).unwrap().jobs.runs, 0, "both runs may still be spending");
    let mut spent = 0;
    for i in 2..12 {
        // The oldest run ends just before the next tick, which queues another.
        f.queue.finish_one(key, usage(40, 4));
        spent += 40;
        f.tick(t + i * 5 * MIN);
        assert!(f.queue.counters.borrow()[key].open >= 2, "never idle");
        let r = ledger::report(&f.state()).unwrap();
        assert_eq!((r.jobs.runs, r.jobs.usage.input), (i - 1, spent), "tick {i}: every finished run is in the ledger");
    }
    // The claims of the finished runs are done, the open ones still queued.
    let claims = f.claims();
    assert_eq!(claims.iter().filter(|c| c.ends_with(" done")).count(), 10);
    assert_eq!(claims.iter().filter(|c| c.ends_with(" queued")).count(), 2, "{claims:?}");
    // It leaves cron.json; its last runs end: nothing is left out.
    f.store.put_text("agents/main/cron.json", "[]");
    f.queue.run_turns(key, usage(70, 7));
    f.tick(t + 12 * 5 * MIN);
    let r = ledger::report(&f.state()).unwrap();
    assert_eq!((r.jobs.runs, r.jobs.usage.input), (12, spent + 70));
    assert!(f.claims().iter().all(|c| c.ends_with(" done")));
}

fn load(vars: &[(&str, &str)]) -> ScheduleConfig {
    let v: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    ScheduleConfig::load(&v, "main").unwrap()
}

#[test]
fn seed_004_interval_in_seconds_and_short_intervals_are_reported() {
    let c = load(&[("HEARTBEAT_INTERVAL", "1800")]);
    assert_eq!(c.heartbeat.unwrap().interval_minutes(), 30);
    assert!(c.warnings.is_empty());
    let c = load(&[("HEARTBEAT_INTERVAL", "90")]);
    assert_eq!(c.heartbeat.unwrap().interval_minutes(), 2);
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].contains("rounded up to 2 minutes"));
    assert!(c.warnings[1].contains("shorter than the cron trigger"));
    let c = load(&[("HEARTBEAT_INTERVAL_MINUTES", "45"), ("HEARTBEAT_INTERVAL", "60")]);
    assert_eq!(c.heartbeat.unwrap().interval_minutes(), 45);
    assert!(c.warnings[0].contains("HEARTBEAT_INTERVAL is ignored"));
    assert!(load(&[("HEARTBEAT_INTERVAL", "soon")]).heartbeat.unwrap_err().contains("HEARTBEAT_INTERVAL"));
    assert!(load(&[("HEARTBEAT_INTERVAL", "0")]).heartbeat.is_err());
    let c = load(&[("HEARTBEAT_RUN_PROSE", "maybe")]);
    assert_eq!(c.prose, hearth_schedule::ProseRule::Skip);
    assert!(c.warnings[0].contains("HEARTBEAT_RUN_PROSE"));
}

#[test]
fn a_two_minute_heartbeat_is_reported_and_runs_once_per_trigger() {
    let f = Fx::new(&[("HEARTBEAT_INTERVAL_MINUTES", "2")]);
    f.store.put_text(HB, "- [ ] check");
    let t = utc(2026, 1, 5, 10, 0);
    for i in 0..3 {
        assert_eq!(f.tick_and_run(t + i * 5 * MIN).heartbeat, HeartbeatOutcome::Queued);
    }
    assert_eq!(f.keys().len(), 3, "one run per 5-minute trigger, not per 2 minutes");
    // Not silently changed: the setting stays 2 and the admin route and the log say so.
    assert_eq!(f.cfg.heartbeat.as_ref().unwrap().interval_minutes(), 2);
    let warnings = f.state().notes("config_warnings").unwrap();
    assert!(warnings[0].contains("(2 min) is shorter than the cron trigger (5 min)"), "{warnings:?}");
    assert_eq!(
        f.logs.borrow().iter().filter(|l| l.contains("shorter than the cron trigger")).count(),
        1,
        "logged once"
    );
}

#[test]
fn heartbeats_start_at_eight_paris_time_on_both_sides_of_a_dst_change() {
    // 08:00 in Paris is 07:00 UTC before 29 March 2026 and 06:00 UTC after.
    for (d, first) in [(28, 7), (30, 6)] {
        let f = Fx::new(&[("HEARTBEAT_ACTIVE_HOURS", "08:00-22:00"), ("TIMEZONE", "Europe/Paris")]);
        f.store.put_text(HB, "- [ ] morning check");
        let mut runs = vec![];
        let mut t = utc(2026, 3, d, 4, 0);
        while t <= utc(2026, 3, d, 8, 0) {
            if f.tick_and_run(t).heartbeat == HeartbeatOutcome::Queued {
                runs.push(t);
            }
            t += 5 * MIN;
        }
        assert_eq!(runs[0], utc(2026, 3, d, first, 0), "29 March ± 1 day: {d}");
    }
}
