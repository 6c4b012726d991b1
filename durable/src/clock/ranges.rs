//! "Last week", "2026-10", "3 days ago": the time ranges a model passes when it asks
//! for what was said then, resolved in the agent's time zone.
//!
//! Every value names a range of local time, `[start, end)`. A search's `since` takes
//! the start of its range and `until` the end, so `since: "last week"` means from last
//! Monday on, `until: "2026-10-03"` up to the end of that day, and both set to the same
//! value mean exactly that range. Weeks start on Monday (ISO 8601). Accepted, in
//! English (the tool description lists them; a model writes them in any conversation):
//!
//! - `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` (local; a `Z` or
//!   `±HH:MM` suffix is taken as given);
//! - `now`, `today`, `yesterday`, `this|last week|month|year`;
//! - `N day(s)|week(s)|month(s)|year(s) ago` (that whole day, week, month, year).

use super::{second_of, zone, Zoned};
use hearth_schedule::civil::{Date, DateTime, MAX_SECOND, MIN_SECOND};
use hearth_schedule::time_zone::TimeZone;

/// A range of instants, `[start, end)`, in ms since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub start: i64,
    pub end: i64,
}

/// A value that names no time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a date or period I know: use YYYY-MM-DD, YYYY-MM, YYYY, an ISO time, today, yesterday, \
this/last week|month|year, or N days|weeks|months|years ago"
)]
pub struct RangeError(pub String);

#[derive(Clone, Copy)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

fn unit(word: &str) -> Option<Unit> {
    Some(match word.trim_end_matches('s') {
        "day" => Unit::Day,
        "week" => Unit::Week,
        "month" => Unit::Month,
        "year" => Unit::Year,
        _ => return None,
    })
}

/// The whole day, week (from Monday), month or year holding `at`.
fn period(at: &Zoned, unit: Unit) -> Option<TimeRange> {
    let day = at.start_of_day()?;
    let date = day.local.date;
    let start = match unit {
        Unit::Day => day,
        Unit::Week => day.add_days(-i64::from(date.weekday()))?,
        Unit::Month => day.on(date.first_of_month())?,
        Unit::Year => day.on(Date { month: 1, day: 1, ..date })?,
    };
    let end = match unit {
        Unit::Day => start.add_days(1)?,
        Unit::Week => start.add_days(7)?,
        Unit::Month => start.add_months(1)?,
        Unit::Year => start.add_months(12)?,
    };
    Some(TimeRange { start: start.ms(), end: end.ms() })
}

/// `at` moved back `n` days, weeks, months or years on the calendar.
fn back<'a>(at: &Zoned<'a>, unit: Unit, n: i64) -> Option<Zoned<'a>> {
    match unit {
        Unit::Day => at.add_days(-n),
        Unit::Week => at.add_days(-n.checked_mul(7)?),
        Unit::Month => at.add_months(-n),
        Unit::Year => at.add_months(-n.checked_mul(12)?),
    }
}

fn digits(s: &str, len: usize) -> Option<i64> {
    (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// `YYYY`, `YYYY-MM`, `YYYY-MM-DD` and ISO times.
fn calendar(value: &str, tz: &TimeZone) -> Option<TimeRange> {
    let (date, time) = match value.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (value, None),
    };
    let mut parts = date.split('-');
    let year = digits(parts.next()?, 4)? as i32;
    let month = parts.next().map(|m| digits(m, 2)).unwrap_or(Some(0))? as u8;
    let day = parts.next().map(|d| digits(d, 2)).unwrap_or(Some(0))? as u8;
    if parts.next().is_some() {
        return None;
    }
    // `Date::new` checks the day exists (`civil::date` would panic on 2026-02-30).
    let first = Date::new(year, month.max(1), day.max(1))?;
    if let Some(time) = time {
        if day == 0 {
            return None;
        }
        return instant(first, time, tz).map(|at| TimeRange { start: at, end: at });
    }
    let at = Zoned::local(DateTime { date: first, hour: 0, minute: 0, second: 0 }, tz)?;
    let unit = match (month, day) {
        (0, _) => Unit::Year,
        (_, 0) => Unit::Month,
        _ => Unit::Day,
    };
    period(&at, unit)
}

/// `HH:MM[:SS][Z|±HH:MM]` on `date`.
fn instant(date: Date, time: &str, tz: &TimeZone) -> Option<i64> {
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => (&time[..i], Some(&time[i..])),
        None => (time, None),
    };
    let mut hms = clock.split(':');
    let hour = digits(hms.next()?, 2)? as u8;
    let minute = digits(hms.next()?, 2)? as u8;
    let second = hms.next().map(|s| digits(s.split('.').next().unwrap_or(s), 2)).unwrap_or(Some(0))? as u8;
    let civil = DateTime::new(date, hour, minute, second)?;
    let at = match offset {
        None => return Zoned::local(civil, tz).map(|z| z.ms()),
        Some("Z" | "z") => civil.seconds(),
        Some(o) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (h, m) = o[1..].split_once(':').unwrap_or((&o[1..], "00"));
            let seconds = sign * (digits(h, 2)? * 3600 + digits(m, 2)? * 60);
            // jiff's offsets stop short of ±26 hours.
            if seconds.abs() > 93_599 {
                return None;
            }
            civil.seconds() - seconds
        }
    };
    (MIN_SECOND..=MAX_SECOND).contains(&at).then_some(at * 1000)
}

/// What `value` names, relative to `now_ms`, in the zone `tz` (an IANA name).
pub fn resolve_range(value: &str, now_ms: i64, tz: &str) -> Result<TimeRange, RangeError> {
    let zone = zone(tz);
    let now = Zoned::at(second_of(now_ms), &zone);
    let lower = value.trim().to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let found = match words.as_slice() {
        ["now"] => Some(TimeRange { start: now_ms, end: now_ms }),
        ["today"] => period(&now, Unit::Day),
        ["yesterday"] => back(&now, Unit::Day, 1).and_then(|d| period(&d, Unit::Day)),
        ["this", u] => unit(u).and_then(|u| period(&now, u)),
        ["last" | "previous", u] => unit(u).and_then(|u| back(&now, u, 1).and_then(|d| period(&d, u))),
        [n, u, "ago"] => match (n.parse::<i64>().ok().filter(|n| (0..=10_000).contains(n)), unit(u)) {
            (Some(n), Some(u)) => back(&now, u, n).and_then(|d| period(&d, u)),
            _ => None,
        },
        _ => calendar(value.trim(), &zone),
    };
    found.ok_or_else(|| RangeError(value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thursday 2026-11-26 15:30 in Paris (UTC+1): 14:30 UTC.
    const NOW: i64 = 1_795_703_400_000;
    const PARIS: &str = "Europe/Paris";

    fn day(range: TimeRange) -> (String, String) {
        (super::super::datetime_string(range.start, PARIS), super::super::datetime_string(range.end, PARIS))
    }

    #[test]
    fn the_clock_under_test_is_a_thursday_afternoon_in_paris() {
        assert_eq!(super::super::datetime_string(NOW, PARIS), "2026-11-26 15:30 (Thursday) CET");
    }

    #[test]
    fn named_periods_in_the_agents_zone() {
        let r = |v: &str| day(resolve_range(v, NOW, PARIS).unwrap());
        let span = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(r("today"), span("2026-11-26 00:00 (Thursday) CET", "2026-11-27 00:00 (Friday) CET"));
        assert_eq!(r("Yesterday"), span("2026-11-25 00:00 (Wednesday) CET", "2026-11-26 00:00 (Thursday) CET"));
        assert_eq!(r("this week"), span("2026-11-23 00:00 (Monday) CET", "2026-11-30 00:00 (Monday) CET"));
        assert_eq!(r("last week"), span("2026-11-16 00:00 (Monday) CET", "2026-11-23 00:00 (Monday) CET"));
        assert_eq!(r("last month"), span("2026-10-01 00:00 (Thursday) CEST", "2026-11-01 00:00 (Sunday) CET"));
        assert_eq!(r("this year"), span("2026-01-01 00:00 (Thursday) CET", "2027-01-01 00:00 (Friday) CET"));
        assert_eq!(r("3 days ago"), span("2026-11-23 00:00 (Monday) CET", "2026-11-24 00:00 (Tuesday) CET"));
        assert_eq!(r("2 weeks ago"), span("2026-11-09 00:00 (Monday) CET", "2026-11-16 00:00 (Monday) CET"));
        assert_eq!(resolve_range("now", NOW, PARIS).unwrap(), TimeRange { start: NOW, end: NOW });
    }

    #[test]
    fn calendar_dates_and_times() {
        let r = |v: &str| day(resolve_range(v, NOW, PARIS).unwrap());
        let span = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(r("2026-10-03"), span("2026-10-03 00:00 (Saturday) CEST", "2026-10-04 00:00 (Sunday) CEST"));
        assert_eq!(r("2026-02"), span("2026-02-01 00:00 (Sunday) CET", "2026-03-01 00:00 (Sunday) CET"));
        assert_eq!(r("2025"), span("2025-01-01 00:00 (Wednesday) CET", "2026-01-01 00:00 (Thursday) CET"));
        let at = resolve_range("2026-11-26T15:30", NOW, PARIS).unwrap();
        assert_eq!(at, TimeRange { start: NOW, end: NOW });
        assert_eq!(resolve_range("2026-11-26T14:30:00Z", NOW, PARIS).unwrap().start, NOW);
        assert_eq!(resolve_range("2026-11-26T09:30-05:00", NOW, PARIS).unwrap().start, NOW);
    }

    #[test]
    fn anything_else_is_a_clear_error() {
        for bad in [
            "",
            "soon",
            "2026-13-01",
            "2026-02-30",
            "26-11-01",
            "last fortnight",
            "99999 days ago",
            "2026-11".repeat(2).as_str(),
        ] {
            let e = resolve_range(bad, NOW, PARIS).unwrap_err();
            assert!(e.to_string().contains("YYYY-MM-DD"), "{bad}: {e}");
        }
    }
}
