//! What a turn replays: the latest compaction summary, the rows after it,
//! and every tool call answered, so the providers accept the history.

use super::history::summary_message;
use super::history::HistoryCache;
use super::store::SessionStore;
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
