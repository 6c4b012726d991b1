//! HEARTBEAT.md as the heartbeat sees it: resolved through the workspace
//! overlay (agent → template → defaults, seed 001) with the prompt loader's
//! pieces ([`resolve_listed`]), judged on the text the prompt shows (front
//! matter and template fill-in hints like `_(add your checks)_` removed:
//! [`shown_text`], as in `prompt::file_body`), and remembered by etag so an
//! idle tick costs one `head`.
//!
//! What is kept (in the Agent object's state table, so it survives eviction
//! between ticks) is the [`Checklist`] of the resolved file, not its text;
//! nothing else is cached between ticks.
//!
//! * The agent's own file wins whenever it exists: each tick `head`s it
//!   (one cheap R2 operation). Same etag as last time: the kept checklist.
//!   New or changed: read it again (one `get`; it wins in every layering,
//!   so nothing needs listing).
//! * Without the agent's own file the template or defaults layer serves it.
//!   Those change with a deploy or an admin edit, not from a conversation,
//!   so their resolution is trusted for [`LOWER_LAYERS_TTL_MS`]; past it (or
//!   when `TEMPLATE` changes) the layers are listed and resolved again.

use super::store::ScheduleStore;
use crate::ports::{ObjectInfo, ObjectStore, Sql, StorageError};
use crate::protocol::pins::Pins;
use crate::settings::overlay::OverlayConfig;
use crate::workspace::fill_ins::shown_text;
use crate::workspace::listing::{list_due, ListingCache};
use crate::workspace::resolve::{resolve_listed, ListedLayers, Listing, OverlayPrefixes, TextCache};
use crate::workspace::Layer;
use hearth_schedule::Checklist;
use r2_layout::{keys, AgentId, WorkspaceFile};
use serde::Serialize;

/// How long a HEARTBEAT.md served by the template or defaults layer is
/// trusted before the overlay is resolved again.
pub const LOWER_LAYERS_TTL_MS: i64 = 60 * 60_000;

/// `_v3`: checklists judged on the body without front matter and template
/// hints. The keys of earlier versions (v1: the raw file; v2: with front
/// matter) are dropped at the first resolution, so an unchanged file with
/// only front matter is not trusted as "has content" for good.
const STATE_KEY: &str = "heartbeat_file_v3";
const OLD_STATE_KEYS: [&str; 2] = ["heartbeat_file", "heartbeat_file_v2"];

/// The last resolution, kept between ticks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
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
    let (layer, text) = resolve(store, agent, overlay, own.as_ref(), now).await?.unzip();
    // Judged on what the prompt shows: a file holding only front matter and
    // fill-in hints is left out of the prompt, so it must not cost a run either.
    let checklist = text.map(|t| Checklist::of(&shown_text(WorkspaceFile::Heartbeat, &t).text));
    // The head's etag: if the file changed since, the next head differs and
    // it is read again (never a stale checklist kept for good).
    let etag = own.map(|i| i.etag).unwrap_or_default();
    state.set_json(
        STATE_KEY,
        &Resolved {
            from_agent: layer == Some(Layer::Agent),
            etag,
            template: overlay.template.clone(),
            resolved_at: now,
            checklist,
        },
    )?;
    for old in OLD_STATE_KEYS {
        state.delete(old)?;
    }
    Ok(checklist)
}

/// HEARTBEAT.md through the overlay, as the prompt loader resolves it, with
/// its layer (`None`: absent in every layer). `own`: the agent's file as the
/// tick's `head` found it.
async fn resolve<O: ObjectStore>(
    store: &O,
    agent: &AgentId,
    overlay: &OverlayConfig,
    own: Option<&ObjectInfo>,
    now: i64,
) -> Result<Option<(Layer, std::rc::Rc<str>)>, StorageError> {
    let template = overlay.template.as_deref();
    let prefixes = OverlayPrefixes::new(agent, template)?;
    let file = WorkspaceFile::Heartbeat;
    let mut own = own;
    loop {
        let layers = match own {
            // The agent's own file wins over every other layer: no listing needed.
            Some(info) => ListedLayers {
                agent: Listing::from_objects(&prefixes.agent, std::slice::from_ref(info)),
                defaults: Listing::default(),
                template: prefixes.template.as_ref().map(|_| Listing::default()),
            },
            None => {
                // A throwaway listing cache: between ticks the kept checklist is the cache.
                let (listed, _) = list_due(store, &mut ListingCache::default(), &prefixes.wants(), now).await?;
                ListedLayers::new(&prefixes, &listed)
            }
        };
        // HEARTBEAT.md is a live file: pins apply only to guardrail files, so
        // none are needed to resolve it.
        let (mut resolved, _) = resolve_listed(
            store,
            agent,
            template,
            &layers,
            &Pins::default(),
            &overlay.values,
            &[file],
            &mut TextCache::default(),
        )
        .await?;
        let found = resolved.layers.get(&file).copied().zip(resolved.files.remove(&file));
        if found.is_none() && own.is_some() {
            own = None; // deleted since the head: a lower layer may serve it
            continue;
        }
        return Ok(found);
    }
}
