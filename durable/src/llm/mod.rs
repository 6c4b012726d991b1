//! Talking to the model: one request shape, two wire encodings, retries.
//!
//! The session history is a list of [`Message`]s; [`anthropic`] and [`openai`]
//! turn it into their request bodies and their responses back into an
//! [`LlmReply`]. [`complete`] sends with retries: 408/409/429/5xx, time-outs and
//! network errors are retried with backoff (honouring `retry-after`); other
//! 4xx are final.

pub mod anthropic;
pub mod native;
pub mod openai;
pub mod wire;

use crate::ports::{Http, HttpRequest, LogLevel, Platform};
use crate::retry::{parse_retry_after, Backoff, Verdict};
use crate::settings::{LlmConfig, Provider};
use crate::toolkit::ToolSpec;
use r2_layout::{AssistantBlock, Message, Usage};
use serde_json::Value;

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
    /// The session's fragments of its last request: only new messages are
    /// encoded (`None`: encode all, for one-off requests).
    pub memo: Option<&'a std::cell::RefCell<wire::WireMemo>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    ToolUse,
    Length,
    /// The provider paused a long turn of its own tools (Anthropic's
    /// `pause_turn`): sending the conversation again continues it.
    Paused,
    Other,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::ToolUse => "toolUse",
            StopReason::Length => "length",
            StopReason::Paused => "paused",
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
    /// What the user is shown: the reply's text, and the pages it cites.
    pub fn text(&self) -> String {
        let text = self.blocks.iter().filter_map(AssistantBlock::visible_text).collect::<Vec<_>>().join("\n");
        native::with_sources(text, &self.blocks)
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
    /// The provider asked for a longer wait than we hold a session for
    /// ([`crate::retry::MAX_HONOURED_RETRY_AFTER_MS`]); not retried.
    #[error("LLM asked to wait {wait_s} s: {last}")]
    Throttled { wait_s: u64, last: String },
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
            LlmError::Throttled { wait_s, .. } => format!(
                "⚠️ My model's provider asked me to wait {} before trying again, so I stopped. Your message is saved; try again later.",
                human_wait(*wait_s)
            ),
            LlmError::Rejected { status, .. } => {
                format!("⚠️ My model refused the request (HTTP {status}). Your message is saved.")
            }
            LlmError::Decode(_) => "⚠️ My model sent an answer I could not read. Your message is saved.".into(),
        }
    }
}

/// `90 s`, `5 min`, `2 h`: rounded up, as a person would say it.
fn human_wait(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{} h", secs.div_ceil(3600)),
    }
}

/// The HTTP request for one call.
pub fn build_request(cfg: &LlmConfig, req: &ChatRequest<'_>) -> Result<HttpRequest, LlmError> {
    let key = cfg.api_key.as_deref().ok_or_else(|| LlmError::Config("LLM_API_KEY is not set".into()))?;
    let encode_one = |m: &r2_layout::Message| match cfg.provider {
        Provider::Anthropic => anthropic::fragment(m, req.media),
        Provider::OpenAi => openai::fragment(m, req.media),
    };
    let fragments = match req.memo {
        Some(memo) => memo.borrow_mut().fragments(cfg.provider, req.messages, encode_one),
        None => wire::fragments_once(req.messages, encode_one),
    };
    let (url, body) = match cfg.provider {
        Provider::Anthropic => (format!("{}/v1/messages", cfg.base_url), anthropic::encode_body(cfg, req, &fragments)),
        Provider::OpenAi => (format!("{}/chat/completions", cfg.base_url), openai::encode_body(cfg, req, &fragments)),
    };
    let http = HttpRequest {
        method: "POST",
        url,
        headers: vec![("content-type".into(), "application/json".into())],
        body,
        timeout_ms: cfg.timeout_ms,
    };
    Ok(match cfg.provider {
        Provider::Anthropic => http.header("x-api-key", key).header("anthropic-version", "2023-06-01"),
        Provider::OpenAi => http.header("authorization", &format!("Bearer {key}")),
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
        |g| match g.asked_wait_ms {
            Some(ms) => LlmError::Throttled { wait_s: ms.div_ceil(1000), last: g.last },
            None => LlmError::Exhausted { attempts: g.attempts, last: g.last },
        },
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

fn _assert_http_object_safe<H: Http>(_: &H) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPlatform;
    use r2_layout::{Message, UserContent};

    fn cfg() -> LlmConfig {
        crate::testing::llm_config(&[("LLM_API_KEY", "k"), ("RETRY_BASE_MS", "10")])
    }

    fn call(p: &TestPlatform) -> Result<LlmReply, LlmError> {
        let messages = [Message::User { content: UserContent::Text("hi".into()), timestamp: 0 }];
        let media = Hydrated::new();
        let req = ChatRequest {
            system: "s",
            messages: &messages,
            tools: &[],
            media: &media,
            appended_user: None,
            memo: None,
        };
        futures::executor::block_on(complete(p, &cfg(), &req))
    }

    #[test]
    fn a_provider_asking_for_a_long_wait_is_not_called_several_times_and_the_user_is_told_the_wait() {
        let p = TestPlatform::default();
        p.http.responses.borrow_mut().push_back(Ok(crate::ports::HttpResponse {
            status: 429,
            headers: vec![("retry-after".into(), "300".into())],
            body: br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.to_vec(),
        }));
        let e = call(&p).unwrap_err();
        assert_eq!(p.http.requests.borrow().len(), 1, "no retries against a 5-minute wait");
        assert!(matches!(&e, LlmError::Throttled { wait_s: 300, .. }), "{e:?}");
        let msg = e.user_message();
        assert!(msg.contains("wait 5 min") && msg.contains("try again later"), "{msg}");
        assert!(!msg.contains("retried several times"), "{msg}");

        // Failures that use up the attempts still say so.
        let p = TestPlatform::default();
        for _ in 0..4 {
            p.http.push_json(503, serde_json::json!({"error": {"message": "overloaded"}}));
        }
        let e = call(&p).unwrap_err();
        assert!(matches!(e, LlmError::Exhausted { attempts: 4, .. }), "{e:?}");
        assert_eq!(human_wait(90), "90 s");
        assert_eq!(human_wait(3 * 3600), "3 h");
    }
}
