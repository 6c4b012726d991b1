//! The one settings reader: where settings come from ([`Vars`]), one
//! setting for one agent ([`setting`]: `{NAME}__{AGENT}`, then `{NAME}`),
//! numbers, times of day, and the one list of words for on and off that
//! every setting which is a switch takes ([`switch`], [`on_off`]). Every
//! settings file reads through here, so a switch means the same everywhere.

/// Where settings come from (the Worker's `Env`, or a map in tests).
pub trait Vars {
    fn get(&self, name: &str) -> Option<String>;
}

impl Vars for std::collections::HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        std::collections::HashMap::get(self, name).cloned()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown agent {0:?} (configured agents: {1})")]
    UnknownAgent(String, String),
    #[error("{name} is not set (see .dev.vars.example)")]
    Missing { name: String },
    #[error("{name} is invalid: {why}")]
    Invalid { name: String, why: String },
}

/// The list of configured agent ids (`AGENTS`, default `main`).
pub fn agent_ids(vars: &impl Vars) -> Vec<String> {
    match vars.get("AGENTS") {
        Some(list) if !list.trim().is_empty() => {
            list.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
        }
        _ => vec!["main".to_owned()],
    }
}

/// Reads one setting for one agent: `{NAME}__{AGENT}` first, then `{NAME}`.
pub fn setting(vars: &impl Vars, agent: &str, name: &str) -> Option<String> {
    let suffix: String = agent.chars().map(|c| if c == '-' { '_' } else { c.to_ascii_uppercase() }).collect();
    vars.get(&format!("{name}__{suffix}"))
        .or_else(|| vars.get(name))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

pub fn number<T: std::str::FromStr>(vars: &impl Vars, agent: &str, name: &str, default: T) -> Result<T, ConfigError> {
    match setting(vars, agent, name) {
        None => Ok(default),
        Some(v) => {
            v.parse().map_err(|_| ConfigError::Invalid { name: name.to_owned(), why: format!("{v:?} is not a number") })
        }
    }
}

/// The words a switch takes for on, in any case: the union of what each
/// setting took before they shared one list, so no setting that worked
/// changes meaning. (Before, `DISCORD_GATEWAY` and `VOICE_REPLY_TO_VOICE`
/// took only on/true/1 and off/false/0 (the latter in lower case only), `CODE_MODE` took on and off/false/0,
/// `WEB_SEARCH` off/false; the others took all four pairs. Each now takes
/// all four, and the settings with words of their own keep them:
/// `CODE_MODE=owner|all|none`, `WEB_SEARCH=none|anthropic|brave`,
/// `DREAM_APPROVAL=telegram`.)
pub const ON_WORDS: &[&str] = &["on", "true", "yes", "1"];
/// The words a switch takes for off, in any case.
pub const OFF_WORDS: &[&str] = &["off", "false", "no", "0"];

/// `raw` as a switch: `Some(true)` for an [`ON_WORDS`] word, `Some(false)`
/// for an [`OFF_WORDS`] one (any case, spaces trimmed), `None` otherwise.
pub fn on_off(raw: &str) -> Option<bool> {
    let word = raw.trim();
    let is = |words: &[&str]| words.iter().any(|w| w.eq_ignore_ascii_case(word));
    if is(ON_WORDS) {
        Some(true)
    } else if is(OFF_WORDS) {
        Some(false)
    } else {
        None
    }
}

/// Setting `name` of `agent` as a switch: `default` when unset, an error
/// naming it when it is neither an on nor an off word.
pub fn switch(vars: &impl Vars, agent: &str, name: &str, default: bool) -> Result<bool, ConfigError> {
    match setting(vars, agent, name) {
        None => Ok(default),
        Some(raw) => on_off(&raw).ok_or_else(|| ConfigError::Invalid {
            name: name.to_owned(),
            why: format!("{:?}: use on or off (or true/false, yes/no, 1/0)", raw.to_ascii_lowercase()),
        }),
    }
}

/// `HH:MM` (24 hours) as setting `name` gives it.
pub fn parse_hhmm(name: &str, raw: &str) -> Result<(i8, i8), ConfigError> {
    let bad = || ConfigError::Invalid { name: name.to_owned(), why: format!("{raw:?} is not HH:MM") };
    let (h, m) = raw.split_once(':').ok_or_else(bad)?;
    let (h, m): (i8, i8) = (h.trim().parse().map_err(|_| bad())?, m.trim().parse().map_err(|_| bad())?);
    if (0..24).contains(&h) && (0..60).contains(&m) {
        Ok((h, m))
    } else {
        Err(bad())
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
    fn a_switch_takes_every_on_and_off_word_in_any_case_and_nothing_else() {
        for w in ["on", "TRUE", "Yes", "1", " on "] {
            assert_eq!(on_off(w), Some(true), "{w:?}");
        }
        for w in ["off", "False", "NO", "0"] {
            assert_eq!(on_off(w), Some(false), "{w:?}");
        }
        for w in ["", "yes please", "enabled", "2", "telegram"] {
            assert_eq!(on_off(w), None, "{w:?}");
        }
        assert_eq!(switch(&vars(&[]), "main", "X", true), Ok(true));
        assert_eq!(switch(&vars(&[("X", "no"), ("X__WORK", "yes")]), "work", "X", false), Ok(true));
        let e = switch(&vars(&[("X", "maybe")]), "main", "X", true).unwrap_err();
        assert!(matches!(&e, ConfigError::Invalid { name, .. } if name == "X") && e.to_string().contains("maybe"));
    }
}
