//! Talking to the model: one request shape, two wire encodings, retries.
//!
//! The session history is a list of [`Message`]s; [`anthropic`] and [`openai`]
//! turn it into their request bodies and their responses back into an
//! [`LlmReply`]. [`complete`] sends with retries: 408/409/429/5xx, time-outs and
//! network errors are retried with backoff (honouring `retry-after`); other
//! 4xx are final, except the two a request can recover from at once: an
//! output-limit parameter the model does not take (sent again with the other
//! name), and, in [`complete_repairing`], a history the provider refuses
//! (sent once more in its [`rules::strict_form`]). What every message must be
//! like for the providers to take it is in [`rules`].

pub mod anthropic;
pub mod cache_ttl;
pub mod native;
pub mod openai;
pub mod rules;
pub mod sse;
pub mod stream;
pub mod wire;

pub use cache_ttl::CacheTtl;
pub use stream::Delta;

use crate::ports::{Http, HttpRequest, LogLevel, Platform};
use crate::retry::{parse_retry_after, Backoff, Verdict};
use crate::settings::{LlmConfig, Provider};
use crate::toolkit::ToolSpec;
use r2_layout::{AssistantBlock, Message, Usage};
use serde_json::Value;
use std::borrow::Cow;

/// What a call needs from whoever makes it: HTTP, a way to wait between
/// attempts, a log. Every [`Platform`] (a Session object's) has them; the
/// Agent object gives its own for dreaming's one call.
#[allow(async_fn_in_trait)]
pub trait LlmIo {
    type Http: Http;
    fn http(&self) -> &Self::Http;
    async fn sleep(&self, ms: u64);
    fn log(&self, level: LogLevel, msg: &str);
}

impl<P: Platform> LlmIo for P {
    type Http = P::Http;
    fn http(&self) -> &P::Http {
        Platform::http(self)
    }
    async fn sleep(&self, ms: u64) {
        Platform::sleep(self, ms).await
    }
    fn log(&self, level: LogLevel, msg: &str) {
        Platform::log(self, level, msg)
    }
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
    /// The session's fragments of its last request: only new messages are
    /// encoded (`None`: encode all, for one-off requests).
    pub memo: Option<&'a std::cell::RefCell<wire::WireMemo>>,
    /// What the session's history cache knows of the first messages
    /// (`stamps.len()` of them, empty for one-off requests): `messages[i]`
    /// is the message it stamped `stamps[i]` (one stamp, one message, for
    /// the object's life) and those messages are paired. The memo then
    /// reuses their fragments by stamp, and only the rest is checked.
    pub stamps: &'a [u64],
    /// How long the provider keeps `tools` and `system` cached (Anthropic's
    /// first breakpoint; the conversation's breakpoint after it is always 5
    /// minutes, as a longer one may not follow a shorter). See [`cache_ttl`].
    pub prefix_ttl: CacheTtl,
}

/// The `anthropic-beta` flag the 1-hour cache was introduced under. Sent
/// with a request that asks for an hour: reports of 2026 say the API still
/// refuses (400) or silently shortens a `"ttl": "1h"` without it on some
/// accounts, and a flag the API knows costs nothing where it is not needed.
pub const EXTENDED_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    ToolUse,
    /// Cut at the output limit (Anthropic `max_tokens`, OpenAI `length`).
    Length,
    /// The model declined (Anthropic `refusal`, OpenAI `refusal` text or
    /// `content_filter`); any tool call it made is dropped.
    Refusal,
    /// Anthropic `pause_turn`: a long turn paused before it finished.
    Pause,
    Other,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::ToolUse => "toolUse",
            StopReason::Length => "length",
            StopReason::Refusal => "refusal",
            StopReason::Pause => "pauseTurn",
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
    /// The provider refused the conversation, and again in its strict form.
    #[error("LLM refused the history, also repaired ({status}): {message}")]
    HistoryRefused { status: u16, message: String },
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
            LlmError::Rejected { status, message } if *status == 400 => format!(
                "⚠️ My model's provider refused our conversation (HTTP 400: {}). Your message is saved; /reset starts a fresh conversation.",
                short(message)
            ),
            LlmError::Rejected { status, .. } => {
                format!("⚠️ My model refused the request (HTTP {status}). Your message is saved.")
            }
            LlmError::HistoryRefused { status, message } => format!(
                "⚠️ My model's provider refused our conversation (HTTP {status}: {}). I repaired it once and tried again, \
                 but it still refuses. Your message is saved; /reset starts a fresh conversation.",
                short(message)
            ),
            LlmError::Decode(_) => "⚠️ My model sent an answer I could not read. Your message is saved.".into(),
        }
    }
}

/// A provider's error message as the user sees it: one line, cut.
fn short(message: &str) -> String {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::truncate_chars(&line, 200).replace(crate::text::TRUNCATED_MARKER, "…")
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
    // Every tool call answered, every result after its call: a history
    // stored before a rule existed is paired here (borrowed when it is).
    let messages: Cow<'_, [r2_layout::Message]> = rules::paired_after(req.messages, req.stamps.len());
    // Stamps name the messages as given: a history paired here is another.
    let stamps = if matches!(messages, Cow::Borrowed(_)) { req.stamps } else { &[] };
    let fragments = match req.memo {
        Some(memo) => memo.borrow_mut().fragments(cfg.provider, &messages, stamps, encode_one),
        None => wire::fragments_once(&messages, encode_one),
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
        Provider::Anthropic => {
            let http = http.header("x-api-key", key).header("anthropic-version", "2023-06-01");
            match req.prefix_ttl {
                CacheTtl::OneHour => http.header("anthropic-beta", EXTENDED_CACHE_TTL_BETA),
                CacheTtl::FiveMinutes => http,
            }
        }
        Provider::OpenAi => http.header("authorization", &format!("Bearer {key}")),
    })
}

/// What the text of a streamed call is handed to, as it arrives.
pub type DeltaSink<'a> = Option<&'a dyn Fn(Delta<'_>)>;

fn retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429) || status >= 500
}

/// Whether a 400 names the output-limit parameter we sent as one the model
/// does not take (OpenAI: `Unsupported parameter: 'max_tokens' is not
/// supported with this model. Use 'max_completion_tokens' instead.`).
fn refuses_limit_param(cfg: &LlmConfig, message: &str) -> bool {
    let sent = cfg.max_tokens_param.name();
    let lower = message.to_ascii_lowercase();
    cfg.provider == Provider::OpenAi
        && lower.contains(sent)
        && (lower.contains(cfg.max_tokens_param.other().name())
            || lower.contains("unsupported")
            || lower.contains("unrecognized"))
}

/// Sends one call, retrying what is worth retrying. A model that refuses the
/// output-limit parameter gets the call again with the other name (and a
/// warning naming `LLM_MAX_TOKENS_PARAM`).
pub async fn complete<P: LlmIo>(p: &P, cfg: &LlmConfig, req: &ChatRequest<'_>) -> Result<LlmReply, LlmError> {
    complete_with(p, cfg, req, None).await
}

/// [`complete`], streamed when `sink` is given: the answer's text goes to it
/// as the provider writes it ([`stream`]).
pub async fn complete_with<P: LlmIo>(
    p: &P,
    cfg: &LlmConfig,
    req: &ChatRequest<'_>,
    sink: DeltaSink<'_>,
) -> Result<LlmReply, LlmError> {
    match send(p, cfg, req, sink).await {
        Err(LlmError::Rejected { status: 400, message }) if refuses_limit_param(cfg, &message) => {
            let other = cfg.max_tokens_param.other();
            p.log(
                LogLevel::Warn,
                &format!(
                    "llm: {} refused {}; sent again with {} (set LLM_MAX_TOKENS_PARAM={} to skip the refused call)",
                    cfg.model,
                    cfg.max_tokens_param.name(),
                    other.name(),
                    other.name()
                ),
            );
            let retry = LlmConfig { max_tokens_param: other, ..cfg.clone() };
            send(p, &retry, req, sink).await
        }
        other => other,
    }
}

/// A call's reply, and whether the history had to go in its strict form.
#[derive(Debug)]
pub struct Completion {
    pub reply: LlmReply,
    /// The provider refused the history as it is and took
    /// [`rules::strict_form`] of every message: the caller may keep that form.
    pub strict: bool,
}

/// Whether a refusal is worth one retry with the strict history: a 400 (or
/// a 422, which some OpenAI-compatible servers use) that is not about a
/// parameter [`complete`] already handles.
fn history_may_be_refused(cfg: &LlmConfig, status: u16, message: &str) -> bool {
    matches!(status, 400 | 422) && !refuses_limit_param(cfg, message)
}

/// [`complete`], and when the provider refuses the request with a 400 although
/// every message follows [`rules`], once more with every message in its
/// [`rules::strict_form`] (media and tool blocks as text). A second refusal is
/// [`LlmError::HistoryRefused`].
pub async fn complete_repairing<P: LlmIo>(
    p: &P,
    cfg: &LlmConfig,
    req: &ChatRequest<'_>,
) -> Result<Completion, LlmError> {
    complete_repairing_with(p, cfg, req, None).await
}

/// [`complete_repairing`], streamed when `sink` is given.
pub async fn complete_repairing_with<P: LlmIo>(
    p: &P,
    cfg: &LlmConfig,
    req: &ChatRequest<'_>,
    sink: DeltaSink<'_>,
) -> Result<Completion, LlmError> {
    match complete_with(p, cfg, req, sink).await {
        Ok(reply) => Ok(Completion { reply, strict: false }),
        Err(LlmError::Rejected { status, message }) if history_may_be_refused(cfg, status, &message) => {
            p.log(LogLevel::Warn, &format!("llm refused the history ({status}: {message}); sending it as plain text"));
            let strict: Vec<r2_layout::Message> = req.messages.iter().map(rules::strict_form).collect();
            let retry = ChatRequest {
                system: req.system,
                messages: &strict,
                tools: req.tools,
                media: req.media,
                appended_user: req.appended_user,
                memo: None,
                stamps: &[],
                prefix_ttl: req.prefix_ttl,
            };
            match complete_with(p, cfg, &retry, sink).await {
                Ok(reply) => Ok(Completion { reply, strict: true }),
                Err(LlmError::Rejected { status, message }) => Err(LlmError::HistoryRefused { status, message }),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// What one HTTP answer of a call means: the body, a final error, or a retry.
fn decode_verdict(resp: crate::ports::HttpResponse) -> Verdict<Vec<u8>, LlmError> {
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
}

/// A provider's response body as a reply.
fn decode(provider: Provider, body: &Value) -> Result<LlmReply, LlmError> {
    match provider {
        Provider::Anthropic => anthropic::decode(body),
        Provider::OpenAi => openai::decode(body),
    }
}

/// One call with its retries (see [`complete`]); streamed with a sink.
async fn send<P: LlmIo>(
    p: &P,
    cfg: &LlmConfig,
    req: &ChatRequest<'_>,
    sink: DeltaSink<'_>,
) -> Result<LlmReply, LlmError> {
    if let Some(sink) = sink {
        return stream::send_streamed(p, cfg, req, sink).await;
    }
    let http_req = build_request(cfg, req)?;
    let backoff = Backoff { attempts: cfg.max_attempts, base_ms: cfg.retry_base_ms, max_ms: cfg.retry_max_ms };
    let body = crate::retry::send_retrying(
        p.http(),
        &http_req,
        &backoff,
        async |ms| p.sleep(ms).await,
        |msg| p.log(LogLevel::Warn, &format!("llm {msg}")),
        decode_verdict,
        |g| match g.asked_wait_ms {
            Some(ms) => LlmError::Throttled { wait_s: ms.div_ceil(1000), last: g.last },
            None => LlmError::Exhausted { attempts: g.attempts, last: g.last },
        },
    )
    .await?;
    let body: Value = hearth_json::from_slice(&body).map_err(|e| LlmError::Decode(e.to_string()))?;
    decode(cfg.provider, &body)
}

/// The `error.message` of either provider's error body, else the raw text (cut).
fn error_message(body: &[u8]) -> String {
    let parsed: Option<Value> = hearth_json::from_slice(body).ok();
    if let Some(msg) = parsed.as_ref().and_then(|v| v.pointer("/error/message")).and_then(Value::as_str) {
        return msg.to_owned();
    }
    let text = String::from_utf8_lossy(body);
    text.chars().take(200).collect()
}

fn _assert_http_object_safe<H: Http>(_: &H) {}

#[cfg(test)]
mod tests;
