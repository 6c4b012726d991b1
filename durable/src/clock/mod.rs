//! Local time in the agent's time zone (IANA names, daylight saving right),
//! for daily notes, the time reminder and daily resets. Zones come from the
//! schedule crate's table ([`hearth_schedule::time_zone`]), shared with cron.

pub mod ranges;

pub use ranges::{resolve_range, RangeError, TimeRange};

use hearth_schedule::time_zone::parse_time_zone;
use jiff::{tz::TimeZone, Timestamp, ToSpan, Zoned};

/// The zone for a name; an unknown name falls back to UTC (config loading
/// already rejects unknown names, so this only guards stale data).
pub fn zone(name: &str) -> TimeZone {
    parse_time_zone(name).unwrap_or(TimeZone::UTC)
}

pub fn is_valid_zone(name: &str) -> bool {
    parse_time_zone(name).is_ok()
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
pub fn date_string(ms: i64, tz: &str) -> String {
    ymd(&zoned(ms, tz))
}

/// `HH:MM` of an instant in `tz`.
pub fn time_string(ms: i64, tz: &str) -> String {
    let z = zoned(ms, tz);
    format!("{:02}:{:02}", z.hour(), z.minute())
}

const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// `YYYY-MM-DD HH:MM (Weekday) TZ` of an instant in `tz`.
pub fn datetime_string(ms: i64, tz: &str) -> String {
    let z = zoned(ms, tz);
    let weekday = WEEKDAYS[z.weekday().to_monday_zero_offset() as usize % 7];
    let info = z.time_zone().to_offset_info(z.timestamp());
    format!("{} {:02}:{:02} ({weekday}) {}", ymd(&z), z.hour(), z.minute(), info.abbreviation())
}

/// An instant as an email's `Date:` (RFC 5322), in UTC:
/// `Fri, 19 May 2000 04:29:55 +0000`.
pub fn rfc5322(ms: i64) -> String {
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
pub fn today_and_yesterday(ms: i64, tz: &str) -> (String, String) {
    let now = zoned(ms, tz);
    let yesterday = now.checked_sub(1.day()).unwrap_or_else(|_| now.clone());
    (ymd(&now), ymd(&yesterday))
}

/// The latest instant at or before `ms` whose local time in `tz` is
/// `hour:minute` (the daily reset boundary).
pub fn last_daily_boundary(ms: i64, tz: &str, hour: i8, minute: i8) -> i64 {
    let now = zoned(ms, tz);
    let today = now.with().hour(hour).minute(minute).second(0).subsec_nanosecond(0).build();
    let Ok(today) = today else { return ms };
    let boundary =
        if today.timestamp() <= now.timestamp() { today } else { today.checked_sub(1.day()).unwrap_or(today) };
    boundary.timestamp().as_millisecond()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_and_zones() {
        assert_eq!(date_string(0, "UTC"), "1970-01-01");
        assert_eq!(datetime_string(1_708_300_000_000, "UTC"), "2024-02-18 23:46 (Sunday) UTC");
        // 23:46 UTC is already Monday in Paris (UTC+1 in February).
        assert_eq!(date_string(1_708_300_000_000, "Europe/Paris"), "2024-02-19");
        assert_eq!(today_and_yesterday(1_709_251_200_000, "UTC"), ("2024-03-01".into(), "2024-02-29".into()));
        assert_eq!(date_string(0, "Not/AZone"), "1970-01-01");
        assert!(is_valid_zone("America/New_York") && !is_valid_zone("Mars/Base"));
        // What jiff's strftime wrote, in zones with and without an abbreviation.
        for (ms, tz) in [
            (1_708_300_000_000, "Europe/Paris"),
            (1_782_874_800_000, "America/New_York"),
            (5, "Asia/Kolkata"),
            (1_708_300_000_000, "America/Sao_Paulo"),
        ] {
            let z = zoned(ms, tz);
            assert_eq!(datetime_string(ms, tz), z.strftime("%Y-%m-%d %H:%M (%A) %Z").to_string(), "{tz}");
            assert_eq!(time_string(ms, tz), z.strftime("%H:%M").to_string());
        }
    }

    #[test]
    fn daily_boundary_in_local_time() {
        // 2026-07-01 03:00 UTC = 05:00 in Paris (summer): the 04:00 boundary was 02:00 UTC.
        let now = 1_782_874_800_000;
        assert_eq!(last_daily_boundary(now, "Europe/Paris", 4, 0), now - 3_600_000);
        // At 01:00 UTC (03:00 Paris) the boundary is the previous day's.
        let early = now - 2 * 3_600_000;
        assert_eq!(last_daily_boundary(early, "Europe/Paris", 4, 0), now - 3_600_000 - 86_400_000);
    }
}
