//! Cron expressions read and searched as croner 4 did for Hearth (`Seconds::Disallowed`,
//! `Year::Disallowed`), without croner and jiff in the upload (docs/notes/clock.md).
//!
//! The reader follows croner's parser step by step, quirks included, so the same texts are
//! accepted: the whole text upper-cased, names replaced as substrings (`SUN`→0 … `DEC`→12,
//! `-SUN`→`-7`), `?` read as `*` in the two day fields, a leading `+` on day-of-week asking for
//! AND instead of OR, `L`/`LW`/`nW` in day-of-month, `n#k`/`nL` in day-of-week, `7` as Sunday.
//! `tests/cron_against_croner.rs` compares acceptance and occurrences with croner.
//!
//! The search answers with croner's set of instants: each matching wall-clock minute is one
//! instant, except in a change of offset. A fixed-time job (one minute, one hour, no `*` or
//! step) runs once in a fold (the earlier instant) and, in a gap, at the first instant after
//! it if that wall clock's date still matches. An interval job runs on both instants of a fold
//! and not at all in a gap.

use crate::civil::{days_in_month, Date, DateTime, DAY, MAX_SECOND, MIN_SECOND};
use crate::tz::{Local, TimeZone};

const ALL: u8 = 1;
const NTH_ALL: u8 = 0b0011_1110;
const LAST: u8 = 1 << 6;
const CLOSEST_WEEKDAY: u8 = 1 << 7;
/// Croner searches years 1 to 5000 only.
const YEAR_RANGE: std::ops::RangeInclusive<i32> = 1..=5000;

/// One field: per value, which of `ALL`, the nth-weekday bits, `LAST`, `CLOSEST_WEEKDAY` hold.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    bits: [u8; 60],
    min: u16,
    max: u16,
    step: u16,
    from_wildcard: bool,
    features: u8,
    enabled: u8,
}

type Parsed<T> = Result<T, String>;

/// What a search looks for: occurrences at or after `threshold` (`forward`) or at or before it.
#[derive(Debug, Clone, Copy)]
struct Wanted {
    threshold: i64,
    forward: bool,
}

impl Wanted {
    fn holds(self, t: i64) -> bool {
        if self.forward {
            t >= self.threshold
        } else {
            t <= self.threshold
        }
    }
}

/// The wall-clock seconds of a date's midnight, as `DateTime::seconds` counts them.
fn date_seconds(date: Date) -> i64 {
    DateTime::new(date, 0, 0, 0).map_or(0, DateTime::seconds)
}

fn number(text: &str, what: &str) -> Parsed<u16> {
    text.parse::<u16>().map_err(|_| format!("invalid {what} \"{text}\""))
}

impl Field {
    fn new(min: u16, max: u16, features: u8) -> Field {
        Field { bits: [0; 60], min, max, step: 1, from_wildcard: false, features: features | ALL | LAST, enabled: 0 }
    }

    fn has(&self, at: u16, bit: u8) -> bool {
        (self.min..=self.max).contains(&at) && self.bits.get(usize::from(at)).is_some_and(|b| b & bit != 0)
    }

    fn set(&mut self, at: u16, bit: u8) -> Parsed<()> {
        if at < self.min || at > self.max {
            return Err(format!("{at} is outside {}-{}", self.min, self.max));
        }
        if self.features & bit != bit {
            return Err("a modifier this field does not allow".to_string());
        }
        match self.bits.get_mut(usize::from(at)) {
            Some(b) => *b |= bit,
            None => return Err(format!("{at} is out of range")),
        }
        Ok(())
    }

    fn enable(&mut self, feature: u8) -> Parsed<()> {
        if self.features & feature != feature {
            return Err("a modifier this field does not allow".to_string());
        }
        self.enabled |= feature;
        Ok(())
    }

    fn enabled(&self, feature: u8) -> bool {
        self.enabled & feature == feature
    }

    fn count(&self) -> usize {
        (self.min..=self.max).filter(|&v| self.has(v, ALL)).count()
    }

    fn parse(&mut self, field: &str) -> Parsed<()> {
        if field == "*" {
            self.from_wildcard = true;
            return (self.min..=self.max).try_for_each(|v| self.set(v, ALL));
        }
        for part in field.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.contains('/') {
                self.stepped(part)?;
            } else if part.contains('-') {
                self.range(part)?;
            } else if let Some(w) = part.find('W') {
                // As croner: only what precedes the W counts.
                let day = &part[..w];
                if day == "L" {
                    self.enable(LAST)?;
                    self.enable(CLOSEST_WEEKDAY)?;
                } else {
                    let day = number(day, "day for W")?;
                    self.set(day, CLOSEST_WEEKDAY)?;
                }
            } else if part == "L" {
                self.enable(LAST)?;
            } else {
                let part =
                    if part.ends_with('L') && !part.contains('#') { part.replace('L', "#L") } else { part.to_string() };
                if (part.contains('#') || part.contains('L')) && self.features & NTH_ALL != NTH_ALL {
                    return Err(format!("\"{part}\" is not allowed in this field"));
                }
                let bit = nth_bit(&part)?;
                let value = number(before_hash(&part), "number")?;
                self.set(value, bit)?;
            }
        }
        Ok(())
    }

    fn range(&mut self, text: &str) -> Parsed<()> {
        let bit = nth_bit(text)?;
        let parts: Vec<&str> = before_hash(text).split('-').map(str::trim).collect();
        let [start, end] = parts[..] else { return Err(format!("invalid range \"{text}\"")) };
        let (start, end) = (number(start, "range start")?, number(end, "range end")?);
        if start > end || start < self.min || end > self.max {
            return Err(format!("range \"{text}\" is out of bounds"));
        }
        (start..=end).try_for_each(|v| self.set(v, bit))
    }

    fn stepped(&mut self, text: &str) -> Parsed<()> {
        let bit = nth_bit(text)?;
        let parts: Vec<&str> = before_hash(text).split('/').collect();
        let [range, step] = parts[..] else { return Err(format!("invalid step \"{text}\"")) };
        let step_value = number(step, "step")?;
        self.step = step_value;
        if step_value == 0 {
            return Err("a step cannot be zero".to_string());
        }
        let (start, end) = if range == "*" {
            self.from_wildcard = true;
            (self.min, self.max)
        } else if range.contains('-') {
            let bounds: Vec<&str> = range.split('-').collect();
            let [a, b] = bounds[..] else { return Err(format!("invalid range \"{range}\"")) };
            (number(a, "range start")?, number(b, "range end")?)
        } else {
            return Err(format!("\"{text}\": steps need \"*/{step}\" or \"X-Y/{step}\""));
        };
        if start < self.min || end > self.max || start > end {
            return Err(format!("\"{text}\" is out of bounds"));
        }
        let mut value = start;
        while value <= end {
            self.set(value, bit)?;
            value = value.checked_add(step_value).ok_or("step overflows")?;
        }
        Ok(())
    }
}

/// The bit a day-of-week item sets: `nL` last, `n#k` the kth, else every.
fn nth_bit(text: &str) -> Parsed<u8> {
    if text.ends_with('L') {
        return Ok(LAST);
    }
    let Some(at) = text.find('#') else { return Ok(ALL) };
    match text[at + 1..].parse::<u8>() {
        Ok(n @ 1..=5) => Ok(1 << n),
        _ => Err(format!("invalid nth weekday in \"{text}\" (1 to 5)")),
    }
}

fn before_hash(text: &str) -> &str {
    text.split('#').next().unwrap_or("")
}

/// A parsed cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    minutes: Field,
    hours: Field,
    days: Field,
    months: Field,
    weekdays: Field,
    star_dom: bool,
    star_dow: bool,
    dom_and_dow: bool,
    fixed_time: bool,
}

const MACROS: [(&str, &str); 6] = [
    ("@YEARLY", "0 0 1 1 *"),
    ("@ANNUALLY", "0 0 1 1 *"),
    ("@MONTHLY", "0 0 1 * *"),
    ("@WEEKLY", "0 0 * * SUN"),
    ("@DAILY", "0 0 * * *"),
    ("@HOURLY", "0 * * * *"),
];
const NAMES: [(&str, &str); 20] = [
    ("-SUN", "-7"),
    ("SUN", "0"),
    ("MON", "1"),
    ("TUE", "2"),
    ("WED", "3"),
    ("THU", "4"),
    ("FRI", "5"),
    ("SAT", "6"),
    ("JAN", "1"),
    ("FEB", "2"),
    ("MAR", "3"),
    ("APR", "4"),
    ("MAY", "5"),
    ("JUN", "6"),
    ("JUL", "7"),
    ("AUG", "8"),
    ("SEP", "9"),
    ("OCT", "10"),
    ("NOV", "11"),
    ("DEC", "12"),
];

impl CronExpr {
    /// Reads a 5-field expression or an `@` macro; `Err` says what is wrong.
    pub fn parse(text: &str) -> Result<CronExpr, String> {
        let mut text = text.to_uppercase().trim().to_string();
        if text.is_empty() {
            return Err("empty pattern".to_string());
        }
        if let Some((_, expanded)) = MACROS.iter().find(|(name, _)| *name == text) {
            text = (*expanded).to_string();
        }
        for (name, value) in NAMES {
            text = text.replace(name, value);
        }
        let mut parts: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        if parts.len() != 5 {
            return Err("expected 5 fields: minute hour day-of-month month day-of-week".to_string());
        }
        for at in [2, 4] {
            parts[at] = parts[at].replace('?', "*");
        }
        let dom_and_dow = parts[4].starts_with('+');
        if dom_and_dow {
            parts[4].remove(0);
        }
        for (at, part) in parts.iter().enumerate() {
            let extra = match at {
                2 => "LW?",
                4 => "#L?",
                _ => "",
            };
            if let Some(c) = part.chars().find(|&c| !(c.is_ascii_digit() || "*/,-".contains(c) || extra.contains(c))) {
                return Err(format!("illegal character '{c}' in \"{part}\""));
            }
        }
        let mut minutes = Field::new(0, 59, 0);
        let mut hours = Field::new(0, 23, 0);
        let mut days = Field::new(1, 31, LAST | CLOSEST_WEEKDAY);
        let mut months = Field::new(1, 12, 0);
        let mut weekdays = Field::new(0, 7, LAST | NTH_ALL);
        for (field, part) in [&mut minutes, &mut hours, &mut days, &mut months, &mut weekdays].into_iter().zip(&parts) {
            field.parse(part)?;
        }
        // 7 is Sunday too.
        if let [sunday, .., seven] = &mut weekdays.bits[..8] {
            *sunday |= *seven;
            *seven = 0;
        }
        let fixed = |f: &Field| f.step == 1 && !f.from_wildcard && f.count() == 1;
        Ok(CronExpr {
            fixed_time: fixed(&minutes) && fixed(&hours),
            minutes,
            hours,
            days,
            months,
            weekdays,
            star_dom: parts[2] == "*",
            star_dow: parts[4] == "*",
            dom_and_dow,
        })
    }

    /// Whether the expression names the date (croner's day-of-month/day-of-week rules).
    fn date_matches(&self, date: Date) -> bool {
        if !self.months.has(u16::from(date.month), ALL) {
            return false;
        }
        let (len, day) = (days_in_month(date.year, date.month), date.day);
        let weekday = |d: u8| (date.weekday() + 1 + 7 * 5 + d - day) % 7; // Sunday = 0
        let days = &self.days;
        let mut dom = days.has(u16::from(day), ALL);
        if !dom && days.enabled(LAST) {
            dom = if days.enabled(CLOSEST_WEEKDAY) {
                day == match weekday(len) {
                    6 => len - 1,
                    0 => len - 2,
                    _ => len,
                }
            } else {
                day == len
            };
        }
        dom = dom
            || (day.saturating_sub(2).max(1)..=(day + 2).min(len)).any(|wanted| {
                days.has(u16::from(wanted), CLOSEST_WEEKDAY)
                    && day
                        == match weekday(wanted) {
                            1..=5 => wanted,
                            6 if wanted > 1 => wanted - 1,
                            6 => wanted + 2,
                            _ if wanted < len => wanted + 1,
                            _ => wanted - 2,
                        }
            });
        let wd = u16::from(weekday(day));
        let dow = self.weekdays.has(wd, 1 << ((day - 1) / 7 + 1))
            || (self.weekdays.has(wd, LAST) && day + 7 > len)
            || self.weekdays.has(wd, ALL);
        if (dom && self.star_dow) || (dow && self.star_dom) {
            true
        } else if !self.star_dom && !self.star_dow {
            if self.dom_and_dow {
                dom && dow
            } else {
                dom || dow
            }
        } else {
            false
        }
    }

    /// Whether any date ever matches (the calendar repeats every 400 years).
    pub fn ever_fires(&self) -> bool {
        self.minutes.count() > 0
            && self.hours.count() > 0
            && (0..146_097)
                .any(|d| Date::new(2000, 1, 1).and_then(|s| s.add_days(d)).is_some_and(|d| self.date_matches(d)))
    }

    /// This date's occurrences (Unix seconds) in `tz` that a search may want, by croner's
    /// rules for changes of offset. On a date with one offset throughout, the occurrences are
    /// in wall-clock order, so only the nearest `wanted` one is pushed (the search keeps no
    /// other): an every-minute job then costs a few steps per date, not 1,440.
    fn occurrences_on(&self, date: Date, tz: &TimeZone, wanted: Wanted, out: &mut Vec<i64>) {
        if !YEAR_RANGE.contains(&date.year) || !self.date_matches(date) {
            return;
        }
        // Most days have no change of offset: one offset for all of them (as `to_ambiguous`
        // reasons, a change lies more than 28 hours from any other).
        let midnight = date_seconds(date);
        let offset = tz.offset(midnight - 28 * 3600);
        let steady = tz.offset(midnight + DAY + 28 * 3600) == offset;
        if steady {
            if let Some(t) = self.nearest_on(date, i64::from(offset), wanted) {
                out.push(t);
            }
            return;
        }
        for hour in (0..24u8).filter(|&h| self.hours.has(u16::from(h), ALL)) {
            for minute in (0..60u8).filter(|&m| self.minutes.has(u16::from(m), ALL)) {
                let Some(local) = DateTime::new(date, hour, minute, 0).map(DateTime::seconds) else { continue };
                match tz.to_ambiguous(local) {
                    Local::Single(o) => out.push(local - i64::from(o)),
                    Local::Fold { before, after } => {
                        out.push(local - i64::from(before));
                        if !self.fixed_time {
                            out.push(local - i64::from(after));
                        }
                    }
                    Local::Gap { before, after } if self.fixed_time => {
                        // The change lies in (local - after, local - before]: find it.
                        let (mut lo, mut hi) = (local - i64::from(after), local - i64::from(before));
                        while hi - lo > 1 {
                            let mid = lo + (hi - lo) / 2;
                            if tz.offset(mid) == before {
                                lo = mid;
                            } else {
                                hi = mid;
                            }
                        }
                        let wall = tz.to_civil(hi).date;
                        if YEAR_RANGE.contains(&wall.year) && self.date_matches(wall) {
                            out.push(hi);
                        }
                    }
                    Local::Gap { .. } => {}
                }
            }
        }
    }

    /// On a date with one `offset` throughout: its first occurrence at or after the threshold
    /// (forward) or its last at or before it (backward). Hours wholly on the wrong side of the
    /// threshold are skipped.
    fn nearest_on(&self, date: Date, offset: i64, wanted: Wanted) -> Option<i64> {
        let midnight = date_seconds(date) - offset;
        let hours = (0..24u8).filter(|&h| self.hours.has(u16::from(h), ALL));
        let minutes = || (0..60u8).filter(|&m| self.minutes.has(u16::from(m), ALL));
        // A wall-clock minute of the date as an instant (`DateTime::new` checks it, as in
        // the general case).
        let at = |hour: u8, minute: u8| DateTime::new(date, hour, minute, 0).map(|local| local.seconds() - offset);
        if wanted.forward {
            for hour in hours {
                if midnight + i64::from(hour) * 3600 + 3599 < wanted.threshold {
                    continue;
                }
                if let Some(t) = minutes().filter_map(|m| at(hour, m)).find(|&t| wanted.holds(t)) {
                    return Some(t);
                }
            }
        } else {
            for hour in hours.rev() {
                if midnight + i64::from(hour) * 3600 > wanted.threshold {
                    continue;
                }
                if let Some(t) = minutes().rev().filter_map(|m| at(hour, m)).find(|&t| wanted.holds(t)) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// The first occurrence at or after (`inclusive`) or strictly after Unix second `from`.
    pub fn next_after(&self, from: i64, inclusive: bool, tz: &TimeZone) -> Option<i64> {
        let wanted = Wanted { threshold: if inclusive { from } else { from.checked_add(1)? }, forward: true };
        self.search(from, tz, wanted).and_then(|v| v.into_iter().filter(|&t| wanted.holds(t)).min())
    }

    /// The last occurrence at or before (`inclusive`) or strictly before Unix second `from`.
    pub fn previous_before(&self, from: i64, inclusive: bool, tz: &TimeZone) -> Option<i64> {
        let wanted = Wanted { threshold: if inclusive { from } else { from.checked_sub(1)? }, forward: false };
        self.search(from, tz, wanted).and_then(|v| v.into_iter().filter(|&t| wanted.holds(t)).max())
    }

    /// Occurrences of the first dates (walking by `step` days from `from`'s local date, one
    /// day back) that have one `wanted`, plus the next date's: offsets are under a day, so no
    /// later date can hold an earlier answer.
    fn search(&self, from: i64, tz: &TimeZone, wanted: Wanted) -> Option<Vec<i64>> {
        if !(MIN_SECOND..=MAX_SECOND).contains(&from) {
            return None;
        }
        let step = if wanted.forward { 1 } else { -1 };
        let start = tz.to_civil(from).date.days() - step;
        let end = if step > 0 { Date::new(*YEAR_RANGE.end(), 12, 31)?.days() } else { Date::new(1, 1, 1)?.days() };
        let mut found: Option<i64> = None;
        let mut out = Vec::new();
        let mut day = start;
        while (day - end) * step <= 0 {
            if found.is_some_and(|f| (day - f) * step > 1) {
                break;
            }
            let before = out.len();
            self.occurrences_on(Date::from_days(day), tz, wanted, &mut out);
            if found.is_none() && out[before..].iter().any(|&t| wanted.holds(t)) {
                found = Some(day);
            }
            day += step;
        }
        found.map(|_| out)
    }
}
