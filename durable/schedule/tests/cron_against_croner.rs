//! Our cron reader and search (src/cron_expr.rs) against croner 4, which they replaced:
//! thousands of generated expressions, valid and invalid (accepted or refused alike; the texts
//! of errors differ), and for the valid ones the next and previous occurrences from many
//! instants around the daylight-saving changes of zones with 1 h and 30 min changes.

mod common;

use croner::parser::{CronParser, Seconds, Year};
use hearth_schedule::cron_jobs::{parse_cron_expr, JobErrorKind};
use hearth_schedule::time_zone::parse_time_zone;
use jiff::Timestamp;

/// What croner made of an expression, as `parse_cron_expr` decided before this change.
fn croner_kind(expr: &str) -> Result<croner::Cron, &'static str> {
    let expr = expr.trim();
    if expr.is_empty() {
        return Err("missing");
    }
    if !expr.starts_with('@') && expr.split_whitespace().count() != 5 {
        return Err("invalid");
    }
    let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
    let cron = parser.parse(expr).map_err(|_| "invalid")?;
    let probe = Timestamp::from_second(1_767_225_600).unwrap().to_zoned(jiff::tz::TimeZone::UTC);
    if cron.find_next_occurrence(&probe, false).is_err() {
        return Err("never");
    }
    Ok(cron)
}

fn our_kind(expr: &str) -> Result<hearth_schedule::cron_expr::CronExpr, &'static str> {
    parse_cron_expr(expr).map_err(|e| match e {
        JobErrorKind::MissingField(_) => "missing",
        JobErrorKind::NeverFires(_) => "never",
        _ => "invalid",
    })
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One item of a field whose values run `lo..=hi`, sometimes out of range or malformed.
fn item(rng: &mut Rng, lo: u64, hi: u64, extra: &[&str]) -> String {
    let n = |rng: &mut Rng| if rng.below(12) == 0 { rng.below(hi + 3) } else { lo + rng.below(hi - lo + 1) };
    match rng.below(14) {
        0 => "*".to_string(),
        1 => format!("*/{}", rng.below(hi + 2)),
        2 | 3 => {
            let a = n(rng);
            format!("{a}-{}", a + rng.below(6))
        }
        4 => {
            let a = n(rng);
            format!("{a}-{}/{}", a + rng.below(20), 1 + rng.below(7))
        }
        5 if !extra.is_empty() => rng.pick(extra).to_string(),
        6 => format!("{}/{}", n(rng), 1 + rng.below(5)),
        7 => rng.pick(&["", "?", "L", "-1", "1-", "a", "1,,2", ",", "01", "1#2", "W", "LW", "+1"]).to_string(),
        _ => n(rng).to_string(),
    }
}

fn field(rng: &mut Rng, lo: u64, hi: u64, extra: &[&str]) -> String {
    let count = if rng.below(4) == 0 { 1 + rng.below(3) } else { 1 };
    (0..count).map(|_| item(rng, lo, hi, extra)).collect::<Vec<_>>().join(",")
}

const DOM: &[&str] = &["L", "LW", "15W", "1W", "31W", "?", "L-1", "5L", "30W", "1W5", "28-L"];
const MONTHS: &[&str] = &["JAN", "feb", "MAR-OCT", "DEC", "NOV-JAN", "JUN", "Sep/2", "*/3"];
const DOW: &[&str] = &[
    "MON", "mon-fri", "SUN", "SAT-SUN", "FRI-SUN", "5L", "1#1", "5#5", "0#6", "7", "?", "L", "+1", "+MON-FRI", "2#3",
    "7L", "TUEL", "1-5#2", "*/2#3", "+*", "1#L", "sunday",
];

fn expression(rng: &mut Rng) -> String {
    if rng.below(20) == 0 {
        return rng
            .pick(&[
                "@yearly",
                "@annually",
                "@monthly",
                "@weekly",
                "@daily",
                "@hourly",
                "@HOURLY",
                "@never",
                "@",
                " @daily ",
            ])
            .to_string();
    }
    // Hours and minutes near the changes of offset more often than not.
    let minute = if rng.below(2) == 0 {
        rng.pick(&["0", "15", "30", "45", "*/15", "*/30", "*", "59", "0,30"]).to_string()
    } else {
        field(rng, 0, 59, &[])
    };
    let hour = if rng.below(2) == 0 {
        rng.pick(&["0", "1", "2", "3", "1-3", "*", "2,3", "*/2", "23"]).to_string()
    } else {
        field(rng, 0, 23, &[])
    };
    let mut parts = vec![minute, hour, field(rng, 1, 31, DOM), field(rng, 1, 12, MONTHS), field(rng, 0, 7, DOW)];
    for part in parts.iter_mut().skip(2) {
        if rng.below(3) == 0 {
            *part = "*".to_string();
        }
    }
    match rng.below(40) {
        0 => parts.truncate(4),
        1 => parts.push("*".to_string()),
        _ => {}
    }
    parts.join(" ")
}

/// Starts: around every change of offset in 2025–2027 and at random instants 2000–2040.
fn starts(zone: &str, rng: &mut Rng) -> Vec<i64> {
    let tz = parse_time_zone(zone).unwrap();
    let mut out = Vec::new();
    let mut t = 1_735_689_600; // 2025-01-01
    while t < 1_830_297_600 {
        if tz.offset(t) != tz.offset(t + 3600) {
            for k in -8..12 {
                out.push(t + k * 900 + [0, 1, 59, 60, 1799][rng.below(5) as usize]);
            }
        }
        t += 3600;
    }
    for _ in 0..8 {
        out.push(946_684_800 + rng.below(1_262_304_000) as i64);
    }
    out
}

#[test]
fn same_acceptance_and_occurrences_as_croner() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let zones = ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "UTC"];
    let (mut valid, mut compared) = (0, 0);
    for round in 0..4000 {
        let expr = expression(&mut rng);
        let (theirs, ours) = (croner_kind(&expr), our_kind(&expr));
        assert_eq!(theirs.as_ref().err(), ours.as_ref().err(), "acceptance of {expr:?}");
        let (Ok(cron), Ok(mine)) = (theirs, ours) else { continue };
        valid += 1;
        let zone = zones[round % zones.len()];
        let (jz, tz) = (common::jiff_time_zone(zone).unwrap(), parse_time_zone(zone).unwrap());
        let mut instants = starts(zone, &mut rng);
        if round % 8 != 0 {
            instants.retain(|_| rng.below(6) == 0);
        }
        for start in instants {
            let z = Timestamp::from_second(start).unwrap().to_zoned(jz.clone());
            let next = cron.find_next_occurrence(&z, false).ok().map(|t| t.timestamp().as_second());
            assert_eq!(mine.next_after(start, false, &tz), next, "next of {expr:?} in {zone} after {start}");
            let prev = cron.find_previous_occurrence(&z, true).ok().map(|t| t.timestamp().as_second());
            assert_eq!(mine.previous_before(start, true, &tz), prev, "previous of {expr:?} in {zone} from {start}");
            compared += 2;
        }
    }
    assert!(valid > 800 && compared > 20_000, "{valid} valid expressions, {compared} occurrences");
    eprintln!("{valid} valid of 4000 expressions, {compared} occurrences compared");
}
