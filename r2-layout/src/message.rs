//! One conversation message: a session history row, and a line of a session
//! archive (`*.jsonl.gz`).
//!
//! The shape is the `Message` of `@mariozechner/pi-ai` that seed 003 names:
//! `role` is `user`, `assistant` or `toolResult`, each with its own content
//! structure and a millisecond `timestamp`. Using the same type for the live
//! history and the archive means an archive is the history, written out.
//! Media never appears as bytes: an image block carries its R2 key.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
pub enum Message {
    #[serde(rename = "user")]
    User { content: UserContent, timestamp: i64 },
    #[serde(rename = "assistant", rename_all = "camelCase")]
    Assistant {
        content: Vec<AssistantBlock>,
        timestamp: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    #[serde(rename = "toolResult", rename_all = "camelCase")]
    ToolResult { tool_call_id: String, tool_name: String, content: Vec<ResultBlock>, is_error: bool, timestamp: i64 },
}

/// A user message's content: a plain string, or blocks when media is attached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<UserBlock>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserBlock {
    Text {
        text: String,
    },
    /// An image kept in R2; hydrated into the provider's image block at call time.
    #[serde(rename_all = "camelCase")]
    Image {
        mime_type: String,
        r2_key: String,
    },
    /// Any other file kept in R2 (PDF, audio, video, ...).
    #[serde(rename_all = "camelCase")]
    File {
        mime_type: String,
        r2_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantBlock {
    Text { text: String },
    Thinking { thinking: String },
    ToolCall { id: String, name: String, arguments: serde_json::Value },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ResultBlock {
    Text { text: String },
}

/// Token usage of one LLM call (pi-ai's field names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

impl Usage {
    /// A call's usage from the provider's four numbers; the total is their
    /// sum (saturating: provider numbers are not trusted not to overflow).
    pub fn new(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Self {
        let total_tokens = input.saturating_add(output).saturating_add(cache_read).saturating_add(cache_write);
        Usage { input, output, cache_read, cache_write, total_tokens }
    }

    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
    }
}

impl Message {
    pub fn user_text(text: impl Into<String>, timestamp: i64) -> Self {
        Message::User { content: UserContent::Text(text.into()), timestamp }
    }

    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User { timestamp, .. }
            | Message::Assistant { timestamp, .. }
            | Message::ToolResult { timestamp, .. } => *timestamp,
        }
    }

    /// The message's text, joined, without media or tool calls (for previews,
    /// search and transcripts).
    pub fn text(&self) -> String {
        match self {
            Message::User { content: UserContent::Text(t), .. } => t.clone(),
            Message::User { content: UserContent::Blocks(blocks), .. } => blocks
                .iter()
                .filter_map(|b| match b {
                    UserBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Message::Assistant { content, .. } => content
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Message::ToolResult { content, .. } => {
                content.iter().map(|ResultBlock::Text { text }| text.as_str()).collect::<Vec<_>>().join("\n")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_003_example_lines_round_trip() {
        for line in [
            r#"{"role":"user","content":"Hello","timestamp":1708300000000}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"Hi there!"}],"timestamp":1708300001000}"#,
            r#"{"role":"toolResult","toolCallId":"call_abc","toolName":"Bash","content":[{"type":"text","text":"output"}],"isError":false,"timestamp":1708300002000}"#,
        ] {
            let m: Message = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&m).unwrap(), line);
        }
    }

    #[test]
    fn tool_calls_and_media_refs() {
        let m = Message::Assistant {
            content: vec![AssistantBlock::ToolCall {
                id: "t1".into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path":"SOUL.md"}),
            }],
            timestamp: 5,
            model: None,
            stop_reason: Some("toolUse".into()),
            usage: Some(Usage { input: 3, output: 4, ..Default::default() }),
        };
        let s = serde_json::to_string(&m).unwrap();
        assert!(s.contains(r#""type":"toolCall""#) && s.contains(r#""stopReason":"toolUse""#));
        assert_eq!(serde_json::from_str::<Message>(&s).unwrap(), m);
        let u: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"image","mimeType":"image/png","r2Key":"media/k/u.png"},{"type":"text","text":"look"}],"timestamp":1}"#,
        )
        .unwrap();
        assert_eq!(u.text(), "look");
    }
}
