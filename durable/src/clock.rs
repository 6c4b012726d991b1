//! Calendar arithmetic on epoch milliseconds (UTC), without a date crate.

/// (year, month 1-12, day 1-31) of a day count since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

const DAY_MS: i64 = 86_400_000;

/// `YYYY-MM-DD` of an instant, shifted by `offset_ms` (0 for UTC).
pub fn date_string(ms: i64, offset_ms: i64) -> String {
    let (y, m, d) = civil_from_days((ms + offset_ms).div_euclid(DAY_MS));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD HH:MM (Weekday)` of an instant, shifted by `offset_ms`.
pub fn datetime_string(ms: i64, offset_ms: i64) -> String {
    let local = ms + offset_ms;
    let days = local.div_euclid(DAY_MS);
    let in_day = local.rem_euclid(DAY_MS) / 60_000;
    const WEEKDAYS: [&str; 7] = ["Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday"];
    format!(
        "{} {:02}:{:02} ({})",
        date_string(ms, offset_ms),
        in_day / 60,
        in_day % 60,
        WEEKDAYS[days.rem_euclid(7) as usize]
    )
}

/// Today's and yesterday's dates.
pub fn today_and_yesterday(ms: i64, offset_ms: i64) -> (String, String) {
    (date_string(ms, offset_ms), date_string(ms - DAY_MS, offset_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(date_string(0, 0), "1970-01-01");
        assert_eq!(datetime_string(1_708_300_000_000, 0), "2024-02-18 23:46 (Sunday)");
        assert_eq!(today_and_yesterday(1_709_251_200_000, 0), ("2024-03-01".into(), "2024-02-29".into()));
        assert_eq!(date_string(-1, 0), "1969-12-31");
    }
}
