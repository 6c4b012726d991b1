//! What a turn replays: the latest compaction summary, the rows after it,
//! and every tool call answered, so the providers accept the history.

use super::archive::ARCHIVE_SUFFIX;
use super::history::HistoryCache;
use super::store::{CompactMarker, SessionStore};
use crate::ports::{Sql, StorageError};
use r2_layout::{AssistantBlock, Message, ResultBlock};
use std::cell::RefCell;

/// The result given to a tool call that has none (its turn was cut short).
pub const INTERRUPTED_TOOL: &str = "interrupted: the tool did not finish";

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
/// the rows after it, with every tool call answered (see [`repair_tool_pairs`]).
pub fn conversation<S: Sql>(
    store: &SessionStore<'_, S>,
    history: &RefCell<HistoryCache>,
    session_id: &str,
) -> Result<Vec<Message>, StorageError> {
    Ok(repair_tool_pairs(with_latest_summary(store, history, session_id)?))
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
}
