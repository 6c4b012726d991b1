//! Our `Date:` reader (`date.rs`) against the one it replaced, jiff's RFC 2822
//! parser with `relaxed_weekday(true)`: the same dates accepted, the same
//! instant for each, on every `Date:` header of the email corpus
//! (`tests/fixtures/real-world/email/corpus/`) and on many generated dates,
//! well-formed, obsolete and broken.

use super::super::date;

fn jiff(s: &str) -> Option<i64> {
    jiff::fmt::rfc2822::DateTimeParser::new().relaxed_weekday(true).parse_timestamp(s).ok().map(|t| t.as_second())
}

fn same(s: &str) {
    assert_eq!(date::parse(s), jiff(s), "{s:?}");
}

/// The `Date:` header values of the corpus messages, unfolded.
fn corpus_dates() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/email/corpus");
    let mut out = Vec::new();
    for folder in ["legacy", "malformed", "rfc", "thirdparty"] {
        for entry in std::fs::read_dir(dir.join(folder)).unwrap() {
            let raw = String::from_utf8_lossy(&std::fs::read(entry.unwrap().path()).unwrap()).into_owned();
            let lines: Vec<&str> = raw.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.get(..5).is_some_and(|h| h.eq_ignore_ascii_case("date:")) {
                    let mut value = line[5..].to_string();
                    for more in lines[i + 1..].iter().take_while(|l| l.starts_with([' ', '\t'])) {
                        value.push(' ');
                        value.push_str(more);
                    }
                    out.push(value);
                }
            }
        }
    }
    out
}

#[test]
fn the_corpus_dates_read_as_jiff_read_them() {
    let dates = corpus_dates();
    assert!(dates.len() > 80, "{} Date: headers found", dates.len());
    let mut read = 0;
    for d in &dates {
        same(d);
        same(d.trim());
        read += usize::from(date::parse(d.trim()).is_some());
    }
    assert!(read > 60, "only {read} of {} corpus dates read", dates.len());
}

#[test]
fn known_dates_give_the_instant_of_the_header() {
    // RFC 5322 Appendix A.1.1 and A.5, and the obsolete forms of A.6.
    assert_eq!(date::parse("Fri, 21 Nov 1997 09:55:06 -0600"), Some(880_127_706));
    assert_eq!(
        date::parse(
            "Thu,\n      13\n        Feb\n          1969\n      23:32\n               -0330 (Newfoundland Time)"
        ),
        Some(-27_723_480)
    );
    assert_eq!(date::parse("21 Nov 97 09:55:06 GMT"), Some(880_106_106));
    assert_eq!(date::parse("Fri, 21 Nov 1997 09:55:06 PST"), date::parse("Fri, 21 Nov 1997 09:55:06 -0800"));
    // A wrong weekday is forgiven; a month day that does not exist is not.
    assert_eq!(date::parse("Mon, 21 Nov 1997 09:55:06 -0600"), Some(880_127_706));
    assert_eq!(date::parse("Fri, 31 Nov 1997 09:55:06 -0600"), None);
    assert_eq!(date::parse("21 Nov 1997"), None);
    assert_eq!(date::parse(""), None);
}

/// xorshift64*: a fixed sequence, so a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
    fn chance(&mut self, in_hundred: u64) -> bool {
        self.below(100) < in_hundred
    }
    fn ws(&mut self) -> &'static str {
        self.pick(&[" ", " ", " ", "  ", "\t", " \r\n ", ""])
    }
    fn case(&mut self, s: &str) -> String {
        s.chars().map(|c| if self.chance(30) { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() }).collect()
    }
    fn digits(&mut self, n: usize, max_first: u64) -> String {
        (0..n).map(|i| char::from(b'0' + self.below(if i == 0 { max_first + 1 } else { 10 }) as u8)).collect()
    }
}

/// A date that is usually well-formed, with each part sometimes odd or broken.
fn generated(r: &mut Rng) -> String {
    let mut s = String::new();
    if r.chance(10) {
        s += r.ws();
    }
    if r.chance(60) {
        let wd = r.pick(&["mon", "tue", "wed", "thu", "fri", "sat", "sun", "xyz", "mo", "thursday"]);
        s += &r.case(wd);
        s += r.pick(&["", "", " ", "  "]);
        s += r.pick(&[",", ",", ",", ";", ""]);
        s += r.ws();
    }
    let day = match r.below(10) {
        0 => r.digits(2, 9),
        1 => r.pick(&["0", "00", "x", "", "1a"]).to_string(),
        _ => (1 + r.below(31)).to_string(),
    };
    s += &day;
    s += r.ws();
    let month = r.pick(&[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "foo", "ja", "sept",
    ]);
    s += &r.case(month);
    s += r.ws();
    s += &match r.below(10) {
        0 => r.digits(2, 9),
        1 => r.digits(3, 9),
        2 => {
            let n = 1 + r.below(5) as usize;
            r.digits(n, 9)
        }
        3 => r.pick(&["9999", "0000", "1969", "1900", "2000"]).to_string(),
        _ => (1900 + r.below(200)).to_string(),
    };
    s += r.ws();
    s += &if r.chance(90) {
        format!("{:02}", r.below(24))
    } else {
        {
            let n = 1 + r.below(3) as usize;
            r.digits(n, 9)
        }
    };
    s += r.pick(&["", "", "", " "]);
    s += r.pick(&[":", ":", ":", ":", ".", ""]);
    s += r.pick(&["", "", "", " "]);
    s += &if r.chance(90) {
        format!("{:02}", r.below(60))
    } else {
        {
            let n = 1 + r.below(3) as usize;
            r.digits(n, 9)
        }
    };
    if r.chance(70) {
        s += r.pick(&["", "", "", " "]);
        s += ":";
        s += r.pick(&["", "", "", " "]);
        s += &if r.chance(90) {
            format!("{:02}", r.below(61))
        } else {
            {
                let n = 1 + r.below(3) as usize;
                r.digits(n, 9)
            }
        };
    }
    s += r.ws();
    s += &match r.below(10) {
        0..=4 => format!("{}{}{}", r.pick(&["+", "-"]), r.digits(2, 2), r.digits(2, 6)),
        5 => {
            let n = r.below(6) as usize;
            format!("{}{}", r.pick(&["+", "-", ""]), r.digits(n, 9))
        }
        6 | 7 => {
            let z =
                r.pick(&["ut", "gmt", "z", "est", "edt", "cst", "cdt", "mst", "mdt", "pst", "pdt", "a", "j", "m", "y"]);
            r.case(z)
        }
        _ => {
            let z = r.pick(&["cet", "cest", "bst", "ist", "ab", "utc", "europe", "gmt+1", "+01:00", "(utc)", "é"]);
            r.case(z)
        }
    };
    match r.below(10) {
        0..=4 => {}
        5 => s += r.ws(),
        6 | 7 => {
            s += r.ws();
            s +=
                r.pick(&["(UTC)", "(Pacific (Standard) Time)", "(a \\) b)", "(unclosed", "((x)", "(x))", "()", "( ) "]);
        }
        _ => {
            s += r.ws();
            s += r.pick(&["x", "-0000", "(c) x", "0"]);
        }
    }
    s
}

#[test]
fn generated_dates_read_as_jiff_read_them() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut read = 0;
    for _ in 0..200_000 {
        let s = generated(&mut r);
        same(&s);
        read += usize::from(date::parse(&s).is_some());
        // Every cut prefix and a byte changed: the broken forms agree too.
        let cut = r.below(s.len() as u64 + 1) as usize;
        if s.is_char_boundary(cut) {
            same(&s[..cut]);
        }
        let mut bytes = s.clone().into_bytes();
        if !bytes.is_empty() {
            let at = r.below(bytes.len() as u64) as usize;
            bytes[at] = b" 0912:+-(),aZzx\\"[r.below(16) as usize];
            if let Ok(changed) = String::from_utf8(bytes) {
                same(&changed);
            }
        }
    }
    // Enough of them are dates jiff accepts (one part in twenty), so instants are compared too.
    assert!(read > 5_000, "only {read} generated dates were read");
}

#[test]
fn every_day_of_the_range_reads_as_jiff_reads_it() {
    // Each day of 1900..=2100 and the last years jiff can hold, with offsets at both ends.
    for year in (1900..=2100).chain(9990..=9999) {
        for month in ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] {
            for day in [1, 15, 28, 29, 30, 31] {
                for zone in ["+0000", "-2559", "+2559", "-0001"] {
                    same(&format!("{day} {month} {year} 23:59:60 {zone}"));
                }
            }
        }
    }
    assert_eq!(jiff::Timestamp::MAX.as_second(), 253_402_207_200);
}
