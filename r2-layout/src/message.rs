//! One conversation message: a session history row, and a line of a session
//! archive (`*.jsonl.gz`).
//!
//! The shape is the `Message` of `@mariozechner/pi-ai` that seed 003 names:
//! `role` is `user`, `assistant` or `toolResult`, each with its own content
//! structure and a millisecond `timestamp`. Using the same type for the live
//! history and the archive means an archive is the history, written out.
//! Media never appears as bytes: an image block carries its R2 key.

use serde::{Deserialize, Deserializer, Serialize};

/// Read tag-first (see [`crate::tagged`]), through [`MessageDe`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role")]
pub enum Message {
    #[serde(rename = "user")]
    User {
        content: UserContent,
        timestamp: i64,
        /// Who wrote it (their display name), when the channel says: conversation
        /// memory names the speaker. Added after the first archives, which have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sender: Option<String>,
        /// The channel it came by (`telegram`, `discord`, `api`, ...): the owner's main
        /// session hears several. Added with `sender`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<String>,
    },
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
/// (Read by [`UserContent::deserialize`]: a string or an array, no buffering.)
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<UserBlock>),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
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

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// A block only its provider understands, kept as it came so later
    /// requests to that provider replay it: Anthropic's server-side tool use
    /// (`server_tool_use`), its result (`web_search_tool_result`), and text
    /// with `citations`. Another provider gets only the text of a text block.
    /// (`{"type":"native","provider":"anthropic","block":{...}}`; added after
    /// the first archives, which never contain it.)
    Native {
        provider: String,
        block: serde_json::Value,
    },
}

impl AssistantBlock {
    /// The visible text of a block: a text block's, or a native text block's.
    pub fn visible_text(&self) -> Option<&str> {
        match self {
            AssistantBlock::Text { text } => Some(text),
            AssistantBlock::Native { block, .. } if block.get("type").and_then(|t| t.as_str()) == Some("text") => {
                block.get("text").and_then(|t| t.as_str())
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ResultBlock {
    Text { text: String },
}

// Reading the enums above (see `crate::read_tagged`). Each has an externally tagged twin, derived with
// `remote` so that it must list exactly the real variants and fields (a
// difference does not compile), which `tag_first` reads with the tag as the
// variant name. Only what reading needs is repeated (names, defaults).

#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "Message")]
enum MessageDe {
    #[serde(rename = "user")]
    User {
        content: UserContent,
        timestamp: i64,
        #[serde(default)]
        sender: Option<String>,
        #[serde(default)]
        channel: Option<String>,
    },
    #[serde(rename = "assistant", rename_all = "camelCase")]
    Assistant {
        content: Vec<AssistantBlock>,
        timestamp: i64,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        stop_reason: Option<String>,
        #[serde(default)]
        usage: Option<Usage>,
    },
    #[serde(rename = "toolResult", rename_all = "camelCase")]
    ToolResult { tool_call_id: String, tool_name: String, content: Vec<ResultBlock>, is_error: bool, timestamp: i64 },
}

#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "UserBlock", rename_all = "camelCase")]
enum UserBlockDe {
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Image {
        mime_type: String,
        r2_key: String,
    },
    #[serde(rename_all = "camelCase")]
    File {
        mime_type: String,
        r2_key: String,
        #[serde(default)]
        filename: Option<String>,
    },
}

#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "AssistantBlock", rename_all = "camelCase")]
enum AssistantBlockDe {
    Text { text: String },
    Thinking { thinking: String },
    ToolCall { id: String, name: String, arguments: serde_json::Value },
    Native { provider: String, block: serde_json::Value },
}

#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "ResultBlock", rename_all = "camelCase")]
enum ResultBlockDe {
    Text { text: String },
}

crate::read_tagged!(Message, MessageDe, "role", "a message (an object with a role)");
crate::read_tagged!(UserBlock, UserBlockDe, "type", "a user content block (an object with a type)");
crate::read_tagged!(AssistantBlock, AssistantBlockDe, "type", "an assistant content block (an object with a type)");
crate::read_tagged!(ResultBlock, ResultBlockDe, "type", "a tool result block (an object with a type)");

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = UserContent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a user message's content: a string or an array of blocks")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<UserContent, E> {
                Ok(UserContent::Text(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<UserContent, E> {
                Ok(UserContent::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<UserContent, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(UserContent::Blocks)
            }
        }
        d.deserialize_any(Either)
    }
}

/// Token usage of one LLM call (pi-ai's field names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    /// Every token written to the prompt cache, whatever its lifetime.
    #[serde(default)]
    pub cache_write: u64,
    #[serde(default)]
    pub total_tokens: u64,
    /// The part of `cache_write` written for an hour (Anthropic's
    /// `cache_creation.ephemeral_1h_input_tokens`, priced apart); the rest
    /// was written for 5 minutes. Left out of the JSON when 0, so histories
    /// without it read and write as before.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// A call's usage from the provider's four numbers; the total is their
    /// sum (saturating: provider numbers are not trusted not to overflow).
    pub fn new(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Self {
        let total_tokens = input.saturating_add(output).saturating_add(cache_read).saturating_add(cache_write);
        Usage { input, output, cache_read, cache_write, total_tokens, cache_write_1h: 0 }
    }

    /// This usage with `one_hour` of its cache writes made for an hour
    /// (never more than it wrote).
    pub fn with_1h_writes(mut self, one_hour: u64) -> Self {
        self.cache_write_1h = one_hour.min(self.cache_write);
        self
    }

    /// Cache writes made for 5 minutes.
    pub fn cache_write_5m(&self) -> u64 {
        self.cache_write - self.cache_write_1h.min(self.cache_write)
    }

    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cache_write_1h += other.cache_write_1h;
    }
}

impl Message {
    pub fn user_text(text: impl Into<String>, timestamp: i64) -> Self {
        Message::User { content: UserContent::Text(text.into()), timestamp, sender: None, channel: None }
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
            Message::Assistant { content, .. } => {
                content.iter().filter_map(AssistantBlock::visible_text).collect::<Vec<_>>().join("\n")
            }
            Message::ToolResult { content, .. } => {
                content.iter().map(|ResultBlock::Text { text }| text.as_str()).collect::<Vec<_>>().join("\n")
            }
        }
    }
}

/// The length of `s` as a JSON string literal (serde_json's escaping: `"`,
/// `\\`, and control characters; everything else as is).
fn json_str_len(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                0x00..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// The length of an integer in decimal.
fn int_len(n: i128) -> usize {
    let mut len = usize::from(n < 0) + 1;
    let mut v = n.unsigned_abs();
    while v >= 10 {
        v /= 10;
        len += 1;
    }
    len
}

/// A `"key":` with its comma (or opening brace): what each field adds.
fn field(key: &str) -> usize {
    key.len() + 4
}

/// The length of a JSON value as serde_json writes it (compact).
pub fn json_value_len(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => json_str_len(s),
        Value::Array(a) => 2 + a.iter().map(json_value_len).sum::<usize>() + a.len().saturating_sub(1),
        Value::Object(o) => {
            2 + o.iter().map(|(k, v)| json_str_len(k) + 1 + json_value_len(v)).sum::<usize>()
                + o.len().saturating_sub(1)
        }
    }
}

impl Usage {
    fn json_len(&self) -> usize {
        let n = |v: u64| int_len(v as i128);
        1 + field("input")
            + n(self.input)
            + field("output")
            + n(self.output)
            + field("cacheRead")
            + n(self.cache_read)
            + field("cacheWrite")
            + n(self.cache_write)
            + field("totalTokens")
            + n(self.total_tokens)
            + if self.cache_write_1h > 0 { field("cacheWrite1h") + n(self.cache_write_1h) } else { 0 }
    }
}

impl Message {
    /// The length of this message as JSON (what `serde_json::to_string`
    /// writes), computed without writing it: context budgeting counts the
    /// whole history on every call, and serializing it would cost as much as
    /// encoding the request.
    pub fn json_len(&self) -> usize {
        let list = |lens: &mut dyn Iterator<Item = usize>| {
            let (sum, n) = lens.fold((0, 0), |(s, n), l| (s + l, n + 1));
            2 + sum + usize::saturating_sub(n, 1)
        };
        // `{` + fields (each `,"key":value`, the first without its comma) + `}`.
        let object = |fields: usize| fields + 1;
        match self {
            Message::User { content, timestamp, sender, channel } => {
                let content = match content {
                    UserContent::Text(t) => json_str_len(t),
                    UserContent::Blocks(blocks) => list(&mut blocks.iter().map(|b| match b {
                        UserBlock::Text { text } => object(field("type") + 6 + field("text") + json_str_len(text)),
                        UserBlock::Image { mime_type, r2_key } => object(
                            field("type")
                                + 7
                                + field("mimeType")
                                + json_str_len(mime_type)
                                + field("r2Key")
                                + json_str_len(r2_key),
                        ),
                        UserBlock::File { mime_type, r2_key, filename } => object(
                            field("type")
                                + 6
                                + field("mimeType")
                                + json_str_len(mime_type)
                                + field("r2Key")
                                + json_str_len(r2_key)
                                + filename.as_ref().map_or(0, |f| field("filename") + json_str_len(f)),
                        ),
                    })),
                };
                object(
                    field("role")
                        + 6
                        + field("content")
                        + content
                        + field("timestamp")
                        + int_len(*timestamp as i128)
                        + sender.as_ref().map_or(0, |s| field("sender") + json_str_len(s))
                        + channel.as_ref().map_or(0, |c| field("channel") + json_str_len(c)),
                )
            }
            Message::Assistant { content, timestamp, model, stop_reason, usage } => {
                let blocks = list(&mut content.iter().map(|b| match b {
                    AssistantBlock::Text { text } => object(field("type") + 6 + field("text") + json_str_len(text)),
                    AssistantBlock::Thinking { thinking } => {
                        object(field("type") + 10 + field("thinking") + json_str_len(thinking))
                    }
                    AssistantBlock::ToolCall { id, name, arguments } => object(
                        field("type")
                            + 10
                            + field("id")
                            + json_str_len(id)
                            + field("name")
                            + json_str_len(name)
                            + field("arguments")
                            + json_value_len(arguments),
                    ),
                    AssistantBlock::Native { provider, block } => object(
                        field("type")
                            + 8
                            + field("provider")
                            + json_str_len(provider)
                            + field("block")
                            + json_value_len(block),
                    ),
                }));
                object(
                    field("role")
                        + 11
                        + field("content")
                        + blocks
                        + field("timestamp")
                        + int_len(*timestamp as i128)
                        + model.as_ref().map_or(0, |m| field("model") + json_str_len(m))
                        + stop_reason.as_ref().map_or(0, |s| field("stopReason") + json_str_len(s))
                        + usage.as_ref().map_or(0, |u| field("usage") + u.json_len()),
                )
            }
            Message::ToolResult { tool_call_id, tool_name, content, is_error, timestamp } => {
                let blocks =
                    list(&mut content.iter().map(|ResultBlock::Text { text }| {
                        object(field("type") + 6 + field("text") + json_str_len(text))
                    }));
                object(
                    field("role")
                        + 12
                        + field("toolCallId")
                        + json_str_len(tool_call_id)
                        + field("toolName")
                        + json_str_len(tool_name)
                        + field("content")
                        + blocks
                        + field("isError")
                        + if *is_error { 4 } else { 5 }
                        + field("timestamp")
                        + int_len(*timestamp as i128),
                )
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
            let m: Message = hearth_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&m).unwrap(), line);
        }
    }

    #[test]
    fn an_hours_cache_writes_are_written_only_when_there_are_some() {
        let plain = Usage::new(3, 4, 5, 6);
        assert!(!serde_json::to_string(&plain).unwrap().contains("cacheWrite1h"), "histories keep their bytes");
        let hour = plain.with_1h_writes(9);
        assert_eq!(hour.cache_write_1h, 6, "never more than was written");
        let s = serde_json::to_string(&hour).unwrap();
        assert!(s.ends_with(r#""cacheWrite1h":6}"#), "{s}");
        assert_eq!(hearth_json::from_str::<Usage>(&s).unwrap(), hour);
        let old: Usage = hearth_json::from_str(r#"{"input":3,"output":4,"cacheRead":5,"cacheWrite":6}"#).unwrap();
        assert_eq!((old.cache_write_1h, old.cache_write_5m()), (0, 6));
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
        assert_eq!(hearth_json::from_str::<Message>(&s).unwrap(), m);
        let u: Message = hearth_json::from_str(
            r#"{"role":"user","content":[{"type":"image","mimeType":"image/png","r2Key":"media/k/u.png"},{"type":"text","text":"look"}],"timestamp":1}"#,
        )
        .unwrap();
        assert_eq!(u.text(), "look");
    }

    #[test]
    fn native_blocks_round_trip_and_show_their_text() {
        let line = r#"{"role":"assistant","content":[{"type":"native","provider":"anthropic","block":{"id":"srvtoolu_1","input":{"query":"q"},"name":"web_search","type":"server_tool_use"}},{"type":"native","provider":"anthropic","block":{"citations":[{"type":"web_search_result_location","url":"https://a.test/"}],"text":"Cited.","type":"text"}},{"type":"text","text":"Plain."}],"timestamp":1}"#;
        let m: Message = hearth_json::from_str(line).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), line);
        assert_eq!(m.text(), "Cited.\nPlain.");
        // Archives written before the variant existed still read.
        let old = r#"{"role":"assistant","content":[{"type":"text","text":"Hi"}],"timestamp":1}"#;
        assert_eq!(hearth_json::from_str::<Message>(old).unwrap().text(), "Hi");
    }

    #[test]
    fn lines_from_other_writers_read_the_same_whatever_the_key_order() {
        // Hearth writes the tag first; pi-ai or a hand-edited archive may not.
        let ours = r#"{"role":"toolResult","toolCallId":"c","toolName":"Bash","content":[{"type":"text","text":"out"}],"isError":true,"timestamp":3}"#;
        let theirs = r#"{"timestamp":3,"content":[{"text":"out","type":"text"}],"isError":true,"toolName":"Bash","toolCallId":"c","role":"toolResult"}"#;
        let a: Message = hearth_json::from_str(ours).unwrap();
        assert_eq!(hearth_json::from_str::<Message>(theirs).unwrap(), a);
        let late = r#"{"content":[{"mimeType":"image/png","r2Key":"media/k/u.png","type":"image"},{"filename":"a.pdf","mimeType":"application/pdf","type":"file","r2Key":"k"}],"timestamp":1,"role":"user"}"#;
        let m: Message = hearth_json::from_str(late).unwrap();
        let Message::User { content: UserContent::Blocks(blocks), timestamp: 1, .. } = m else { panic!("{m:?}") };
        assert_eq!(
            blocks[1],
            UserBlock::File { mime_type: "application/pdf".into(), r2_key: "k".into(), filename: Some("a.pdf".into()) }
        );
        let usage = r#"{"content":[{"arguments":{"a":[1,2.5,"x"]},"id":"t","name":"n","type":"toolCall"}],"usage":{"input":1,"output":2},"role":"assistant","timestamp":9}"#;
        let Message::Assistant { content, usage: Some(u), model: None, .. } = hearth_json::from_str(usage).unwrap()
        else {
            panic!()
        };
        assert_eq!(u.output, 2);
        assert_eq!(
            content[0],
            AssistantBlock::ToolCall {
                id: "t".into(),
                name: "n".into(),
                arguments: serde_json::json!({"a":[1,2.5,"x"]})
            }
        );
        // Unknown fields are ignored, as before.
        let extra = r#"{"role":"user","content":"hi","timestamp":1,"api":"x"}"#;
        assert_eq!(hearth_json::from_str::<Message>(extra).unwrap(), Message::user_text("hi", 1));
    }

    #[test]
    fn malformed_lines_are_errors() {
        for bad in [
            r#"{}"#,
            r#"{"content":"hi","timestamp":1}"#,
            r#"{"role":"robot","content":"hi","timestamp":1}"#,
            r#"{"timestamp":1,"role":"robot"}"#,
            r#"{"role":"user","timestamp":1}"#,
            r#"{"role":"user","content":5,"timestamp":1}"#,
            r#"{"role":"user","content":[{"type":"sticker"}],"timestamp":1}"#,
            r#"{"role":"user","content":[{"text":"no type"}],"timestamp":1}"#,
            r#"{"role":7,"content":"hi","timestamp":1}"#,
            r#"["user","hi",1]"#,
            r#""user""#,
        ] {
            assert!(hearth_json::from_str::<Message>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_len_is_the_serialized_length() {
        let samples = vec![
            Message::user_text("Hello \"quoted\" \\ back\nslash\u{1}\u{7f} ünïcode 🎲", 1_708_300_000_000),
            Message::User {
                content: UserContent::Blocks(vec![
                    UserBlock::Text { text: "<system-reminder>x</system-reminder>".into() },
                    UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/u.png".into() },
                    UserBlock::File {
                        mime_type: "application/pdf".into(),
                        r2_key: "media/k/d.pdf".into(),
                        filename: Some("a \"b\".pdf".into()),
                    },
                    UserBlock::File { mime_type: "audio/ogg".into(), r2_key: "media/k/v.ogg".into(), filename: None },
                ]),
                timestamp: -5,
                sender: Some("Ana \"Nana\" López".into()),
                channel: Some("telegram".into()),
            },
            Message::User { content: UserContent::Blocks(vec![]), timestamp: 0, sender: None, channel: None },
            Message::Assistant {
                content: vec![
                    AssistantBlock::Text { text: "hi\t".into() },
                    AssistantBlock::Thinking { thinking: "hmm".into() },
                    AssistantBlock::ToolCall {
                        id: "toolu_1".into(),
                        name: "read_file".into(),
                        arguments: serde_json::json!({"path": "SOUL.md", "n": [1, -2.5, null, true, false, {}], "e": {"k\"": "v"}}),
                    },
                    AssistantBlock::Native {
                        provider: "anthropic".into(),
                        block: serde_json::json!({"type": "text", "text": "cited \"x\"", "citations": [{"url": "https://a.test/"}]}),
                    },
                ],
                timestamp: 7,
                model: Some("claude".into()),
                stop_reason: Some("toolUse".into()),
                usage: Some(Usage::new(12345, 6, 0, 99)),
            },
            Message::Assistant {
                content: vec![],
                timestamp: 8,
                model: None,
                stop_reason: None,
                usage: Some(Usage::new(4, 6, 0, 2_000).with_1h_writes(1_500)),
            },
            Message::Assistant { content: vec![], timestamp: 7, model: None, stop_reason: None, usage: None },
            Message::ToolResult {
                tool_call_id: "call_abc".into(),
                tool_name: "Bash".into(),
                content: vec![ResultBlock::Text { text: "out".into() }, ResultBlock::Text { text: "".into() }],
                is_error: true,
                timestamp: 1_708_300_002_000,
            },
            Message::ToolResult {
                tool_call_id: "".into(),
                tool_name: "x".into(),
                content: vec![],
                is_error: false,
                timestamp: 0,
            },
        ];
        for m in samples {
            assert_eq!(m.json_len(), serde_json::to_string(&m).unwrap().len(), "{m:?}");
        }
    }
}
