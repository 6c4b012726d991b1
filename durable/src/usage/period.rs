//! The periods usage is counted in, in the agent's time zone (`TIMEZONE`):
//! a local day runs from local midnight to the next (23 or 25 hours across a
//! daylight-saving change), a month from the 1st at local midnight.

use crate::clock::{self, Zoned};
use hearth_schedule::civil::{Date, DateTime};

/// What a report covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// The local day containing now.
    Today,
    /// The local calendar month containing now.
    Month,
    /// Everything recorded.
    All,
    /// One local day (`YYYY-MM-DD`).
    Day(Date),
    /// One local month (`YYYY-MM`), given by its first day.
    MonthOf(Date),
}

fn number(s: &str, len: usize) -> Option<i16> {
    (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

impl Period {
    /// `today`, `month`, `all`, a date `YYYY-MM-DD` or a month `YYYY-MM`.
    pub fn parse(raw: &str) -> Result<Period, String> {
        let bad = || format!("period {raw:?} is not today, month, all, a date (YYYY-MM-DD) or a month (YYYY-MM)");
        match raw {
            "today" | "day" => return Ok(Period::Today),
            "month" => return Ok(Period::Month),
            "all" | "all-time" => return Ok(Period::All),
            _ => {}
        }
        let parts: Vec<&str> = raw.split('-').collect();
        let (y, m) = match parts.as_slice() {
            [y, m] | [y, m, _] => (number(y, 4).ok_or_else(bad)?, number(m, 2).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        let d = match parts.as_slice() {
            [_, _, d] => number(d, 2).ok_or_else(bad)?,
            _ => 1,
        };
        let date = Date::new(i32::from(y), m as u8, d as u8).ok_or_else(bad)?;
        Ok(if parts.len() == 3 { Period::Day(date) } else { Period::MonthOf(date) })
    }

    /// The name a report carries: `today`, `month`, `all-time` (seed 004's
    /// word), or the date or month asked for.
    pub fn label(&self) -> String {
        match self {
            Period::Today => "today".into(),
            Period::Month => "month".into(),
            Period::All => "all-time".into(),
            Period::Day(d) => format!("{:04}-{:02}-{:02}", d.year, d.month, d.day),
            Period::MonthOf(d) => format!("{:04}-{:02}", d.year, d.month),
        }
    }

    /// `[from, until)` in ms at `now_ms` in `tz`; `None` is open.
    pub fn bounds(&self, now_ms: i64, tz: &str) -> (Option<i64>, Option<i64>) {
        let today = local_date(now_ms, tz);
        let day = |d: Date| (Some(start_of(d, tz)), d.add_days(1).map(|n| start_of(n, tz)));
        let month = |d: Date| {
            let first = d.first_of_month();
            (Some(start_of(first, tz)), first.add_months(1).map(|n| start_of(n, tz)))
        };
        match *self {
            Period::Today => day(today),
            Period::Month => month(today),
            Period::All => (None, None),
            Period::Day(d) => day(d),
            Period::MonthOf(d) => month(d),
        }
    }
}

/// The local date of an instant.
pub fn local_date(ms: i64, tz: &str) -> Date {
    clock::zone(tz).to_civil(clock::second_of(ms)).date
}

/// The instant a local date starts (local midnight, or the first instant of
/// the day when a daylight-saving gap skips midnight).
pub fn start_of(date: Date, tz: &str) -> i64 {
    let zone = clock::zone(tz);
    Zoned::local(DateTime { date, hour: 0, minute: 0, second: 0 }, &zone).map_or(0, |z| z.ms())
}

/// Which budget period: a local day or a local month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Day,
    Month,
}

impl Span {
    pub fn period(self) -> Period {
        match self {
            Span::Day => Period::Today,
            Span::Month => Period::Month,
        }
    }
    /// A key naming the current period (`2026-11-24`, `2026-11`): what
    /// "once per period" is remembered by.
    pub fn key(self, now_ms: i64, tz: &str) -> String {
        let d = local_date(now_ms, tz);
        match self {
            Span::Day => format!("{:04}-{:02}-{:02}", d.year, d.month, d.day),
            Span::Month => format!("{:04}-{:02}", d.year, d.month),
        }
    }
    /// When the current period started and when the next one starts.
    pub fn bounds(self, now_ms: i64, tz: &str) -> (i64, i64) {
        let (from, until) = self.period().bounds(now_ms, tz);
        (from.unwrap_or(0), until.unwrap_or(i64::MAX))
    }
    pub fn word(self) -> &'static str {
        match self {
            Span::Day => "daily",
            Span::Month => "monthly",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;
    fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> i64 {
        jiff::civil::date(y, mo, d)
            .at(h, mi, 0, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_millisecond()
    }

    #[test]
    fn today_is_the_local_day_across_midnight() {
        // 23:30 UTC on 24 Nov is 00:30 on 25 Nov in Paris (UTC+1).
        let now = utc(2026, 11, 24, 23, 30);
        assert_eq!(Period::Today.bounds(now, "UTC"), (Some(utc(2026, 11, 24, 0, 0)), Some(utc(2026, 11, 25, 0, 0))));
        assert_eq!(
            Period::Today.bounds(now, "Europe/Paris"),
            (Some(utc(2026, 11, 24, 23, 0)), Some(utc(2026, 11, 25, 23, 0)))
        );
        // A call at 22:50 UTC was "yesterday" in Paris, "today" in UTC.
        let call = utc(2026, 11, 24, 22, 50);
        let (from, _) = Period::Today.bounds(now, "Europe/Paris");
        assert!(call < from.unwrap());
        assert!(call >= Period::Today.bounds(now, "UTC").0.unwrap());
        assert_eq!(Span::Day.key(now, "Europe/Paris"), "2026-11-25");
        assert_eq!(Span::Day.key(now, "America/Los_Angeles"), "2026-11-24");
    }

    #[test]
    fn months_and_daylight_saving_days() {
        // 31 Mar 2026, 23:30 UTC: already April in Paris (UTC+2 in summer).
        let now = utc(2026, 3, 31, 23, 30);
        assert_eq!(
            Period::Month.bounds(now, "Europe/Paris"),
            (Some(utc(2026, 3, 31, 22, 0)), Some(utc(2026, 4, 30, 22, 0)))
        );
        assert_eq!(Span::Month.key(now, "Europe/Paris"), "2026-04");
        assert_eq!(Span::Month.key(now, "UTC"), "2026-03");
        // 29 Mar 2026 in Paris has 23 hours (clocks go forward).
        let (from, until) = Period::Day(Date::new(2026, 3, 29).unwrap()).bounds(now, "Europe/Paris");
        assert_eq!(until.unwrap() - from.unwrap(), 23 * H);
        assert_eq!(Period::MonthOf(Date::new(2026, 12, 1).unwrap()).bounds(now, "UTC").1, Some(utc(2027, 1, 1, 0, 0)));
    }

    #[test]
    fn periods_parse_and_refuse() {
        assert_eq!(Period::parse("today"), Ok(Period::Today));
        assert_eq!(Period::parse("all").unwrap().label(), "all-time");
        assert_eq!(Period::parse("2026-02-28").unwrap().label(), "2026-02-28");
        assert_eq!(Period::parse("2026-02").unwrap(), Period::MonthOf(Date::new(2026, 2, 1).unwrap()));
        for bad in ["", "yesterday", "2026-02-30", "2026-13", "26-01-01", "2026-1-01", "2026-01-01-01", "x-y"] {
            assert!(Period::parse(bad).is_err(), "{bad}");
        }
    }
}
