//! What every tool shares: the spec the model is shown and the outcome a
//! call returns. The workspace tools, the memory tools and the LLM encoders
//! all use these, so they sit on the ground floor.

use crate::text::truncate_chars;
use serde_json::Value;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// Largest tool result kept in the history (a row must stay far below 2 MB).
pub const MAX_RESULT_CHARS: usize = 32_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutcome {
    pub fn ok(text: String) -> Self {
        ToolOutcome { text: truncate_chars(&text, MAX_RESULT_CHARS), is_error: false }
    }
    pub fn err(text: impl Into<String>) -> Self {
        ToolOutcome { text: text.into(), is_error: true }
    }
}
