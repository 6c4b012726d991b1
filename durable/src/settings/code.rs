//! Code mode (`run_code`): who may run scripts, and their limits
//! (`CODE_MODE`, `CODE_MODE_TIMEOUT_MS`, `CODE_MODE_CPU_MS`,
//! `CODE_MODE_MAX_CALLS`). The tool exists only where the Worker has a
//! Worker Loader binding (`[[worker_loaders]]`, `LOADER`).

use super::read::{number, on_off, setting, ConfigError, Vars};

/// Which sessions get `run_code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeAccess {
    /// The owner's main session only (the default).
    Owner,
    /// Every session; a shared session's script reaches only that
    /// session's tools (what it may read, no writes).
    All,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeConfig {
    /// `CODE_MODE`: `owner` (default), `all` or `off`.
    pub access: CodeAccess,
    /// `CODE_MODE_TIMEOUT_MS` (default 10,000): wall-clock time of one run,
    /// its tool calls included.
    pub timeout_ms: u32,
    /// `CODE_MODE_CPU_MS` (default 1,000): the isolate's CPU limit
    /// (`limits.cpuMs`, enforced by Cloudflare; locally the step guard holds).
    pub cpu_ms: u32,
    /// `CODE_MODE_MAX_CALLS` (default 50): tool calls one run may make.
    pub max_calls: u32,
}

impl Default for CodeConfig {
    fn default() -> Self {
        CodeConfig { access: CodeAccess::Owner, timeout_ms: 10_000, cpu_ms: 1_000, max_calls: 50 }
    }
}

impl CodeConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let d = CodeConfig::default();
        let access = match setting(vars, agent, "CODE_MODE").map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("owner" | "main") => CodeAccess::Owner,
            Some("all") => CodeAccess::All,
            Some("none") => CodeAccess::Off,
            Some(v) if on_off(v) == Some(true) => CodeAccess::Owner,
            Some(v) if on_off(v) == Some(false) => CodeAccess::Off,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "CODE_MODE".into(),
                    why: format!("{other:?}: use owner, all or off"),
                })
            }
        };
        let bounded = |name: &str, default: u32, min: u32, max: u32| -> Result<u32, ConfigError> {
            let v = number(vars, agent, name, default)?;
            if (min..=max).contains(&v) {
                Ok(v)
            } else {
                Err(ConfigError::Invalid { name: name.into(), why: format!("{v} is not between {min} and {max}") })
            }
        };
        Ok(CodeConfig {
            access,
            timeout_ms: bounded("CODE_MODE_TIMEOUT_MS", d.timeout_ms, 100, 120_000)?,
            cpu_ms: bounded("CODE_MODE_CPU_MS", d.cpu_ms, 10, 30_000)?,
            max_calls: bounded("CODE_MODE_MAX_CALLS", d.max_calls, 0, 1_000)?,
        })
    }

    /// Whether a session of `scope` gets `run_code` (given a loader).
    pub fn offered_in(&self, scope: r2_layout::Scope) -> bool {
        match self.access {
            CodeAccess::Owner => scope == r2_layout::Scope::Main,
            CodeAccess::All => true,
            CodeAccess::Off => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2_layout::Scope;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<CodeConfig, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        CodeConfig::load(&vars, "main")
    }

    #[test]
    fn owner_only_by_default_and_a_setting_opens_or_closes_it() {
        let d = load(&[]).unwrap();
        assert_eq!(d, CodeConfig::default());
        assert!(d.offered_in(Scope::Main) && !d.offered_in(Scope::Shared));
        let all = load(&[("CODE_MODE", "All")]).unwrap();
        assert!(all.offered_in(Scope::Shared));
        let off = load(&[("CODE_MODE", "off")]).unwrap();
        assert!(!off.offered_in(Scope::Main));
        let e = load(&[("CODE_MODE", "everyone")]).unwrap_err().to_string();
        assert!(e.contains("CODE_MODE") && e.contains("owner, all or off"), "{e}");
    }

    #[test]
    fn limits_are_read_and_checked() {
        let c = load(&[("CODE_MODE_TIMEOUT_MS", "2500"), ("CODE_MODE_MAX_CALLS", "5"), ("CODE_MODE_CPU_MS", "50")])
            .unwrap();
        assert_eq!((c.timeout_ms, c.max_calls, c.cpu_ms), (2500, 5, 50));
        assert!(load(&[("CODE_MODE_TIMEOUT_MS", "10")]).is_err(), "too short to start an isolate");
        assert!(load(&[("CODE_MODE_MAX_CALLS", "many")]).is_err());
    }
}
