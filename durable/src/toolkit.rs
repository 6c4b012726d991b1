//! What every tool shares: the spec the model is shown and the outcome a
//! call returns. The workspace tools, the memory tools and the LLM encoders
//! all use these, so they sit on the ground floor.

use crate::text::truncate_chars;
use serde_json::Value;
use std::borrow::Cow;

/// A tool the model may call. Built-in tools borrow their static text; the
/// tools of an MCP server are owned (named and described by the server).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub input_schema: Value,
    /// A tool the provider runs itself (Anthropic's server-side web search):
    /// this definition is sent as it is, only to that provider, and its uses
    /// come back as provider blocks, never as calls for Hearth to run.
    pub native: Option<Value>,
}

impl ToolSpec {
    /// The bytes this tool adds to a request, near enough for the context
    /// estimate.
    pub fn wire_len(&self) -> usize {
        let schema = match &self.native {
            Some(native) => native,
            None => &self.input_schema,
        };
        self.name.len() + self.description.len() + r2_layout::message::json_value_len(schema) + 32
    }
}

/// A built-in tool's input schema, from its JSON text. Text rather than
/// `json!`: each key of a `json!` literal is an insert call in the WASM while
/// text is data, and the built-in specs are made on every session's first
/// turn, whose time after a boot is mostly V8 compiling the code that turn
/// runs for the first time. The texts are constants: the session's are held
/// to parse by `session::toolbox`'s tests, the MCP server's by its end-to-end
/// tests (the official SDK client lists them); one that did not parse would
/// give the model an object without properties, not a failed turn.
pub fn schema(text: &'static str) -> Value {
    hearth_json::from_str(text).unwrap_or_else(|_| Value::Object(Default::default()))
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
