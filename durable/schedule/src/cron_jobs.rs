//! `cron.json` jobs (seed 004): parsing, validation and which jobs are due.
//!
//! ```json
//! [{ "name": "morning-briefing", "message": "Prepare a briefing.", "cron": "0 8 * * *",
//!    "timezone": "Europe/Paris" }]
//! ```
//!
//! Parsing is lenient per job: a job with a bad cron expression, an unknown time zone, a missing
//! or empty field, a bad or duplicate name is returned as a [`JobError`] (to log and show on the
//! admin API) and the other jobs are still returned. Only a file that is not a JSON array at all
//! is an error for the whole file.
//!
//! Rules chosen here:
//! * Cron expressions are the standard 5 fields (minute hour day-of-month month day-of-week,
//!   Sunday = 0 or 7, names like `MON`/`JAN`), plus `@yearly`, `@annually`, `@monthly`,
//!   `@weekly`, `@daily`, `@hourly`. Seconds and year fields are refused: the Worker ticks once
//!   a minute. Day-of-month and day-of-week combine with OR, as in Vixie cron. Croner's
//!   extensions (`L`, `W`, `#`) are accepted.
//! * `timezone` may be omitted: the caller's default (the agent's zone) applies, else UTC.
//! * `name` is 1 to 64 of `A-Z a-z 0-9 . _ -`: it goes into slot ids (`job:{name}:{slot_ms}`)
//!   and session keys, so it must not contain separators. Later duplicates of a name are errors;
//!   the first job with that name is kept.
//! * At most [`MAX_JOBS`] jobs are accepted; the rest are reported, bounding the work per tick.
//! * Daylight saving: a wall-clock time that happens twice (clocks go back) runs once, at the
//!   first instant. A time that does not exist (clocks go forward, e.g. 02:30 on the
//!   spring-forward day in New York) runs at the first instant after the gap (03:00 local),
//!   once. These are croner's rules for fixed-time jobs; [`crate::cron_expr`] keeps them.
//! * Missed slots: [`due_jobs`] returns, per job, only the latest slot in `(last_tick, now]`,
//!   so a job whose slots were missed while nothing ran runs once on the next tick.

use serde_json::Value;
use thiserror::Error;

use crate::cron_expr::CronExpr;
use crate::error::ScheduleError;
use crate::time_zone::{parse_time_zone, DEFAULT_TIME_ZONE};
use crate::tz::TimeZone;

/// Most jobs accepted from one `cron.json`.
pub const MAX_JOBS: usize = 50;
/// Longest accepted job name.
pub const MAX_NAME_LEN: usize = 64;

/// A valid scheduled job.
#[derive(Debug, Clone, PartialEq)]
pub struct CronJob {
    /// Unique name (safe for ids: `A-Z a-z 0-9 . _ -`).
    pub name: String,
    /// The prompt sent to the job's isolated session.
    pub message: String,
    /// The cron expression as written (trimmed).
    pub cron: String,
    /// The IANA time zone name the expression is read in.
    pub timezone: String,
    schedule: CronExpr,
    tz: TimeZone,
}

/// Why one job of `cron.json` was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JobErrorKind {
    /// The array element is not a JSON object.
    #[error("job is not a JSON object")]
    NotAnObject,
    /// A required field is absent, not a string, or blank.
    #[error("missing or empty field \"{0}\" (a non-empty string is required)")]
    MissingField(&'static str),
    /// A field is present but not a string.
    #[error("field \"{0}\" must be a string")]
    NotAString(&'static str),
    /// The name has characters or a length that ids cannot carry.
    #[error("invalid name: use 1 to 64 of A-Z a-z 0-9 . _ -")]
    InvalidName,
    /// Another job earlier in the file has this name.
    #[error("duplicate name (an earlier job has it; this one is skipped)")]
    DuplicateName,
    /// The cron expression does not parse.
    #[error("invalid cron expression {expr:?}: {reason}")]
    InvalidCron {
        /// The expression.
        expr: String,
        /// What the reader found wrong.
        reason: String,
    },
    /// The cron expression parses but never fires (`0 0 30 2 *`).
    #[error("cron expression {0:?} never fires")]
    NeverFires(String),
    /// Unknown IANA time zone.
    #[error(transparent)]
    TimeZone(ScheduleError),
    /// Over [`MAX_JOBS`].
    #[error("too many jobs: only the first {MAX_JOBS} are used")]
    TooMany,
}

/// A skipped job: where it was, its name if readable, and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cron.json job #{index}{}: {kind}", name.as_ref().map(|n| format!(" ({n:?})")).unwrap_or_default())]
pub struct JobError {
    /// Position in the array, from 0.
    pub index: usize,
    /// The job's `name`, when it is a string.
    pub name: Option<String>,
    /// What is wrong.
    pub kind: JobErrorKind,
}

/// The result of reading `cron.json`: the valid jobs, and the skipped ones with reasons.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CronFile {
    /// Valid jobs, in file order.
    pub jobs: Vec<CronJob>,
    /// Skipped jobs, in file order.
    pub errors: Vec<JobError>,
}

/// One job due now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DueJob<'a> {
    /// The job.
    pub job: &'a CronJob,
    /// The scheduled instant being run, Unix ms.
    pub slot_ms: i64,
}

impl DueJob<'_> {
    /// `job:{name}:{slot_ms}`, see [`job_slot_id`].
    pub fn slot_id(&self) -> String {
        job_slot_id(&self.job.name, self.slot_ms)
    }
}

/// Stable id for claiming one run of a job exactly once: `job:{name}:{slot_ms}`.
pub fn job_slot_id(name: &str, slot_ms: i64) -> String {
    format!("job:{name}:{slot_ms}")
}

/// Parses a cron expression under this crate's rules (5 fields or an `@` macro).
pub fn parse_cron_expr(expr: &str) -> Result<CronExpr, JobErrorKind> {
    let expr = expr.trim();
    let invalid = |reason: String| JobErrorKind::InvalidCron { expr: expr.to_string(), reason };
    if expr.is_empty() {
        return Err(JobErrorKind::MissingField("cron"));
    }
    if !expr.starts_with('@') && expr.split_whitespace().count() != 5 {
        return Err(invalid("expected 5 fields: minute hour day-of-month month day-of-week".to_string()));
    }
    let cron = CronExpr::parse(expr).map_err(invalid)?;
    // Reject patterns that never match (Feb 30) now, so no tick searches in vain.
    if !cron.ever_fires() {
        return Err(JobErrorKind::NeverFires(expr.to_string()));
    }
    Ok(cron)
}

impl CronJob {
    /// Builds a job from its parts, validating each.
    pub fn new(name: &str, message: &str, cron: &str, timezone: &str) -> Result<Self, JobErrorKind> {
        let name = name.trim();
        if name.is_empty() {
            return Err(JobErrorKind::MissingField("name"));
        }
        if name.len() > MAX_NAME_LEN
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(JobErrorKind::InvalidName);
        }
        if message.trim().is_empty() {
            return Err(JobErrorKind::MissingField("message"));
        }
        let schedule = parse_cron_expr(cron)?;
        let tz = parse_time_zone(timezone).map_err(JobErrorKind::TimeZone)?;
        Ok(Self {
            name: name.to_string(),
            message: message.to_string(),
            cron: cron.trim().to_string(),
            timezone: timezone.trim().to_string(),
            schedule,
            tz,
        })
    }

    /// The latest scheduled instant in `(after_ms, up_to_ms]`, Unix ms.
    pub fn latest_slot_in(&self, after_ms: i64, up_to_ms: i64) -> Option<i64> {
        if up_to_ms <= after_ms {
            return None;
        }
        let prev = self.schedule.previous_before(up_to_ms.div_euclid(1000), true, &self.tz)?;
        let slot = prev * 1000;
        (slot > after_ms && slot <= up_to_ms).then_some(slot)
    }

    /// The first scheduled instant strictly after `after_ms`, Unix ms (for setting an alarm or
    /// showing "next run" on the admin API).
    pub fn next_slot_after(&self, after_ms: i64) -> Option<i64> {
        // Cron has minute resolution; whole seconds avoid sub-second edge cases in the search.
        let next = self.schedule.next_after(after_ms.div_euclid(1000), false, &self.tz)?;
        Some(next * 1000)
    }
}

/// Reads `cron.json`. `default_timezone` applies to jobs without `timezone` (pass the agent's
/// zone; `None` means UTC). An empty or blank file means no jobs.
pub fn parse_cron_json(text: &str, default_timezone: Option<&str>) -> Result<CronFile, ScheduleError> {
    if text.trim().is_empty() {
        return Ok(CronFile::default());
    }
    let value: Value =
        hearth_json::from_slice(text.as_bytes()).map_err(|e| ScheduleError::InvalidCronFile(e.to_string()))?;
    let Value::Array(items) = value else {
        return Err(ScheduleError::InvalidCronFile("top level is not an array".to_string()));
    };
    let default_tz = default_timezone.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(DEFAULT_TIME_ZONE);
    let mut file = CronFile::default();
    for (index, item) in items.iter().enumerate() {
        let name = item.get("name").and_then(Value::as_str).map(str::to_string);
        let fail = |kind| JobError { index, name: name.clone(), kind };
        if file.jobs.len() >= MAX_JOBS {
            file.errors.push(fail(JobErrorKind::TooMany));
            continue;
        }
        match job_from_value(item, default_tz) {
            Ok(job) if file.jobs.iter().any(|j| j.name == job.name) => {
                file.errors.push(fail(JobErrorKind::DuplicateName));
            }
            Ok(job) => file.jobs.push(job),
            Err(kind) => file.errors.push(fail(kind)),
        }
    }
    Ok(file)
}

fn job_from_value(item: &Value, default_tz: &str) -> Result<CronJob, JobErrorKind> {
    let Value::Object(obj) = item else {
        return Err(JobErrorKind::NotAnObject);
    };
    let field = |key: &'static str| -> Result<Option<&str>, JobErrorKind> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(JobErrorKind::NotAString(key)),
        }
    };
    let name = field("name")?.ok_or(JobErrorKind::MissingField("name"))?;
    let message = field("message")?.ok_or(JobErrorKind::MissingField("message"))?;
    let cron = field("cron")?.ok_or(JobErrorKind::MissingField("cron"))?;
    let tz = match field("timezone")? {
        Some(tz) if !tz.trim().is_empty() => tz,
        _ => default_tz,
    };
    CronJob::new(name, message, cron, tz)
}

/// The jobs due at a tick: for each job, the latest scheduled instant in
/// `(last_tick_ms, now_ms]`, if any. Slots missed while nothing ran collapse into that one run.
///
/// `last_tick_ms` is the `now_ms` of the previous tick that evaluated jobs (persist it). On
/// the very first tick pass `now_ms - 60_000` (or the time jobs were loaded) rather than 0,
/// or every job would run at once for its last slot ever.
pub fn due_jobs(jobs: &[CronJob], last_tick_ms: i64, now_ms: i64) -> Vec<DueJob<'_>> {
    jobs.iter()
        .filter_map(|job| job.latest_slot_in(last_tick_ms, now_ms).map(|slot_ms| DueJob { job, slot_ms }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> i64 {
        let date = crate::civil::Date::new(y.into(), mo as u8, d as u8).unwrap();
        crate::civil::DateTime::new(date, h as u8, mi as u8, 0).unwrap().seconds() * 1000
    }

    const MIN: i64 = 60_000;

    fn job(cron: &str, tz: &str) -> CronJob {
        CronJob::new("j", "do it", cron, tz).unwrap()
    }

    /// Runs a job with a tick every minute over `[from, to)` and returns the slots it ran.
    fn simulate_minutely(job: &CronJob, from: i64, to: i64) -> Vec<i64> {
        let mut ran = Vec::new();
        let mut last = from - MIN;
        let mut now = from;
        while now < to {
            for due in due_jobs(std::slice::from_ref(job), last, now) {
                ran.push(due.slot_ms);
            }
            last = now;
            now += MIN;
        }
        ran
    }

    #[test]
    fn seed_example_parses() {
        let text = r#"[{"name":"morning-briefing","message":"Good morning! Prepare a briefing of today's priorities.","cron":"0 8 * * *","timezone":"Europe/Paris"}]"#;
        let f = parse_cron_json(text, None).unwrap();
        assert!(f.errors.is_empty(), "{:?}", f.errors);
        assert_eq!(f.jobs.len(), 1);
        assert_eq!(f.jobs[0].name, "morning-briefing");
        assert_eq!(f.jobs[0].timezone, "Europe/Paris");
    }

    #[test]
    fn lenient_parsing_reports_and_skips_bad_jobs() {
        let text = r#"[
            {"name":"ok","message":"m","cron":"*/15 9-17 * * MON-FRI","timezone":"UTC"},
            {"name":"badcron","message":"m","cron":"61 * * * *","timezone":"UTC"},
            {"name":"badtz","message":"m","cron":"0 8 * * *","timezone":"Europe/Atlantis"},
            {"name":"nomsg","cron":"0 8 * * *"},
            {"message":"m","cron":"0 8 * * *"},
            {"name":"ok","message":"dup","cron":"0 9 * * *"},
            {"name":"has space","message":"m","cron":"0 9 * * *"},
            {"name":"num","message":5,"cron":"0 9 * * *"},
            "not an object",
            {"name":"sixfields","message":"m","cron":"0 0 8 * * *"},
            {"name":"never","message":"m","cron":"0 0 30 2 *"},
            {"name":"daily","message":"m","cron":"@daily"},
            {"name":"notz","message":"m","cron":"0 8 * * *"},
            {"name":"nulltz","message":"m","cron":"0 8 * * *","timezone":null}
        ]"#;
        let f = parse_cron_json(text, Some("America/New_York")).unwrap();
        let names: Vec<_> = f.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["ok", "daily", "notz", "nulltz"]);
        assert_eq!(f.jobs[2].timezone, "America/New_York");
        let kinds: Vec<_> = f.errors.iter().map(|e| (e.index, e.kind.clone())).collect();
        assert!(matches!(kinds[0], (1, JobErrorKind::InvalidCron { .. })));
        assert!(matches!(kinds[1], (2, JobErrorKind::TimeZone(_))));
        assert_eq!(kinds[2], (3, JobErrorKind::MissingField("message")));
        assert_eq!(kinds[3], (4, JobErrorKind::MissingField("name")));
        assert_eq!(kinds[4], (5, JobErrorKind::DuplicateName));
        assert_eq!(kinds[5], (6, JobErrorKind::InvalidName));
        assert_eq!(kinds[6], (7, JobErrorKind::NotAString("message")));
        assert_eq!(kinds[7], (8, JobErrorKind::NotAnObject));
        assert!(matches!(kinds[8], (9, JobErrorKind::InvalidCron { .. })));
        assert!(matches!(kinds[9], (10, JobErrorKind::NeverFires(_))));
        assert_eq!(f.errors.len(), 10);
        // Messages are readable for logs and the admin API.
        assert_eq!(
            f.errors[4].to_string(),
            "cron.json job #5 (\"ok\"): duplicate name (an earlier job has it; this one is skipped)"
        );
        assert!(f.errors[1].to_string().contains("Europe/Atlantis"));
    }

    #[test]
    fn whole_file_errors_and_empty_file() {
        assert!(parse_cron_json("{\"name\":1}", None).is_err());
        assert!(parse_cron_json("[{", None).is_err());
        assert_eq!(parse_cron_json("  \n", None).unwrap(), CronFile::default());
        assert_eq!(parse_cron_json("[]", None).unwrap(), CronFile::default());
    }

    #[test]
    fn too_many_jobs() {
        let items: Vec<String> =
            (0..MAX_JOBS + 3).map(|i| format!(r#"{{"name":"j{i}","message":"m","cron":"0 8 * * *"}}"#)).collect();
        let f = parse_cron_json(&format!("[{}]", items.join(",")), None).unwrap();
        assert_eq!(f.jobs.len(), MAX_JOBS);
        assert_eq!(f.errors.len(), 3);
        assert!(f.errors.iter().all(|e| e.kind == JobErrorKind::TooMany));
    }

    #[test]
    fn macros() {
        for m in ["@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@annually", "@DAILY"] {
            assert!(parse_cron_expr(m).is_ok(), "{m}");
        }
        assert!(parse_cron_expr("@reboot").is_err());
        assert!(parse_cron_expr("@every 5m").is_err());
        let j = job("@daily", "UTC");
        assert_eq!(j.next_slot_after(utc(2026, 5, 1, 12, 0)), Some(utc(2026, 5, 2, 0, 0)));
    }

    #[test]
    fn paris_8am_across_both_dst_changes() {
        let j = job("0 8 * * *", "Europe/Paris");
        // Spring forward: Sunday 2026-03-29 (02:00 CET -> 03:00 CEST).
        let ran = simulate_minutely(&j, utc(2026, 3, 27, 0, 0), utc(2026, 4, 1, 0, 0));
        assert_eq!(
            ran,
            [
                utc(2026, 3, 27, 7, 0),
                utc(2026, 3, 28, 7, 0),
                utc(2026, 3, 29, 6, 0), // the change day: already summer time at 08:00
                utc(2026, 3, 30, 6, 0),
                utc(2026, 3, 31, 6, 0),
            ]
        );
        // Fall back: Sunday 2026-10-25 (03:00 CEST -> 02:00 CET).
        let ran = simulate_minutely(&j, utc(2026, 10, 23, 0, 0), utc(2026, 10, 28, 0, 0));
        assert_eq!(
            ran,
            [
                utc(2026, 10, 23, 6, 0),
                utc(2026, 10, 24, 6, 0),
                utc(2026, 10, 25, 7, 0),
                utc(2026, 10, 26, 7, 0),
                utc(2026, 10, 27, 7, 0),
            ]
        );
    }

    #[test]
    fn paris_job_at_the_repeated_hour_runs_once() {
        // 02:30 happens twice on 2026-10-25 in Paris (00:30 and 01:30 UTC): run once, first.
        let j = job("30 2 * * *", "Europe/Paris");
        let ran = simulate_minutely(&j, utc(2026, 10, 24, 12, 0), utc(2026, 10, 26, 12, 0));
        assert_eq!(ran, [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]);
    }

    #[test]
    fn new_york_dst_changes() {
        let j = job("0 8 * * *", "America/New_York");
        // Spring forward Sunday 2026-03-08: EST (UTC-5) -> EDT (UTC-4).
        let ran = simulate_minutely(&j, utc(2026, 3, 7, 0, 0), utc(2026, 3, 10, 0, 0));
        assert_eq!(ran, [utc(2026, 3, 7, 13, 0), utc(2026, 3, 8, 12, 0), utc(2026, 3, 9, 12, 0)]);
        // Fall back Sunday 2026-11-01: EDT -> EST.
        let ran = simulate_minutely(&j, utc(2026, 10, 31, 0, 0), utc(2026, 11, 3, 0, 0));
        assert_eq!(ran, [utc(2026, 10, 31, 12, 0), utc(2026, 11, 1, 13, 0), utc(2026, 11, 2, 13, 0)]);
    }

    #[test]
    fn new_york_nonexistent_time_runs_once_after_the_gap() {
        // 02:30 does not exist on 2026-03-08 in New York (02:00 EST jumps to 03:00 EDT).
        // The job runs once, at 03:00 EDT = 07:00 UTC; the days around run at 02:30 local.
        let j = job("30 2 * * *", "America/New_York");
        let ran = simulate_minutely(&j, utc(2026, 3, 7, 0, 0), utc(2026, 3, 10, 0, 0));
        assert_eq!(ran, [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]);
        assert_eq!(j.next_slot_after(utc(2026, 3, 8, 0, 0)), Some(utc(2026, 3, 8, 7, 0)));
    }

    #[test]
    fn missed_slots_run_once() {
        let j = job("*/10 * * * *", "UTC");
        // Nothing ran from 10:00 to 11:35: one run, for the latest slot (11:30).
        let due = due_jobs(std::slice::from_ref(&j), utc(2026, 5, 1, 10, 0), utc(2026, 5, 1, 11, 35));
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].slot_ms, utc(2026, 5, 1, 11, 30));
        assert_eq!(due[0].slot_id(), format!("job:j:{}", utc(2026, 5, 1, 11, 30)));
        // The slot exactly at `now` counts; the one exactly at `last_tick` does not.
        let due = due_jobs(std::slice::from_ref(&j), utc(2026, 5, 1, 11, 30), utc(2026, 5, 1, 11, 40));
        assert_eq!(due[0].slot_ms, utc(2026, 5, 1, 11, 40));
        assert!(due_jobs(std::slice::from_ref(&j), utc(2026, 5, 1, 11, 40), utc(2026, 5, 1, 11, 49)).is_empty());
        // Clock going backwards or a repeated tick: nothing.
        assert!(due_jobs(std::slice::from_ref(&j), utc(2026, 5, 1, 12, 0), utc(2026, 5, 1, 11, 0)).is_empty());
        // A daily job missed for three days runs once, for the last day.
        let d = job("0 8 * * *", "UTC");
        let due = due_jobs(std::slice::from_ref(&d), utc(2026, 5, 1, 9, 0), utc(2026, 5, 4, 9, 0));
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].slot_ms, utc(2026, 5, 4, 8, 0));
    }

    #[test]
    fn two_triggers_same_slot_same_id() {
        let j = job("0 8 * * *", "Europe/Paris");
        let jobs = std::slice::from_ref(&j);
        let a = due_jobs(jobs, utc(2026, 6, 1, 5, 59), utc(2026, 6, 1, 6, 0));
        let b = due_jobs(jobs, utc(2026, 6, 1, 5, 59), utc(2026, 6, 1, 6, 0) + 30_000);
        assert_eq!(a[0].slot_id(), b[0].slot_id());
    }

    #[test]
    fn weekday_and_dom_or_semantics() {
        // Vixie cron: day-of-month OR day-of-week when both are restricted.
        let j = job("0 9 1 * MON", "UTC");
        // 2026-06-01 is a Monday and the 1st; 2026-06-08 a Monday.
        assert_eq!(j.next_slot_after(utc(2026, 6, 1, 10, 0)), Some(utc(2026, 6, 8, 9, 0)));
        assert_eq!(j.next_slot_after(utc(2026, 6, 29, 10, 0)), Some(utc(2026, 7, 1, 9, 0)));
        let sun = job("0 9 * * 7", "UTC");
        assert_eq!(sun.next_slot_after(utc(2026, 6, 1, 0, 0)), Some(utc(2026, 6, 7, 9, 0)));
    }

    #[test]
    fn extreme_inputs_do_not_panic() {
        let j = job("0 8 * * *", "Europe/Paris");
        for (a, b) in [(i64::MIN, i64::MAX), (0, i64::MAX), (i64::MIN, 0), (-1, 1)] {
            let _ = j.latest_slot_in(a, b);
            let _ = j.next_slot_after(a);
            let _ = j.next_slot_after(b);
        }
        for text in ["", "null", "[null]", "[[]]", "[{\"name\":\"\"}]", "\u{0}", "[1e999]"] {
            let _ = parse_cron_json(text, Some("Bad/Zone"));
        }
        for expr in ["* * * * * * *", "L L L L L", "#", "0 0 0 0 0", "@", "-1 * * * *", "1-0 * * * *"] {
            let _ = parse_cron_expr(expr);
        }
    }
}
