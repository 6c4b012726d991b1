//! The workspace overlay (seed 001): each workspace file resolves agent →
//! template → defaults, first hit wins; live files get `{{...}}`
//! placeholders substituted with sanitised values; guardrail files are
//! pinned by hash to the version the agent's admin accepted.
//!
//! BOOTSTRAP.md is the exception to the layering: it is read from the
//! agent's own prefix only (`agents/{id}/BOOTSTRAP.md`), never inherited, so
//! the agent can always leave commissioning mode by deleting it.
//!
//! - [`admin`]: the layers as the owner edits them (console, admin API):
//!   each layer's files, the agent's tree with sources, write rules, skills.
//! - [`placeholders`]: the seven tokens, their values and the sanitiser.
//! - [`resolve`]: the layer decision ([`resolve::resolve_file`]) and the
//!   fetching resolver over listings made ([`resolve::resolve_listed`]).
//! - [`listing`]: the R2 listings of a workspace load, cached with TTLs and
//!   made concurrently.
//! - [`pins`]: pin records in the Agent object's SQLite, the version store,
//!   status and accept (single and bulk).
//! - [`front_matter`]: the `---` block of skills and templates; [`yaml`]:
//!   skills' front matter parsed; [`fill_ins`]: a file as the model sees it
//!   (no front matter, no unfilled template hints); [`skills`]: SKILL.md.
//! - [`history`]: every change to the agent's files, the version it
//!   replaced, who and why; versions, diffs, restores and `/undo`.
//!
//! Configuration: the agent's template is the var `TEMPLATE` (per agent
//! `TEMPLATE__{AGENT}`); none by default, and then the overlay is agent →
//! defaults. Placeholder values come from the vars named like the tokens.

pub mod admin;
pub mod fill_ins;
pub mod front_matter;
pub mod history;
pub mod identity;
pub mod listing;
mod load;
pub mod open;
pub mod pins;
pub mod placeholders;
pub mod resolve;
pub mod skills;
pub mod snapshot;
pub mod yaml;

pub use load::{load_workspace, Workspace, WorkspaceCache};

pub use resolve::Layer;

use crate::protocol::pins::Pins;
use crate::settings::overlay::{OverlayConfig, PlaceholderValues};
use r2_layout::WorkspaceFile;

impl OverlayConfig {
    /// The inputs of one turn's resolution, with the pins of that turn.
    pub fn inputs<'a>(&'a self, pins: &'a Pins) -> OverlayInputs<'a> {
        OverlayInputs { template: self.template.as_deref(), pins, values: &self.values }
    }
}

/// What the workspace loader needs from the overlay for one turn.
#[derive(Debug, Clone, Copy)]
pub struct OverlayInputs<'a> {
    pub template: Option<&'a str>,
    pub pins: &'a Pins,
    pub values: &'a PlaceholderValues,
}

/// The pins for this turn: asked from the Agent object only when the agent
/// has a template. If they cannot be had, no pins: the guardrail files then
/// come from the defaults, never from the unreviewed live template.
pub async fn pins_for_turn<P: crate::ports::Platform>(p: &P, cfg: &OverlayConfig) -> Pins {
    if cfg.template.is_none() {
        return Pins::default();
    }
    match p.pins().await {
        Ok(pins) => pins,
        Err(e) => {
            p.log(
                crate::ports::LogLevel::Error,
                &format!("pinned versions unavailable, serving default guardrails: {e}"),
            );
            Pins::default()
        }
    }
}

/// Whether a workspace write to `path` must be refused: the guardrail files
/// at the workspace root are pinned and change only through an admin accept.
/// Compared case-insensitively, after an optional leading `./`.
pub fn is_write_protected(path: &str) -> bool {
    let p = path.trim();
    let p = p.strip_prefix("./").unwrap_or(p);
    WorkspaceFile::ALL.into_iter().filter(|f| f.is_guardrail()).any(|f| f.file_name().eq_ignore_ascii_case(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guardrail_files_at_the_root_are_write_protected() {
        for p in ["GUARDRAILS.md", "PLATFORM.md", "CAPABILITIES.md", "./GUARDRAILS.md", "guardrails.md"] {
            assert!(is_write_protected(p), "{p}");
        }
        for p in ["SOUL.md", "memory/GUARDRAILS.md", "GUARDRAILS.md.bak", "notes/PLATFORM.md"] {
            assert!(!is_write_protected(p), "{p}");
        }
    }
}
