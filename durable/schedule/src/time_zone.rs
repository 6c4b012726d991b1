//! IANA time zone lookup, the same natively and in WASM.
//!
//! Zones come from [`crate::zones`], a table generated from the tz database
//! (`examples/gen_zones.rs`): for almost every zone its POSIX TZ rule, which
//! gives the right offsets for now and the years ahead, the only times Hearth
//! computes; a few zones whose rules a POSIX string cannot express keep their
//! whole TZif data. This saves the Worker jiff's bundled database (~480 kB of
//! WASM) while `tests/zones.rs` checks every zone against it.

use crate::error::ScheduleError;
pub use crate::tz::{Local, TimeZone};
use crate::zones::ZoneData;

/// The zone used when none is configured.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Every IANA name the table knows (for tests and tools).
pub fn zone_names() -> impl Iterator<Item = &'static str> {
    crate::zones::ZONES.iter().map(|(name, _)| *name)
}

/// Looks up an IANA time zone name (`"Europe/Paris"`, `"UTC"`), ignoring ASCII
/// case and surrounding whitespace as the tz database does. An empty name is an
/// error (callers decide the default, see [`DEFAULT_TIME_ZONE`]).
pub fn parse_time_zone(name: &str) -> Result<TimeZone, ScheduleError> {
    let name = name.trim();
    let unknown = || ScheduleError::UnknownTimeZone(name.to_string());
    if name.is_empty() {
        return Err(unknown());
    }
    let (_, data) = lookup(name).ok_or_else(unknown)?;
    match data {
        ZoneData::Rule("UTC0") => Some(TimeZone::UTC),
        ZoneData::Rule(rule) => TimeZone::posix(rule),
        ZoneData::Tzif(bytes) => TimeZone::tzif(bytes),
    }
    .ok_or_else(unknown)
}

/// The table's entry for `name` (already trimmed), ignoring ASCII case.
fn lookup(name: &str) -> Option<(&'static str, ZoneData)> {
    let table = crate::zones::ZONES;
    let at = table
        .binary_search_by(|(known, _)| {
            known.bytes().map(|b| b.to_ascii_lowercase()).cmp(name.bytes().map(|b| b.to_ascii_lowercase()))
        })
        .ok()?;
    table.get(at).copied()
}

/// Where a zone of the table comes from, for tests that build jiff's zone from the same data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneSource {
    /// A POSIX TZ rule (`UTC0` for UTC).
    Rule(&'static str),
    /// A TZif file and the zone's name as the table spells it.
    Tzif(&'static str, &'static [u8]),
}

/// The table's data for `name` (trimmed, ASCII case ignored).
pub fn zone_source(name: &str) -> Option<ZoneSource> {
    Some(match lookup(name.trim())? {
        (_, ZoneData::Rule(rule)) => ZoneSource::Rule(rule),
        (known, ZoneData::Tzif(bytes)) => ZoneSource::Tzif(known, bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_zones() {
        assert!(parse_time_zone("Europe/Paris").is_ok());
        assert!(parse_time_zone(" America/New_York ").is_ok());
        assert!(parse_time_zone("america/new_york").is_ok());
        assert!(parse_time_zone("UTC").is_ok());
        assert!(parse_time_zone("Mars/Olympus").is_err());
        assert!(parse_time_zone("").is_err());
        assert!(parse_time_zone("../../etc/passwd").is_err());
    }
}
