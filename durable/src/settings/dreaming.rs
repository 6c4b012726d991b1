//! Settings of dreaming (the nightly memory sweep) and of the workspace
//! history. Each is per agent as `{NAME}__{AGENT}`; an invalid value is a
//! [`ConfigError`] naming it.

use super::read::{on_off, parse_hhmm, setting, switch, ConfigError, Vars};
use hearth_memory::promote::Thresholds;

/// Changes kept per workspace file unless `HISTORY_KEEP_VERSIONS` says otherwise.
pub const DEFAULT_KEEP: usize = 50;
/// Most changes kept per file (a setting above is refused).
pub const MAX_KEEP: usize = 1000;

/// `HISTORY_KEEP_VERSIONS`: changes kept per workspace file (default 50,
/// 1 to 1000).
pub fn history_keep(vars: &impl Vars, agent: &str) -> Result<usize, ConfigError> {
    match setting(vars, agent, "HISTORY_KEEP_VERSIONS") {
        None => Ok(DEFAULT_KEEP),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_KEEP).contains(&n) => Ok(n),
            _ => Err(ConfigError::Invalid {
                name: "HISTORY_KEEP_VERSIONS".into(),
                why: format!("{v:?} is not a number from 1 to {MAX_KEEP}"),
            }),
        },
    }
}

/// The sweep's defaults (see README's configuration table).
pub const DEFAULT_GATES: Thresholds =
    Thresholds { min_score: 0.3, min_hits: 3, min_queries: 2, min_days: 2, max_candidates: 10 };
/// `DREAM_AT` unless set: 03:00 local.
pub const DEFAULT_DREAM_AT: (i8, i8) = (3, 0);
/// How long a proposal waits for the owner's answer unless `DREAM_APPROVAL_HOURS` says.
pub const DEFAULT_APPROVAL_HOURS: u32 = 24;

#[derive(Debug, Clone, PartialEq)]
pub struct DreamConfig {
    /// `DREAMING` (`on` by default; `off` stops the sweep, evidence is still kept).
    pub enabled: bool,
    /// `DREAM_AT`: the local time of the sweep (`HH:MM` in `TIMEZONE`).
    pub at: (i8, i8),
    pub timezone: String,
    /// `DREAM_MIN_SCORE`, `DREAM_MIN_HITS`, `DREAM_MIN_QUERIES`,
    /// `DREAM_MIN_DAYS`, `DREAM_MAX_CANDIDATES`.
    pub gates: Thresholds,
    /// `DREAM_APPROVAL`: `telegram` sends each proposal to the owner with
    /// approve/reject buttons; `off` (default) writes promotions at once.
    pub approval: bool,
    /// `DREAM_APPROVAL_HOURS`: unanswered proposals expire after this long.
    pub approval_hours: u32,
}

/// A setting's number: whole numbers through `FromStr`, the score through
/// [`hearth_decimal::read_f32`] (std's f32 parser links core's float tables).
trait Number: Sized {
    fn read(text: &str) -> Option<Self>;
}

macro_rules! whole {
    ($($t:ty),*) => {$(
        impl Number for $t {
            fn read(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        }
    )*};
}
whole!(u32, usize);

impl Number for f32 {
    fn read(text: &str) -> Option<Self> {
        hearth_decimal::read_f32(text)
    }
}

fn parsed<T: Number>(
    name: &str,
    raw: Option<String>,
    default: T,
    ok: impl Fn(&T) -> bool,
    rule: &str,
) -> Result<T, ConfigError> {
    match raw {
        None => Ok(default),
        Some(v) => match T::read(&v) {
            Some(x) if ok(&x) => Ok(x),
            _ => Err(ConfigError::Invalid { name: name.into(), why: format!("{v:?} is not {rule}") }),
        },
    }
}

impl DreamConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let get = |name: &str| setting(vars, agent, name);
        let enabled = switch(vars, agent, "DREAMING", true)?;
        let at = match get("DREAM_AT") {
            None => DEFAULT_DREAM_AT,
            Some(v) => parse_hhmm("DREAM_AT", &v)?,
        };
        let timezone = get("TIMEZONE").unwrap_or_else(|| "UTC".into());
        if !crate::clock::is_valid_zone(&timezone) {
            return Err(ConfigError::Invalid {
                name: "TIMEZONE".into(),
                why: format!("{timezone:?} is not an IANA time zone"),
            });
        }
        let d = DEFAULT_GATES;
        let gates = Thresholds {
            min_score: parsed(
                "DREAM_MIN_SCORE",
                get("DREAM_MIN_SCORE"),
                d.min_score,
                |s: &f32| (0.0..=1.0).contains(s),
                "a number from 0 to 1",
            )?,
            min_hits: parsed("DREAM_MIN_HITS", get("DREAM_MIN_HITS"), d.min_hits, |n| *n >= 1, "a whole number ≥ 1")?,
            min_queries: parsed(
                "DREAM_MIN_QUERIES",
                get("DREAM_MIN_QUERIES"),
                d.min_queries,
                |_| true,
                "a whole number",
            )?,
            min_days: parsed("DREAM_MIN_DAYS", get("DREAM_MIN_DAYS"), d.min_days, |_| true, "a whole number")?,
            max_candidates: parsed(
                "DREAM_MAX_CANDIDATES",
                get("DREAM_MAX_CANDIDATES"),
                d.max_candidates,
                |n| (1..=50).contains(n),
                "a whole number from 1 to 50",
            )?,
        };
        let approval = match get("DREAM_APPROVAL").map(|v| v.to_ascii_lowercase()).as_deref() {
            None => false,
            Some("telegram") => true,
            Some(v) if on_off(v).is_some() => on_off(v) == Some(true),
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "DREAM_APPROVAL".into(),
                    why: format!("{other:?}: use telegram (or on) to approve each promotion, or off"),
                })
            }
        };
        let approval_hours = parsed(
            "DREAM_APPROVAL_HOURS",
            get("DREAM_APPROVAL_HOURS"),
            DEFAULT_APPROVAL_HOURS,
            |h| (1..=24 * 30).contains(h),
            "a whole number of hours from 1 to 720",
        )?;
        Ok(DreamConfig { enabled, at, timezone, gates, approval, approval_hours })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_and_per_agent_values() {
        let c = DreamConfig::load(&vars(&[]), "main").unwrap();
        assert!(c.enabled && !c.approval);
        assert_eq!((c.at, c.gates, c.approval_hours), (DEFAULT_DREAM_AT, DEFAULT_GATES, 24));
        let v = vars(&[
            ("DREAM_AT", "04:30"),
            ("DREAMING__WORK", "off"),
            ("DREAM_MIN_HITS", "5"),
            ("DREAM_APPROVAL", "telegram"),
        ]);
        let main = DreamConfig::load(&v, "main").unwrap();
        assert_eq!((main.at, main.gates.min_hits, main.approval), ((4, 30), 5, true));
        assert!(!DreamConfig::load(&v, "work").unwrap().enabled);
        assert_eq!(history_keep(&vars(&[]), "main").unwrap(), 50);
        assert_eq!(history_keep(&vars(&[("HISTORY_KEEP_VERSIONS", "5")]), "main").unwrap(), 5);
    }

    #[test]
    fn invalid_values_name_their_setting() {
        for (name, value) in [
            ("DREAMING", "maybe"),
            ("DREAM_AT", "25:00"),
            ("DREAM_MIN_SCORE", "1.5"),
            ("DREAM_MIN_HITS", "0"),
            ("DREAM_MAX_CANDIDATES", "500"),
            ("DREAM_APPROVAL", "email"),
            ("DREAM_APPROVAL_HOURS", "x"),
        ] {
            let e = DreamConfig::load(&vars(&[(name, value)]), "main").unwrap_err();
            assert!(e.to_string().contains(name), "{e}");
        }
        let e = history_keep(&vars(&[("HISTORY_KEEP_VERSIONS", "0")]), "main").unwrap_err();
        assert!(e.to_string().contains("HISTORY_KEEP_VERSIONS"));
    }
}
