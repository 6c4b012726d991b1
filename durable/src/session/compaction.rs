//! Compaction: when a request would overflow the context window, the oldest
//! part of the history is summarised by the model, written to a part archive,
//! and replaced by a marker the next turn replays from.

use super::archive::{
    add_archive_entry, archive_entry_name, index_conversation, note_in_daily_file, put_confirmed, split_compaction,
};
use super::context::message_tokens;
use super::deps::SessionDeps;
use super::history::summary_message;
use super::meter;
use super::prefix::Prepared;
use super::store::{CompactMarker, SessionStore};
use crate::clock;
use crate::llm::rules::pair_tool_calls;
use crate::llm::{self, ChatRequest, Hydrated, LlmReply, StopReason};
use crate::ports::{LogLevel, ObjectStore, Platform, StorageError};
use r2_layout::keys::ARCHIVE_SUFFIX;
use r2_layout::metadata::PartMetadata;
use r2_layout::{archive, keys, Message};

/// Asked of the model to compact the oldest part of a conversation.
pub const COMPACT_PROMPT: &str = "The conversation above is being compacted to save context. Reply with two \
sections. \"## Summary\": a concise summary of everything above that later turns need (facts, decisions, open \
tasks, the user's requests and your commitments). \"## Memories\": durable facts worth keeping beyond this \
conversation, one per line starting with \"- \", or NONE.";

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
    } else if reply.stop == StopReason::Refusal {
        Some("the model declined to summarise")
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
    let rows = deps.history.borrow_mut().rows(&store, session_id)?.to_vec();
    let Some(cut) = choose_cut(&rows, deps.context_budget(), media) else { return Ok(None) };
    let prefix: Vec<Message> = rows[..cut].iter().map(|(_, m)| m.clone()).collect();
    let through_seq = rows[cut - 1].0;
    // Same system prompt, tools and message prefix as the turns before: cached.
    let mut messages = Vec::with_capacity(prefix.len() + 1);
    if let Some(marker) = store.latest_compaction(session_id)? {
        messages.push(summary_message(&marker));
    }
    messages.extend(prefix.iter().cloned());
    let messages = pair_tool_calls(messages);
    let no_media = Hydrated::new();
    let req = ChatRequest {
        system: &prepared.system,
        messages: &messages,
        tools: &prepared.tools,
        media: &no_media,
        appended_user: Some(COMPACT_PROMPT),
        memo: None,
        stamps: &[],
        prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
    };
    let kind = meter::kind_for(deps.key, crate::protocol::usage::UsageKind::Compaction);
    let size = super::context::estimate_tokens(&prepared.system, &messages, prepared.tools_len, &no_media);
    if let meter::Gate::Stop(stop) = meter::before_call(p, deps, kind, size).await? {
        p.log(LogLevel::Warn, &format!("compaction skipped: {}", stop.message));
        return Ok(None);
    }
    let reply = match llm::complete_repairing(p, &cfg.llm, &req).await {
        Ok(done) => done.reply,
        Err(e) => {
            meter::call_failed(deps, p.now_ms());
            p.log(LogLevel::Warn, &format!("compaction skipped: {e}"));
            return Ok(None);
        }
    };
    let now = p.now_ms();
    let sent = meter::Sent {
        system: &prepared.system,
        tools: (prepared.tools.len(), prepared.tools_len),
        prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
    };
    meter::after_call(p, deps, &store, session_id, kind, &reply, sent)?;
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
    let written = match p.store().gzip(&archive::encode_lines(&prefix)).await {
        Ok(gz) => put_confirmed(p.store(), &part_key, gz, meta.to_pairs()).await,
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = written {
        p.log(LogLevel::Error, &format!("compaction part not written, history kept: {e}"));
        return Ok(None);
    }
    // The compacted messages leave the live history: what was said stays searchable.
    index_conversation(p, deps, &part_key, session_id, &prefix).await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use r2_layout::AssistantBlock;

    fn assistant(content: Vec<AssistantBlock>, timestamp: i64) -> Message {
        Message::Assistant { content, timestamp, model: None, stop_reason: None, usage: None }
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
}
