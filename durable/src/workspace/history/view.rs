//! Reading the history: a file's versions, the latest changes, one
//! version's content, a diff of two, a restore (itself a new change), and
//! `/undo` of the agent's last change (its own edits, and the facts its
//! nightly dreaming wrote to MEMORY.md).

use super::{apply, diff, file_prefix, record_keys, Actor, Change, Edit, HistoryError};
use crate::ports::ObjectStore;
use r2_layout::keys;
use r2_layout::AgentId;
use serde::Serialize;

/// Changes read at most for one answer (a file keeps at most `MAX_KEEP`).
pub const MAX_LISTED: usize = 200;
/// Log entries `/undo` looks through for the agent's last change.
pub const UNDO_SCAN: usize = 100;

async fn read_change<S: ObjectStore>(store: &S, key: &str) -> Result<Option<Change>, HistoryError> {
    Ok(store.get(key).await?.and_then(|o| hearth_json::from_slice(&o.body).ok()))
}

/// The changes of `path`, newest first (at most `limit`).
pub async fn versions<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    path: &str,
    limit: usize,
) -> Result<Vec<Change>, HistoryError> {
    let prefix = file_prefix(agent, path);
    let keys = record_keys(store, &prefix).await?;
    let mut out = Vec::new();
    for k in keys.iter().rev().take(limit.min(MAX_LISTED)) {
        out.extend(read_change(store, k).await?);
    }
    Ok(out)
}

/// The keys of the agent's latest changes, newest first (one listing: no record read).
async fn log_keys<S: ObjectStore>(store: &S, agent: &AgentId) -> Result<Vec<String>, HistoryError> {
    let page = store.list(&keys::history_log_prefix(agent), None, None).await?;
    let mut keys: Vec<String> = page.objects.into_iter().map(|o| o.key).collect();
    crate::order::sort(&mut keys);
    Ok(keys)
}

/// The agent's latest changes, any file, newest first.
pub async fn recent<S: ObjectStore>(store: &S, agent: &AgentId, limit: usize) -> Result<Vec<Change>, HistoryError> {
    let mut out = Vec::new();
    for k in log_keys(store, agent).await?.iter().take(limit.min(MAX_LISTED)) {
        out.extend(read_change(store, k).await?);
    }
    Ok(out)
}

/// Which version: the one a change made (`rev`), any kept content by hash
/// (`sha256:{hex}`, e.g. the `previous` of a file's oldest change), or the
/// file as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    Rev(String),
    Sha(String),
    Current,
}

impl Version {
    pub fn parse(s: &str) -> Result<Self, HistoryError> {
        let s = s.trim();
        if s.is_empty() || s == "current" {
            return Ok(Version::Current);
        }
        if let Some(hex) = s.strip_prefix("sha256:") {
            return Ok(Version::Sha(hex.to_ascii_lowercase()));
        }
        let ok = s.len() > 14 && s.as_bytes()[13] == b'-' && s[..13].bytes().all(|b| b.is_ascii_digit());
        if ok && s[14..].bytes().all(|b| b.is_ascii_alphanumeric()) {
            Ok(Version::Rev(s.to_owned()))
        } else {
            Err(HistoryError::Refused(format!(
                "{s:?} is not a version: give a change's rev (1776913200000-ab12cd34), sha256:{{hex}} or current"
            )))
        }
    }
}

/// The change of `path` named `rev`.
pub async fn change<S: ObjectStore>(store: &S, agent: &AgentId, path: &str, rev: &str) -> Result<Change, HistoryError> {
    let prefix = file_prefix(agent, path);
    let page = store.list(&format!("{prefix}@{rev}~"), None, None).await?;
    let Some(obj) = page.objects.first() else {
        return Err(HistoryError::NotFound(format!("{path} has no kept version {rev}")));
    };
    read_change(store, &obj.key).await?.ok_or_else(|| HistoryError::NotFound(format!("version {rev} is unreadable")))
}

/// A version's bytes; `Ok(None)`: in that version the file does not exist.
pub async fn content<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    path: &str,
    version: &Version,
) -> Result<Option<Vec<u8>>, HistoryError> {
    let sha = match version {
        Version::Current => return Ok(store.get(&keys::workspace_key(agent, path)).await?.map(|o| o.body)),
        Version::Sha(hex) => hex.clone(),
        Version::Rev(rev) => match change(store, agent, path, rev).await?.sha256 {
            Some(sha) => sha,
            None => return Ok(None),
        },
    };
    let key = keys::history_blob(agent, &sha)?;
    match store.get(&key).await? {
        Some(o) => Ok(Some(o.body)),
        None => Err(HistoryError::NotFound(format!("no kept content sha256:{sha}"))),
    }
}

/// A unified diff of two versions of `path`.
pub async fn diff<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    path: &str,
    from: &Version,
    to: &Version,
) -> Result<String, HistoryError> {
    let text = |b: Option<Vec<u8>>| b.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let a = text(content(store, agent, path, from).await?);
    let b = text(content(store, agent, path, to).await?);
    let name = |v: &Version| match v {
        Version::Current => format!("{path} (current)"),
        Version::Rev(r) => format!("{path}@{r}"),
        Version::Sha(s) => format!("{path}@sha256:{}", &s[..s.len().min(12)]),
    };
    Ok(diff::unified(&name(from), &name(to), &a, &b))
}

/// Makes `path` what it was in `version` again: a new change by `actor`.
/// None when the file already is that version.
#[allow(clippy::too_many_arguments)]
pub async fn restore<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    path: &str,
    version: &Version,
    actor: Actor,
    why: &str,
    now: i64,
    keep: usize,
) -> Result<Option<Change>, HistoryError> {
    if *version == Version::Current {
        return Ok(None);
    }
    let bytes = content(store, agent, path, version).await?;
    let label = match version {
        Version::Rev(r) => r.clone(),
        Version::Sha(s) => format!("sha256:{s}"),
        Version::Current => String::new(),
    };
    let why = if why.trim().is_empty() { format!("restore of {label}") } else { format!("restore of {label}: {why}") };
    let edit = Edit { path, content: bytes, actor, why, undoes: None, content_type: None };
    apply(store, agent, edit, now, keep).await
}

/// What `/undo` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum Undo {
    /// `undone` is reverted by `change`.
    Reverted { undone: Change, change: Change },
    /// The agent made no change that is still kept and not undone.
    Nothing,
    /// The file changed again after the agent's change (by `since`; the
    /// change itself when it was changed outside Hearth): undoing it would
    /// throw that away, so nothing was done.
    ChangedSince { undone: Change, since: Change },
    /// The file is already as it was before the change (put back by hand).
    AlreadyAsBefore { undone: Change },
}

/// Whether `/undo` takes `c` back: what the agent wrote with its tools, and
/// what its dreaming added to MEMORY.md (facts, by night or by the owner's
/// approval). Dreaming's diary (DREAMS.md) is a record of what a sweep
/// judged, not knowledge: it is passed over, as are the owner's own changes.
fn undoable(c: &Change) -> bool {
    match c.actor {
        Actor::Agent => true,
        Actor::Dreaming => c.path == r2_layout::WorkspaceFile::Memory.file_name(),
        _ => false,
    }
}

/// Reverts the agent's last change that was not undone yet ([`undoable`]):
/// the file gets the content it had before (or is deleted again, or restored).
pub async fn undo<S: ObjectStore>(store: &S, agent: &AgentId, now: i64, keep: usize) -> Result<Undo, HistoryError> {
    // Records are read one by one, newest first, up to the agent's last
    // change not undone (usually the first): not the whole scan up front.
    let mut changes: Vec<Change> = Vec::new();
    let mut undone = std::collections::HashSet::new();
    for key in log_keys(store, agent).await?.iter().take(UNDO_SCAN) {
        let Some(c) = read_change(store, key).await? else { continue };
        changes.push(c);
        let (i, c) = (changes.len() - 1, &changes[changes.len() - 1]);
        if let Some(r) = &c.undoes {
            undone.insert(r.clone());
        }
        if !undoable(c) || undone.contains(&c.rev) {
            continue;
        }
        // The file must still be what this change made it (a later change that
        // was undone in turn leaves it so); else undoing would lose that change.
        let now_sha = store.get(&keys::workspace_key(agent, &c.path)).await?.map(|o| crate::text::sha256_hex(&o.body));
        if now_sha != c.sha256 {
            let since = changes[..i].iter().find(|n| n.path == c.path).cloned().unwrap_or_else(|| c.clone());
            return Ok(Undo::ChangedSince { undone: c.clone(), since });
        }
        let before = match &c.previous {
            Some(sha) => Some(content(store, agent, &c.path, &Version::Sha(sha.clone())).await?.unwrap_or_default()),
            None => None,
        };
        let edit = Edit {
            path: &c.path,
            content: before,
            actor: Actor::Owner,
            // Dreaming's reasons name it already ("dreaming 2026-04-23: 2 fact(s) promoted").
            why: match c.actor {
                Actor::Dreaming => format!("/undo of {} ({})", c.why, c.rev),
                _ => format!("/undo of the agent's {} ({})", c.why, c.rev),
            },
            undoes: Some(c.rev.clone()),
            content_type: None,
        };
        return match apply(store, agent, edit, now, keep).await? {
            Some(change) => Ok(Undo::Reverted { undone: c.clone(), change }),
            // Already as before (changed back by hand): record nothing, report it.
            None => Ok(Undo::AlreadyAsBefore { undone: c.clone() }),
        };
    }
    Ok(Undo::Nothing)
}

/// A line for the owner about an undo (`/undo`'s answer).
pub fn describe(undo: &Undo, timezone: &str) -> String {
    let when = |c: &Change| crate::clock::datetime_string(c.at, timezone);
    match undo {
        Undo::Nothing => "↩️ Nothing to undo: I have made no workspace change that is still kept.".into(),
        Undo::Reverted { undone, change } => {
            let what = match (&undone.previous, &undone.sha256, undone.actor) {
                (None, _, Actor::Dreaming) => format!("deleted {} again: my dreaming had created it", undone.path),
                (Some(_), _, Actor::Dreaming) => format!(
                    "took the facts my dreaming added back out of {}; that memory is not proposed again while it stays as it is",
                    undone.path
                ),
                (None, _, _) => format!("deleted {} again: I had created it", undone.path),
                (Some(_), None, _) => format!("restored {}: I had deleted it", undone.path),
                (Some(_), Some(_), _) => format!("put {} back as it was: I had changed it", undone.path),
            };
            format!(
                "↩️ Undone: {what} ({}, {}). The undo is version {} in the history.",
                undone.why,
                when(undone),
                change.rev
            )
        }
        Undo::AlreadyAsBefore { undone } => format!(
            "↩️ My last change ({} of {} at {}) is already undone: the file is as it was before.",
            undone.why,
            undone.path,
            when(undone)
        ),
        Undo::ChangedSince { undone, since } if since.rev == undone.rev => format!(
            "↩️ I did not undo my last change ({} of {} at {}): the file was changed outside Hearth since, and \
             undoing would lose that. See its versions with GET /api/agents/{{id}}/history/{}.",
            undone.why,
            undone.path,
            when(undone),
            undone.path
        ),
        Undo::ChangedSince { undone, since } => format!(
            "↩️ I did not undo my last change ({} of {} at {}): the file changed again since ({} by {} at {}), \
             and undoing would lose that. See its versions with GET /api/agents/{{id}}/history/{}.",
            undone.why,
            undone.path,
            when(undone),
            since.why,
            since.actor.as_str(),
            when(since),
            undone.path
        ),
    }
}
