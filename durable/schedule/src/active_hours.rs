//! Active hours: a daily `HH:MM-HH:MM` window in local time outside which heartbeats do not run.
//!
//! The window is half-open, `[start, end)`: `09:00-17:00` covers 09:00 up to 16:59.
//! When `end` is before `start` the window crosses midnight: `22:00-06:00` covers 22:00 to
//! 05:59. `24:00` is accepted as an end (`00:00-24:00` is all day). Equal start and end is
//! rejected: "never" and "always" are both plausible readings, and omitting the setting already
//! means "always".

use std::fmt;
use std::str::FromStr;

use crate::error::ScheduleError;

const MINUTES_PER_DAY: u16 = 24 * 60;

/// A parsed daily window, in minutes since local midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveHours {
    start: u16,
    end: u16,
}

impl ActiveHours {
    /// Parses `HH:MM-HH:MM` (spaces around the dash allowed, one- or two-digit hours).
    pub fn parse(s: &str) -> Result<Self, ScheduleError> {
        let err = || ScheduleError::InvalidActiveHours(s.to_string());
        let (a, b) = s.split_once('-').ok_or_else(err)?;
        let start = parse_hhmm(a.trim(), false).ok_or_else(err)?;
        let end = parse_hhmm(b.trim(), true).ok_or_else(err)?;
        if start == end {
            return Err(err());
        }
        Ok(Self { start, end })
    }

    /// Start of the window, minutes after local midnight (0..1440).
    pub fn start_minute(self) -> u16 {
        self.start
    }

    /// End of the window (exclusive), minutes after local midnight (1..=1440).
    pub fn end_minute(self) -> u16 {
        self.end
    }

    /// True when the window crosses local midnight (`22:00-06:00`).
    pub fn crosses_midnight(self) -> bool {
        self.end < self.start
    }

    /// Whether a local wall-clock time, given as minutes after midnight, is inside the window.
    /// Values of 1440 or more are taken modulo a day.
    pub fn contains_minute(self, minute_of_day: u16) -> bool {
        let m = minute_of_day % MINUTES_PER_DAY;
        if self.start < self.end {
            self.start <= m && m < self.end
        } else {
            m >= self.start || m < self.end
        }
    }
}

impl FromStr for ActiveHours {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for ActiveHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}-{:02}:{:02}", self.start / 60, self.start % 60, self.end / 60, self.end % 60)
    }
}

/// `H:MM` / `HH:MM` → minutes; `24:00` only when `allow_24` (as an end).
fn parse_hhmm(s: &str, allow_24: bool) -> Option<u16> {
    let (h, m) = s.split_once(':')?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return None;
    }
    if !h.bytes().all(|b| b.is_ascii_digit()) || !m.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: u16 = h.parse().ok()?;
    let m: u16 = m.parse().ok()?;
    if m > 59 {
        return None;
    }
    match h {
        0..=23 => Some(h * 60 + m),
        24 if allow_24 && m == 0 => Some(MINUTES_PER_DAY),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hm(h: u16, m: u16) -> u16 {
        h * 60 + m
    }

    #[test]
    fn parses_and_formats() {
        let w = ActiveHours::parse("09:00-17:30").unwrap();
        assert_eq!((w.start_minute(), w.end_minute()), (540, 1050));
        assert_eq!(w.to_string(), "09:00-17:30");
        assert_eq!(ActiveHours::parse("9:00 - 17:00").unwrap().to_string(), "09:00-17:00");
        assert_eq!(ActiveHours::parse("00:00-24:00").unwrap().end_minute(), 1440);
        for bad in [
            "",
            "9-17",
            "09:00",
            "09:00-",
            "-17:00",
            "25:00-26:00",
            "09:60-10:00",
            "24:00-06:00",
            "09:00-09:00",
            "aa:bb-cc:dd",
            "09:00-17:00-18:00",
            "+9:00-10:00",
            "009:00-10:00",
            "٠٩:٠٠-١٠:٠٠",
        ] {
            assert!(ActiveHours::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn same_day_window() {
        let w = ActiveHours::parse("09:00-17:00").unwrap();
        assert!(!w.crosses_midnight());
        assert!(!w.contains_minute(hm(8, 59)));
        assert!(w.contains_minute(hm(9, 0)));
        assert!(w.contains_minute(hm(16, 59)));
        assert!(!w.contains_minute(hm(17, 0)));
        assert!(!w.contains_minute(hm(23, 0)));
    }

    #[test]
    fn window_crossing_midnight() {
        let w = ActiveHours::parse("22:00-06:00").unwrap();
        assert!(w.crosses_midnight());
        assert!(w.contains_minute(hm(22, 0)));
        assert!(w.contains_minute(hm(23, 59)));
        assert!(w.contains_minute(hm(0, 0)));
        assert!(w.contains_minute(hm(5, 59)));
        assert!(!w.contains_minute(hm(6, 0)));
        assert!(!w.contains_minute(hm(12, 0)));
        assert!(!w.contains_minute(hm(21, 59)));
    }

    #[test]
    fn all_day() {
        let w = ActiveHours::parse("00:00-24:00").unwrap();
        for m in [0, 1, 719, 1439, 1440, u16::MAX] {
            assert!(w.contains_minute(m));
        }
    }
}
