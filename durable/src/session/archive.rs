//! Writing what leaves the session: gzipped JSONL archives (confirmed before
//! anything is deleted), and the summaries and memories extracted with them,
//! to the daily note (main scope only) and the scope's memory store.

use super::deps::SessionDeps;
use crate::clock;
use crate::ports::{LogLevel, MemoryService, ObjectStore, Platform, PutOptions, StorageError};
use crate::workspace::history;
use r2_layout::{keys, Scope};

const ARCHIVE_CONTENT_TYPE: &str = "application/gzip";

/// The memory entry of an archive: `archive {sessionId}` for a reset,
/// `archive {sessionId}-part{ts}` for a compaction.
pub fn archive_entry_name(archive_stem: &str) -> String {
    format!("archive {archive_stem}")
}

/// Appends extracted memories to a daily note under a timestamped header
/// (a change in the workspace history, by `reset`). A block the note
/// already holds (written by an attempt whose progress was not recorded) is
/// not appended again.
async fn append_daily<S: ObjectStore>(
    store: &S,
    cfg: &crate::settings::AgentConfig,
    path: &str,
    header: &str,
    lines: &[String],
    now: i64,
) -> Result<(), StorageError> {
    let mut block = format!("{header}\n");
    for l in lines {
        block.push_str(l);
        block.push('\n');
    }
    let mut text = match store.get(&keys::workspace_key(&cfg.agent, path)).await? {
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
    let why = format!("memories extracted: {}", header.trim_start_matches('#').trim());
    let edit = history::Edit::write(path, text, history::Actor::Reset, why);
    history::apply(store, &cfg.agent, edit, now, cfg.history_keep).await.map(|_| ()).map_err(|e| match e {
        history::HistoryError::Storage(s) => s,
        other => StorageError(other.to_string()),
    })
}

/// Notes memories in the owner's daily file, from the main scope only.
/// Returns whether they were written.
pub async fn note_in_daily_file<P: Platform>(
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
    let path = format!("memory/{date}.md");
    match append_daily(p.store(), cfg, &path, header, lines, p.now_ms()).await {
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
pub async fn add_archive_entry<P: Platform>(
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

/// Adds the exchanges of `messages` (archived as `archive_key`) to the conversation
/// memory of the session's scope, so what was said stays searchable. Returns whether
/// the memory has them: true also when there is nothing to add. A failure is logged
/// and leaves the archive to the memory's daily look at archives not yet indexed.
pub async fn index_conversation<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    archive_key: &str,
    session_id: &str,
    messages: &[r2_layout::Message],
) -> bool {
    use crate::memory::conversation::{exchanges, is_indexed, source_of};
    use crate::protocol::memory::{store_for, MemoryCall};
    if !is_indexed(deps.key) {
        return true;
    }
    let (found, left_out) = crate::memory::conversation::exchanges::within_batch(exchanges(messages));
    if left_out > 0 {
        p.log(
            LogLevel::Warn,
            &format!("conversation of {archive_key}: {left_out} exchanges over the batch's size left out"),
        );
    }
    if found.is_empty() {
        return true;
    }
    let call = MemoryCall::AddConversation {
        store: store_for(deps.key),
        from: source_of(deps.key, session_id, archive_key),
        exchanges: found,
    };
    match p.memory().call(&call).await {
        Ok(_) => true,
        Err(e) => {
            p.log(LogLevel::Warn, &format!("conversation of {archive_key} not indexed yet (retried daily): {e}"));
            false
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

pub async fn put_confirmed<S: ObjectStore>(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
