//! Workspace overlay settings (seed 001): the agent's template (`TEMPLATE`)
//! and the raw values of the seven placeholder tokens. Substitution and
//! sanitising live with the workspace loader; this is only what the vars say.

use super::read::{setting, ConfigError, Vars};

/// The agent's overlay settings, read with the rest of its configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverlayConfig {
    /// `TEMPLATE`: the `_catalog/{template}/` the agent inherits from.
    pub template: Option<String>,
    /// The raw placeholder values (sanitised when substituted).
    pub values: PlaceholderValues,
}

impl OverlayConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        Ok(OverlayConfig { template: template(vars, agent)?, values: PlaceholderValues::from_vars(vars, agent) })
    }
}

/// The agent's template (`TEMPLATE`, per agent `TEMPLATE__{AGENT}`), checked
/// to be a safe key segment. `None` when unset.
pub fn template(vars: &impl Vars, agent: &str) -> Result<Option<String>, ConfigError> {
    match setting(vars, agent, "TEMPLATE") {
        None => Ok(None),
        Some(t) => match r2_layout::keys::check_segment("template", &t) {
            Ok(()) if t != "defaults" => Ok(Some(t)),
            Ok(()) => Err(ConfigError::Invalid {
                name: "TEMPLATE".into(),
                why: "\"defaults\" is the defaults layer, not a template".into(),
            }),
            Err(e) => Err(ConfigError::Invalid { name: "TEMPLATE".into(), why: e.to_string() }),
        },
    }
}

/// The raw (unsanitised) values of the seven placeholder tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlaceholderValues {
    pub agent_name: Option<String>,
    pub tenant_name: Option<String>,
    pub human_name: Option<String>,
    pub human_email: Option<String>,
    pub human_title: Option<String>,
    pub human_timezone: Option<String>,
    pub human_pronouns: Option<String>,
}

impl PlaceholderValues {
    /// Reads the values from vars, per-agent form first (`HUMAN_NAME__WORK`,
    /// then `HUMAN_NAME`). `agent_name` stays `None` without an `AGENT_NAME`
    /// var: see [`Self::with_agent_name_fallback`].
    pub fn from_vars(vars: &impl Vars, agent: &str) -> Self {
        let get = |name: &str| setting(vars, agent, name);
        PlaceholderValues {
            agent_name: get("AGENT_NAME"),
            tenant_name: get("TENANT_NAME"),
            human_name: get("HUMAN_NAME"),
            human_email: get("HUMAN_EMAIL"),
            human_title: get("HUMAN_TITLE"),
            human_timezone: get("HUMAN_TIMEZONE"),
            human_pronouns: get("HUMAN_PRONOUNS"),
        }
    }

    /// Without an `AGENT_NAME` var, the agent's name is the name line of
    /// IDENTITY.md (when known), else the agent id.
    pub fn with_agent_name_fallback(mut self, identity_name: Option<&str>, agent_id: &str) -> Self {
        if self.agent_name.as_deref().is_none_or(|n| n.trim().is_empty()) {
            let from_identity = identity_name.map(str::trim).filter(|n| !n.is_empty());
            self.agent_name = Some(from_identity.unwrap_or(agent_id).to_owned());
        }
        self
    }

    /// The raw value of a known token (`Some(None)`: known but missing);
    /// `None` for an unknown token.
    pub fn get(&self, token: &str) -> Option<Option<&str>> {
        let v = match token {
            "AGENT_NAME" => &self.agent_name,
            "TENANT_NAME" => &self.tenant_name,
            "HUMAN_NAME" => &self.human_name,
            "HUMAN_EMAIL" => &self.human_email,
            "HUMAN_TITLE" => &self.human_title,
            "HUMAN_TIMEZONE" => &self.human_timezone,
            "HUMAN_PRONOUNS" => &self.human_pronouns,
            _ => return None,
        };
        Some(v.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn template_setting_is_per_agent_and_checked() {
        let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        assert_eq!(template(&vars(&[]), "main").unwrap(), None);
        let v = vars(&[("TEMPLATE", "concierge"), ("TEMPLATE__WORK", "ops")]);
        assert_eq!(template(&v, "main").unwrap().as_deref(), Some("concierge"));
        assert_eq!(template(&v, "work").unwrap().as_deref(), Some("ops"));
        for bad in ["../x", "a/b", "defaults"] {
            assert!(template(&vars(&[("TEMPLATE", bad)]), "main").is_err(), "{bad}");
        }
    }
}
