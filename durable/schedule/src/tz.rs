//! A time zone evaluated from the zone table's data: a POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`)
//! or a whole TZif file for the few zones a rule cannot express (see `src/zones.rs`).
//!
//! Our own rather than jiff's `TimeZone`, for the upload's size (docs/notes/clock.md). It answers
//! the three questions Hearth asks: the offset (and abbreviation) at an instant, and which
//! instants a wall-clock time names (one, two in a fold, none in a gap), with jiff's answers:
//! `tests/tz.rs` compares it with jiff on every zone of the table.

use crate::civil::{days_from_civil, days_in_month, weekday, DateTime, DAY};

/// A time zone. Cheap to clone for rule zones; TZif zones hold their transitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeZone(Kind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Posix(Posix),
    Tzif(Tzif),
}

/// The instants a wall-clock time names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// One: the offset in force.
    Single(i32),
    /// Twice (clocks went back): the offset before the change (the earlier instant) and after.
    Fold {
        /// Offset before the change.
        before: i32,
        /// Offset after the change.
        after: i32,
    },
    /// Never (clocks went forward over it): the offsets either side of the gap.
    Gap {
        /// Offset before the change.
        before: i32,
        /// Offset after the change.
        after: i32,
    },
}

impl TimeZone {
    /// Coordinated Universal Time.
    pub const UTC: TimeZone = TimeZone(Kind::Posix(Posix { std: (0, "UTC"), dst: None }));

    /// A zone from a POSIX TZ string as the table writes them (`M` rules only); `None` if
    /// the string is not one.
    pub fn posix(rule: &'static str) -> Option<TimeZone> {
        Posix::parse(rule).map(|p| TimeZone(Kind::Posix(p)))
    }

    /// A zone from a TZif file (version 2 or later); `None` if it is not one.
    pub fn tzif(bytes: &'static [u8]) -> Option<TimeZone> {
        Tzif::parse(bytes).map(|t| TimeZone(Kind::Tzif(t)))
    }

    /// The offset from UTC, in seconds, at Unix second `at`, and its abbreviation (`CEST`, `+03`).
    pub fn offset_info(&self, at: i64) -> (i32, &str) {
        match &self.0 {
            Kind::Posix(p) => p.offset_info(at),
            Kind::Tzif(t) => t.offset_info(at),
        }
    }

    /// The offset from UTC, in seconds, at Unix second `at`.
    pub fn offset(&self, at: i64) -> i32 {
        self.offset_info(at).0
    }

    /// The wall clock at Unix second `at`.
    pub fn to_civil(&self, at: i64) -> DateTime {
        DateTime::from_seconds(at.saturating_add(i64::from(self.offset(at))))
    }

    /// Which instants wall clock `local` (seconds, see [`DateTime::seconds`]) names.
    pub fn to_ambiguous(&self, local: i64) -> Local {
        // Offsets are within ±26 h and transitions are days apart, so at most one change lies
        // within the 28 hours either side of the wall clock.
        let before = self.offset(local.saturating_sub(28 * 3600));
        let after = self.offset(local.saturating_add(28 * 3600));
        if before == after {
            return Local::Single(before);
        }
        let valid = |o: i32| self.offset(local - i64::from(o)) == o;
        match (valid(before), valid(after)) {
            (true, true) => Local::Fold { before, after },
            (true, false) => Local::Single(before),
            (false, true) => Local::Single(after),
            (false, false) => Local::Gap { before, after },
        }
    }

    /// The instant (Unix second) of wall clock `local` with jiff's "compatible" rule, as
    /// `civil::DateTime::to_zoned` did: in a fold the earlier instant, in a gap the wall clock
    /// read with the offset before the gap (so 02:30 in a 02:00→03:00 gap is 03:30).
    pub fn compatible(&self, local: i64) -> i64 {
        match self.to_ambiguous(local) {
            Local::Single(o) | Local::Fold { before: o, .. } | Local::Gap { before: o, .. } => local - i64::from(o),
        }
    }
}

/// A POSIX TZ rule: standard time, and daylight time with its two changes if any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Posix {
    std: (i32, &'static str),
    dst: Option<Dst>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Dst {
    abbr: &'static str,
    offset: i32,
    start: Change,
    end: Change,
}

/// `Mm.w.d/time`: weekday `d` (0 = Sunday) of week `w` (5 = last) of month `m`, at `time`
/// seconds of local time (may be negative or past 24 h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Change {
    month: u8,
    week: u8,
    weekday: u8,
    time: i64,
}

impl Change {
    /// Wall-clock second of this change in `year` (in the time in force before it).
    fn local(self, year: i32) -> i64 {
        let first = days_from_civil(year, self.month, 1);
        // Monday-zero weekday of the 1st, to POSIX Sunday-zero.
        let first_weekday = i64::from((weekday(first) + 1) % 7);
        let mut day = (i64::from(self.weekday) - first_weekday).rem_euclid(7) + 7 * (i64::from(self.week) - 1);
        while day >= i64::from(days_in_month(year, self.month)) {
            day -= 7;
        }
        (first + day) * DAY + self.time
    }
}

impl Posix {
    fn parse(s: &'static str) -> Option<Posix> {
        let mut r = Reader { s, at: 0 };
        let std_abbr = r.abbr()?;
        let std_offset = -r.hms(true)?;
        if r.done() {
            return Some(Posix { std: (std_offset as i32, std_abbr), dst: None });
        }
        let dst_abbr = r.abbr()?;
        let dst_offset = if r.peek() == Some(b',') { std_offset + 3600 } else { -r.hms(true)? };
        r.eat(b',')?;
        let start = r.change()?;
        r.eat(b',')?;
        let end = r.change()?;
        r.done().then_some(Posix {
            std: (std_offset as i32, std_abbr),
            dst: Some(Dst { abbr: dst_abbr, offset: dst_offset as i32, start, end }),
        })
    }

    fn offset_info(&self, at: i64) -> (i32, &'static str) {
        let Some(dst) = &self.dst else {
            return self.std;
        };
        let (std, _) = self.std;
        // The changes nearest `at` are those of its year (none fall within a day of New Year).
        let year = DateTime::from_seconds(at.saturating_add(i64::from(std))).date.year;
        let start = dst.start.local(year) - i64::from(std);
        let end = dst.end.local(year) - i64::from(dst.offset);
        let in_dst = if start < end { start <= at && at < end } else { !(end <= at && at < start) };
        if in_dst {
            (dst.offset, dst.abbr)
        } else {
            self.std
        }
    }
}

/// A small reader for POSIX TZ strings.
struct Reader {
    s: &'static str,
    at: usize,
}

impl Reader {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }
    fn done(&self) -> bool {
        self.at == self.s.len()
    }
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.at += 1)
    }
    /// `CET` or `<+0330>`.
    fn abbr(&mut self) -> Option<&'static str> {
        let rest = self.s.get(self.at..)?;
        let (abbr, used) = if let Some(quoted) = rest.strip_prefix('<') {
            let close = quoted.find('>')?;
            (&quoted[..close], close + 2)
        } else {
            let len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
            (&rest[..len], len)
        };
        self.at += used;
        (abbr.len() >= 3).then_some(abbr)
    }
    fn number(&mut self) -> Option<i64> {
        let rest = self.s.get(self.at..)?;
        let len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        self.at += len;
        rest[..len].parse().ok()
    }
    /// `[+-]hh[:mm[:ss]]` in seconds.
    fn hms(&mut self, signed: bool) -> Option<i64> {
        let sign = match self.peek() {
            Some(b'-') if signed => {
                self.at += 1;
                -1
            }
            Some(b'+') if signed => {
                self.at += 1;
                1
            }
            _ => 1,
        };
        let mut seconds = self.number()? * 3600;
        if self.eat(b':').is_some() {
            seconds += self.number()? * 60;
            if self.eat(b':').is_some() {
                seconds += self.number()?;
            }
        }
        Some(sign * seconds)
    }
    /// `Mm.w.d[/time]`.
    fn change(&mut self) -> Option<Change> {
        self.eat(b'M')?;
        let month = self.number()?;
        self.eat(b'.')?;
        let week = self.number()?;
        self.eat(b'.')?;
        let day = self.number()?;
        let time = if self.eat(b'/').is_some() { self.hms(true)? } else { 7200 };
        ((1..=12).contains(&month) && (1..=5).contains(&week) && day <= 6).then_some(Change {
            month: month as u8,
            week: week as u8,
            weekday: day as u8,
            time,
        })
    }
}

/// The parts of a TZif file Hearth uses: transitions, local time types, the POSIX footer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tzif {
    transitions: Vec<(i64, u8)>,
    types: Vec<(i32, &'static str)>,
    footer: Option<Posix>,
}

impl Tzif {
    fn parse(bytes: &'static [u8]) -> Option<Tzif> {
        let counts = |at: usize| -> Option<[usize; 6]> {
            let header = bytes.get(at..at + 44)?;
            if &header[..4] != b"TZif" {
                return None;
            }
            let mut c = [0; 6];
            for (i, n) in c.iter_mut().enumerate() {
                let b = &header[20 + 4 * i..24 + 4 * i];
                *n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
            }
            Some(c)
        };
        // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt; skip the 32-bit block.
        let [ut, std, leap, time, types, chars] = counts(0)?;
        let second = 44 + time * 5 + types * 6 + chars + leap * 8 + std + ut;
        let [ut, std, leap, time, type_count, chars] = counts(second)?;
        let mut at = second + 44;
        let mut take = |n: usize| -> Option<&'static [u8]> {
            let part = bytes.get(at..at.checked_add(n)?)?;
            at += n;
            Some(part)
        };
        let times = take(time * 8)?;
        let indices = take(time)?;
        let type_bytes = take(type_count * 6)?;
        let abbrs = take(chars)?;
        take(leap * 12 + std + ut)?;
        let footer = std::str::from_utf8(bytes.get(at..)?).ok()?.trim_matches('\n');
        let mut transitions = Vec::with_capacity(time);
        for (t, &i) in times.chunks_exact(8).zip(indices) {
            let mut b = [0; 8];
            b.copy_from_slice(t);
            if usize::from(i) >= type_count {
                return None;
            }
            transitions.push((i64::from_be_bytes(b), i));
        }
        let mut types = Vec::with_capacity(type_count);
        for t in type_bytes.chunks_exact(6) {
            let offset = i32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            let from = abbrs.get(usize::from(t[5])..)?;
            let len = from.iter().position(|&b| b == 0).unwrap_or(from.len());
            types.push((offset, std::str::from_utf8(&from[..len]).ok()?));
        }
        let footer = if footer.is_empty() { None } else { Some(Posix::parse(footer)?) };
        (!types.is_empty()).then_some(Tzif { transitions, types, footer })
    }

    fn offset_info(&self, at: i64) -> (i32, &'static str) {
        let after = self.transitions.partition_point(|&(t, _)| t <= at);
        if after == self.transitions.len() {
            if let Some(footer) = &self.footer {
                return footer.offset_info(at);
            }
        }
        let index = match after {
            0 => 0,
            n => usize::from(self.transitions[n - 1].1),
        };
        self.types.get(index).copied().unwrap_or((0, "UTC"))
    }
}
