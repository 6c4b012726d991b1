//! IANA time zone lookup against jiff's bundled database (the same data natively and in WASM).

use jiff::tz::TimeZone;

use crate::error::ScheduleError;

/// The zone used when none is configured.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Looks up an IANA time zone name (`"Europe/Paris"`, `"UTC"`). Surrounding whitespace is
/// ignored; an empty name is an error (callers decide the default, see [`DEFAULT_TIME_ZONE`]).
pub fn parse_time_zone(name: &str) -> Result<TimeZone, ScheduleError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ScheduleError::UnknownTimeZone(String::new()));
    }
    TimeZone::get(name).map_err(|_| ScheduleError::UnknownTimeZone(name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_zones() {
        assert!(parse_time_zone("Europe/Paris").is_ok());
        assert!(parse_time_zone(" America/New_York ").is_ok());
        assert!(parse_time_zone("UTC").is_ok());
        assert!(parse_time_zone("Mars/Olympus").is_err());
        assert!(parse_time_zone("").is_err());
        assert!(parse_time_zone("../../etc/passwd").is_err());
    }
}
