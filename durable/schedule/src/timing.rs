//! When a heartbeat is due: a fixed interval, optional active hours in the agent's time zone.
//!
//! Time is cut into slots of `interval` length aligned to the Unix epoch (so, for intervals that
//! divide a day, to UTC midnight: a 30-minute heartbeat has slots at :00 and :30 UTC). A trigger
//! anywhere in a slot maps to that slot's [`HeartbeatSlot`]; two triggers for the same slot
//! (overlapping cron events, a retried alarm) get the same id, so the caller claims it once.
//! Epoch alignment does not move with daylight-saving changes and needs no stored phase.
//!
//! Active hours are checked against the local wall clock at `now`, not at the slot start.

use serde::Serialize;

use crate::active_hours::ActiveHours;
use crate::civil::{MAX_SECOND, MIN_SECOND};
use crate::error::ScheduleError;
use crate::time_zone::{parse_time_zone, TimeZone, DEFAULT_TIME_ZONE};

/// Heartbeat interval when none is configured (seed 004: 30 minutes).
pub const DEFAULT_INTERVAL_MINUTES: u32 = 30;
/// Longest accepted interval: one week.
pub const MAX_INTERVAL_MINUTES: u32 = 7 * 24 * 60;

/// Heartbeat settings as stored (e.g. in agent config JSON); every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatSettings {
    /// Minutes between heartbeats; default [`DEFAULT_INTERVAL_MINUTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_minutes: Option<u32>,
    /// `HH:MM-HH:MM` in `timezone`; absent means always active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_hours: Option<String>,
    /// IANA time zone of the agent; default `UTC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

impl HeartbeatSettings {
    /// Validates the settings into a [`HeartbeatConfig`].
    pub fn resolve(&self) -> Result<HeartbeatConfig, ScheduleError> {
        HeartbeatConfig::new(
            self.interval_minutes.unwrap_or(DEFAULT_INTERVAL_MINUTES),
            self.active_hours.as_deref(),
            self.timezone.as_deref(),
        )
    }
}

/// Validated heartbeat timing.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatConfig {
    interval_minutes: u32,
    active_hours: Option<ActiveHours>,
    time_zone: TimeZone,
}

impl Default for HeartbeatConfig {
    /// Every 30 minutes, always active, UTC.
    fn default() -> Self {
        Self { interval_minutes: DEFAULT_INTERVAL_MINUTES, active_hours: None, time_zone: TimeZone::UTC }
    }
}

impl HeartbeatConfig {
    /// `interval_minutes` in 1..=[`MAX_INTERVAL_MINUTES`]; `active_hours` as `HH:MM-HH:MM`
    /// (blank means none); `time_zone` an IANA name (`None` or blank means UTC).
    pub fn new(
        interval_minutes: u32,
        active_hours: Option<&str>,
        time_zone: Option<&str>,
    ) -> Result<Self, ScheduleError> {
        if interval_minutes == 0 || interval_minutes > MAX_INTERVAL_MINUTES {
            return Err(ScheduleError::InvalidInterval { minutes: interval_minutes, max: MAX_INTERVAL_MINUTES });
        }
        let active_hours = match active_hours.map(str::trim) {
            None | Some("") => None,
            Some(s) => Some(ActiveHours::parse(s)?),
        };
        let time_zone = match time_zone.map(str::trim) {
            None | Some("") => parse_time_zone(DEFAULT_TIME_ZONE)?,
            Some(name) => parse_time_zone(name)?,
        };
        Ok(Self { interval_minutes, active_hours, time_zone })
    }

    /// Minutes between heartbeats.
    pub fn interval_minutes(&self) -> u32 {
        self.interval_minutes
    }

    /// Interval in milliseconds.
    pub fn interval_ms(&self) -> i64 {
        i64::from(self.interval_minutes) * 60_000
    }

    /// The active-hours window, if any.
    pub fn active_hours(&self) -> Option<ActiveHours> {
        self.active_hours
    }

    /// The agent's time zone.
    pub fn time_zone(&self) -> &TimeZone {
        &self.time_zone
    }

    /// Whether `now_ms` (Unix ms) falls inside the active hours in the agent's time zone.
    /// Always true without active hours; false for an instant outside years -9999..=9999.
    pub fn is_active_at(&self, now_ms: i64) -> bool {
        let Some(window) = self.active_hours else {
            return true;
        };
        if !(MIN_SECOND * 1000..=MAX_SECOND * 1000).contains(&now_ms) {
            return false;
        }
        let local = self.time_zone.to_civil(now_ms.div_euclid(1000));
        let minute = u16::from(local.hour) * 60 + u16::from(local.minute);
        window.contains_minute(minute)
    }

    /// The slot containing `now_ms`, or `None` if the arithmetic would overflow.
    pub fn slot_at(&self, now_ms: i64) -> Option<HeartbeatSlot> {
        let interval = self.interval_ms();
        let start_ms = now_ms.div_euclid(interval).checked_mul(interval)?;
        Some(HeartbeatSlot { start_ms })
    }
}

/// One heartbeat slot, named by its start (Unix ms, a multiple of the interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, hearth_json::Deserialize)]
pub struct HeartbeatSlot {
    /// Start of the slot, Unix ms.
    pub start_ms: i64,
}

impl HeartbeatSlot {
    /// Stable id for claiming the slot exactly once: `heartbeat:{start_ms}`.
    pub fn id(&self) -> String {
        format!("heartbeat:{}", self.start_ms)
    }
}

/// The slot to run now, if a heartbeat is due at `now_ms`.
///
/// Due when `now_ms` is inside the active hours and its slot starts after `last_run_slot`
/// (the start of the last slot that ran, `None` if none ever did). A slot missed entirely (the
/// Worker did not fire, or the window was closed) is not made up: the next trigger runs the
/// current slot only. Comparing slot starts, not ids, keeps this right when the interval
/// changes: a longer interval never re-runs a slot that began before the last run.
pub fn heartbeat_due(now_ms: i64, last_run_slot: Option<i64>, config: &HeartbeatConfig) -> Option<HeartbeatSlot> {
    if !config.is_active_at(now_ms) {
        return None;
    }
    let slot = config.slot_at(now_ms)?;
    match last_run_slot {
        Some(last) if slot.start_ms <= last => None,
        _ => Some(slot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix ms of a UTC civil time.
    fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> i64 {
        crate::civil::DateTime::new(crate::civil::Date::new(y.into(), mo as u8, d as u8).unwrap(), h as u8, mi as u8, 0)
            .unwrap()
            .seconds()
            * 1000
    }

    #[test]
    fn defaults() {
        let c = HeartbeatConfig::default();
        assert_eq!(c.interval_minutes(), 30);
        assert_eq!(HeartbeatSettings::default().resolve().unwrap(), c);
        let s: HeartbeatSettings =
            hearth_json::from_str(r#"{"intervalMinutes":15,"activeHours":"08:00-22:00","timezone":"Europe/Paris"}"#)
                .unwrap();
        let c = s.resolve().unwrap();
        assert_eq!(c.interval_minutes(), 15);
        assert_eq!(c.active_hours().unwrap().to_string(), "08:00-22:00");
    }

    #[test]
    fn rejects_bad_config() {
        assert_eq!(
            HeartbeatConfig::new(0, None, None),
            Err(ScheduleError::InvalidInterval { minutes: 0, max: MAX_INTERVAL_MINUTES })
        );
        assert!(HeartbeatConfig::new(MAX_INTERVAL_MINUTES + 1, None, None).is_err());
        assert!(HeartbeatConfig::new(30, Some("9 to 5"), None).is_err());
        assert!(HeartbeatConfig::new(30, None, Some("Nowhere/Land")).is_err());
        assert!(HeartbeatConfig::new(30, Some("  "), Some(" ")).is_ok());
    }

    #[test]
    fn slots_are_aligned_and_claimed_once() {
        let c = HeartbeatConfig::default();
        let t0 = utc(2026, 6, 1, 10, 0);
        let a = heartbeat_due(t0 + 60_000, None, &c).unwrap();
        let b = heartbeat_due(t0 + 29 * 60_000, None, &c).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.start_ms, t0);
        assert_eq!(a.id(), format!("heartbeat:{t0}"));
        // Already ran this slot.
        assert_eq!(heartbeat_due(t0 + 5 * 60_000, Some(t0), &c), None);
        // Next slot.
        let next = heartbeat_due(t0 + 30 * 60_000, Some(t0), &c).unwrap();
        assert_eq!(next.start_ms, t0 + 30 * 60_000);
        // Missed slots are not made up: hours later, one run for the current slot.
        let late = heartbeat_due(t0 + 5 * 3_600_000 + 7 * 60_000, Some(t0), &c).unwrap();
        assert_eq!(late.start_ms, t0 + 5 * 3_600_000);
    }

    #[test]
    fn interval_change_does_not_rerun() {
        let c60 = HeartbeatConfig::new(60, None, None).unwrap();
        let t0 = utc(2026, 6, 1, 10, 0);
        // Last run was the 10:30 slot of a 30-minute config; at 10:45 the 60-minute slot (10:00)
        // is older, so nothing runs until 11:00.
        assert_eq!(heartbeat_due(t0 + 45 * 60_000, Some(t0 + 30 * 60_000), &c60), None);
        assert!(heartbeat_due(t0 + 60 * 60_000, Some(t0 + 30 * 60_000), &c60).is_some());
    }

    #[test]
    fn active_hours_in_local_time() {
        // Paris is UTC+2 in June.
        let c = HeartbeatConfig::new(30, Some("09:00-17:00"), Some("Europe/Paris")).unwrap();
        assert!(heartbeat_due(utc(2026, 6, 1, 6, 59), None, &c).is_none()); // 08:59 local
        assert!(heartbeat_due(utc(2026, 6, 1, 7, 0), None, &c).is_some()); // 09:00 local
        assert!(heartbeat_due(utc(2026, 6, 1, 14, 59), None, &c).is_some()); // 16:59 local
        assert!(heartbeat_due(utc(2026, 6, 1, 15, 0), None, &c).is_none()); // 17:00 local
                                                                            // UTC+1 in January.
        assert!(heartbeat_due(utc(2026, 1, 15, 7, 59), None, &c).is_none());
        assert!(heartbeat_due(utc(2026, 1, 15, 8, 0), None, &c).is_some());
    }

    /// Active 30-minute slots of one UTC day range, as `(hour, minute)` in UTC.
    fn active_slots(c: &HeartbeatConfig, from: i64, to: i64) -> Vec<(i64, i64)> {
        (0..)
            .map(|i| from + i * 30 * 60_000)
            .take_while(|t| *t < to)
            .filter_map(|t| heartbeat_due(t, None, c).map(|s| s.start_ms))
            .map(|ms| ((ms / 3_600_000) % 24, (ms / 60_000) % 60))
            .collect()
    }

    #[test]
    fn active_hours_follow_paris_across_both_dst_changes() {
        // Clocks go forward on 29 March 2026 (02:00 -> 03:00) and back on 25 October 2026
        // (03:00 -> 02:00), both at 01:00 UTC.
        let day = HeartbeatConfig::new(30, Some("08:00-22:00"), Some("Europe/Paris")).unwrap();
        // Saturday 28 March, UTC+1: 07:00-21:00 UTC.
        assert!(!day.is_active_at(utc(2026, 3, 28, 6, 59)));
        assert!(day.is_active_at(utc(2026, 3, 28, 7, 0)));
        assert!(day.is_active_at(utc(2026, 3, 28, 20, 59)));
        assert!(!day.is_active_at(utc(2026, 3, 28, 21, 0)));
        // Sunday 29 March, the change day, already UTC+2 by 08:00: 06:00-20:00 UTC.
        assert!(!day.is_active_at(utc(2026, 3, 29, 5, 59)));
        assert!(day.is_active_at(utc(2026, 3, 29, 6, 0)));
        assert!(day.is_active_at(utc(2026, 3, 29, 19, 59)));
        assert!(!day.is_active_at(utc(2026, 3, 29, 20, 0)));
        // Saturday 24 October, UTC+2; Sunday 25 October, back to UTC+1.
        assert!(day.is_active_at(utc(2026, 10, 24, 6, 0)));
        assert!(!day.is_active_at(utc(2026, 10, 25, 6, 0)));
        assert!(day.is_active_at(utc(2026, 10, 25, 7, 0)));
        assert!(!day.is_active_at(utc(2026, 10, 25, 21, 0)));

        // A night window across the change: 01:00-04:00 local.
        let night = HeartbeatConfig::new(30, Some("01:00-04:00"), Some("Europe/Paris")).unwrap();
        // Spring: 02:00-03:00 does not exist, so two real hours (00:00-02:00 UTC).
        assert_eq!(
            active_slots(&night, utc(2026, 3, 28, 22, 0), utc(2026, 3, 29, 6, 0)),
            [(0, 0), (0, 30), (1, 0), (1, 30)]
        );
        // Autumn: 02:00-03:00 happens twice, so four real hours (23:00-03:00 UTC).
        assert_eq!(
            active_slots(&night, utc(2026, 10, 24, 22, 0), utc(2026, 10, 25, 6, 0)),
            [(23, 0), (23, 30), (0, 0), (0, 30), (1, 0), (1, 30), (2, 0), (2, 30)]
        );
        // A window opening inside the skipped hour still opens (at 03:00 local).
        let gap = HeartbeatConfig::new(30, Some("02:30-05:00"), Some("Europe/Paris")).unwrap();
        assert_eq!(
            active_slots(&gap, utc(2026, 3, 28, 22, 0), utc(2026, 3, 29, 6, 0)),
            [(1, 0), (1, 30), (2, 0), (2, 30)]
        );
    }

    #[test]
    fn active_hours_crossing_midnight() {
        // New York night owl: 22:00-02:00 local, UTC-4 in June.
        let c = HeartbeatConfig::new(30, Some("22:00-02:00"), Some("America/New_York")).unwrap();
        assert!(heartbeat_due(utc(2026, 6, 2, 1, 59), None, &c).is_none()); // 21:59
        assert!(heartbeat_due(utc(2026, 6, 2, 2, 0), None, &c).is_some()); // 22:00
        assert!(heartbeat_due(utc(2026, 6, 2, 4, 30), None, &c).is_some()); // 00:30
        assert!(heartbeat_due(utc(2026, 6, 2, 5, 59), None, &c).is_some()); // 01:59
        assert!(heartbeat_due(utc(2026, 6, 2, 6, 0), None, &c).is_none()); // 02:00
        assert!(heartbeat_due(utc(2026, 6, 2, 16, 0), None, &c).is_none()); // 12:00
    }

    #[test]
    fn extreme_timestamps_do_not_panic() {
        let c = HeartbeatConfig::new(MAX_INTERVAL_MINUTES, Some("09:00-17:00"), None).unwrap();
        for t in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX] {
            let _ = heartbeat_due(t, None, &c);
            let _ = heartbeat_due(t, Some(i64::MAX), &HeartbeatConfig::default());
            let _ = HeartbeatConfig::default().slot_at(t);
        }
    }
}
