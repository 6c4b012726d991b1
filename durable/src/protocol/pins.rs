//! Pinned guardrail versions (seed 001) as the Agent object hands them to a
//! Session once per turn.

use serde::Serialize;
use std::collections::BTreeMap;

/// The pins of one agent for its template: file name → SHA-256 hex.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Pins {
    #[serde(default)]
    pub template: Option<String>,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

impl Pins {
    /// The pinned hash of `file`, if these pins are for `template`.
    pub fn hash_for(&self, template: &str, file: &str) -> Option<&str> {
        if self.template.as_deref() != Some(template) {
            return None;
        }
        self.files.get(file).map(String::as_str)
    }
}

/// One pinned file compared with the template's current content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinStatusFile {
    pub file: String,
    pub pinned_sha256: Option<String>,
    pub current_sha256: Option<String>,
    pub pinned_content: Option<String>,
    pub current_content: Option<String>,
    /// The template holds content the agent does not serve yet.
    pub update_available: bool,
}

/// What an accept did for one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptOutcome {
    pub file: String,
    pub sha256: String,
    pub previous_sha256: Option<String>,
}
