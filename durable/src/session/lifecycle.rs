//! Session lifecycle: reset (by command, daily or idle policy, admin) and
//! compaction when the context would overflow.
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

use super::store::{CompactMarker, SessionStore};
use super::turn::{Prepared, SessionDeps};
use crate::clock;
use crate::llm::{self, ChatRequest, Hydrated, LlmReply, StopReason};
use crate::ports::{LogLevel, MemoryService, ObjectStore, Platform, PutOptions, Sql, StorageError};
use r2_layout::metadata::{ArchiveMetadata, PartMetadata};
use r2_layout::{archive, keys, AssistantBlock, Message, ResultBlock, Scope, UserBlock, UserContent};
use serde::{Deserialize, Serialize};

const ARCHIVE_CONTENT_TYPE: &str = "application/gzip";

/// Asked of the model before a reset (appended after the history, so the
/// provider's cache serves the prefix).
pub const EXTRACT_PROMPT: &str = "This conversation is about to be archived and a fresh session started. \
Reply with two sections. \"## Summary\": a few sentences on what this conversation was about. \"## Memories\": \
the durable facts worth remembering from it (preferences, decisions, dates, commitments, people), one per line \
starting with \"- \". If there is nothing worth keeping, reply with exactly NONE.";

/// Asked of the model to compact the oldest part of a conversation.
pub const COMPACT_PROMPT: &str = "The conversation above is being compacted to save context. Reply with two \
sections. \"## Summary\": a concise summary of everything above that later turns need (facts, decisions, open \
tasks, the user's requests and your commitments). \"## Memories\": durable facts worth keeping beyond this \
conversation, one per line starting with \"- \", or NONE.";

/// The result given to a tool call that has none (its turn was cut short).
pub const INTERRUPTED_TOOL: &str = "interrupted: the tool did not finish";

/// Put first when older messages are left out of a request.
pub const TRIM_NOTE: &str =
    "[Note: earlier messages of this conversation were left out to fit the model's context window.]";

/// Replaces an attachment left out of a request that would not fit.
pub const MEDIA_CUT_NOTE: &str = "[An attachment is left out here to fit the model's context window.]";

/// Tokens an image adds to a request (a large image costs about this much on
/// either provider).
pub const IMAGE_TOKENS: u64 = 1_600;
/// Most tokens a document (PDF) is counted for.
pub const DOCUMENT_MAX_TOKENS: u64 = 100_000;

const RESET_PROGRESS: &str = "reset_progress";

/// How archive file names end; memory entry names do not (so a marker tells
/// an entry from a file).
const ARCHIVE_SUFFIX: &str = ".jsonl.gz";

/// The memory entry of an archive: `archive {sessionId}` for a reset,
/// `archive {sessionId}-part{ts}` for a compaction.
pub fn archive_entry_name(archive_stem: &str) -> String {
    format!("archive {archive_stem}")
}

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResetProgress {
    session_id: String,
    /// Messages archived; progress recorded for another history is stale.
    messages: usize,
    archive_key: Option<String>,
    /// The pre-reset extraction, saved before it is written anywhere (None:
    /// not asked for yet).
    extraction: Option<Extraction>,
}

/// What the pre-reset extraction found, and where it is written already.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
        let saved: Option<ResetProgress> = store.meta(RESET_PROGRESS)?.and_then(|v| serde_json::from_str(&v).ok());
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

/// Appends extracted memories to a daily note under a timestamped header.
/// A block the note already holds (written by an attempt whose progress was
/// not recorded) is not appended again.
async fn append_daily<S: ObjectStore>(
    store: &S,
    key: &str,
    header: &str,
    lines: &[String],
) -> Result<(), StorageError> {
    let mut block = format!("{header}\n");
    for l in lines {
        block.push_str(l);
        block.push('\n');
    }
    let mut text = match store.get(key).await? {
        Some(o) => String::from_utf8_lossy(&o.body).into_owned(),
        None => String::new(),
    };
    if text.contains(&block) {
        return Ok(());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&block);
    store
        .put(
            key,
            text.into_bytes(),
            PutOptions { content_type: Some("text/markdown; charset=utf-8".into()), ..Default::default() },
        )
        .await
}

/// Notes memories in the owner's daily file, from the main scope only.
/// Returns whether they were written.
async fn note_in_daily_file<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    date_of: i64,
    header: &str,
    lines: &[String],
) -> bool {
    if lines.is_empty() || deps.key.scope() != Scope::Main {
        return false;
    }
    let cfg = deps.config;
    let date = clock::date_string(date_of, &cfg.timezone);
    match append_daily(p.store(), &keys::daily_note(&cfg.agent, &date), header, lines).await {
        Ok(()) => {
            deps.workspace_cache.borrow_mut().invalidate_listings();
            true
        }
        Err(e) => {
            p.log(LogLevel::Error, &format!("could not save extracted memories: {e}"));
            false
        }
    }
}

/// Stores a summary (and the memories found with it) as an Archive entry of
/// the session scope's memory store. Returns the entry's name (the memory may
/// add a suffix to keep names unique).
async fn add_archive_entry<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    name: &str,
    summary: &str,
    memories: &[String],
    at: i64,
) -> Option<String> {
    let mut content = summary.trim().to_owned();
    if !memories.is_empty() {
        if !content.is_empty() {
            content.push_str("\n\n");
        }
        content.push_str("Memories:\n");
        content.push_str(&memories.join("\n"));
    }
    if content.is_empty() {
        return None;
    }
    match p.memory().add_archive(&crate::protocol::memory::store_for(deps.key), name, &content, at).await {
        Ok(name) => Some(name),
        Err(e) => {
            p.log(LogLevel::Warn, &format!("summary not added to memory as {name:?}: {e}"));
            None
        }
    }
}

/// The `- ` lines of a model's answer (NONE or nothing gives none).
pub fn bullet_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("- ") || l.starts_with("* "))
        .map(|l| format!("- {}", l[2..].trim()))
        .filter(|l| l.len() > 2)
        .collect()
}

/// Splits a compaction answer into (summary, memories).
pub fn split_compaction(text: &str) -> (String, Vec<String>) {
    let lower = text.to_ascii_lowercase();
    let mem_at = lower.find("## memories");
    let summary_part = match mem_at {
        Some(i) => &text[..i],
        None => text,
    };
    let summary = summary_part
        .trim()
        .strip_prefix("## Summary")
        .or_else(|| summary_part.trim().strip_prefix("## summary"))
        .unwrap_or(summary_part.trim())
        .trim()
        .to_owned();
    let summary = if summary.eq_ignore_ascii_case("none") { String::new() } else { summary };
    let memories = mem_at.map(|i| bullet_lines(&text[i..])).unwrap_or_default();
    (summary, memories)
}

/// Splits a pre-reset extraction answer into (summary, memories). A model
/// that answers with the list alone (no sections) gives memories only.
pub fn split_extraction(text: &str) -> (String, Vec<String>) {
    if text.to_ascii_lowercase().contains("## memories") {
        split_compaction(text)
    } else {
        (String::new(), bullet_lines(text))
    }
}

async fn put_confirmed<S: ObjectStore>(
    store: &S,
    key: &str,
    body: Vec<u8>,
    metadata: Vec<(String, String)>,
) -> Result<(), String> {
    let len = body.len() as u64;
    store
        .put(key, body, PutOptions { content_type: Some(ARCHIVE_CONTENT_TYPE.into()), custom_metadata: metadata })
        .await
        .map_err(|e| e.to_string())?;
    match store.head(key).await {
        Ok(Some(info)) if info.size == len => Ok(()),
        Ok(Some(info)) => Err(format!("archive has {} bytes, expected {len}", info.size)),
        Ok(None) => Err("archive not found after writing it".into()),
        Err(e) => Err(e.to_string()),
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
    let archived = with_latest_summary(&store, &session_id)?;
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
            put_confirmed(p.store(), &key, archive::encode(&archived), meta.to_pairs())
                .await
                .map_err(ResetError::Archive)?;
            progress.archive_key = Some(key.clone());
            progress.save(&store)?;
        } else {
            p.log(LogLevel::Info, &format!("reset resumed: {key} is already written"));
        }
        outcome.archive_key = Some(key.clone());
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
    let conversation = conversation(store, session_id)?;
    let media = Hydrated::new();
    let req = ChatRequest {
        system: &prepared.system,
        messages: &conversation,
        tools: &prepared.tools,
        media: &media,
        appended_user: Some(EXTRACT_PROMPT),
    };
    let reply = match llm::complete(p, &cfg.llm, &req).await {
        Ok(reply) => reply,
        Err(e) => {
            p.log(LogLevel::Warn, &format!("memory extraction before reset skipped: {e}"));
            return Ok(found);
        }
    };
    store.record_usage(p.now_ms(), session_id, &cfg.llm.model, &reply.usage)?;
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

/// The latest compaction summary (if any), then the rows after it, as stored.
fn with_latest_summary<S: Sql>(store: &SessionStore<'_, S>, session_id: &str) -> Result<Vec<Message>, StorageError> {
    let mut out = Vec::new();
    if let Some(marker) = store.latest_compaction(session_id)? {
        out.push(summary_message(&marker));
    }
    out.extend(store.history_rows(session_id)?.into_iter().map(|(_, m)| m));
    Ok(out)
}

/// The messages a turn replays: the latest compaction summary (if any), then
/// the rows after it, with every tool call answered (see [`repair_tool_pairs`]).
pub fn conversation<S: Sql>(store: &SessionStore<'_, S>, session_id: &str) -> Result<Vec<Message>, StorageError> {
    Ok(repair_tool_pairs(with_latest_summary(store, session_id)?))
}

/// Makes a history the providers accept: every tool call is followed by its
/// result, and every result follows its call. A turn cut short between saving
/// the model's tool call and saving the result (eviction) would otherwise make
/// every later request fail; the missing result becomes an error result
/// ([`INTERRUPTED_TOOL`]). Results whose call is not right before them (left
/// behind by a compaction or a trim) are dropped.
pub fn repair_tool_pairs(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    // Calls of the latest assistant message still waiting for their result.
    let mut open: Vec<(String, String, i64)> = Vec::new();
    let answer_open = |open: &mut Vec<(String, String, i64)>, out: &mut Vec<Message>| {
        for (id, name, timestamp) in open.drain(..) {
            out.push(Message::ToolResult {
                tool_call_id: id,
                tool_name: name,
                content: vec![ResultBlock::Text { text: INTERRUPTED_TOOL.into() }],
                is_error: true,
                timestamp,
            });
        }
    };
    for m in messages {
        match m {
            Message::ToolResult { ref tool_call_id, .. } => {
                if let Some(i) = open.iter().position(|(id, _, _)| id == tool_call_id) {
                    open.remove(i);
                    out.push(m);
                }
            }
            other => {
                answer_open(&mut open, &mut out);
                if let Message::Assistant { content, timestamp, .. } = &other {
                    open = content
                        .iter()
                        .filter_map(|b| match b {
                            AssistantBlock::ToolCall { id, name, .. } => Some((id.clone(), name.clone(), *timestamp)),
                            _ => None,
                        })
                        .collect();
                }
                out.push(other);
            }
        }
    }
    answer_open(&mut open, &mut out);
    out
}

/// The message that stands for the compacted part. It names what the model
/// can fetch: the memory entry (by `memory_get`), or the part archive when the
/// memory could not take the summary.
fn summary_message(marker: &CompactMarker) -> Message {
    let source = if marker.archive_name.ends_with(ARCHIVE_SUFFIX) {
        format!("the compacted messages are archived as {}", marker.archive_name)
    } else {
        format!(
            "kept in memory as the archive entry '{}': memory_get fetches it by that name, memory_search finds earlier ones",
            marker.archive_name
        )
    };
    Message::user_text(
        format!("[Summary of our earlier conversation, {source}]\n{}", marker.summary),
        marker.archived_at,
    )
}

/// Tokens a document of `bytes` is counted for (about a twelfth of its size,
/// capped).
pub fn document_tokens(bytes: u64) -> u64 {
    (bytes / 12).clamp(1, DOCUMENT_MAX_TOKENS)
}

/// Tokens an attachment adds when it is sent as media in this request
/// (`media`: what the call hydrated); 0 for a reference sent as a text note.
fn media_tokens(block: &UserBlock, media: &Hydrated) -> u64 {
    match block {
        UserBlock::Image { r2_key, .. } if media.contains_key(r2_key) => IMAGE_TOKENS,
        UserBlock::File { r2_key, .. } => media.get(r2_key).map_or(0, |bytes| document_tokens(bytes.len() as u64)),
        _ => 0,
    }
}

/// A rough token count of one message (4 bytes a token, plus its media).
pub fn message_tokens(m: &Message, media: &Hydrated) -> u64 {
    let text = serde_json::to_string(m).map(|s| s.len() as u64).unwrap_or(0).div_ceil(4);
    let attached = match m {
        Message::User { content: UserContent::Blocks(blocks), .. } => {
            blocks.iter().map(|b| media_tokens(b, media)).sum()
        }
        _ => 0,
    };
    text + attached
}

/// A rough token count of a request, enough to decide compaction and trims.
pub fn estimate_tokens(system: &str, messages: &[Message], tools_json_len: usize, media: &Hydrated) -> u64 {
    ((system.len() + tools_json_len) as u64).div_ceil(4)
        + messages.iter().map(|m| message_tokens(m, media)).sum::<u64>()
}

/// Budget the request may use.
pub fn budget(deps: &SessionDeps<'_>) -> u64 {
    let lc = &deps.config.lifecycle;
    lc.context_window.saturating_sub(lc.context_reserve).max(1)
}

/// Index of the first message of the tail to keep: the tail fits in half the
/// budget, starts at a user message, and holds at least the newest user message.
fn choose_cut(rows: &[(i64, Message)], budget: u64, media: &Hydrated) -> Option<usize> {
    let mut size = 0u64;
    let mut cut = None;
    for i in (0..rows.len()).rev() {
        size += message_tokens(&rows[i].1, media);
        let is_user = matches!(rows[i].1, Message::User { .. });
        if is_user {
            if size > budget / 2 && cut.is_some() {
                break;
            }
            cut = Some(i);
        }
    }
    cut.filter(|&c| c > 0)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    pub part_key: String,
    pub compacted_messages: usize,
    /// The name the marker carries: the memory's Archive entry, or the part
    /// archive's file name when the memory could not take it.
    pub archive_name: String,
}

/// Why a compaction answer cannot replace the messages it summarises, if it cannot.
fn unusable_summary(reply: &LlmReply) -> Option<&'static str> {
    if reply.tool_calls().next().is_some() {
        Some("the model called a tool instead of summarising")
    } else if reply.stop == StopReason::Length {
        Some("the summary was cut off at the output limit")
    } else if split_compaction(&reply.text()).0.is_empty() {
        Some("the summary was empty")
    } else {
        None
    }
}

/// Compacts the oldest part of the history. `Ok(None)` when nothing was
/// compacted: nothing to compact (a single huge message), no usable summary,
/// or the part archive could not be written. Then nothing is removed and the
/// overflow guard trims the request instead.
pub async fn compact<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    prepared: &Prepared,
    session_id: &str,
    media: &Hydrated,
) -> Result<Option<Compacted>, StorageError> {
    let store = SessionStore::new(p.sql());
    let cfg = deps.config;
    let rows = store.history_rows(session_id)?;
    let Some(cut) = choose_cut(&rows, budget(deps), media) else { return Ok(None) };
    let prefix: Vec<Message> = rows[..cut].iter().map(|(_, m)| m.clone()).collect();
    let through_seq = rows[cut - 1].0;
    // Same system prompt, tools and message prefix as the turns before: cached.
    let mut messages = Vec::with_capacity(prefix.len() + 1);
    if let Some(marker) = store.latest_compaction(session_id)? {
        messages.push(summary_message(&marker));
    }
    messages.extend(prefix.iter().cloned());
    let messages = repair_tool_pairs(messages);
    let no_media = Hydrated::new();
    let req = ChatRequest {
        system: &prepared.system,
        messages: &messages,
        tools: &prepared.tools,
        media: &no_media,
        appended_user: Some(COMPACT_PROMPT),
    };
    let reply = match llm::complete(p, &cfg.llm, &req).await {
        Ok(r) => r,
        Err(e) => {
            p.log(LogLevel::Warn, &format!("compaction skipped: {e}"));
            return Ok(None);
        }
    };
    let now = p.now_ms();
    store.record_usage(now, session_id, &cfg.llm.model, &reply.usage)?;
    if let Some(why) = unusable_summary(&reply) {
        p.log(LogLevel::Warn, &format!("compaction skipped, history kept: {why}"));
        return Ok(None);
    }
    let (summary, memories) = split_compaction(&reply.text());
    let session_key = deps.key.render();
    let Ok(part_key) = keys::session_part(&cfg.agent, session_id, now) else { return Ok(None) };
    let meta = PartMetadata {
        session_key,
        session_id: session_id.to_owned(),
        agent_id: cfg.agent.to_string(),
        part_number: now,
        message_count: prefix.len() as u64,
        archived_at: now,
    };
    if let Err(e) = put_confirmed(p.store(), &part_key, archive::encode(&prefix), meta.to_pairs()).await {
        p.log(LogLevel::Error, &format!("compaction part not written, history kept: {e}"));
        return Ok(None);
    }
    let file = part_key.rsplit('/').next().unwrap_or(&part_key).to_owned();
    let stem = file.strip_suffix(ARCHIVE_SUFFIX).unwrap_or(&file);
    // The summary stays searchable in the memory of the session's own scope;
    // the marker carries the entry's name as the memory gave it (or, if the
    // memory could not take it, the part archive's file name).
    let archive_name =
        add_archive_entry(p, deps, &archive_entry_name(stem), &summary, &memories, now).await.unwrap_or(file);
    let header = format!("### Extracted from context compaction ({})", clock::time_string(now, &cfg.timezone));
    note_in_daily_file(p, deps, now, &header, &memories).await;
    store.record_compaction(
        &CompactMarker { archive_name: archive_name.clone(), archived_at: now, summary },
        session_id,
        through_seq,
    )?;
    Ok(Some(Compacted { part_key, compacted_messages: prefix.len(), archive_name }))
}

/// Appended where a message's text was cut.
fn cut_note(chars: usize) -> String {
    format!("\n[… {chars} characters cut here to fit the model's context window]")
}

/// Last resort when even a compacted history does not fit: shapes this
/// request (not the history) to fit `budget`. The oldest messages are left out
/// (with [`TRIM_NOTE`] first), the kept part starts at a user message and has
/// no tool result without its call; if the newest exchange alone is still too
/// large, attachments are left out and the largest texts cut, each with a
/// visible note. One pass, no retry.
pub fn trim_to_fit(
    messages: &[Message],
    system: &str,
    tools_len: usize,
    budget: u64,
    media: &Hydrated,
) -> Vec<Message> {
    let fixed = estimate_tokens(system, &[], tools_len, media);
    let costs: Vec<u64> = messages.iter().map(|m| message_tokens(m, media)).collect();
    if fixed + costs.iter().sum::<u64>() <= budget {
        return messages.to_vec();
    }
    let note = Message::user_text(TRIM_NOTE, messages.first().map(Message::timestamp).unwrap_or(0));
    let note_cost = message_tokens(&note, media);
    let mut suffix = vec![0u64; messages.len() + 1];
    for i in (0..messages.len()).rev() {
        suffix[i] = suffix[i + 1] + costs[i];
    }
    let mut user_starts = (1..messages.len()).filter(|&i| matches!(messages[i], Message::User { .. }));
    let start = user_starts
        .clone()
        .find(|&i| fixed + note_cost + suffix[i] <= budget)
        .or_else(|| user_starts.next_back())
        .unwrap_or(0);
    let mut out = Vec::with_capacity(messages.len() - start + 1);
    if start > 0 {
        out.push(note);
    }
    out.extend_from_slice(&messages[start..]);
    let mut out = repair_tool_pairs(out);
    shrink_to_fit(&mut out, fixed, budget, media);
    out
}

/// Cuts the largest messages until the request fits (bounded: each step
/// removes an attachment or cuts a text; it stops when nothing is left to cut).
fn shrink_to_fit(out: &mut [Message], fixed: u64, budget: u64, media: &Hydrated) {
    for _ in 0..4 * out.len() + 8 {
        let costs: Vec<u64> = out.iter().map(|m| message_tokens(m, media)).collect();
        let total = fixed + costs.iter().sum::<u64>();
        if total <= budget {
            return;
        }
        let mut largest_first: Vec<usize> = (0..out.len()).collect();
        largest_first.sort_by_key(|&i| std::cmp::Reverse(costs[i]));
        if !largest_first.into_iter().any(|i| shrink_message(&mut out[i], total - budget, media)) {
            return;
        }
    }
}

/// Texts shorter than this are not worth cutting (the note would be as long).
const MIN_CUTTABLE_BYTES: usize = 256;

/// Makes one message smaller by about `excess` tokens: an attachment becomes
/// a note, else the longest text is cut (its start kept) or oversized tool
/// call arguments are replaced. `false` when there is nothing to cut.
fn shrink_message(m: &mut Message, excess: u64, media: &Hydrated) -> bool {
    if let Message::User { content: UserContent::Blocks(blocks), .. } = m {
        if let Some(i) = blocks.iter().position(|b| media_tokens(b, media) > 0) {
            blocks[i] = UserBlock::Text { text: MEDIA_CUT_NOTE.into() };
            return true;
        }
    }
    if let Message::Assistant { content, .. } = m {
        let args_len = |b: &AssistantBlock| match b {
            AssistantBlock::ToolCall { arguments, .. } => arguments.to_string().len(),
            _ => 0,
        };
        let text_len = |b: &AssistantBlock| match b {
            AssistantBlock::Text { text } => text.len(),
            _ => 0,
        };
        let longest_args = content.iter().map(args_len).max().unwrap_or(0);
        if longest_args >= MIN_CUTTABLE_BYTES && longest_args > content.iter().map(text_len).max().unwrap_or(0) {
            if let Some(AssistantBlock::ToolCall { arguments, .. }) = content.iter_mut().max_by_key(|b| args_len(b)) {
                *arguments = serde_json::json!({"note": "arguments left out to fit the model's context window"});
                return true;
            }
        }
    }
    let texts: Vec<&mut String> = match m {
        Message::User { content: UserContent::Text(t), .. } => vec![t],
        Message::User { content: UserContent::Blocks(blocks), .. } => blocks
            .iter_mut()
            .filter_map(|b| match b {
                UserBlock::Text { text } => Some(text),
                _ => None,
            })
            .collect(),
        Message::Assistant { content, .. } => content
            .iter_mut()
            .filter_map(|b| match b {
                AssistantBlock::Text { text } | AssistantBlock::Thinking { thinking: text } => Some(text),
                _ => None,
            })
            .collect(),
        Message::ToolResult { content, .. } => content.iter_mut().map(|ResultBlock::Text { text }| text).collect(),
    };
    let Some(text) = texts.into_iter().max_by_key(|t| t.len()) else { return false };
    if text.len() < MIN_CUTTABLE_BYTES {
        return false;
    }
    // Cutting raw bytes removes at least as many JSON bytes (escapes only add).
    let cut = (excess as usize).saturating_mul(4).saturating_add(cut_note(0).len() + 16);
    let mut keep = text.len().saturating_sub(cut);
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    let removed = text[keep..].chars().count();
    text.truncate(keep);
    text.push_str(&cut_note(removed));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(content: Vec<AssistantBlock>, timestamp: i64) -> Message {
        Message::Assistant { content, timestamp, model: None, stop_reason: None, usage: None }
    }

    fn call(id: &str) -> AssistantBlock {
        AssistantBlock::ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "x"}),
        }
    }

    fn result(id: &str) -> Message {
        Message::ToolResult {
            tool_call_id: id.into(),
            tool_name: "read_file".into(),
            content: vec![ResultBlock::Text { text: "ok".into() }],
            is_error: false,
            timestamp: 3,
        }
    }

    #[test]
    fn compaction_answers_are_split() {
        let (s, m) = split_compaction(
            "## Summary\nWe planned a trip.\n\n## Memories\n- Olga flies on May 3\n- likes aisle seats\n",
        );
        assert_eq!(s, "We planned a trip.");
        assert_eq!(m, ["- Olga flies on May 3", "- likes aisle seats"]);
        let (s, m) = split_compaction("just a summary");
        assert_eq!((s.as_str(), m.len()), ("just a summary", 0));
        assert!(bullet_lines("NONE").is_empty());
        assert_eq!(split_extraction("NONE"), (String::new(), vec![]));
        assert_eq!(split_extraction("- likes tea").1, ["- likes tea"]);
        let (s, m) = split_extraction("## Summary\nTea talk.\n## Memories\n- likes tea");
        assert_eq!((s.as_str(), m.len()), ("Tea talk.", 1));
    }

    #[test]
    fn cut_keeps_a_user_led_tail() {
        let rows: Vec<(i64, Message)> = (0..10)
            .map(|i| {
                let m = if i % 2 == 0 { Message::user_text("x".repeat(400), i) } else { assistant(vec![], i) };
                (i, m)
            })
            .collect();
        let none = Hydrated::new();
        let cut = choose_cut(&rows, 400, &none).unwrap();
        assert!(cut > 0 && cut < 10);
        assert!(matches!(rows[cut].1, Message::User { .. }));
        assert_eq!(choose_cut(&rows[..1], 10, &none), None);
    }

    #[test]
    fn an_unanswered_tool_call_gets_an_interrupted_result_and_orphans_go() {
        let history = vec![
            result("stale"), // its call was compacted away
            Message::user_text("read it", 1),
            assistant(vec![call("a"), call("b")], 2),
            result("b"), // evicted after one of two tools
            Message::user_text("hello?", 4),
            assistant(vec![call("c")], 5), // evicted before the tool ran
        ];
        let fixed = repair_tool_pairs(history);
        let shape: Vec<String> = fixed
            .iter()
            .map(|m| match m {
                Message::User { .. } => "user".to_owned(),
                Message::Assistant { .. } => "assistant".to_owned(),
                Message::ToolResult { tool_call_id, is_error, .. } => format!("result {tool_call_id} {is_error}"),
            })
            .collect();
        assert_eq!(
            shape,
            ["user", "assistant", "result b false", "result a true", "user", "assistant", "result c true"]
        );
        assert!(fixed[3].text().contains(INTERRUPTED_TOOL));
        // Already well-formed: unchanged.
        assert_eq!(repair_tool_pairs(fixed.clone()), fixed);
    }

    #[test]
    fn media_counts_in_the_estimate() {
        let img = Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                UserBlock::File { mime_type: "application/pdf".into(), r2_key: "media/k/b.pdf".into(), filename: None },
            ]),
            timestamp: 0,
        };
        let none = Hydrated::new();
        let text_only = message_tokens(&img, &none);
        assert!(text_only < 100, "references sent as notes are small: {text_only}");
        let mut media = Hydrated::new();
        media.insert("media/k/a.png".into(), std::rc::Rc::new(vec![0; 10]));
        media.insert("media/k/b.pdf".into(), std::rc::Rc::new(vec![0; 120_000]));
        assert_eq!(message_tokens(&img, &media), text_only + IMAGE_TOKENS + 10_000);
        assert_eq!(document_tokens(u64::MAX), DOCUMENT_MAX_TOKENS);
    }

    #[test]
    fn trimming_leaves_a_note_and_fits() {
        let none = Hydrated::new();
        let msgs: Vec<Message> = (0..6).map(|i| Message::user_text("y".repeat(1000), i)).collect();
        let out = trim_to_fit(&msgs, "", 0, 600, &none);
        assert!(out[0].text().contains("left out"));
        assert_eq!(out.len(), 3, "note + the two newest messages that fit");
        assert!(estimate_tokens("", &out, 0, &none) <= 600);
        assert_eq!(trim_to_fit(&msgs, "", 0, 100_000, &none).len(), 6);
    }

    #[test]
    fn a_single_oversize_message_is_cut_with_a_note() {
        let none = Hydrated::new();
        let msgs = vec![Message::user_text("z".repeat(40_000), 1)];
        let out = trim_to_fit(&msgs, &"s".repeat(2_000), 400, 3_000, &none);
        assert_eq!(out.len(), 1);
        assert!(estimate_tokens(&"s".repeat(2_000), &out, 400, &none) <= 3_000);
        let text = out[0].text();
        assert!(
            text.starts_with("zzz") && text.contains("characters cut here to fit"),
            "{}",
            &text[text.len() - 100..]
        );
    }

    #[test]
    fn a_trim_never_starts_with_a_tool_result() {
        let none = Hydrated::new();
        let big = "w".repeat(4_000);
        let msgs = vec![
            Message::user_text(big.clone(), 1),
            assistant(vec![call("a")], 2),
            Message::ToolResult {
                tool_call_id: "a".into(),
                tool_name: "read_file".into(),
                content: vec![ResultBlock::Text { text: big.clone() }],
                is_error: false,
                timestamp: 3,
            },
            assistant(vec![AssistantBlock::Text { text: "read".into() }], 4),
            Message::user_text("short", 5),
        ];
        let out = trim_to_fit(&msgs, "", 0, 1_500, &none);
        assert!(matches!(&out[0], Message::User { .. }));
        assert!(!out.iter().any(|m| matches!(m, Message::ToolResult { .. })), "the result went with its call");
        assert!(estimate_tokens("", &out, 0, &none) <= 1_500);
        // A huge tool result in the newest exchange is cut, its pairing kept.
        let msgs = vec![msgs[0].clone(), msgs[1].clone(), msgs[2].clone()];
        let out = trim_to_fit(&msgs, "", 0, 800, &none);
        assert!(matches!(&out[0], Message::User { .. }));
        assert!(matches!(out.last(), Some(Message::ToolResult { .. })));
        assert!(estimate_tokens("", &out, 0, &none) <= 800);
    }

    #[test]
    fn an_image_is_left_out_before_text_is_cut() {
        let mut media = Hydrated::new();
        media.insert("media/k/a.png".into(), std::rc::Rc::new(vec![0; 10]));
        let msgs = vec![Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                UserBlock::Text { text: "what is this?".into() },
            ]),
            timestamp: 0,
        }];
        let out = trim_to_fit(&msgs, "", 0, 1_000, &media);
        assert!(out[0].text().contains("what is this?") && out[0].text().contains(MEDIA_CUT_NOTE));
    }
}
