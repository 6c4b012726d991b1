//! jiff's zone built from the same table entry as ours (tests only).

use hearth_schedule::time_zone::{zone_source, ZoneSource};

pub fn jiff_time_zone(name: &str) -> Option<jiff::tz::TimeZone> {
    match zone_source(name)? {
        ZoneSource::Rule("UTC0") => Some(jiff::tz::TimeZone::UTC),
        ZoneSource::Rule(rule) => jiff::tz::TimeZone::posix(rule).ok(),
        ZoneSource::Tzif(known, bytes) => jiff::tz::TimeZone::tzif(known, bytes).ok(),
    }
}
