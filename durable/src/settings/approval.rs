//! Which tool calls wait for the owner's yes (`APPROVE_TOOLS`, plus each
//! MCP server's `"approve"` list in `mcp.json`), and for how long
//! (`APPROVAL_TIMEOUT_MINUTES`, 30 by default).

use super::read::{number, setting, ConfigError, Vars};

/// How long a call waits for the owner unless `APPROVAL_TIMEOUT_MINUTES` says otherwise.
pub const DEFAULT_TIMEOUT_MINUTES: u32 = 30;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalConfig {
    /// `APPROVE_TOOLS`: tool names or `*` patterns (`web_fetch`,
    /// `mcp__github__*`, `run_code`), comma-separated. Empty: nothing waits
    /// (but an MCP server's own `"approve"` list).
    pub patterns: Vec<String>,
    /// `APPROVAL_TIMEOUT_MINUTES` in ms: no answer by then counts as no.
    pub timeout_ms: i64,
}

impl ApprovalConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let mut patterns = Vec::new();
        for p in setting(vars, agent, "APPROVE_TOOLS").unwrap_or_default().split(',') {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            let ok = p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'*' | b'.'));
            if !ok || p.len() > 64 {
                return Err(ConfigError::Invalid {
                    name: "APPROVE_TOOLS".into(),
                    why: format!("{p:?} is not a tool name or a * pattern (e.g. web_fetch, mcp__github__*)"),
                });
            }
            patterns.push(p.to_owned());
        }
        let minutes: u32 = number(vars, agent, "APPROVAL_TIMEOUT_MINUTES", DEFAULT_TIMEOUT_MINUTES)?;
        if minutes == 0 || minutes > 7 * 24 * 60 {
            return Err(ConfigError::Invalid {
                name: "APPROVAL_TIMEOUT_MINUTES".into(),
                why: format!("{minutes} is not between 1 and 10080 (a week)"),
            });
        }
        Ok(ApprovalConfig { patterns, timeout_ms: i64::from(minutes) * 60_000 })
    }

    /// Whether `tool` matches one of `APPROVE_TOOLS`.
    pub fn names(&self, tool: &str) -> bool {
        self.patterns.iter().any(|p| matches(p, tool))
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of
/// characters (none included). No other wildcard.
pub fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<ApprovalConfig, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ApprovalConfig::load(&vars, "main")
    }

    #[test]
    fn names_and_star_patterns() {
        assert!(matches("web_fetch", "web_fetch"));
        assert!(!matches("web_fetch", "web_fetch2"));
        assert!(matches("mcp__github__*", "mcp__github__create_issue"));
        assert!(!matches("mcp__github__*", "mcp__gitlab__create_issue"));
        assert!(matches("*", "anything"));
        assert!(matches("mcp__*__delete_*", "mcp__files__delete_all"));
        assert!(!matches("mcp__*__delete_*", "mcp__files__list"));
        assert!(matches("*_file", "write_file") && !matches("*_file", "write_files"));
        assert!(!matches("a*a", "a"), "the two ends cannot share a character");
    }

    #[test]
    fn the_settings_and_their_errors() {
        let c = load(&[("APPROVE_TOOLS", " web_fetch, mcp__github__* ,run_code")]).unwrap();
        assert_eq!(c.patterns, vec!["web_fetch", "mcp__github__*", "run_code"]);
        assert_eq!(c.timeout_ms, 30 * 60_000);
        assert!(c.names("run_code") && c.names("mcp__github__merge") && !c.names("read_file"));
        assert!(load(&[]).unwrap().patterns.is_empty(), "nothing waits by default");
        assert_eq!(load(&[("APPROVAL_TIMEOUT_MINUTES", "5")]).unwrap().timeout_ms, 300_000);
        for (name, bad) in
            [("APPROVE_TOOLS", "web fetch"), ("APPROVAL_TIMEOUT_MINUTES", "0"), ("APPROVAL_TIMEOUT_MINUTES", "soon")]
        {
            let e = load(&[(name, bad)]).unwrap_err();
            assert!(matches!(&e, ConfigError::Invalid { name: n, .. } if n == name), "{name}={bad}: {e}");
        }
    }
}
