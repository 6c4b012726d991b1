//! Session reset (by command, daily or idle policy, admin).
//!
//! Both follow one rule: nothing leaves SQLite before it is safely in R2. A
//! reset writes the whole history as gzipped JSONL, confirms the object is
//! there, and only then clears; if the write fails the history stays and the
//! user is told. A compaction writes the compacted prefix as a part archive
//! before removing those rows and leaving a marker the next turn replays from.
//!
//! A reset after a compaction archives what the session still holds: the
//! latest compaction summary (as the user message the model saw,
//! "[Summary of our earlier conversation …]", stamped with the compaction
//! time) followed by the rows after it. So the reset archive reads on its own
//! with `gunzip | jq`, every line keeps seed 003's message shape, and the
//! compacted messages themselves stay in the `-part{ts}` archives.
//!
//! A reset is resumable: its progress (archive written, memories extracted,
//! each place they were written to) is kept in the session's meta, so one
//! resumed after eviction or retried after a storage error neither archives
//! twice nor notes the same memories twice. The extracted memories are saved
//! there before they are written anywhere; a write whose progress was lost
//! (evicted right after it) is recognised: the daily note already holds the
//! block, the memory already holds the entry.
//!
//! Privacy: extracted memories go to the daily note (`memory/YYYY-MM-DD.md`,
//! loaded into the owner's main prompt) only from the main scope. Other scopes
//! (groups, other DMs) keep them in their own memory store, as part of the
//! Archive entry every compaction and reset leaves there.

use super::archive::{
    add_archive_entry, archive_entry_name, index_conversation, note_in_daily_file, put_confirmed, split_extraction,
};
use super::deps::SessionDeps;
use super::meter;
use super::prefix::Prepared;
use super::replay::{conversation, with_latest_summary};
use super::store::SessionStore;
use crate::clock;
use crate::llm::{self, ChatRequest, Hydrated};
use crate::ports::{LogLevel, ObjectStore, Platform, Sql, StorageError};
use r2_layout::metadata::ArchiveMetadata;
use r2_layout::{archive, keys};
use serde::Serialize;

/// Asked of the model before a reset (appended after the history, so the
/// provider's cache serves the prefix).
pub const EXTRACT_PROMPT: &str = "This conversation is about to be archived and a fresh session started. \
Reply with two sections. \"## Summary\": a few sentences on what this conversation was about. \"## Memories\": \
the durable facts worth remembering from it (preferences, decisions, dates, commitments, people), one per line \
starting with \"- \". If there is nothing worth keeping, reply with exactly NONE.";

const RESET_PROGRESS: &str = "reset_progress";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    Command,
    Daily,
    Idle,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResetOutcome {
    pub archive_key: Option<String>,
    pub messages: usize,
    pub memories: usize,
    pub media_deleted: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    #[error("the archive could not be written: {0}")]
    Archive(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// How far a reset of `session_id` got.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResetProgress {
    session_id: String,
    /// Messages archived; progress recorded for another history is stale.
    messages: usize,
    archive_key: Option<String>,
    /// The archived exchanges are in the conversation memory.
    #[serde(default)]
    indexed: bool,
    /// The pre-reset extraction, saved before it is written anywhere (None:
    /// not asked for yet).
    extraction: Option<Extraction>,
}

/// What the pre-reset extraction found, and where it is written already.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Extraction {
    summary: String,
    memories: Vec<String>,
    /// When it was asked for: the daily note header's time, the entry's creation time.
    at: i64,
    /// The last activity before the reset: its day's daily note gets the memories.
    last_activity: i64,
    in_daily_note: bool,
    in_memory: bool,
}

impl ResetProgress {
    fn load<S: Sql>(store: &SessionStore<'_, S>, session_id: &str, messages: usize) -> Result<Self, StorageError> {
        let saved: Option<ResetProgress> =
            store.meta(RESET_PROGRESS)?.and_then(|v| hearth_json::from_slice(v.as_bytes()).ok());
        Ok(match saved {
            Some(p) if p.session_id == session_id && p.messages == messages => p,
            _ => ResetProgress { session_id: session_id.to_owned(), messages, ..Default::default() },
        })
    }

    fn save<S: Sql>(&self, store: &SessionStore<'_, S>) -> Result<(), StorageError> {
        let json = serde_json::to_string(self).map_err(|e| StorageError(e.to_string()))?;
        store.set_meta(RESET_PROGRESS, &json)
    }
}

/// Deletes the session's media; a failure is logged, not fatal: what is left
/// stays under the same prefix and goes with the next reset.
async fn delete_media<P: Platform>(p: &P, deps: &SessionDeps<'_>, session_key: &str) -> usize {
    let deleted = match crate::media::delete_session_media(p.store(), session_key).await {
        Ok(n) => n,
        Err(e) => {
            p.log(LogLevel::Warn, &format!("media of {session_key} not (all) deleted, the next reset retries: {e}"));
            0
        }
    };
    deps.media_cache.borrow_mut().forget_prefix(&keys::media_prefix(session_key));
    deleted
}

/// Resets the session: archive → confirm → extract memories → delete media →
/// clear. On an archive failure nothing is cleared. Resumable (see the module
/// docs): steps already done for this history are not done again.
pub async fn reset<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    prepared: &Prepared,
    reason: ResetReason,
) -> Result<ResetOutcome, ResetError> {
    let store = SessionStore::new(p.sql());
    let cfg = deps.config;
    let session_key = deps.key.render();
    let Some(session_id) = store.meta("session_id")? else {
        let media_deleted = delete_media(p, deps, &session_key).await;
        return Ok(ResetOutcome { media_deleted, ..Default::default() });
    };
    let archived = with_latest_summary(&store, deps.history, &session_id)?;
    let mut progress = ResetProgress::load(&store, &session_id, archived.len())?;
    let mut outcome = ResetOutcome { messages: archived.len(), ..Default::default() };
    if !archived.is_empty() {
        let now = p.now_ms();
        let key = keys::session_archive(&cfg.agent, &session_id).map_err(|e| ResetError::Archive(e.to_string()))?;
        if progress.archive_key.as_deref() != Some(key.as_str()) {
            let usage = store.usage_totals(&session_id)?;
            let meta = ArchiveMetadata {
                session_key: session_key.clone(),
                session_id: session_id.clone(),
                agent_id: cfg.agent.to_string(),
                message_count: archived.len() as u64,
                archived_at: now,
                input_tokens: usage.input + usage.cache_read + usage.cache_write,
                output_tokens: usage.output,
                total_tokens: usage.total_tokens,
            };
            let gz = p
                .store()
                .gzip(&archive::encode_lines(&archived))
                .await
                .map_err(|e| ResetError::Archive(e.to_string()))?;
            put_confirmed(p.store(), &key, gz, meta.to_pairs()).await.map_err(ResetError::Archive)?;
            progress.archive_key = Some(key.clone());
            progress.save(&store)?;
        } else {
            p.log(LogLevel::Info, &format!("reset resumed: {key} is already written"));
        }
        outcome.archive_key = Some(key.clone());
        // What was said, searchable (before the extraction: it needs no LLM call).
        if !progress.indexed && index_conversation(p, deps, &key, &session_id, &archived).await {
            progress.indexed = true;
            progress.save(&store)?;
        }
        if progress.extraction.is_none() {
            progress.extraction = Some(extract_before_reset(p, deps, prepared, &store, &session_id, now).await?);
            progress.save(&store)?;
        }
        outcome.memories = note_extraction(p, deps, &store, &session_id, &mut progress).await?;
    }
    outcome.media_deleted = delete_media(p, deps, &session_key).await;
    store.clear_session(&session_id)?;
    p.log(LogLevel::Info, &format!("session {session_key} reset ({reason:?}): {} messages archived", outcome.messages));
    Ok(outcome)
}

/// The pre-reset memory extraction: one LLM call over the conversation with
/// [`EXTRACT_PROMPT`] appended. A failed call finds nothing (the reset goes on).
async fn extract_before_reset<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    prepared: &Prepared,
    store: &SessionStore<'_, S>,
    session_id: &str,
    now: i64,
) -> Result<Extraction, StorageError> {
    let cfg = deps.config;
    // Memories go to the day of the last activity, not today.
    let last_activity = store.meta("updated_at")?.and_then(|v| v.parse().ok()).unwrap_or(now);
    let found = Extraction { at: now, last_activity, ..Default::default() };
    let conversation = conversation(store, deps.history, session_id)?;
    let media = Hydrated::new();
    let req = ChatRequest {
        system: &prepared.system,
        messages: &conversation,
        tools: &prepared.tools,
        media: &media,
        appended_user: Some(EXTRACT_PROMPT),
        memo: None,
        stamps: &[],
        prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
    };
    let kind = meter::kind_for(deps.key, crate::protocol::usage::UsageKind::ResetExtraction);
    let size = super::context::estimate_tokens(&prepared.system, &conversation, prepared.tools_len, &media);
    if let meter::Gate::Stop(stop) = meter::before_call(p, deps, kind, size).await? {
        // The reset goes on without it: archiving must not depend on the budget.
        p.log(LogLevel::Warn, &format!("memory extraction before reset skipped: {}", stop.message));
        return Ok(found);
    }
    let reply = match llm::complete_repairing(p, &cfg.llm, &req).await {
        Ok(done) => done.reply,
        Err(e) => {
            meter::call_failed(deps, p.now_ms());
            p.log(LogLevel::Warn, &format!("memory extraction before reset skipped: {e}"));
            return Ok(found);
        }
    };
    let sent = meter::Sent {
        system: &prepared.system,
        tools: (prepared.tools.len(), prepared.tools_len),
        prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
    };
    meter::after_call(p, deps, store, session_id, kind, &reply, sent)?;
    let (summary, memories) = split_extraction(&reply.text());
    Ok(Extraction { summary, memories, ..found })
}

/// Writes the saved extraction where it goes: the memories to the daily note
/// of the last activity's date (main scope) and, with the summary, to an
/// Archive entry of the scope's memory store. Each destination is recorded in
/// the progress as soon as it is written, so a retried reset writes only what
/// is missing. Returns how many memories were kept.
async fn note_extraction<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    progress: &mut ResetProgress,
) -> Result<usize, StorageError> {
    let Some(found) = progress.extraction.clone() else { return Ok(0) };
    if !found.in_daily_note {
        let header = format!("### Extracted before reset ({})", clock::time_string(found.at, &deps.config.timezone));
        if note_in_daily_file(p, deps, found.last_activity, &header, &found.memories).await {
            record(progress, store, |x| x.in_daily_note = true)?;
        }
    }
    if !found.in_memory {
        let name = archive_entry_name(session_id);
        if add_archive_entry(p, deps, &name, &found.summary, &found.memories, found.at).await.is_some() {
            record(progress, store, |x| x.in_memory = true)?;
        }
    }
    let kept = progress.extraction.as_ref().is_some_and(|x| x.in_daily_note || x.in_memory);
    Ok(if kept { found.memories.len() } else { 0 })
}

/// Marks a destination of the extraction as written, durably.
fn record<S: Sql>(
    progress: &mut ResetProgress,
    store: &SessionStore<'_, S>,
    done: impl FnOnce(&mut Extraction),
) -> Result<(), StorageError> {
    if let Some(x) = progress.extraction.as_mut() {
        done(x);
    }
    progress.save(store)
}

/// Whether a policy reset is due before the next message.
pub fn policy_reset_due(deps: &SessionDeps<'_>, last_activity: Option<i64>, now: i64) -> Option<ResetReason> {
    // Heartbeat and job sessions start each run fresh already.
    if matches!(deps.key, crate::inbound::SessionKey::Heartbeat(_) | crate::inbound::SessionKey::Job { .. }) {
        return None;
    }
    let last = last_activity?;
    let lc = &deps.config.lifecycle;
    if let Some((h, m)) = lc.daily_at {
        if last < clock::last_daily_boundary(now, &deps.config.timezone, h, m) {
            return Some(ResetReason::Daily);
        }
    }
    if let Some(hours) = lc.idle_hours {
        if now - last > hours as i64 * 3_600_000 {
            return Some(ResetReason::Idle);
        }
    }
    None
}
