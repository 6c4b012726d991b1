//! Errors of this crate. Each is a value to log or show on the admin API, never a panic.

use thiserror::Error;

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    /// Active hours not of the form `HH:MM-HH:MM`, or start equal to end.
    #[error("invalid active hours {0:?}: expected HH:MM-HH:MM (24-hour clock, start != end)")]
    InvalidActiveHours(String),
    /// Not an IANA time zone name known to the bundled database.
    #[error("unknown time zone {0:?}: expected an IANA name such as \"Europe/Paris\"")]
    UnknownTimeZone(String),
    /// Heartbeat interval outside the accepted range.
    #[error("invalid heartbeat interval {minutes} minutes: expected 1 to {max}")]
    InvalidInterval {
        /// The interval given.
        minutes: u32,
        /// The longest accepted.
        max: u32,
    },
    /// `cron.json` as a whole is unreadable (not JSON, or not an array). Single bad jobs are
    /// [`crate::cron_jobs::JobError`]s instead.
    #[error("cron.json is not a JSON array of jobs: {0}")]
    InvalidCronFile(String),
}
