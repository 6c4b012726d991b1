//! How long replies that could not be delivered are retried
//! (`DELIVERY_GIVE_UP_MINUTES`), and the tests-only cap on each wait
//! (`DELIVERY_MAX_WAIT_MS`). See [`crate::delivery`].

use super::read::{number, setting, ConfigError, Vars};

/// A reply is retried this long (24 h) before it is given up and reported:
/// the span over which Telegram itself keeps undelivered updates.
pub const DEFAULT_GIVE_UP_MINUTES: f64 = 24.0 * 60.0;

#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryConfig {
    /// `DELIVERY_GIVE_UP_MINUTES`: from the moment a reply is written, how
    /// long its delivery is retried before it is given up and reported to
    /// the owner. Fractions are allowed (`0.5` is 30 s).
    pub give_up_ms: i64,
    /// `RETRY_BASE_MS`: the first wait after a failure that names none; it
    /// doubles with each attempt of the same piece (up to
    /// [`crate::delivery::MAX_BACKOFF_MS`]).
    pub retry_base_ms: u64,
    /// `DELIVERY_MAX_WAIT_MS`, **tests only**: no wait before a retry is
    /// longer than this, not even one a platform asked for (a 429's
    /// `retry_after`), so a test of a two-minute wait runs in a second.
    pub max_wait_ms: Option<u64>,
}

impl DeliveryConfig {
    pub fn load(vars: &impl Vars, agent: &str, retry_base_ms: u64) -> Result<Self, ConfigError> {
        let name = "DELIVERY_GIVE_UP_MINUTES";
        let minutes = match setting(vars, agent, name) {
            None => DEFAULT_GIVE_UP_MINUTES,
            Some(raw) => match hearth_decimal::read_f64(&raw) {
                Some(m) if m.is_finite() && m > 0.0 && m <= 365.0 * 24.0 * 60.0 => m,
                _ => {
                    return Err(ConfigError::Invalid {
                        name: name.into(),
                        why: format!("{raw:?} is not a number of minutes above 0 (default 1440, a day)"),
                    })
                }
            },
        };
        let max_wait_ms = match setting(vars, agent, "DELIVERY_MAX_WAIT_MS") {
            None => None,
            Some(_) => Some(number::<u64>(vars, agent, "DELIVERY_MAX_WAIT_MS", 0)?.max(1)),
        };
        Ok(DeliveryConfig { give_up_ms: (minutes * 60_000.0).round() as i64, retry_base_ms, max_wait_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<DeliveryConfig, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        DeliveryConfig::load(&vars, "main", 1000)
    }

    #[test]
    fn a_day_by_default_minutes_or_fractions_when_set() {
        let d = load(&[]).unwrap();
        assert_eq!((d.give_up_ms, d.max_wait_ms, d.retry_base_ms), (86_400_000, None, 1000));
        assert_eq!(load(&[("DELIVERY_GIVE_UP_MINUTES", "90")]).unwrap().give_up_ms, 5_400_000);
        assert_eq!(load(&[("DELIVERY_GIVE_UP_MINUTES", "0.05")]).unwrap().give_up_ms, 3_000);
        assert_eq!(load(&[("DELIVERY_MAX_WAIT_MS", "500")]).unwrap().max_wait_ms, Some(500));
        for bad in ["0", "-5", "soon", "inf", "NaN"] {
            let e = load(&[("DELIVERY_GIVE_UP_MINUTES", bad)]).unwrap_err();
            assert!(e.to_string().contains("DELIVERY_GIVE_UP_MINUTES"), "{bad}: {e}");
        }
        assert!(load(&[("DELIVERY_MAX_WAIT_MS", "x")]).unwrap_err().to_string().contains("DELIVERY_MAX_WAIT_MS"));
    }
}
