//! The `Date:` header (RFC 5322 §3.3, with the obsolete forms of §4.3) as
//! seconds since the epoch.
//!
//! Our own reader rather than jiff's RFC 2822 parser: the Worker links nothing
//! else of jiff's formatting code, and that parser cost ~5 KiB of the gzipped
//! upload (issue 23 item 2). It accepts exactly what jiff's parser accepts with
//! `relaxed_weekday(true)` and gives the same instant: `tests/date.rs` compares
//! the two on the email corpus and on many generated and broken dates.
//!
//! Accepted: `[Wkd ,] D[D] Mon YY[YY] HH : MM [: SS] zone [(comment)]`, where
//! the zone is `±HHMM` or an obsolete name (UT, GMT, Z, the US zones, a military
//! letter or any other run of three or more letters, the last two read as UTC).
//! Two-digit years up to 49 are 20xx, other two- and three-digit years 19xx; a
//! leap second (`:60`) reads as `:59`. A weekday that does not match the date is
//! forgiven (mailers get it wrong), but it must be a weekday.

/// Seconds since the epoch, or `None` when `value` is not such a date.
pub fn parse(value: &str) -> Option<i64> {
    let mut r = Reader { s: value.as_bytes() };
    r.skip_ws();
    if r.s.is_empty() {
        return None;
    }
    r.weekday()?;
    let day = r.day()?;
    let month = r.month()?;
    let year = r.year()?;
    let hour = r.digits2(23)?;
    r.skip_ws();
    r.byte(b':')?;
    r.skip_ws();
    let minute = r.digits2(59)?;
    let had_ws = r.skip_ws();
    let second = if r.s.first() == Some(&b':') {
        r.s = &r.s[1..];
        r.skip_ws();
        let s = r.digits2(60)?.min(59);
        r.need_ws()?;
        s
    } else if had_ws {
        0
    } else {
        return None;
    };
    if day > days_in_month(year, month) {
        return None;
    }
    let offset = r.offset()?;
    r.skip_ws();
    r.comment()?;
    if !r.s.is_empty() {
        return None;
    }
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
    let at = local - offset;
    // The years read are 0 to 9999, so only the end of jiff's range (`Timestamp::MAX`)
    // can be passed: a date past it is refused, as jiff does.
    (at <= MAX_SECOND).then_some(at)
}

/// 9999-12-30T22:00:00Z, jiff's last instant.
const MAX_SECOND: i64 = 253_402_207_200;

struct Reader<'a> {
    s: &'a [u8],
}

impl Reader<'_> {
    /// Skips spaces and tabs (any ASCII whitespace); true if there were some.
    fn skip_ws(&mut self) -> bool {
        let n = self.s.iter().take_while(|b| b.is_ascii_whitespace()).count();
        self.s = &self.s[n..];
        n > 0
    }

    fn need_ws(&mut self) -> Option<()> {
        self.skip_ws().then_some(())
    }

    fn byte(&mut self, b: u8) -> Option<()> {
        let (&first, rest) = self.s.split_first()?;
        (first == b).then(|| self.s = rest)
    }

    /// `Mon ,` (checked to be a weekday, not against the date), or nothing before a digit.
    fn weekday(&mut self) -> Option<()> {
        if self.s[0].is_ascii_digit() {
            return Some(());
        }
        if self.s.len() < 4 {
            return None;
        }
        let name = lower3(self.s);
        if !WEEKDAYS.contains(&name) {
            return None;
        }
        self.s = &self.s[3..];
        self.skip_ws();
        self.byte(b',')?;
        self.skip_ws();
        Some(())
    }

    /// One digit, or two when the second is a digit; then whitespace.
    fn day(&mut self) -> Option<i64> {
        let n = if self.s.len() >= 2 && self.s[1].is_ascii_digit() { 2 } else { 1 };
        let day = number(self.s.get(..n)?)?;
        self.s = &self.s[n..];
        self.need_ws()?;
        (1..=31).contains(&day).then_some(day)
    }

    fn month(&mut self) -> Option<i64> {
        if self.s.len() < 3 {
            return None;
        }
        let name = lower3(self.s);
        let month = MONTHS.iter().position(|m| *m == name)? as i64 + 1;
        self.s = &self.s[3..];
        self.need_ws()?;
        Some(month)
    }

    /// Two to four digits (the obsolete two- and three-digit forms widened), then whitespace.
    fn year(&mut self) -> Option<i64> {
        let n = self.s.iter().take(4).take_while(|b| b.is_ascii_digit()).count();
        if n < 2 {
            return None;
        }
        let year = number(&self.s[..n])?;
        self.s = &self.s[n..];
        self.need_ws()?;
        Some(match n {
            2 if year <= 49 => year + 2000,
            2 | 3 => year + 1900,
            _ => year,
        })
    }

    /// Exactly two digits, at most `max`.
    fn digits2(&mut self, max: i64) -> Option<i64> {
        let v = number(self.s.get(..2)?)?;
        self.s = &self.s[2..];
        (v <= max).then_some(v)
    }

    /// Seconds east of UTC.
    fn offset(&mut self) -> Option<i64> {
        let sign = match self.s.first()? {
            b'+' => 1,
            b'-' => -1,
            _ => return self.obsolete_zone(),
        };
        self.s = &self.s[1..];
        let hours = self.digits2(25)?;
        let minutes = self.digits2(59)?;
        Some(sign * (hours * 3_600 + minutes * 60))
    }

    /// Up to five non-space bytes naming a zone (RFC 5322 §4.3).
    fn obsolete_zone(&mut self) -> Option<i64> {
        let n = self.s.iter().take(5).take_while(|b| !b.is_ascii_whitespace()).count();
        let name = self.s[..n].to_ascii_lowercase();
        self.s = &self.s[n..];
        let hours = match name.as_slice() {
            b"ut" | b"gmt" | b"z" => 0,
            b"est" | b"cdt" => -5,
            b"edt" => -4,
            b"cst" | b"mdt" => -6,
            b"mst" | b"pdt" => -7,
            b"pst" => -8,
            [b'a'..=b'i' | b'k'..=b'z'] => 0,
            letters if letters.len() >= 3 && letters.iter().all(u8::is_ascii_lowercase) => 0,
            _ => return None,
        };
        Some(hours * 3_600)
    }

    /// A trailing `(comment)`, nested and with `\` escapes, then whitespace.
    fn comment(&mut self) -> Option<()> {
        if self.s.first() != Some(&b'(') {
            return Some(());
        }
        let mut depth = 0u8;
        let mut escape = false;
        let mut end = None;
        for (i, &b) in self.s.iter().enumerate() {
            if escape {
                escape = false;
            } else if b == b'\\' {
                escape = true;
            } else if b == b'(' {
                depth = depth.checked_add(1)?;
            } else if b == b')' {
                depth -= 1;
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
        }
        self.s = &self.s[end? + 1..];
        self.skip_ws();
        Some(())
    }
}

const WEEKDAYS: [[u8; 3]; 7] = [*b"sun", *b"mon", *b"tue", *b"wed", *b"thu", *b"fri", *b"sat"];
const MONTHS: [[u8; 3]; 12] =
    [*b"jan", *b"feb", *b"mar", *b"apr", *b"may", *b"jun", *b"jul", *b"aug", *b"sep", *b"oct", *b"nov", *b"dec"];

fn lower3(s: &[u8]) -> [u8; 3] {
    [s[0].to_ascii_lowercase(), s[1].to_ascii_lowercase(), s[2].to_ascii_lowercase()]
}

/// ASCII digits only (at most four here, so no overflow).
fn number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0i64, |n, &b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
