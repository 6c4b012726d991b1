//! Our civil time and zones (src/civil.rs, src/tz.rs) against jiff's, which they replaced in
//! the Worker: every zone of the table, offsets and abbreviations over 2000–2060 (every
//! transition and the seconds around it, plus a probe every ~9 days), and the reading of wall
//! clocks around every transition (single, fold, gap; jiff's "compatible" instant).

use hearth_schedule::civil::{Date, DateTime, MAX_SECOND, MIN_SECOND};
mod common;

use common::jiff_time_zone;
use hearth_schedule::time_zone::{parse_time_zone, zone_names, Local};
use jiff::tz::AmbiguousOffset;
use jiff::{civil, Timestamp};

fn jiff_civil(local: i64) -> civil::DateTime {
    Timestamp::from_second(local).unwrap().to_zoned(jiff::tz::TimeZone::UTC).datetime()
}

#[test]
fn every_zone_matches_jiff_from_2000_to_2060() {
    let (from, to) = (946_684_800, 2_871_763_200); // 2000-01-01, 2061-01-01
    let mut checked = 0;
    for name in zone_names() {
        let ours = parse_time_zone(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let theirs = jiff_time_zone(name).unwrap();
        let mut probes: Vec<i64> = (from..to).step_by(800_000).collect();
        for t in theirs.following(Timestamp::from_second(from).unwrap()) {
            let t = t.timestamp().as_second();
            if t >= to {
                break;
            }
            probes.extend([t - 3601, t - 1, t, t + 1, t + 3600]);
        }
        for at in probes {
            let ts = Timestamp::from_second(at).unwrap();
            let info = theirs.to_offset_info(ts);
            assert_eq!(ours.offset_info(at), (info.offset().seconds(), info.abbreviation()), "{name} at {at}");
            let z = ts.to_zoned(theirs.clone());
            let dt = ours.to_civil(at);
            let want = (z.year() as i32, z.month() as u8, z.day() as u8, z.hour() as u8, z.minute() as u8);
            assert_eq!((dt.date.year, dt.date.month, dt.date.day, dt.hour, dt.minute), want, "{name} at {at}");
            assert_eq!(dt.date.weekday(), z.weekday().to_monday_zero_offset() as u8);
            // Wall clocks near the instant, read back.
            for local in [dt.seconds(), dt.seconds() - 1800, dt.seconds() + 1800, dt.seconds() + 3599] {
                let amb = theirs.to_ambiguous_timestamp(jiff_civil(local));
                let want = match amb.offset() {
                    AmbiguousOffset::Unambiguous { offset } => Local::Single(offset.seconds()),
                    AmbiguousOffset::Fold { before, after } => {
                        Local::Fold { before: before.seconds(), after: after.seconds() }
                    }
                    AmbiguousOffset::Gap { before, after } => {
                        Local::Gap { before: before.seconds(), after: after.seconds() }
                    }
                };
                assert_eq!(ours.to_ambiguous(local), want, "{name} local {local}");
                assert_eq!(ours.compatible(local), amb.compatible().unwrap().as_second(), "{name} {local}");
                checked += 1;
            }
        }
    }
    assert!(checked > 100_000, "only {checked}");
}

#[test]
fn dates_match_jiff() {
    for days in (-3_652_059..=2_932_896).step_by(37) {
        let d = Date::from_days(days);
        let j = civil::Date::new(d.year as i16, d.month as i8, d.day as i8).unwrap();
        assert_eq!(j.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp().as_second() / 86_400, days);
        assert_eq!(d.weekday(), j.weekday().to_monday_zero_offset() as u8);
        for n in [-13, -1, 1, 12, 25] {
            let ours = d.add_months(n).map(|d| (d.year, d.month, d.day));
            let theirs = j.checked_add(jiff::Span::new().months(n)).ok();
            assert_eq!(ours, theirs.map(|t| (t.year() as i32, t.month() as u8, t.day() as u8)), "{d:?} + {n}");
        }
    }
    for (y, m, d) in [(2026, 2, 29), (2024, 2, 29), (2026, 4, 31), (2026, 13, 1), (10_000, 1, 1), (-9999, 1, 1)] {
        assert_eq!(Date::new(y, m, d).is_some(), civil::Date::new(y as i16, m as i8, d as i8).is_ok(), "{y}-{m}-{d}");
    }
    assert!(Timestamp::from_second(MIN_SECOND).is_ok() && Timestamp::from_second(MIN_SECOND - 1).is_err());
    assert!(Timestamp::from_second(MAX_SECOND).is_ok() && Timestamp::from_second(MAX_SECOND + 1).is_err());
    assert_eq!(DateTime::from_seconds(0).seconds(), 0);
}
