//! How a session shows in listings (the console's Sessions page): who it
//! talks with and its last message, sent to the Agent object's registry with
//! the session's touch ([`super::host`]).

use super::store::SessionStore;
use crate::ports::{Sql, StorageError};
use crate::protocol::session::LastMessage;
use r2_layout::{Message, UserBlock, UserContent};

/// Messages looked back at for one with text (a turn ends with its answer;
/// tool results and attachments alone are skipped).
const LOOK_BACK: i64 = 6;

/// The text a person wrote or read in `m`, if any: a user message without
/// the reminders Hearth adds, an assistant's visible text.
pub fn shown_text(m: &Message) -> Option<(&'static str, String)> {
    let (role, text) = match m {
        Message::User { content: UserContent::Text(t), .. } => ("user", t.clone()),
        Message::User { content: UserContent::Blocks(blocks), .. } => {
            let said = blocks.iter().rev().find_map(|b| match b {
                UserBlock::Text { text } if !crate::text::is_reminder(text) => Some(text.clone()),
                _ => None,
            });
            ("user", said.unwrap_or_default())
        }
        Message::Assistant { .. } => ("assistant", m.text()),
        Message::ToolResult { .. } => return None,
    };
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some((role, text))
}

/// The session's last message with text, cut for a listing.
pub fn last_message<S: Sql>(
    store: &SessionStore<'_, S>,
    session_id: &str,
) -> Result<Option<LastMessage>, StorageError> {
    // Parsed one by one, newest first: a turn ends with its answer, so the
    // first usually has text and the other rows are never parsed.
    let recent = store.recent_json(session_id, LOOK_BACK)?;
    let messages = recent.iter().filter_map(|json| hearth_json::from_slice::<Message>(json.as_bytes()).ok());
    for m in messages {
        if let Some((role, text)) = shown_text(&m) {
            let at = match &m {
                Message::User { timestamp, .. } | Message::Assistant { timestamp, .. } => *timestamp,
                Message::ToolResult { timestamp, .. } => *timestamp,
            };
            return Ok(Some(LastMessage { role: role.to_owned(), text: cut(&text, LastMessage::MAX_CHARS), at }));
        }
    }
    Ok(None)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemSql;
    use r2_layout::{AssistantBlock, ResultBlock};

    #[test]
    fn the_last_message_with_text_is_shown_without_reminders_and_cut() {
        let sql = MemSql::default();
        let store = SessionStore::new(&sql);
        store.init().unwrap();
        assert_eq!(last_message(&store, "s").unwrap(), None);
        let user = Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Text { text: "<system-reminder>Current time: x</system-reminder>".into() },
                UserBlock::Text { text: "Is the\n tea ready?".into() },
            ]),
            timestamp: 5,
            sender: None,
            channel: None,
        };
        store.append("s", &user).unwrap();
        let last = last_message(&store, "s").unwrap().unwrap();
        assert_eq!((last.role.as_str(), last.text.as_str(), last.at), ("user", "Is the tea ready?", 5));
        let answer = Message::Assistant {
            content: vec![AssistantBlock::Text { text: "é".repeat(200) }],
            timestamp: 6,
            model: None,
            stop_reason: None,
            usage: None,
        };
        store.append("s", &answer).unwrap();
        let result = Message::ToolResult {
            tool_call_id: "t".into(),
            tool_name: "x".into(),
            content: vec![ResultBlock::Text { text: "raw".into() }],
            is_error: false,
            timestamp: 7,
        };
        store.append("s", &result).unwrap();
        let last = last_message(&store, "s").unwrap().unwrap();
        assert_eq!(last.role, "assistant", "a tool result is not a message a person reads");
        assert_eq!(last.text.chars().count(), LastMessage::MAX_CHARS + 1, "cut, with an ellipsis");
    }
}
