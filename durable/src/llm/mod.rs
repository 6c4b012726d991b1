//! Talking to the model: one request shape, two wire encodings, retries.
//!
//! The session history is a list of [`Message`]s; [`anthropic`] and [`openai`]
//! turn it into their request bodies and their responses back into an
//! [`LlmReply`]. [`complete`] sends with retries: 408/409/429/5xx, time-outs and
//! network errors are retried with backoff (honouring `retry-after`); other
//! 4xx are final.

pub mod anthropic;
pub mod openai;

use crate::config::{LlmConfig, Provider};
use crate::ports::{Http, HttpRequest, LogLevel, Platform};
use crate::retry::{parse_retry_after, Backoff, Verdict};
use r2_layout::{AssistantBlock, Message, Usage};
use serde_json::Value;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// Media bytes loaded for one call, keyed by R2 key (see `prompt::hydrate`).
pub type Hydrated = std::collections::HashMap<String, std::rc::Rc<Vec<u8>>>;

/// Everything one call sends. `system` is the stable prompt; `tools` are
/// sorted by name and fixed for the session so the prefix caches.
pub struct ChatRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub media: &'a Hydrated,
    /// Extra instruction appended as a final user message (compaction, memory
    /// extraction); the history stays byte-identical before it.
    pub appended_user: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    ToolUse,
    Length,
    Other,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::ToolUse => "toolUse",
            StopReason::Length => "length",
            StopReason::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmReply {
    pub blocks: Vec<AssistantBlock>,
    pub stop: StopReason,
    pub usage: Usage,
    pub model: String,
}

impl LlmReply {
    pub fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.blocks.iter().filter_map(|b| match b {
            AssistantBlock::ToolCall { id, name, arguments } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("LLM is not configured: {0}")]
    Config(String),
    #[error("LLM rejected the request ({status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("LLM unavailable after {attempts} attempts: {last}")]
    Exhausted { attempts: u32, last: String },
    #[error("LLM response could not be read: {0}")]
    Decode(String),
}

impl LlmError {
    /// A short message for the chat user: no secrets, no stack.
    pub fn user_message(&self) -> String {
        match self {
            LlmError::Config(_) => {
                "⚠️ I can't think right now: my LLM is not configured (LLM_API_KEY). Your message is saved.".into()
            }
            LlmError::Exhausted { .. } => {
                "⚠️ My model is not answering right now (I retried several times). Your message is saved; send me anything to try again.".into()
            }
            LlmError::Rejected { status, .. } => {
                format!("⚠️ My model refused the request (HTTP {status}). Your message is saved.")
            }
            LlmError::Decode(_) => "⚠️ My model sent an answer I could not read. Your message is saved.".into(),
        }
    }
}

/// The HTTP request for one call.
pub fn build_request(cfg: &LlmConfig, req: &ChatRequest<'_>) -> Result<HttpRequest, LlmError> {
    let key = cfg
        .api_key
        .as_deref()
        .ok_or_else(|| LlmError::Config("LLM_API_KEY is not set".into()))?;
    Ok(match cfg.provider {
        Provider::Anthropic => HttpRequest::post_json(
            format!("{}/v1/messages", cfg.base_url),
            &anthropic::encode(cfg, req),
            cfg.timeout_ms,
        )
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01"),
        Provider::OpenAi => HttpRequest::post_json(
            format!("{}/chat/completions", cfg.base_url),
            &openai::encode(cfg, req),
            cfg.timeout_ms,
        )
        .header("authorization", &format!("Bearer {key}")),
    })
}

fn retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429) || status >= 500
}

/// Sends one call, retrying what is worth retrying.
pub async fn complete<P: Platform>(p: &P, cfg: &LlmConfig, req: &ChatRequest<'_>) -> Result<LlmReply, LlmError> {
    let http_req = build_request(cfg, req)?;
    let backoff = Backoff { attempts: cfg.max_attempts, base_ms: cfg.retry_base_ms, max_ms: cfg.retry_max_ms };
    let body = crate::retry::send_retrying(
        p.http(),
        &http_req,
        &backoff,
        async |ms| p.sleep(ms).await,
        |msg| p.log(LogLevel::Warn, &format!("llm {msg}")),
        |resp| {
            if (200..300).contains(&resp.status) {
                Verdict::Done(resp.body)
            } else if retryable(resp.status) {
                Verdict::Retry {
                    why: format!("HTTP {}: {}", resp.status, error_message(&resp.body)),
                    after_ms: parse_retry_after(resp.header("retry-after")),
                }
            } else {
                Verdict::Fail(LlmError::Rejected { status: resp.status, message: error_message(&resp.body) })
            }
        },
        |attempts, last| LlmError::Exhausted { attempts, last },
    )
    .await?;
    let body: Value = serde_json::from_slice(&body).map_err(|e| LlmError::Decode(e.to_string()))?;
    match cfg.provider {
        Provider::Anthropic => anthropic::decode(&body),
        Provider::OpenAi => openai::decode(&body),
    }
}

/// The `error.message` of either provider's error body, else the raw text (cut).
fn error_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(msg) = parsed.as_ref().and_then(|v| v.pointer("/error/message")).and_then(Value::as_str) {
        return msg.to_owned();
    }
    let text = String::from_utf8_lossy(body);
    text.chars().take(200).collect()
}

/// Turns provider usage numbers into pi-ai's [`Usage`].
pub fn usage_of(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage { input, output, cache_read, cache_write, total_tokens: input + output + cache_read + cache_write }
}

fn _assert_http_object_safe<H: Http>(_: &H) {}
