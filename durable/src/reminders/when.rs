//! When a reminder fires: the tool's `at` / `in` / `every` / `cron` /
//! `until` read into a first time and a repeat, the time after a slot, and
//! times said in words. The time rules are the schedule crate's (zones,
//! daylight saving, cron): [`hearth_schedule::moments`] and
//! [`hearth_schedule::CronJob`], as `cron.json` uses them.

use crate::protocol::reminders::Reminder;
use hearth_schedule::moments::{parse_at, parse_duration};
use hearth_schedule::time_zone::parse_time_zone;
use hearth_schedule::CronJob;

/// The shortest `every`.
pub const MIN_EVERY_MS: i64 = 60_000;

/// How a reminder repeats: what its `every_ms` and `cron` say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Repeat {
    /// Once, at its time.
    #[default]
    Once,
    /// Every `every_ms` from its first time.
    Every { every_ms: i64 },
    /// At the times of a 5-field cron expression, in `timezone`.
    Cron { cron: String, timezone: String },
}

impl Repeat {
    /// The repeat of a kept reminder (its cron in its own zone).
    pub fn of(r: &Reminder) -> Repeat {
        match (&r.cron, r.every_ms) {
            (Some(cron), _) => Repeat::Cron { cron: cron.clone(), timezone: r.timezone.clone() },
            (None, Some(every_ms)) => Repeat::Every { every_ms },
            (None, None) => Repeat::Once,
        }
    }

    /// As a reminder's `every_ms` and `cron`.
    pub fn fields(&self) -> (Option<i64>, Option<String>) {
        match self {
            Repeat::Once => (None, None),
            Repeat::Every { every_ms } => (Some(*every_ms), None),
            Repeat::Cron { cron, .. } => (None, Some(cron.clone())),
        }
    }
}

/// What the tool was told about the time (each as the model wrote it).
#[derive(Debug, Clone, Copy, Default)]
pub struct When<'a> {
    pub at: Option<&'a str>,
    pub after: Option<&'a str>,
    pub every: Option<&'a str>,
    pub cron: Option<&'a str>,
    pub until: Option<&'a str>,
    /// The zone local times are read in.
    pub timezone: &'a str,
}

/// A reminder's times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    pub first_at: i64,
    pub repeat: Repeat,
    pub until: Option<i64>,
    /// `at` named only a time of day (the next one was taken).
    pub time_only: bool,
}

fn given(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|s| !s.is_empty())
}

/// Reads `w` at `now`. `Err`: what is wrong, for the model to fix.
pub fn timing(w: &When<'_>, now: i64) -> Result<Timing, String> {
    let tz = parse_time_zone(w.timezone).map_err(|e| e.to_string())?;
    let (at, after, every, cron, until) = (given(w.at), given(w.after), given(w.every), given(w.cron), given(w.until));
    let start = |at: Option<&str>, after: Option<&str>| -> Result<Option<(i64, bool)>, String> {
        match (at, after) {
            (Some(_), Some(_)) => Err("give `at` or `in`, not both".into()),
            (Some(a), None) => parse_at(a, &tz, now).map(|t| Some((t.ms, t.time_only))).map_err(|e| e.to_string()),
            (None, Some(d)) => {
                let ms = parse_duration(d).map_err(|e| e.to_string())?;
                Ok(Some((now.saturating_add(ms), false)))
            }
            (None, None) => Ok(None),
        }
    };
    let (first_at, repeat, time_only) = match (cron, every) {
        (Some(_), Some(_)) => return Err("give `cron` or `every`, not both".into()),
        (Some(expr), None) => {
            if at.is_some() || after.is_some() {
                return Err("a `cron` reminder fires at its cron times: leave out `at` and `in`".into());
            }
            let job = CronJob::new("reminder", "reminder", expr, w.timezone).map_err(|e| e.to_string())?;
            let first = job.next_slot_after(now).ok_or_else(|| format!("the cron expression {expr:?} never fires"))?;
            (first, Repeat::Cron { cron: job.cron.clone(), timezone: job.timezone.clone() }, false)
        }
        (None, Some(every)) => {
            let every_ms = parse_duration(every).map_err(|e| e.to_string())?;
            if every_ms < MIN_EVERY_MS {
                return Err("`every` is at least 1 minute".into());
            }
            let (first, time_only) = start(at, after)?.unwrap_or((now.saturating_add(every_ms), false));
            (first, Repeat::Every { every_ms }, time_only)
        }
        (None, None) => match start(at, after)? {
            Some((first, time_only)) => (first, Repeat::Once, time_only),
            None => return Err("say when: `in` (20m, 2h), `at` (a local date and time), `every` or `cron`".into()),
        },
    };
    let until = match until {
        None => None,
        Some(_) if repeat == Repeat::Once => {
            return Err("`until` ends a recurring reminder (`every` or `cron`); a one-off fires once".into())
        }
        Some(u) => {
            let end = parse_at(u, &tz, now).map_err(|e| format!("until: {e}"))?.ms;
            if end < first_at {
                return Err("`until` is before the first time it would fire".into());
            }
            Some(end)
        }
    };
    Ok(Timing { first_at, repeat, until, time_only })
}

/// The time after `slot` at which a reminder fires again, skipping the
/// times already past at `now` (missed ones fire once, not each). `None`:
/// it is done.
pub fn next_after(repeat: &Repeat, slot: i64, now: i64, until: Option<i64>) -> Option<i64> {
    let next = match repeat {
        Repeat::Once => return None,
        Repeat::Every { every_ms } if *every_ms > 0 => {
            let behind = now.saturating_sub(slot).max(0) / every_ms;
            slot.checked_add(every_ms.checked_mul(behind.checked_add(1)?)?)?
        }
        Repeat::Every { .. } => return None,
        Repeat::Cron { cron, timezone } => {
            CronJob::new("reminder", "reminder", cron, timezone).ok()?.next_slot_after(slot.max(now))?
        }
    };
    until.is_none_or(|u| next <= u).then_some(next)
}

/// `ms` in words from `now`: `in 2 hours 5 minutes`, `in 3 days`.
pub fn from_now(ms: i64, now: i64) -> String {
    let secs = (ms - now).max(0).div_euclid(1000);
    let plural = |n: i64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    let words = match secs {
        0..=89 => plural(secs.max(1), "second"),
        90..=3_599 => plural((secs + 30) / 60, "minute"),
        3_600..=86_399 if m == 0 => plural(h, "hour"),
        3_600..=86_399 => format!("{} {}", plural(h, "hour"), plural(m, "minute")),
        86_400..=172_799 if h == 0 => plural(d, "day"),
        86_400..=172_799 => format!("{} {}", plural(d, "day"), plural(h, "hour")),
        _ => plural((secs + 43_200) / 86_400, "day"),
    };
    format!("in {words}")
}

/// When a reminder fires, for people: `tomorrow 09:00 (2026-06-04 09:00
/// (Thursday) CEST), in 20 hours`.
pub fn said(ms: i64, now: i64, timezone: &str) -> String {
    let (today, _) = crate::clock::today_and_yesterday(now, timezone);
    let (tomorrow, _) = crate::clock::today_and_yesterday(now + 86_400_000, timezone);
    let day = crate::clock::date_string(ms, timezone);
    let local = crate::clock::datetime_string(ms, timezone);
    let time = crate::clock::time_string(ms, timezone);
    let when = if day == today {
        format!("today {time}")
    } else if day == tomorrow {
        format!("tomorrow {time}")
    } else {
        local.clone()
    };
    if when == local {
        format!("{local}, {}", from_now(ms, now))
    } else {
        format!("{when} ({local}), {}", from_now(ms, now))
    }
}

/// How a reminder repeats, for people.
pub fn repeat_said(repeat: &Repeat) -> Option<String> {
    match repeat {
        Repeat::Once => None,
        Repeat::Every { every_ms } => Some(format!("every {}", from_now(*every_ms, 0).trim_start_matches("in "))),
        Repeat::Cron { cron, timezone } => Some(format!("at the times of `{cron}` ({timezone})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_780_480_800_000; // 2026-06-03 10:00 UTC, 12:00 in Paris

    fn when<'a>(f: impl FnOnce(&mut When<'a>)) -> Result<Timing, String> {
        let mut w = When { timezone: "Europe/Paris", ..Default::default() };
        f(&mut w);
        timing(&w, NOW)
    }

    #[test]
    fn one_offs_recurring_and_their_ends() {
        let t = when(|w| w.after = Some("2h")).unwrap();
        assert_eq!((t.first_at, &t.repeat, t.until), (NOW + 7_200_000, &Repeat::Once, None));
        let t = when(|w| w.at = Some("2026-06-04 09:00")).unwrap();
        assert_eq!(t.first_at, NOW + 21 * 3_600_000, "09:00 Paris is 07:00 UTC");
        assert!(when(|w| w.at = Some("09:00")).unwrap().time_only);
        let t = when(|w| w.every = Some("30m")).unwrap();
        assert_eq!((t.first_at, t.repeat), (NOW + 1_800_000, Repeat::Every { every_ms: 1_800_000 }));
        let t = when(|w| {
            w.every = Some("1d");
            w.at = Some("2026-06-04 08:00");
            w.until = Some("2026-06-10 08:00");
        })
        .unwrap();
        assert_eq!(t.first_at, NOW + 20 * 3_600_000);
        assert_eq!(t.until, Some(NOW + 20 * 3_600_000 + 6 * 86_400_000));
        let t = when(|w| w.cron = Some("0 9 * * 1-5")).unwrap();
        assert_eq!(t.first_at, NOW + 21 * 3_600_000, "Thursday 09:00 Paris");
        assert!(matches!(t.repeat, Repeat::Cron { ref timezone, .. } if timezone == "Europe/Paris"));
    }

    #[test]
    fn what_cannot_be_read_is_said_plainly() {
        let err = |f: fn(&mut When<'_>)| when(f).unwrap_err();
        assert!(err(|_| {}).contains("say when"));
        assert!(err(|w| {
            w.at = Some("09:00");
            w.after = Some("2h");
        })
        .contains("not both"));
        assert!(err(|w| w.cron = Some("61 * * * *")).contains("61"));
        assert!(err(|w| w.cron = Some("0 0 30 2 *")).contains("never"));
        assert!(err(|w| w.every = Some("10s")).contains("at least 1 minute"));
        assert!(err(|w| w.after = Some("soon")).contains("not a duration"));
        assert!(err(|w| w.at = Some("next week")).contains("not a time"));
        assert!(err(|w| {
            w.after = Some("1h");
            w.until = Some("2026-06-10 08:00");
        })
        .contains("recurring"));
        assert!(err(|w| {
            w.every = Some("1h");
            w.until = Some("2026-06-01 08:00");
        })
        .contains("before"));
        let mut w = When { timezone: "Mars/Olympus", after: Some("1h"), ..Default::default() };
        assert!(timing(&w, NOW).unwrap_err().contains("Mars/Olympus"));
        w.timezone = "UTC";
        assert!(timing(&w, NOW).is_ok());
    }

    #[test]
    fn the_next_time_skips_what_was_missed_and_stops_at_the_end() {
        let hour = Repeat::Every { every_ms: 3_600_000 };
        assert_eq!(next_after(&hour, NOW, NOW, None), Some(NOW + 3_600_000));
        // Down for 5½ hours: the next is the one after now, not five catching up.
        assert_eq!(next_after(&hour, NOW, NOW + 19_800_000, None), Some(NOW + 6 * 3_600_000));
        assert_eq!(next_after(&hour, NOW, NOW, Some(NOW + 1_000)), None, "past its end: done");
        assert_eq!(next_after(&Repeat::Once, NOW, NOW, None), None);
        let cron = Repeat::Cron { cron: "0 9 * * *".into(), timezone: "Europe/Paris".into() };
        let nine = NOW + 21 * 3_600_000;
        assert_eq!(next_after(&cron, nine, nine, None), Some(nine + 86_400_000));
        assert_eq!(next_after(&cron, nine, nine + 3 * 86_400_000 + 1, None), Some(nine + 4 * 86_400_000));
    }

    #[test]
    fn times_in_words() {
        assert_eq!(from_now(NOW + 45_000, NOW), "in 45 seconds");
        assert_eq!(from_now(NOW + 20 * 60_000, NOW), "in 20 minutes");
        assert_eq!(from_now(NOW + 7_200_000, NOW), "in 2 hours");
        assert_eq!(from_now(NOW + 7_500_000, NOW), "in 2 hours 5 minutes");
        assert_eq!(from_now(NOW + 86_400_000, NOW), "in 1 day");
        assert_eq!(from_now(NOW + 10 * 86_400_000, NOW), "in 10 days");
        assert_eq!(
            said(NOW + 3_600_000, NOW, "Europe/Paris"),
            "today 13:00 (2026-06-03 13:00 (Wednesday) CEST), in 1 hour"
        );
        assert!(
            said(NOW + 21 * 3_600_000, NOW, "Europe/Paris").starts_with("tomorrow 09:00 (2026-06-04 09:00 (Thursday)")
        );
        assert_eq!(said(NOW + 10 * 86_400_000, NOW, "UTC"), "2026-06-13 10:00 (Saturday) UTC, in 10 days");
        assert_eq!(repeat_said(&Repeat::Every { every_ms: 1_800_000 }).as_deref(), Some("every 30 minutes"));
    }
}
