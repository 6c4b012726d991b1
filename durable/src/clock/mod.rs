//! Local time in the agent's time zone (IANA names, daylight saving right),
//! for daily notes, the time reminder and daily resets. Zones come from the
//! schedule crate's table ([`hearth_schedule::time_zone`]), shared with cron.

#[cfg(test)]
mod against_jiff;
pub mod ranges;

pub use ranges::{resolve_range, RangeError, TimeRange};

use hearth_schedule::civil::{Date, DateTime, MAX_SECOND, MIN_SECOND};
use hearth_schedule::time_zone::{parse_time_zone, TimeZone};

/// The zone for a name; an unknown name falls back to UTC (config loading
/// already rejects unknown names, so this only guards stale data).
pub fn zone(name: &str) -> TimeZone {
    parse_time_zone(name).unwrap_or(TimeZone::UTC)
}

pub fn is_valid_zone(name: &str) -> bool {
    parse_time_zone(name).is_ok()
}

/// The Unix second of `ms`; an instant outside years -9999..=9999 is the epoch (as jiff's
/// `Timestamp::from_millisecond(ms).unwrap_or(UNIX_EPOCH)` was).
pub(crate) fn second_of(ms: i64) -> i64 {
    if (MIN_SECOND * 1000..=MAX_SECOND * 1000).contains(&ms) {
        ms.div_euclid(1000)
    } else {
        0
    }
}

/// A wall clock in a zone and the instant (Unix second) it names: what this module and
/// [`ranges`] used jiff's `Zoned` for. Calendar arithmetic moves the wall clock and reads it
/// back with jiff's "compatible" rule ([`TimeZone::compatible`]), as jiff's did.
#[derive(Clone, Copy)]
pub(crate) struct Zoned<'a> {
    pub tz: &'a TimeZone,
    pub local: DateTime,
    pub second: i64,
}

impl<'a> Zoned<'a> {
    /// The wall clock at Unix second `second` (within range, see [`second_of`]).
    pub fn at(second: i64, tz: &'a TimeZone) -> Zoned<'a> {
        Zoned { tz, local: tz.to_civil(second), second }
    }

    /// The instant wall clock `local` names; `None` past what an instant holds.
    pub fn local(local: DateTime, tz: &'a TimeZone) -> Option<Zoned<'a>> {
        let second = tz.compatible(local.seconds());
        (MIN_SECOND..=MAX_SECOND).contains(&second).then(|| Zoned::at(second, tz))
    }

    /// The same time of day on `date`.
    pub fn on(&self, date: Date) -> Option<Zoned<'a>> {
        Zoned::local(DateTime { date, ..self.local }, self.tz)
    }

    pub fn add_days(&self, n: i64) -> Option<Zoned<'a>> {
        self.on(self.local.date.add_days(n)?)
    }

    pub fn add_months(&self, n: i64) -> Option<Zoned<'a>> {
        self.on(self.local.date.add_months(n)?)
    }

    /// The first instant of this local day.
    pub fn start_of_day(&self) -> Option<Zoned<'a>> {
        Zoned::local(DateTime { date: self.local.date, hour: 0, minute: 0, second: 0 }, self.tz)
    }

    pub fn ms(&self) -> i64 {
        self.second * 1000
    }
}

// Dates are written by hand rather than with jiff's `strftime`: its format
// machinery is ~10 KiB of the gzipped upload for three fixed formats.

fn ymd(d: Date) -> String {
    format!("{:04}-{:02}-{:02}", d.year, d.month, d.day)
}

/// The local date, `YYYY-MM-DD`.
pub fn date_string(ms: i64, tz: &str) -> String {
    ymd(zone(tz).to_civil(second_of(ms)).date)
}

/// The local time of day, `HH:MM`.
pub fn time_string(ms: i64, tz: &str) -> String {
    let local = zone(tz).to_civil(second_of(ms));
    format!("{:02}:{:02}", local.hour, local.minute)
}

const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// `YYYY-MM-DD HH:MM (Weekday) ABBR`, for the time line of the system prompt.
pub fn datetime_string(ms: i64, tz: &str) -> String {
    let zone = zone(tz);
    let second = second_of(ms);
    let local = zone.to_civil(second);
    let weekday = WEEKDAYS[usize::from(local.date.weekday()) % 7];
    let (_, abbreviation) = zone.offset_info(second);
    format!("{} {:02}:{:02} ({weekday}) {abbreviation}", ymd(local.date), local.hour, local.minute)
}

/// RFC 5322 date in UTC (`Mon, 02 Mar 2026 09:00:00 +0000`), for mail headers.
pub fn rfc5322(ms: i64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let z = DateTime::from_seconds(second_of(ms));
    let weekday = &WEEKDAYS[usize::from(z.date.weekday()) % 7][..3];
    let month = MONTHS[usize::from(z.date.month).saturating_sub(1) % 12];
    format!(
        "{weekday}, {:02} {month} {:04} {:02}:{:02}:{:02} +0000",
        z.date.day, z.date.year, z.hour, z.minute, z.second
    )
}

/// Today's and yesterday's local dates, `YYYY-MM-DD` (the daily notes' names).
pub fn today_and_yesterday(ms: i64, tz: &str) -> (String, String) {
    let zone = zone(tz);
    let now = Zoned::at(second_of(ms), &zone);
    let yesterday = now.add_days(-1).unwrap_or(now);
    (ymd(now.local.date), ymd(yesterday.local.date))
}

/// The latest local `hour:minute` at or before `ms` (a daily reset's boundary), Unix ms.
pub fn last_daily_boundary(ms: i64, tz: &str, hour: i8, minute: i8) -> i64 {
    let zone = zone(tz);
    let now = Zoned::at(second_of(ms), &zone);
    let (Ok(hour), Ok(minute)) = (u8::try_from(hour), u8::try_from(minute)) else { return ms };
    let Some(wall) = DateTime::new(now.local.date, hour, minute, 0) else { return ms };
    // jiff's `Zoned::with` kept the current offset when the new wall clock is one of two
    // instants (a fold), else read it "compatible".
    let local = wall.seconds();
    let second = match zone.to_ambiguous(local) {
        hearth_schedule::time_zone::Local::Fold { before, after } => {
            let current = zone.offset(now.second);
            let offset = if current == after { after } else { before };
            local - i64::from(offset)
        }
        _ => zone.compatible(local),
    };
    if !(MIN_SECOND..=MAX_SECOND).contains(&second) {
        return ms;
    }
    let today = Zoned::at(second, &zone);
    // Compared with the instant read (the epoch for one out of range), as jiff's was.
    let now_ms = if (MIN_SECOND * 1000..=MAX_SECOND * 1000).contains(&ms) { ms } else { 0 };
    let boundary = if today.ms() <= now_ms { today } else { today.add_days(-1).unwrap_or(today) };
    boundary.ms()
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
            let z = jiff::Timestamp::from_millisecond(ms).unwrap().to_zoned(against_jiff::zone(tz));
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
