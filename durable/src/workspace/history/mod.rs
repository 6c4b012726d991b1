//! The workspace history: every change to a file of `agents/{id}/` keeps the
//! version it replaced, with who made the change and why, so the owner can
//! see what changed, read and diff any kept version, restore one, and undo
//! the agent's last change (`/undo`).
//!
//! Layout (see r2-layout's README; `scripts/seed.mjs` writes the same):
//!
//! ```text
//! history/{id}/blobs/{sha256}                          a version's bytes (identical versions once)
//! history/{id}/files/{path}/@{rev}~{after}~{before}    one change of {path} (JSON: a Change)
//! history/{id}/log/{9999999999999-at}-{nonce}          the same change, agent-wide, newest first
//! ```
//!
//! `rev` is `{at:013}-{nonce}` (ms, then 8 hex of a hash of the change), so
//! a file's changes list in time order; `after`/`before` are the SHA-256 of
//! the new and the replaced content (`-`: none, a creation or a deletion).
//! Putting them in the key lets the nightly clean-up find unreferenced blobs
//! by listing keys, without reading a record.
//!
//! **Order of a change** ([`apply`]): the replaced version's blob and the new
//! one's are stored first (a `head` each, a `put` only when absent), then the
//! file is written, then the two records; then the file's oldest records past
//! `HISTORY_KEEP_VERSIONS` are deleted. The version a write replaces is in
//! R2 before it is replaced; a failure after the write leaves the change
//! without its record (logged by the caller), never a record of a write that
//! did not happen. A write that changes nothing (same bytes) is no change.
//!
//! **Retention**: each file keeps its last `HISTORY_KEEP_VERSIONS` changes
//! (50 by default); blobs no kept change names are deleted by
//! [`collect_garbage`] (the Agent object runs it daily), once they are an
//! hour old (a write in flight stores its blobs before its records).

pub mod diff;
pub mod view;

use crate::ports::{ObjectStore, PutOptions, StorageError};
use crate::text::sha256_hex;
use r2_layout::keys::{self, KeyError};
use r2_layout::AgentId;
use serde::Serialize;

pub use crate::settings::dreaming::{DEFAULT_KEEP, MAX_KEEP};
/// Unreferenced blobs younger than this are left alone by the clean-up.
pub const GC_GRACE_MS: i64 = 3_600_000;
/// `9999999999999 - at`: log keys sort newest first.
const LOG_EPOCH: i64 = 9_999_999_999_999;

/// Who changed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The agent's tools (`write_file`, `edit_file`, `delete_file`).
    Agent,
    /// The owner: the admin API (a write, a restore) or `/undo`.
    Owner,
    /// The nightly memory sweep (MEMORY.md, DREAMS.md).
    Dreaming,
    /// Accepting a pinned guardrail update.
    Pins,
    /// `npm run seed` (with `--force` over an existing file).
    Seed,
    /// A reset or compaction writing the daily note.
    Reset,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Agent => "agent",
            Actor::Owner => "owner",
            Actor::Dreaming => "dreaming",
            Actor::Pins => "pins",
            Actor::Seed => "seed",
            Actor::Reset => "reset",
        }
    }
}

/// One change of one file (the body of its two record objects).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The workspace path (relative to `agents/{id}/`).
    pub path: String,
    /// `{at:013}-{nonce}`: names the version this change made.
    pub rev: String,
    pub at: i64,
    pub actor: Actor,
    /// Why, in words (`write_file`, `restore of …`, `dreaming 2026-04-23: 2 facts`).
    pub why: String,
    /// SHA-256 of the content after the change; None: the file was deleted.
    pub sha256: Option<String>,
    pub size: Option<u64>,
    /// SHA-256 of the content it replaced; None: the file was created.
    pub previous: Option<String>,
    pub previous_size: Option<u64>,
    /// The rev of the change this one reverted (`/undo`, a restore of its before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("{0}")]
    Key(#[from] KeyError),
    /// No such version (or file history).
    #[error("{0}")]
    NotFound(String),
    /// A request that cannot be done as asked.
    #[error("{0}")]
    Refused(String),
}

/// A change to make: the file's new content (None: delete it).
pub struct Edit<'a> {
    pub path: &'a str,
    pub content: Option<Vec<u8>>,
    pub actor: Actor,
    pub why: String,
    pub undoes: Option<String>,
    /// The written object's content type (default: by extension).
    pub content_type: Option<String>,
}

impl<'a> Edit<'a> {
    pub fn write(path: &'a str, content: impl Into<Vec<u8>>, actor: Actor, why: impl Into<String>) -> Self {
        Edit { path, content: Some(content.into()), actor, why: why.into(), undoes: None, content_type: None }
    }

    pub fn delete(path: &'a str, actor: Actor, why: impl Into<String>) -> Self {
        Edit { path, content: None, actor, why: why.into(), undoes: None, content_type: None }
    }
}

/// The content type a workspace file is written with.
pub fn content_type_for(path: &str) -> String {
    if path.ends_with(".json") {
        "application/json".into()
    } else if path.ends_with(".md") || !path.rsplit('/').next().unwrap_or(path).contains('.') {
        "text/markdown; charset=utf-8".into()
    } else {
        "text/plain; charset=utf-8".into()
    }
}

/// Where a file's changes are kept.
pub fn file_prefix(agent: &AgentId, path: &str) -> String {
    keys::history_file_prefix(agent, path, || sha256_hex(path.as_bytes()))
}

/// What a record key says: `(rev, after, before)`.
pub fn parse_record_key<'k>(prefix: &str, key: &'k str) -> Option<(&'k str, Option<&'k str>, Option<&'k str>)> {
    let rest = key.strip_prefix(prefix)?.strip_prefix('@')?;
    let mut parts = rest.split('~');
    let rev = parts.next()?;
    let sha = |p: Option<&'k str>| p.and_then(|s| (s != "-").then_some(s));
    let after = parts.next();
    let before = parts.next();
    (rev.len() > 14 && after.is_some() && before.is_some()).then_some((rev, sha(after), sha(before)))
}

fn record_key(prefix: &str, c: &Change) -> String {
    let or_dash = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".into());
    format!("{prefix}@{}~{}~{}", c.rev, or_dash(&c.sha256), or_dash(&c.previous))
}

/// The log key of the change `rev` (`{at:013}-{nonce}`).
pub fn log_key(agent: &AgentId, rev: &str) -> Option<String> {
    let (at, nonce) = rev.split_once('-')?;
    let at: i64 = at.parse().ok()?;
    Some(format!("{}{:013}-{nonce}", keys::history_log_prefix(agent), LOG_EPOCH - at))
}

/// Stores `bytes` as a blob unless it is there already. Returns its SHA-256.
async fn keep_blob<S: ObjectStore>(store: &S, agent: &AgentId, bytes: &[u8]) -> Result<String, HistoryError> {
    let sha = sha256_hex(bytes);
    let key = keys::history_blob(agent, &sha)?;
    if store.head(&key).await?.is_none() {
        store.put(&key, bytes.to_vec(), PutOptions::default()).await?;
    }
    Ok(sha)
}

/// Records a change whose write happened (or happens) elsewhere: blobs of
/// `before` and `after`, the two records, the file's retention. `None`
/// when nothing changed.
#[allow(clippy::too_many_arguments)]
pub async fn record<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    path: &str,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
    actor: Actor,
    why: &str,
    undoes: Option<String>,
    now: i64,
    keep: usize,
) -> Result<Option<Change>, HistoryError> {
    let change = match prepare(store, agent, path, before, after, actor, why, undoes, now).await? {
        Some(c) => c,
        None => return Ok(None),
    };
    write_records(store, agent, &change, keep).await?;
    Ok(Some(change))
}

/// Stores the blobs and builds the change (no record written yet): the
/// first half of [`record`], for a caller that changes the file itself in
/// between (so the replaced version is in R2 before it is gone), then calls
/// [`write_records`]. `None` when nothing changes.
#[allow(clippy::too_many_arguments)]
pub async fn prepare<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    path: &str,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
    actor: Actor,
    why: &str,
    undoes: Option<String>,
    now: i64,
) -> Result<Option<Change>, HistoryError> {
    if before == after {
        return Ok(None);
    }
    let previous = match before {
        Some(b) => Some(keep_blob(store, agent, b).await?),
        None => None,
    };
    let sha256 = match after {
        Some(a) => Some(keep_blob(store, agent, a).await?),
        None => None,
    };
    let seed = format!("{path}\n{now}\n{sha256:?}\n{previous:?}\n{why}");
    let rev = format!("{now:013}-{}", &sha256_hex(seed.as_bytes())[..8]);
    Ok(Some(Change {
        path: path.to_owned(),
        rev,
        at: now,
        actor,
        why: crate::text::truncate_chars(why, 500),
        sha256,
        size: after.map(|a| a.len() as u64),
        previous,
        previous_size: before.map(|b| b.len() as u64),
        undoes,
    }))
}

/// The second half of [`record`]: the change's two records, then the file's retention.
pub async fn write_records<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    change: &Change,
    keep: usize,
) -> Result<(), HistoryError> {
    let body = serde_json::to_vec(change).map_err(|e| StorageError(e.to_string()))?;
    let json = || PutOptions { content_type: Some("application/json".into()), ..Default::default() };
    let prefix = file_prefix(agent, &change.path);
    store.put(&record_key(&prefix, change), body.clone(), json()).await?;
    if let Some(log) = log_key(agent, &change.rev) {
        store.put(&log, body, json()).await?;
    }
    prune(store, agent, &prefix, keep).await
}

/// Writes (or deletes) a workspace file and records the change. Returns
/// the change, or None when the file already was like that.
pub async fn apply<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    edit: Edit<'_>,
    now: i64,
    keep: usize,
) -> Result<Option<Change>, HistoryError> {
    let key = keys::workspace_key(agent, edit.path);
    let before = store.get(&key).await?.map(|o| o.body);
    let Some(change) = prepare(
        store,
        agent,
        edit.path,
        before.as_deref(),
        edit.content.as_deref(),
        edit.actor,
        &edit.why,
        edit.undoes.clone(),
        now,
    )
    .await?
    else {
        return Ok(None);
    };
    match edit.content {
        Some(bytes) => {
            let content_type = edit.content_type.unwrap_or_else(|| content_type_for(edit.path));
            store.put(&key, bytes, PutOptions { content_type: Some(content_type), ..Default::default() }).await?
        }
        None => store.delete(&[key]).await?,
    }
    write_records(store, agent, &change, keep).await?;
    Ok(Some(change))
}

/// The record keys of one file, oldest first.
pub async fn record_keys<S: ObjectStore>(store: &S, prefix: &str) -> Result<Vec<String>, StorageError> {
    let mut keys = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(prefix, Some("/"), cursor.as_deref()).await?;
        keys.extend(page.objects.into_iter().map(|o| o.key).filter(|k| parse_record_key(prefix, k).is_some()));
        match page.cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    crate::order::sort(&mut keys);
    Ok(keys)
}

/// Deletes a file's oldest records beyond `keep` (and their log entries).
async fn prune<S: ObjectStore>(store: &S, agent: &AgentId, prefix: &str, keep: usize) -> Result<(), HistoryError> {
    let keys = record_keys(store, prefix).await?;
    let excess = keys.len().saturating_sub(keep.max(1));
    if excess == 0 {
        return Ok(());
    }
    let mut doomed: Vec<String> = Vec::with_capacity(excess * 2);
    for k in &keys[..excess] {
        if let Some(log) = parse_record_key(prefix, k).and_then(|(rev, _, _)| log_key(agent, rev)) {
            doomed.push(log);
        }
        doomed.push(k.clone());
    }
    for chunk in doomed.chunks(1000) {
        store.delete(chunk).await?;
    }
    Ok(())
}

/// What a clean-up did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    pub records: usize,
    pub blobs: usize,
    pub blobs_deleted: usize,
}

/// Deletes the blobs no kept change names (older than [`GC_GRACE_MS`]).
pub async fn collect_garbage<S: ObjectStore>(store: &S, agent: &AgentId, now: i64) -> Result<GcReport, HistoryError> {
    let mut report = GcReport::default();
    let mut referenced = std::collections::HashSet::new();
    let files = keys::history_files_prefix(agent);
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(&files, None, cursor.as_deref()).await?;
        for o in &page.objects {
            // `{folder}/@{rev}~{after}~{before}`: the folder is everything up to the last "/@".
            let Some(at) = o.key.rfind("/@") else { continue };
            if let Some((_, after, before)) = parse_record_key(&o.key[..=at], &o.key) {
                report.records += 1;
                referenced.extend(after.map(str::to_owned));
                referenced.extend(before.map(str::to_owned));
            }
        }
        match page.cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    let blobs = keys::history_blobs_prefix(agent);
    let mut doomed = Vec::new();
    cursor = None;
    loop {
        let page = store.list(&blobs, None, cursor.as_deref()).await?;
        for o in page.objects {
            report.blobs += 1;
            let sha = o.key.strip_prefix(&blobs).unwrap_or("");
            if !referenced.contains(sha) && now - o.uploaded_ms >= GC_GRACE_MS {
                doomed.push(o.key);
            }
        }
        match page.cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    report.blobs_deleted = doomed.len();
    for chunk in doomed.chunks(1000) {
        store.delete(chunk).await?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
