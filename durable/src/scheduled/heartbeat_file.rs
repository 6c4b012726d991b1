//! HEARTBEAT.md as the heartbeat sees it: resolved through the workspace
//! overlay (agent → template → defaults, seed 001) exactly like the prompt,
//! and remembered by etag so an idle tick costs one `head`.
//!
//! What is kept (in the Agent object's state table, so it survives eviction
//! between ticks) is the [`Checklist`] of the resolved file, not its text.
//!
//! * The agent's own file wins whenever it exists: each tick `head`s it
//!   (one cheap R2 operation). Same etag as last time: the kept checklist.
//!   New or changed: resolve and read again.
//! * Without the agent's own file the template or defaults layer serves it.
//!   Those change with a deploy or an admin edit, not from a conversation,
//!   so their resolution is trusted for [`LOWER_LAYERS_TTL_MS`]; past it (or
//!   when `TEMPLATE` changes) the overlay is resolved again.

use super::store::ScheduleStore;
use crate::overlay::{resolve_workspace, Layer, OverlayCache, OverlayConfig, Pins};
use crate::ports::{ObjectStore, Sql, StorageError};
use hearth_schedule::Checklist;
use r2_layout::{keys, AgentId, WorkspaceFile};
use serde::{Deserialize, Serialize};

/// How long a HEARTBEAT.md served by the template or defaults layer is
/// trusted before the overlay is resolved again.
pub const LOWER_LAYERS_TTL_MS: i64 = 60 * 60_000;

const STATE_KEY: &str = "heartbeat_file";

/// The last resolution, kept between ticks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resolved {
    /// The agent's own file served it (else a lower layer, or none).
    from_agent: bool,
    /// The agent file's etag when `from_agent`.
    etag: String,
    /// `TEMPLATE` at the time (a change invalidates the lower layers).
    template: Option<String>,
    /// When the overlay was resolved (tick time).
    resolved_at: i64,
    /// `None`: no layer has HEARTBEAT.md.
    checklist: Option<Checklist>,
}

/// The checklist of the agent's HEARTBEAT.md at `now` (`None`: absent in
/// every layer).
pub async fn heartbeat_checklist<O: ObjectStore, S: Sql>(
    store: &O,
    state: &ScheduleStore<'_, S>,
    agent: &AgentId,
    overlay: &OverlayConfig,
    now: i64,
) -> Result<Option<Checklist>, StorageError> {
    let kept: Option<Resolved> = state.get_json(STATE_KEY)?;
    let own = store.head(&keys::workspace_key(agent, WorkspaceFile::Heartbeat.file_name())).await?;
    if let Some(k) = &kept {
        let still_good = match &own {
            Some(info) => k.from_agent && k.etag == info.etag,
            None => {
                !k.from_agent
                    && k.template == overlay.template
                    && now >= k.resolved_at
                    && now - k.resolved_at < LOWER_LAYERS_TTL_MS
            }
        };
        if still_good {
            return Ok(k.checklist);
        }
    }
    // HEARTBEAT.md is a live file: pins apply only to guardrail files, so
    // none are needed to resolve it.
    let resolved = resolve_workspace(
        store,
        agent,
        overlay.template.as_deref(),
        &Pins::default(),
        &overlay.values,
        &[WorkspaceFile::Heartbeat],
        &mut OverlayCache::default(),
        now,
    )
    .await?;
    let checklist = resolved.files.get(&WorkspaceFile::Heartbeat).map(|t| Checklist::of(t));
    let from_agent = resolved.layers.get(&WorkspaceFile::Heartbeat) == Some(&Layer::Agent);
    // The head's etag: if the file changed since, the next head differs and
    // it is read again (never a stale checklist kept for good).
    let etag = own.map(|i| i.etag).unwrap_or_default();
    state.set_json(
        STATE_KEY,
        &Resolved { from_agent, etag, template: overlay.template.clone(), resolved_at: now, checklist },
    )?;
    Ok(checklist)
}
