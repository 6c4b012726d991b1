//! Civil (proleptic Gregorian) dates and times, as plain numbers.
//!
//! Our own rather than jiff's: Hearth needs only days ↔ dates, weekdays and month lengths, and
//! jiff with its error strings was ~50 KiB of the gzipped upload (docs/notes/clock.md).
//! Days count from 1970-01-01 (day 0). Years are those jiff accepts, -9999 to 9999;
//! `tests/civil.rs` checks every function against jiff.

/// First second jiff's `Timestamp` holds (-009999-01-02T01:59:59Z); instants outside
/// `MIN_SECOND..=MAX_SECOND` are refused as jiff refused them.
pub const MIN_SECOND: i64 = -377_705_023_201;
/// Last second jiff's `Timestamp` holds (9999-12-30T22:00:00Z).
pub const MAX_SECOND: i64 = 253_402_207_200;

/// Seconds in a civil day.
pub const DAY: i64 = 86_400;

/// A date: year, month 1..=12, day 1..=31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// Year, -9999..=9999.
    pub year: i32,
    /// Month, 1..=12.
    pub month: u8,
    /// Day of the month, 1..=31.
    pub day: u8,
}

impl Date {
    /// The date if it exists (Feb 30 does not) and its year is -9999..=9999.
    pub fn new(year: i32, month: u8, day: u8) -> Option<Date> {
        ((-9999..=9999).contains(&year) && (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month))
            .then_some(Date { year, month, day })
    }

    /// Days since 1970-01-01.
    pub fn days(self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// The date `days` days after 1970-01-01.
    pub fn from_days(days: i64) -> Date {
        let (year, month, day) = civil_from_days(days);
        Date { year, month, day }
    }

    /// Monday = 0 … Sunday = 6.
    pub fn weekday(self) -> u8 {
        weekday(self.days())
    }

    /// The date `n` days later (earlier if negative), if within -9999..=9999.
    pub fn add_days(self, n: i64) -> Option<Date> {
        let d = Date::from_days(self.days().checked_add(n)?);
        Date::new(d.year, d.month, d.day)
    }

    /// The next day, if within -9999..=9999.
    pub fn tomorrow(self) -> Option<Date> {
        self.add_days(1)
    }

    /// The date `n` months later (earlier if negative), the day clamped to the month's last
    /// (Mar 31 − 1 month = Feb 28), as jiff's calendar arithmetic.
    pub fn add_months(self, n: i64) -> Option<Date> {
        let index = i64::from(self.year).checked_mul(12)?.checked_add(i64::from(self.month) - 1)?.checked_add(n)?;
        let year = i32::try_from(index.div_euclid(12)).ok()?;
        let month = index.rem_euclid(12) as u8 + 1;
        if !(-9999..=9999).contains(&year) {
            return None;
        }
        Date::new(year, month, self.day.min(days_in_month(year, month)))
    }

    /// The first day of this date's month.
    pub fn first_of_month(self) -> Date {
        Date { day: 1, ..self }
    }
}

/// Whether `year` has a February 29th.
pub fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1..=12) of `year`; 0 for a month out of range.
pub fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm; any valid date).
pub fn days_from_civil(year: i32, month: u8, day: u8) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01 (inverse of [`days_from_civil`]).
pub fn civil_from_days(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32, month, day)
}

/// Monday = 0 … Sunday = 6 of a day count (1970-01-01 was a Thursday).
pub fn weekday(days: i64) -> u8 {
    (days + 3).rem_euclid(7) as u8
}

/// A wall-clock date and time to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    /// The date.
    pub date: Date,
    /// Hour, 0..=23.
    pub hour: u8,
    /// Minute, 0..=59.
    pub minute: u8,
    /// Second, 0..=59.
    pub second: u8,
}

impl DateTime {
    /// The date-time if the time of day exists (no 24:00, no leap seconds).
    pub fn new(date: Date, hour: u8, minute: u8, second: u8) -> Option<DateTime> {
        (hour < 24 && minute < 60 && second < 60).then_some(DateTime { date, hour, minute, second })
    }

    /// Seconds since 1970-01-01T00:00:00 of this wall clock (as if it were UTC).
    pub fn seconds(self) -> i64 {
        self.date.days() * DAY + i64::from(self.hour) * 3600 + i64::from(self.minute) * 60 + i64::from(self.second)
    }

    /// The wall clock `seconds` after 1970-01-01T00:00:00 (inverse of [`DateTime::seconds`]).
    pub fn from_seconds(seconds: i64) -> DateTime {
        let (days, rest) = (seconds.div_euclid(DAY), seconds.rem_euclid(DAY));
        DateTime {
            date: Date::from_days(days),
            hour: (rest / 3600) as u8,
            minute: (rest / 60 % 60) as u8,
            second: (rest % 60) as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip_and_weekdays() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(Date::new(2026, 6, 1).map(Date::weekday), Some(0)); // a Monday
        assert_eq!(Date::new(2026, 2, 29), None);
        assert_eq!(Date::new(2024, 3, 31).and_then(|d| d.add_months(-1)), Date::new(2024, 2, 29));
        for days in (-4_000_000..4_000_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(DateTime::from_seconds(MAX_SECOND).date, Date { year: 9999, month: 12, day: 30 });
    }
}
