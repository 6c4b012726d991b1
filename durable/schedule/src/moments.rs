//! One-off times, for reminders: a local date-time in an IANA zone, an ISO 8601 time with an
//! offset, a time of day, or a duration from now.
//!
//! Rules chosen here, the same as [`crate::cron_jobs`]'s for fixed-time jobs, so a reminder at
//! 02:30 and a job at `30 2 * * *` land on the same instant:
//! * A wall-clock time that happens twice (clocks go back) is its first instant.
//! * A time that does not exist (clocks go forward, e.g. 02:30 on the spring-forward day in New
//!   York) is the first instant after the gap (03:00 local).
//! * A time of day alone (`09:00`) is the next such time: today if it is still ahead, else
//!   tomorrow.
//! * Seconds are optional; fractions of a second are refused (reminders have second
//!   resolution at best).
//!
//! Everything is written by hand rather than with jiff's parser, for the upload's size (its
//! format machinery is ~10 KiB gzipped), and returns an error, never panics, on any input.

use thiserror::Error;

use crate::civil::{Date, DateTime, MAX_SECOND, MIN_SECOND};
use crate::time_zone::{Local, TimeZone};

/// Why a time or a duration cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MomentError {
    /// Not one of the accepted forms.
    #[error("{0:?} is not a time: use YYYY-MM-DD HH:MM (local time), HH:MM, or ISO 8601 with an offset such as 2026-06-03T09:00:00+02:00")]
    Time(String),
    /// The form is right but the date or time does not exist (Feb 30, 25:00).
    #[error("{0:?} is not a real date and time")]
    NoSuchTime(String),
    /// Not a duration.
    #[error("{0:?} is not a duration: use a number and a unit, such as 90s, 20m, 2h, 3d, 1w or 1h30m")]
    Duration(String),
    /// A duration of nothing.
    #[error("a duration must be longer than zero")]
    Zero,
    /// Beyond what a date can hold.
    #[error("{0:?} is too far away")]
    TooFar(String),
}

/// What `at` named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// The instant, Unix ms.
    pub ms: i64,
    /// Only a time of day was given: the next one was taken (say which day that is).
    pub time_only: bool,
}

/// The instant (Unix ms) of local `dt` in `tz`, with the daylight-saving rules of the module
/// docs; `None` past what an instant holds (years -9999..=9999).
pub fn local_ms(dt: DateTime, tz: &TimeZone) -> Option<i64> {
    let local = dt.seconds();
    let instant = |offset: i32| {
        let at = local - i64::from(offset);
        (MIN_SECOND..=MAX_SECOND).contains(&at).then_some(at * 1000)
    };
    match tz.to_ambiguous(local) {
        Local::Single(offset) => instant(offset),
        // Twice: the first of the two (the larger offset is the earlier instant).
        Local::Fold { before, after } => Some(instant(before)?.min(instant(after)?)),
        // Never: the first instant whose offset is the one after the gap.
        Local::Gap { before, after } => {
            let (mut lo, mut hi) = (instant(after)? / 1000, instant(before)? / 1000);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if tz.offset(mid) == after {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            Some(hi * 1000)
        }
    }
}

/// Reads `text` as a point in time, local times in `tz` (see the module docs); `now_ms` places
/// a time of day alone.
pub fn parse_at(text: &str, tz: &TimeZone, now_ms: i64) -> Result<At, MomentError> {
    let raw = text.trim();
    let bad = || MomentError::Time(raw.to_string());
    let no_such = || MomentError::NoSuchTime(raw.to_string());
    let (date, rest) = match raw.find(['T', 't', ' ']) {
        Some(i) if raw[..i].contains('-') => (Some(&raw[..i]), raw[i + 1..].trim_start()),
        _ if raw.len() >= 8 && raw.as_bytes().get(4) == Some(&b'-') && !raw.contains(':') => {
            // A date alone: say what is missing rather than guess an hour.
            return Err(bad());
        }
        _ => (None, raw),
    };
    // The time, and an offset after it (`Z`, `+02:00`, `-0500`, `+02`).
    let split = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (clock, zone) = (rest[..split].trim_end(), &rest[split..]);
    let (hour, minute, second) = clock_of(clock).ok_or_else(bad)?;
    let offset = match zone {
        "" => None,
        z => Some(offset_of(z).ok_or_else(bad)?),
    };
    let Some(date) = date else {
        if offset.is_some() {
            return Err(bad());
        }
        // The next such time of day in `tz`.
        if !(MIN_SECOND * 1000..=MAX_SECOND * 1000).contains(&now_ms) {
            return Err(bad());
        }
        let today = tz.to_civil(now_ms.div_euclid(1000)).date;
        for day in [today, today.add_days(1).ok_or_else(bad)?] {
            let dt = DateTime::new(day, hour, minute, second).ok_or_else(no_such)?;
            let ms = local_ms(dt, tz).ok_or_else(no_such)?;
            if ms > now_ms {
                return Ok(At { ms, time_only: true });
            }
        }
        return Err(no_such());
    };
    let (y, m, d) = date_of(date).ok_or_else(bad)?;
    let day = Date::new(y, m, d).ok_or_else(no_such)?;
    let dt = DateTime::new(day, hour, minute, second).ok_or_else(no_such)?;
    let ms = match offset {
        Some(offset) => {
            let at = dt.seconds() - i64::from(offset);
            (MIN_SECOND..=MAX_SECOND).contains(&at).then_some(at * 1000).ok_or(MomentError::TooFar(raw.to_string()))?
        }
        None => local_ms(dt, tz).ok_or_else(|| MomentError::TooFar(raw.to_string()))?,
    };
    Ok(At { ms, time_only: false })
}

/// `HH:MM` or `HH:MM:SS` (one or two digits of hour).
fn clock_of(s: &str) -> Option<(u8, u8, u8)> {
    let mut parts = s.split(':');
    let hour = number(parts.next()?, 1, 2)?;
    let minute = number(parts.next()?, 2, 2)?;
    let second = match parts.next() {
        Some(p) => number(p, 2, 2)?,
        None => 0,
    };
    if parts.next().is_some() || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some((hour as u8, minute as u8, second as u8))
}

/// `YYYY-MM-DD`.
fn date_of(s: &str) -> Option<(i32, u8, u8)> {
    let mut parts = s.split('-');
    let y = number(parts.next()?, 4, 4)?;
    let m = number(parts.next()?, 1, 2)?;
    let d = number(parts.next()?, 1, 2)?;
    if parts.next().is_some() {
        return None;
    }
    Some((i32::try_from(y).ok()?, u8::try_from(m).ok()?, u8::try_from(d).ok()?))
}

/// `Z`, `±HH`, `±HH:MM` or `±HHMM`, in seconds east of UTC.
fn offset_of(s: &str) -> Option<i32> {
    if s.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let (h, m) = match (rest.len(), rest.split_once(':')) {
        (_, Some((h, m))) => (number(h, 2, 2)?, number(m, 2, 2)?),
        (2, None) => (number(rest, 2, 2)?, 0),
        (4, None) => (number(&rest[..2], 2, 2)?, number(&rest[2..], 2, 2)?),
        _ => return None,
    };
    if h > 18 || m > 59 {
        return None;
    }
    Some(sign * (h as i32 * 3600 + m as i32 * 60))
}

/// A run of `min..=max` ASCII digits.
fn number(s: &str, min: usize, max: usize) -> Option<i64> {
    (s.len() >= min && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// Reads a duration: numbers with units, together or apart (`90s`, `20m`, `1h30m`, `2 hours`,
/// `1 day 6 h`). Units: s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s), w/week(s).
/// Returns ms; zero is an error.
pub fn parse_duration(text: &str) -> Result<i64, MomentError> {
    let raw = text.trim();
    let bad = || MomentError::Duration(raw.to_string());
    let mut total: i64 = 0;
    let mut rest = raw;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = rest[digits..].trim_start();
        let letters = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit_ms: i64 = match rest[..letters].to_ascii_lowercase().as_str() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
            "d" | "day" | "days" => 86_400_000,
            "w" | "week" | "weeks" => 7 * 86_400_000,
            _ => return Err(bad()),
        };
        rest = rest[letters..].trim_start().trim_start_matches(',').trim_start();
        total = n.checked_mul(unit_ms).and_then(|ms| total.checked_add(ms)).ok_or(MomentError::TooFar(raw.into()))?;
    }
    if total == 0 {
        return Err(MomentError::Zero);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_zone::parse_time_zone;

    fn utc(s: &str) -> i64 {
        s.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn local_times_follow_the_cron_rules_across_daylight_saving() {
        let ny = parse_time_zone("America/New_York").unwrap();
        let now = utc("2026-01-01T00:00:00Z");
        let at = |s: &str| parse_at(s, &ny, now).unwrap().ms;
        assert_eq!(at("2026-06-03 09:00"), utc("2026-06-03T13:00:00Z"));
        assert_eq!(at("2026-06-03T09:00:30"), utc("2026-06-03T13:00:30Z"));
        // Spring forward (2026-03-08, 02:00 → 03:00): 02:30 does not exist; 03:00 local it is.
        assert_eq!(at("2026-03-08 02:30"), utc("2026-03-08T07:00:00Z"));
        // Fall back (2026-11-01, 02:00 → 01:00): 01:30 happens twice; the first (EDT).
        assert_eq!(at("2026-11-01 01:30"), utc("2026-11-01T05:30:00Z"));
        // A cron job at the same wall-clock time lands on the same instants.
        let job = crate::CronJob::new("j", "m", "30 2 8 3 *", "America/New_York").unwrap();
        assert_eq!(job.next_slot_after(utc("2026-03-07T00:00:00Z")), Some(utc("2026-03-08T07:00:00Z")));
        let job = crate::CronJob::new("j", "m", "30 1 1 11 *", "America/New_York").unwrap();
        assert_eq!(job.next_slot_after(utc("2026-10-31T00:00:00Z")), Some(utc("2026-11-01T05:30:00Z")));
    }

    #[test]
    fn offsets_and_times_of_day() {
        let paris = parse_time_zone("Europe/Paris").unwrap();
        let now = utc("2026-06-03T10:00:00Z"); // 12:00 in Paris
        let at = |s: &str| parse_at(s, &paris, now).unwrap();
        assert_eq!(at("2026-06-03T09:00:00+02:00").ms, utc("2026-06-03T07:00:00Z"));
        assert_eq!(at("2026-06-03T09:00Z").ms, utc("2026-06-03T09:00:00Z"));
        assert_eq!(at("2026-06-03 09:00 -0500").ms, utc("2026-06-03T14:00:00Z"));
        assert_eq!(at("2026-06-03T09:00-05").ms, utc("2026-06-03T14:00:00Z"));
        // 15:00 is still ahead today; 09:00 is tomorrow's.
        assert_eq!(at("15:00"), At { ms: utc("2026-06-03T13:00:00Z"), time_only: true });
        assert_eq!(at("9:00").ms, utc("2026-06-04T07:00:00Z"));
        assert_eq!(at(" 2026-6-3 9:05 ").ms, utc("2026-06-03T07:05:00Z"));
    }

    #[test]
    fn what_is_not_a_time_says_so() {
        let tz = TimeZone::UTC;
        for bad in [
            "tomorrow",
            "",
            "2026-06-03",
            "9",
            "09:00 +02:00",
            "2026/06/03 09:00",
            "09:00:00.5",
            "12:3",
            "2026-06-03 09:00 +25:00",
        ] {
            assert!(matches!(parse_at(bad, &tz, 0), Err(MomentError::Time(_))), "{bad:?}: {:?}", parse_at(bad, &tz, 0));
        }
        for no in ["2026-02-30 09:00", "2026-13-01 09:00", "24:00", "23:60"] {
            assert!(parse_at(no, &tz, 0).is_err(), "{no:?}");
        }
        assert!(matches!(parse_at("2026-02-30 09:00", &tz, 0), Err(MomentError::NoSuchTime(_))));
        assert!(parse_at("9999-12-31T23:59:00-18:00", &tz, 0).is_err(), "past what a timestamp holds");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("20m"), Ok(1_200_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert_eq!(parse_duration("3d"), Ok(3 * 86_400_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("1 hour, 30 minutes"), Ok(5_400_000));
        assert_eq!(parse_duration("2 WEEKS"), Ok(14 * 86_400_000));
        assert_eq!(parse_duration("0m"), Err(MomentError::Zero));
        for bad in ["", "m", "5", "5 fortnights", "-5m", "1.5h", "PT5M"] {
            assert!(matches!(parse_duration(bad), Err(MomentError::Duration(_))), "{bad:?}");
        }
        assert!(matches!(parse_duration("99999999999999999w"), Err(MomentError::TooFar(_))));
    }
}
