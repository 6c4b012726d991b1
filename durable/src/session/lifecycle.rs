//! Session lifecycle: reset (by command, daily or idle policy, admin) and
//! compaction when the context would overflow.
//!
//! Both follow one rule: nothing leaves SQLite before it is safely in R2. A
//! reset writes the whole history as gzipped JSONL, confirms the object is
//! there, and only then clears; if the write fails the history stays and the
//! user is told. A compaction writes the compacted prefix as a part archive
//! before removing those rows and leaving a marker the next turn replays from.

use super::store::{CompactMarker, SessionStore};
use super::turn::{Prepared, SessionDeps};
use crate::clock;
use crate::llm::{self, ChatRequest, Hydrated};
use crate::ports::{LogLevel, MemoryService, ObjectStore, Platform, PutOptions, Sql, StorageError};
use r2_layout::metadata::{ArchiveMetadata, PartMetadata};
use r2_layout::{archive, keys, Message};

const ARCHIVE_CONTENT_TYPE: &str = "application/gzip";

/// Asked of the model before a reset (appended after the history, so the
/// provider's cache serves the prefix).
pub const EXTRACT_PROMPT: &str = "This conversation is about to be archived and a fresh session started. \
List the durable facts worth remembering from it (preferences, decisions, dates, commitments, people), \
one per line starting with \"- \". If there is nothing worth keeping, reply with exactly NONE.";

/// Asked of the model to compact the oldest part of a conversation.
pub const COMPACT_PROMPT: &str = "The conversation above is being compacted to save context. Reply with two \
sections. \"## Summary\": a concise summary of everything above that later turns need (facts, decisions, open \
tasks, the user's requests and your commitments). \"## Memories\": durable facts worth keeping beyond this \
conversation, one per line starting with \"- \", or NONE.";

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

/// Appends extracted memories to a daily note under a timestamped header.
async fn append_daily<S: ObjectStore>(store: &S, key: &str, header: &str, lines: &[String]) -> Result<(), StorageError> {
    let mut text = match store.get(key).await? {
        Some(o) => String::from_utf8_lossy(&o.body).into_owned(),
        None => String::new(),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(header);
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    store
        .put(key, text.into_bytes(), PutOptions { content_type: Some("text/markdown; charset=utf-8".into()), ..Default::default() })
        .await
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
    let memories = mem_at.map(|i| bullet_lines(&text[i..])).unwrap_or_default();
    (summary, memories)
}

async fn put_confirmed<S: ObjectStore>(store: &S, key: &str, body: Vec<u8>, metadata: Vec<(String, String)>) -> Result<(), String> {
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

/// Resets the session: archive → confirm → extract memories → delete media →
/// clear. On an archive failure nothing is cleared.
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
        let media_deleted = crate::media::delete_session_media(p.store(), &session_key).await?;
        deps.media_cache.borrow_mut().forget_prefix(&keys::media_prefix(&session_key));
        return Ok(ResetOutcome { media_deleted, ..Default::default() });
    };
    let rows: Vec<Message> = store.history_rows(&session_id)?.into_iter().map(|(_, m)| m).collect();
    let now = p.now_ms();
    let mut outcome = ResetOutcome { messages: rows.len(), ..Default::default() };
    if !rows.is_empty() {
        let usage = store.usage_totals(&session_id)?;
        let meta = ArchiveMetadata {
            session_key: session_key.clone(),
            session_id: session_id.clone(),
            agent_id: cfg.agent.to_string(),
            message_count: rows.len() as u64,
            archived_at: now,
            input_tokens: usage.input + usage.cache_read + usage.cache_write,
            output_tokens: usage.output,
            total_tokens: usage.total_tokens,
        };
        let key = keys::session_archive(&cfg.agent, &session_id).map_err(|e| ResetError::Archive(e.to_string()))?;
        put_confirmed(p.store(), &key, archive::encode(&rows), meta.to_pairs())
            .await
            .map_err(ResetError::Archive)?;
        outcome.archive_key = Some(key);

        // Memories go to the day of the last activity, not today.
        let last_activity = store.meta("updated_at")?.and_then(|v| v.parse().ok()).unwrap_or(now);
        let conversation = conversation(&store, &session_id)?;
        let media = Hydrated::new();
        let req = ChatRequest {
            system: &prepared.system,
            messages: &conversation,
            tools: &prepared.tools,
            media: &media,
            appended_user: Some(EXTRACT_PROMPT),
        };
        match llm::complete(p, &cfg.llm, &req).await {
            Ok(reply) => {
                store.record_usage(p.now_ms(), &session_id, &cfg.llm.model, &reply.usage)?;
                let lines = bullet_lines(&reply.text());
                if !lines.is_empty() {
                    let date = clock::date_string(last_activity, &cfg.timezone);
                    let header = format!("### Extracted before reset ({})", clock::time_string(now, &cfg.timezone));
                    match append_daily(p.store(), &keys::daily_note(&cfg.agent, &date), &header, &lines).await {
                        Ok(()) => {
                            outcome.memories = lines.len();
                            deps.workspace_cache.borrow_mut().invalidate_listings();
                        }
                        Err(e) => p.log(LogLevel::Error, &format!("could not save extracted memories: {e}")),
                    }
                }
            }
            Err(e) => p.log(LogLevel::Warn, &format!("memory extraction before reset skipped: {e}")),
        }
    }
    outcome.media_deleted = crate::media::delete_session_media(p.store(), &session_key).await?;
    deps.media_cache.borrow_mut().forget_prefix(&keys::media_prefix(&session_key));
    store.clear_session(&session_id)?;
    p.log(LogLevel::Info, &format!("session {session_key} reset ({reason:?}): {} messages archived", outcome.messages));
    Ok(outcome)
}

/// Whether a policy reset is due before the next message.
pub fn policy_reset_due(deps: &SessionDeps<'_>, last_activity: Option<i64>, now: i64) -> Option<ResetReason> {
    // Heartbeat and job sessions start each run fresh already.
    if matches!(deps.key, crate::routing::SessionKey::Heartbeat(_) | crate::routing::SessionKey::Job { .. }) {
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

/// The messages a turn replays: the latest compaction summary (if any), then
/// the rows after it.
pub fn conversation<S: Sql>(store: &SessionStore<'_, S>, session_id: &str) -> Result<Vec<Message>, StorageError> {
    let mut out = Vec::new();
    if let Some(marker) = store.latest_compaction(session_id)? {
        out.push(summary_message(&marker));
    }
    out.extend(store.history_rows(session_id)?.into_iter().map(|(_, m)| m));
    Ok(out)
}

fn summary_message(marker: &CompactMarker) -> Message {
    Message::user_text(
        format!(
            "[Summary of our earlier conversation, compacted into {}]\n{}",
            marker.archive_name, marker.summary
        ),
        marker.archived_at,
    )
}

/// A rough token count (4 bytes a token), enough to decide compaction.
pub fn estimate_tokens(system: &str, messages: &[Message], tools_json_len: usize) -> u64 {
    let msgs: usize = messages.iter().map(|m| serde_json::to_string(m).map(|s| s.len()).unwrap_or(0)).sum();
    ((system.len() + msgs + tools_json_len) as u64).div_ceil(4)
}

/// Budget the request may use.
pub fn budget(deps: &SessionDeps<'_>) -> u64 {
    let lc = &deps.config.lifecycle;
    lc.context_window.saturating_sub(lc.context_reserve).max(1)
}

/// Index of the first message of the tail to keep: the tail fits in half the
/// budget, starts at a user message, and holds at least the newest user message.
fn choose_cut(rows: &[(i64, Message)], budget: u64) -> Option<usize> {
    let mut size = 0u64;
    let mut cut = None;
    for i in (0..rows.len()).rev() {
        size += estimate_tokens("", std::slice::from_ref(&rows[i].1), 0);
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
}

/// Compacts the oldest part of the history. `Ok(None)` when there is nothing
/// to compact (a single huge message) or the part archive could not be
/// written (then nothing is removed).
pub async fn compact<P: Platform>(p: &P, deps: &SessionDeps<'_>, prepared: &Prepared, session_id: &str) -> Result<Option<Compacted>, StorageError> {
    let store = SessionStore::new(p.sql());
    let cfg = deps.config;
    let rows = store.history_rows(session_id)?;
    let Some(cut) = choose_cut(&rows, budget(deps)) else { return Ok(None) };
    let prefix: Vec<Message> = rows[..cut].iter().map(|(_, m)| m.clone()).collect();
    let through_seq = rows[cut - 1].0;
    // Same system prompt, tools and message prefix as the turns before: cached.
    let mut messages = Vec::with_capacity(prefix.len() + 1);
    if let Some(marker) = store.latest_compaction(session_id)? {
        messages.push(summary_message(&marker));
    }
    messages.extend(prefix.iter().cloned());
    let media = Hydrated::new();
    let req = ChatRequest { system: &prepared.system, messages: &messages, tools: &prepared.tools, media: &media, appended_user: Some(COMPACT_PROMPT) };
    let reply = match llm::complete(p, &cfg.llm, &req).await {
        Ok(r) => r,
        Err(e) => {
            p.log(LogLevel::Warn, &format!("compaction skipped: {e}"));
            return Ok(None);
        }
    };
    let now = p.now_ms();
    store.record_usage(now, session_id, &cfg.llm.model, &reply.usage)?;
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
    if !memories.is_empty() {
        let date = clock::date_string(now, &cfg.timezone);
        let header = format!("### Extracted from context compaction ({})", clock::time_string(now, &cfg.timezone));
        match append_daily(p.store(), &keys::daily_note(&cfg.agent, &date), &header, &memories).await {
            Ok(()) => deps.workspace_cache.borrow_mut().invalidate_listings(),
            Err(e) => p.log(LogLevel::Error, &format!("could not save compaction memories: {e}")),
        }
    }
    let archive_name = part_key.rsplit('/').next().unwrap_or(&part_key).to_owned();
    // The summary stays searchable in the memory of the session's own scope.
    let entry = format!("archive {archive_name}");
    if let Err(e) = p.memory().add_archive(&crate::memory::store_for(deps.key), &entry, &summary, now).await {
        p.log(LogLevel::Warn, &format!("compaction summary not added to memory: {e}"));
    }
    store.record_compaction(&CompactMarker { archive_name, archived_at: now, summary }, session_id, through_seq)?;
    Ok(Some(Compacted { part_key, compacted_messages: prefix.len() }))
}

/// Last resort when even a compacted history does not fit: leave out the
/// oldest messages of this request (not of the history), with a visible note.
pub fn trim_to_fit(messages: &[Message], system: &str, tools_len: usize, budget: u64) -> Vec<Message> {
    let note = Message::user_text(
        "[Note: earlier messages of this conversation were left out to fit the model's context window.]",
        messages.first().map(Message::timestamp).unwrap_or(0),
    );
    let mut start = 0;
    while start + 1 < messages.len() && estimate_tokens(system, &messages[start..], tools_len) > budget {
        start += 1;
        while start + 1 < messages.len() && !matches!(messages[start], Message::User { .. }) {
            start += 1;
        }
    }
    let mut out = Vec::with_capacity(messages.len() - start + 1);
    if start > 0 {
        out.push(note);
    }
    out.extend_from_slice(&messages[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_answers_are_split() {
        let (s, m) = split_compaction("## Summary\nWe planned a trip.\n\n## Memories\n- Olga flies on May 3\n- likes aisle seats\n");
        assert_eq!(s, "We planned a trip.");
        assert_eq!(m, ["- Olga flies on May 3", "- likes aisle seats"]);
        let (s, m) = split_compaction("just a summary");
        assert_eq!((s.as_str(), m.len()), ("just a summary", 0));
        assert!(bullet_lines("NONE").is_empty());
    }

    #[test]
    fn cut_keeps_a_user_led_tail() {
        let rows: Vec<(i64, Message)> = (0..10)
            .map(|i| {
                let m = if i % 2 == 0 {
                    Message::user_text("x".repeat(400), i)
                } else {
                    Message::Assistant { content: vec![], timestamp: i, model: None, stop_reason: None, usage: None }
                };
                (i, m)
            })
            .collect();
        let cut = choose_cut(&rows, 400).unwrap();
        assert!(cut > 0 && cut < 10);
        assert!(matches!(rows[cut].1, Message::User { .. }));
        assert_eq!(choose_cut(&rows[..1], 10), None);
    }

    #[test]
    fn trimming_leaves_a_note_and_stops() {
        let msgs: Vec<Message> = (0..6).map(|i| Message::user_text("y".repeat(1000), i)).collect();
        let out = trim_to_fit(&msgs, "", 0, 600);
        assert!(out[0].text().contains("left out"));
        assert_eq!(out.len(), 3, "note + the two newest messages that fit");
        assert!(estimate_tokens("", &out[1..], 0) <= 600);
        assert_eq!(trim_to_fit(&msgs, "", 0, 100_000).len(), 6);
    }
}
