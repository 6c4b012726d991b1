//! Pinned guardrail versions (seed 001) as the Agent object hands them to a
//! Session once per turn.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The pins of one agent for its template: file name → SHA-256 hex.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
