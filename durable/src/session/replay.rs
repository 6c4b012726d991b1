//! What a turn replays: the latest compaction summary, the rows after it,
//! and every tool call answered, so the providers accept the history.

use super::archive::ARCHIVE_SUFFIX;
use super::history::HistoryCache;
use super::store::{CompactMarker, SessionStore};
use crate::llm::rules::{pair_tool_calls, strict_form};
use crate::ports::{Sql, StorageError};
use r2_layout::Message;
use std::cell::RefCell;

/// The latest compaction summary (if any), then the rows after it, as stored.
pub fn with_latest_summary<S: Sql>(
    store: &SessionStore<'_, S>,
    history: &RefCell<HistoryCache>,
    session_id: &str,
) -> Result<Vec<Message>, StorageError> {
    let mut out = Vec::new();
    if let Some(marker) = store.latest_compaction(session_id)? {
        out.push(summary_message(&marker));
    }
    out.extend(history.borrow_mut().rows(store, session_id)?.iter().map(|(_, m)| m.clone()));
    Ok(out)
}

/// The messages a turn replays: the latest compaction summary (if any), then
/// the rows after it, with every tool call answered (see [`pair_tool_calls`]).
pub fn conversation<S: Sql>(
    store: &SessionStore<'_, S>,
    history: &RefCell<HistoryCache>,
    session_id: &str,
) -> Result<Vec<Message>, StorageError> {
    Ok(pair_tool_calls(with_latest_summary(store, history, session_id)?))
}

/// Keeps the history in the form the provider took after it refused the
/// history as it was ([`crate::llm::rules::strict_form`]): the rows it
/// changes are rewritten, so later turns do not pay for the refusal again.
/// Returns how many rows changed.
pub fn keep_strict_form<S: Sql>(
    store: &SessionStore<'_, S>,
    history: &RefCell<HistoryCache>,
    session_id: &str,
) -> Result<usize, StorageError> {
    let changed: Vec<(i64, Message)> = history
        .borrow_mut()
        .rows(store, session_id)?
        .iter()
        .filter_map(|(seq, m)| {
            let strict = strict_form(m);
            (strict != *m).then_some((*seq, strict))
        })
        .collect();
    store.rewrite_rows(session_id, &changed)?;
    // The cache holds rows by number and reads only new ones: start afresh.
    history.borrow_mut().clear();
    Ok(changed.len())
}

/// The message that stands for the compacted part. It names what the model
/// can fetch: the memory entry (by `memory_get`), or the part archive when the
/// memory could not take the summary.
pub fn summary_message(marker: &CompactMarker) -> Message {
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
