//! What the agent may spend and how its spending is shown: budgets
//! (`BUDGET_*`), price overrides (`LLM_PRICES`), the reply footer
//! (`USAGE_FOOTER`). Read here, on the ground floor, so an invalid value is a
//! clear error at the first request like every other setting; the ledger,
//! the price table and the budget decisions are in `crate::usage`.

use super::read::{setting, switch, ConfigError, Vars};

/// Share of a limit at which the owner is told once (per period).
pub const WARN_PERCENT: u8 = 80;
/// Default share of a limit at which background work (heartbeats, jobs,
/// dreaming) stops, leaving the rest for conversations.
pub const DEFAULT_BACKGROUND_PERCENT: u8 = 90;

/// How long a session keeps finished calls before it sends them to the
/// ledger: the registry's refresh interval, so a session talks to its Agent
/// object about once a minute at most, not once per turn.
pub const DEFAULT_SETTLE_MS: i64 = 60_000;

/// Prices of one model in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrice {
    /// Input tokens not read from the cache (nor written to it).
    pub input: f64,
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache (Anthropic's 5-minute writes).
    pub cache_write: f64,
    /// Input tokens written to the prompt cache for an hour (Anthropic's
    /// `"ttl": "1h"`; heartbeats and jobs, `crate::llm::cache_ttl`).
    pub cache_write_1h: f64,
}

/// Anthropic's 1-hour cache writes cost twice the base input price (its
/// pricing page: "1h cache writes: 2× base input"), for every model.
pub const WRITE_1H_PER_INPUT: f64 = 2.0;

/// Hard limits of one agent. `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// `BUDGET_DAILY_USD`: per local day (`TIMEZONE`).
    pub daily_usd: Option<f64>,
    /// `BUDGET_MONTHLY_USD`: per local calendar month.
    pub monthly_usd: Option<f64>,
    /// `BUDGET_DAILY_TOKENS`: all tokens of every call (for models without a price).
    pub daily_tokens: Option<u64>,
    /// `BUDGET_MONTHLY_TOKENS`.
    pub monthly_tokens: Option<u64>,
    /// `BUDGET_BACKGROUND_PERCENT` (default 90): background work stops at
    /// this share of any limit.
    pub background_percent: u8,
}

impl Budget {
    /// Whether any limit is set (without one, calls need no reservation).
    pub fn is_set(&self) -> bool {
        self.daily_usd.is_some()
            || self.monthly_usd.is_some()
            || self.daily_tokens.is_some()
            || self.monthly_tokens.is_some()
    }
}

/// The agent's usage settings.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSettings {
    pub budget: Budget,
    /// `LLM_PRICES`: prices that replace or add to the built-in table, by model.
    pub prices: Vec<(String, ModelPrice)>,
    /// `USAGE_FOOTER=true`: each reply ends with its tokens, cost and model.
    pub footer: bool,
    /// `USAGE_LEDGER=off` (bench only): calls are not sent to the Agent
    /// object's ledger, so nothing is recorded or enforced there.
    pub ledger: bool,
    /// `USAGE_SETTLE_MS` (default 60,000): how long finished calls may wait
    /// in their session before they go to the ledger, in one batch. Tests
    /// set 0 (every drain settles at once).
    pub settle_ms: i64,
}

impl Default for UsageSettings {
    fn default() -> Self {
        UsageSettings {
            budget: Budget { background_percent: DEFAULT_BACKGROUND_PERCENT, ..Default::default() },
            prices: Vec::new(),
            footer: false,
            ledger: true,
            settle_ms: DEFAULT_SETTLE_MS,
        }
    }
}

fn invalid(name: &str, why: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { name: name.to_owned(), why: why.into() }
}

/// A positive amount of US dollars (`20`, `0.5`, `$20`).
fn usd(vars: &impl Vars, agent: &str, name: &str) -> Result<Option<f64>, ConfigError> {
    let Some(raw) = setting(vars, agent, name) else { return Ok(None) };
    match hearth_decimal::read_f64(raw.trim_start_matches('$').trim()) {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        _ => Err(invalid(name, format!("{raw:?} is not an amount of US dollars (e.g. 20 or 0.50)"))),
    }
}

fn tokens(vars: &impl Vars, agent: &str, name: &str) -> Result<Option<u64>, ConfigError> {
    let Some(raw) = setting(vars, agent, name) else { return Ok(None) };
    raw.replace(['_', ','], "")
        .parse::<u64>()
        .map(Some)
        .map_err(|_| invalid(name, format!("{raw:?} is not a whole number of tokens")))
}

/// `LLM_PRICES`: `{"model": {"input": 3, "output": 15, "cacheRead": 0.3,
/// "cacheWrite": 3.75, "cacheWrite1h": 6}, ...}` in USD per million tokens.
/// `cacheRead` and `cacheWrite` default to `input` (no discount is assumed
/// for a model the table does not know); `cacheWrite1h` (1-hour cache writes,
/// Anthropic) to twice `input`, the multiplier Anthropic documents.
pub fn parse_prices(raw: &str) -> Result<Vec<(String, ModelPrice)>, ConfigError> {
    const NAME: &str = "LLM_PRICES";
    let v: serde_json::Value =
        hearth_json::from_slice(raw.as_bytes()).map_err(|e| invalid(NAME, format!("not JSON: {e}")))?;
    let Some(models) = v.as_object() else {
        return Err(invalid(
            NAME,
            "must be a JSON object of models, e.g. {\"my-model\": {\"input\": 1, \"output\": 2}}",
        ));
    };
    let mut out = Vec::with_capacity(models.len());
    for (model, p) in models {
        let field = |f: &str| -> Result<Option<f64>, ConfigError> {
            match p.get(f) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(x) => match x.as_f64() {
                    Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
                    _ => Err(invalid(NAME, format!("{model}.{f} must be a number ≥ 0 (USD per million tokens)"))),
                },
            }
        };
        if !p.is_object() {
            return Err(invalid(NAME, format!("{model} must be an object with input and output prices")));
        }
        let (Some(input), Some(output)) = (field("input")?, field("output")?) else {
            return Err(invalid(NAME, format!("{model} needs both \"input\" and \"output\" (USD per million tokens)")));
        };
        let cache_read = field("cacheRead")?.unwrap_or(input);
        let cache_write = field("cacheWrite")?.unwrap_or(input);
        let cache_write_1h = field("cacheWrite1h")?.unwrap_or(input * WRITE_1H_PER_INPUT);
        out.push((model.trim().to_owned(), ModelPrice { input, output, cache_read, cache_write, cache_write_1h }));
    }
    Ok(out)
}

impl UsageSettings {
    /// The usage settings of `agent` (`{NAME}__{AGENT}` first, then `{NAME}`).
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let background_percent = match setting(vars, agent, "BUDGET_BACKGROUND_PERCENT") {
            None => DEFAULT_BACKGROUND_PERCENT,
            Some(raw) => match raw.trim_end_matches('%').trim().parse::<u8>() {
                Ok(p) if p <= 100 => p,
                _ => {
                    return Err(invalid(
                        "BUDGET_BACKGROUND_PERCENT",
                        format!("{raw:?} is not a percentage from 0 to 100"),
                    ))
                }
            },
        };
        Ok(UsageSettings {
            budget: Budget {
                daily_usd: usd(vars, agent, "BUDGET_DAILY_USD")?,
                monthly_usd: usd(vars, agent, "BUDGET_MONTHLY_USD")?,
                daily_tokens: tokens(vars, agent, "BUDGET_DAILY_TOKENS")?,
                monthly_tokens: tokens(vars, agent, "BUDGET_MONTHLY_TOKENS")?,
                background_percent,
            },
            prices: match setting(vars, agent, "LLM_PRICES") {
                Some(raw) => parse_prices(&raw)?,
                None => Vec::new(),
            },
            footer: switch(vars, agent, "USAGE_FOOTER", false)?,
            ledger: switch(vars, agent, "USAGE_LEDGER", true)?,
            settle_ms: match setting(vars, agent, "USAGE_SETTLE_MS") {
                None => DEFAULT_SETTLE_MS,
                Some(raw) => raw
                    .parse::<i64>()
                    .ok()
                    .filter(|ms| *ms >= 0)
                    .ok_or_else(|| invalid("USAGE_SETTLE_MS", format!("{raw:?} is not a number of milliseconds")))?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<UsageSettings, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        UsageSettings::load(&vars, "main")
    }

    #[test]
    fn nothing_set_means_no_budget_no_footer_and_a_ledger() {
        let s = load(&[]).unwrap();
        assert!(!s.budget.is_set());
        assert_eq!(s.budget.background_percent, 90);
        assert!(!s.footer && s.ledger && s.prices.is_empty());
    }

    #[test]
    fn budgets_per_agent_and_their_errors_name_the_setting() {
        let s = load(&[("BUDGET_MONTHLY_USD", "$20"), ("BUDGET_DAILY_TOKENS__MAIN", "1_000_000")]).unwrap();
        assert_eq!(
            (s.budget.monthly_usd, s.budget.daily_tokens, s.budget.daily_usd),
            (Some(20.0), Some(1_000_000), None)
        );
        assert!(s.budget.is_set());
        for (name, bad) in [
            ("BUDGET_DAILY_USD", "twenty"),
            ("BUDGET_DAILY_USD", "-1"),
            ("BUDGET_MONTHLY_TOKENS", "1.5"),
            ("BUDGET_BACKGROUND_PERCENT", "120"),
            ("USAGE_FOOTER", "maybe"),
        ] {
            let e = load(&[(name, bad)]).unwrap_err();
            assert!(matches!(&e, ConfigError::Invalid { name: n, .. } if n == name), "{name}={bad}: {e}");
        }
    }

    #[test]
    fn price_overrides_are_checked() {
        let s = load(&[("LLM_PRICES", r#"{"my-model": {"input": 1, "output": 2, "cacheRead": 0.1}}"#)]).unwrap();
        let want = ModelPrice { input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.0, cache_write_1h: 2.0 };
        assert_eq!(s.prices, vec![("my-model".into(), want)]);
        // A deployment's own 1-hour write price.
        let s = load(&[("LLM_PRICES", r#"{"m": {"input": 3, "output": 15, "cacheWrite": 3.75, "cacheWrite1h": 5}}"#)])
            .unwrap();
        assert_eq!((s.prices[0].1.cache_write, s.prices[0].1.cache_write_1h), (3.75, 5.0));
        let e = load(&[("LLM_PRICES", r#"{"m": {"input": 3, "output": 15, "cacheWrite1h": -1}}"#)]).unwrap_err();
        assert!(e.to_string().contains("m.cacheWrite1h"), "{e}");
        for bad in [r#"[1]"#, r#"{"m": {"input": 1}}"#, r#"{"m": {"input": "one", "output": 2}}"#, "{", r#"{"m": 3}"#] {
            let e = load(&[("LLM_PRICES", bad)]).unwrap_err();
            assert!(e.to_string().contains("LLM_PRICES"), "{bad}: {e}");
        }
    }
}
