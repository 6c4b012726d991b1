//! The clock's functions against the jiff code they replaced (copied here from before
//! docs/notes/clock.md's change), over every zone of the table and instants around every
//! daylight-saving change from 2024 to 2040 (every zone with daylight saving or a TZif file, a
//! sample of the fixed ones: debug builds are slow).

use super::ranges::{RangeError, TimeRange};
use jiff::{civil, tz::TimeZone, Span, Timestamp, ToSpan, Zoned};

pub(super) fn zone(name: &str) -> TimeZone {
    use hearth_schedule::time_zone::{zone_source, ZoneSource};
    match zone_source(name) {
        Some(ZoneSource::Rule(rule)) if rule != "UTC0" => TimeZone::posix(rule).unwrap_or(TimeZone::UTC),
        Some(ZoneSource::Tzif(known, bytes)) => TimeZone::tzif(known, bytes).unwrap_or(TimeZone::UTC),
        _ => TimeZone::UTC,
    }
}

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

fn zoned(ms: i64, tz: &str) -> Zoned {
    Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH).to_zoned(zone(tz))
}

// Dates are written by hand rather than with jiff's `strftime`: its format
// machinery is ~10 KiB of the gzipped upload for three fixed formats.

fn ymd(z: &Zoned) -> String {
    format!("{:04}-{:02}-{:02}", z.year(), z.month(), z.day())
}

/// `YYYY-MM-DD` of an instant in `tz`.
fn date_string(ms: i64, tz: &str) -> String {
    ymd(&zoned(ms, tz))
}

/// `HH:MM` of an instant in `tz`.
fn time_string(ms: i64, tz: &str) -> String {
    let z = zoned(ms, tz);
    format!("{:02}:{:02}", z.hour(), z.minute())
}

const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// `YYYY-MM-DD HH:MM (Weekday) TZ` of an instant in `tz`.
fn datetime_string(ms: i64, tz: &str) -> String {
    let z = zoned(ms, tz);
    let weekday = WEEKDAYS[z.weekday().to_monday_zero_offset() as usize % 7];
    let info = z.time_zone().to_offset_info(z.timestamp());
    format!("{} {:02}:{:02} ({weekday}) {}", ymd(&z), z.hour(), z.minute(), info.abbreviation())
}

/// An instant as an email's `Date:` (RFC 5322), in UTC:
/// `Fri, 19 May 2000 04:29:55 +0000`.
fn rfc5322(ms: i64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let z = zoned(ms, "UTC");
    let weekday = &WEEKDAYS[z.weekday().to_monday_zero_offset() as usize % 7][..3];
    let month = MONTHS[(z.month() as usize).saturating_sub(1) % 12];
    format!(
        "{weekday}, {:02} {month} {:04} {:02}:{:02}:{:02} +0000",
        z.day(),
        z.year(),
        z.hour(),
        z.minute(),
        z.second()
    )
}

/// Today's and yesterday's dates in `tz`.
fn today_and_yesterday(ms: i64, tz: &str) -> (String, String) {
    let now = zoned(ms, tz);
    let yesterday = now.checked_sub(1.day()).unwrap_or_else(|_| now.clone());
    (ymd(&now), ymd(&yesterday))
}

/// The latest instant at or before `ms` whose local time in `tz` is
/// `hour:minute` (the daily reset boundary).
fn last_daily_boundary(ms: i64, tz: &str, hour: i8, minute: i8) -> i64 {
    let now = zoned(ms, tz);
    let today = now.with().hour(hour).minute(minute).second(0).subsec_nanosecond(0).build();
    let Ok(today) = today else { return ms };
    let boundary =
        if today.timestamp() <= now.timestamp() { today } else { today.checked_sub(1.day()).unwrap_or(today) };
    boundary.timestamp().as_millisecond()
}

/// A range of instants, `[start, end)`, in ms since the epoch.
fn ms(z: &Zoned) -> i64 {
    z.timestamp().as_millisecond()
}

/// The `unit` that holds `at`, as a range.
fn period(at: &Zoned, unit: Unit) -> Option<TimeRange> {
    let day = at.start_of_day().ok()?;
    let (start, length): (Zoned, Span) = match unit {
        Unit::Day => (day, 1.day()),
        Unit::Week => {
            let back = i64::from(at.weekday().to_monday_zero_offset());
            (day.checked_sub(back.days()).ok()?, 1.week())
        }
        Unit::Month => (day.first_of_month().ok()?, 1.month()),
        Unit::Year => (day.first_of_year().ok()?, 1.year()),
    };
    let end = start.checked_add(length).ok()?;
    Some(TimeRange { start: ms(&start), end: ms(&end) })
}

/// `at` moved `n` units back.
fn back(at: &Zoned, unit: Unit, n: i64) -> Option<Zoned> {
    let span = match unit {
        Unit::Day => n.days(),
        Unit::Week => n.weeks(),
        Unit::Month => n.months(),
        Unit::Year => n.years(),
    };
    at.checked_sub(span).ok()
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
    let year = digits(parts.next()?, 4)? as i16;
    let month = parts.next().map(|m| digits(m, 2)).unwrap_or(Some(0))? as i8;
    let day = parts.next().map(|d| digits(d, 2)).unwrap_or(Some(0))? as i8;
    if parts.next().is_some() {
        return None;
    }
    // `Date::new` checks the day exists (`civil::date` would panic on 2026-02-30).
    let first = civil::Date::new(year, month.max(1), day.max(1)).ok()?;
    if let Some(time) = time {
        if day == 0 {
            return None;
        }
        return instant(first, time, tz).map(|at| TimeRange { start: at, end: at });
    }
    let at = first.to_zoned(tz.clone()).ok()?;
    let unit = match (month, day) {
        (0, _) => Unit::Year,
        (_, 0) => Unit::Month,
        _ => Unit::Day,
    };
    period(&at, unit)
}

/// `HH:MM[:SS][Z|±HH:MM]` on `date`.
fn instant(date: civil::Date, time: &str, tz: &TimeZone) -> Option<i64> {
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => (&time[..i], Some(&time[i..])),
        None => (time, None),
    };
    let mut hms = clock.split(':');
    let hour = digits(hms.next()?, 2)? as i8;
    let minute = digits(hms.next()?, 2)? as i8;
    let second = hms.next().map(|s| digits(s.split('.').next().unwrap_or(s), 2)).unwrap_or(Some(0))? as i8;
    let civil = civil::DateTime::new(date.year(), date.month(), date.day(), hour, minute, second, 0).ok()?;
    let zone = match offset {
        None => tz.clone(),
        Some("Z" | "z") => TimeZone::UTC,
        Some(o) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (h, m) = o[1..].split_once(':').unwrap_or((&o[1..], "00"));
            let seconds = sign * (digits(h, 2)? * 3600 + digits(m, 2)? * 60);
            TimeZone::fixed(jiff::tz::Offset::from_seconds(seconds as i32).ok()?)
        }
    };
    civil.to_zoned(zone).ok().map(|z| ms(&z))
}

/// What `value` names, relative to `now_ms`, in the zone `tz` (an IANA name).
fn resolve_range(value: &str, now_ms: i64, tz: &str) -> Result<TimeRange, RangeError> {
    let zone = zone(tz);
    let now = Timestamp::from_millisecond(now_ms).unwrap_or(Timestamp::UNIX_EPOCH).to_zoned(zone.clone());
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

/// Instants to probe in `name`: around each change 2024–2040 and every ~5 days.
fn probes(name: &str) -> Vec<i64> {
    let tz = zone(name);
    let from = Timestamp::from_second(1_704_067_200).unwrap();
    let to = 2_208_988_800;
    let mut out: Vec<i64> = (1_704_067_200..to).step_by(7_776_001).map(|s| s * 1000 + 123).collect();
    for t in tz.following(from) {
        let t = t.timestamp().as_millisecond();
        if t >= to * 1000 {
            break;
        }
        for d in [-86_400_000, -3_600_001, 0, 1_800_000, 86_400_000] {
            out.push(t + d);
        }
    }
    out
}

#[test]
fn clock_and_ranges_match_the_jiff_code_they_replaced() {
    let words = [
        "now",
        "today",
        "yesterday",
        "this week",
        "last week",
        "this month",
        "last month",
        "this year",
        "last year",
        "3 days ago",
        "2 weeks ago",
        "1 month ago",
        "13 months ago",
        "2 years ago",
    ];
    let mut checked = 0;
    let names: Vec<&str> = hearth_schedule::time_zone::zone_names().collect();
    // One zone per distinct rule (aliases share theirs), by offsets 2024–2040.
    let mut seen = std::collections::HashSet::new();
    for name in names {
        if !seen.insert(probes(name).iter().map(|&ms| super::datetime_string(ms, name)).collect::<Vec<_>>()) {
            continue;
        }
        for ms in probes(name) {
            assert_eq!(super::date_string(ms, name), date_string(ms, name), "{name} {ms}");
            assert_eq!(super::time_string(ms, name), time_string(ms, name), "{name} {ms}");
            assert_eq!(super::datetime_string(ms, name), datetime_string(ms, name), "{name} {ms}");
            assert_eq!(super::today_and_yesterday(ms, name), today_and_yesterday(ms, name), "{name} {ms}");
            for (h, m) in [(0, 0), (1, 30), (2, 30), (4, 0), (23, 59), (24, 0), (-1, 0)] {
                assert_eq!(
                    super::last_daily_boundary(ms, name, h, m),
                    last_daily_boundary(ms, name, h, m),
                    "{name} {ms} {h}:{m}"
                );
            }
            for w in words {
                assert_eq!(super::resolve_range(w, ms, name), resolve_range(w, ms, name), "{name} {ms} {w}");
            }
            // Calendar values on the probe's own local day, at the hours clocks change.
            let z = Timestamp::from_millisecond(ms).unwrap().to_zoned(zone(name));
            let day = format!("{:04}-{:02}-{:02}", z.year(), z.month(), z.day());
            for v in [
                day.clone(),
                day[..7].to_string(),
                day[..4].to_string(),
                format!("{day}T00:00"),
                format!("{day}T00:30:15"),
                format!("{day}T01:30"),
                format!("{day}T02:30"),
                format!("{day}T03:00"),
                format!("{day}T23:30"),
                format!("{day}T09:00Z"),
                format!("{day}T09:00+05:30"),
                format!("{day}T09:00-99:00"),
            ] {
                assert_eq!(super::resolve_range(&v, ms, name), resolve_range(&v, ms, name), "{name} {ms} {v}");
            }
            checked += 1;
        }
    }
    assert!(checked > 2_000, "only {checked}");
    for ms in [
        i64::MIN,
        i64::MAX,
        -1,
        0,
        253_402_207_200_999,
        253_402_207_200_001,
        253_402_207_200_000,
        -377_705_023_201_000,
        -377_705_023_201_001,
    ] {
        assert_eq!(super::datetime_string(ms, "UTC"), datetime_string(ms, "UTC"));
        assert_eq!(super::rfc5322(ms), rfc5322(ms));
        assert_eq!(super::today_and_yesterday(ms, "Pacific/Kiritimati"), today_and_yesterday(ms, "Pacific/Kiritimati"));
        assert_eq!(super::last_daily_boundary(ms, "Europe/Paris", 4, 0), last_daily_boundary(ms, "Europe/Paris", 4, 0));
        assert_eq!(super::resolve_range("last year", ms, "UTC"), resolve_range("last year", ms, "UTC"));
    }
    for v in ["9999-12-31", "9999", "0000-01-01", "9999-12-31T23:59:59-05:00", "2026-02-29", "2024-02-29T12:00"] {
        assert_eq!(super::resolve_range(v, 0, "Asia/Tokyo"), resolve_range(v, 0, "Asia/Tokyo"), "{v}");
    }
}
