//! Streamed calls: the answer read as the provider writes it.
//!
//! With `"stream": true` both providers answer with server-sent events
//! ([`super::sse`]). Anthropic: `message_start` (model, input usage),
//! `content_block_start` / `content_block_delta` (`text_delta`,
//! `input_json_delta` pieces of a tool call's input, `thinking_delta`, ...) /
//! `content_block_stop`, `message_delta` (stop reason, output usage),
//! `message_stop`, `ping`s, and an `error` event inside a 200 when the
//! provider fails mid-answer. OpenAI-compatible: `chat.completion.chunk`s
//! whose `delta` carries text and tool-call pieces keyed by `index`, a
//! `finish_reason`, then (asked with `stream_options.include_usage`) a last
//! chunk with empty `choices` and the usage, and `data: [DONE]`.
//!
//! Each stream is folded back into the body the provider would have sent
//! without streaming, and decoded by the same [`super::anthropic::decode`] /
//! [`super::openai::decode`]: a streamed answer is stored exactly like one
//! that was not. Text is handed to a [`Delta`] sink as it arrives.
//!
//! A stream that breaks (an `error` event, a dropped connection, an end
//! before the answer is complete) is retried like a failed call, from the
//! start; the sink is told ([`Delta::Retry`]) so that what a user already
//! saw is not shown twice (see `crate::session::watch`).

use super::sse::{SseEvent, SseParser};
use super::LlmIo;
use super::{decode_verdict, ChatRequest, LlmError, LlmReply};
use crate::ports::{Http, HttpError, HttpRequest, LogLevel};
use crate::retry::{Backoff, Verdict, MAX_HONOURED_RETRY_AFTER_MS};
use crate::settings::{LlmConfig, Provider};
use futures::StreamExt;
use serde_json::{json, Map, Value};

/// What a streamed call tells its sink as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// More of the answer's text.
    Text(&'a str),
    /// The call starts again from nothing (the last attempt broke off).
    Retry,
}

/// Marks a request body as streamed: `"stream": true`, and for OpenAI the
/// usage chunk at the end (`stream_options.include_usage`).
pub fn streamed(mut req: HttpRequest, provider: Provider) -> HttpRequest {
    let extra: &[u8] = match provider {
        Provider::Anthropic => b",\"stream\":true}",
        Provider::OpenAi => b",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
    };
    // The encoders write one JSON object: its closing brace is the last byte.
    if req.body.last() == Some(&b'}') {
        req.body.pop();
        req.body.extend_from_slice(extra);
    }
    req.headers.push(("accept".into(), "text/event-stream".into()));
    req
}

/// How one attempt ended, when it did not give an answer.
enum Failed {
    Final(LlmError),
    Retry { why: String, after_ms: Option<u64> },
}

/// One streamed call with its retries (the streamed twin of `super::send`).
pub async fn send_streamed<P: LlmIo>(
    p: &P,
    cfg: &LlmConfig,
    req: &ChatRequest<'_>,
    sink: &dyn Fn(Delta<'_>),
) -> Result<LlmReply, LlmError> {
    let http_req = streamed(super::build_request(cfg, req)?, cfg.provider);
    let backoff = Backoff { attempts: cfg.max_attempts, base_ms: cfg.retry_base_ms, max_ms: cfg.retry_max_ms };
    let mut made = 0;
    loop {
        made += 1;
        if made > 1 {
            sink(Delta::Retry);
        }
        let (why, after_ms) = match attempt(p.http(), cfg.provider, &http_req, sink).await {
            Ok(reply) => return Ok(reply),
            Err(Failed::Final(e)) => return Err(e),
            Err(Failed::Retry { why, after_ms }) => (why, after_ms),
        };
        match backoff.delay(made, after_ms) {
            Some(ms) => {
                p.log(LogLevel::Warn, &format!("llm attempt {made} failed ({why}); retrying in {ms} ms"));
                p.sleep(ms).await;
            }
            None => {
                return Err(match after_ms.filter(|&ms| made < backoff.attempts && ms > MAX_HONOURED_RETRY_AFTER_MS) {
                    Some(ms) => LlmError::Throttled { wait_s: ms.div_ceil(1000), last: why },
                    None => LlmError::Exhausted { attempts: made, last: why },
                })
            }
        }
    }
}

async fn attempt<H: Http>(
    http: &H,
    provider: Provider,
    req: &HttpRequest,
    sink: &dyn Fn(Delta<'_>),
) -> Result<LlmReply, Failed> {
    let net = |e: HttpError| match e {
        HttpError::Timeout => Failed::Retry { why: "timed out".into(), after_ms: None },
        HttpError::Network(e) => Failed::Retry { why: format!("network: {e}"), after_ms: None },
    };
    let resp = http.open(req.clone()).await.map_err(net)?;
    let is_sse = resp.header("content-type").is_some_and(|t| t.contains("text/event-stream"));
    if !(200..300).contains(&resp.status) || !is_sse {
        // An error answer, or a server that ignored `stream`: read it whole.
        let whole = resp.collect().await.map_err(net)?;
        return match decode_verdict(whole) {
            Verdict::Done(body) => {
                let body: Value =
                    hearth_json::from_slice(&body).map_err(|e| Failed::Final(LlmError::Decode(e.to_string())))?;
                let reply = super::decode(provider, &body).map_err(Failed::Final)?;
                let text = reply.text();
                if !text.is_empty() {
                    sink(Delta::Text(&text));
                }
                Ok(reply)
            }
            Verdict::Fail(e) => Err(Failed::Final(e)),
            Verdict::Retry { why, after_ms } => Err(Failed::Retry { why, after_ms }),
        };
    }
    let mut fold = Fold::new(provider);
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut body = resp.body;
    let cut = |why: &str| Failed::Retry { why: format!("the answer stream broke off: {why}"), after_ms: None };
    loop {
        let piece = match body.next().await {
            Some(Ok(piece)) => piece,
            Some(Err(e)) => return Err(cut(&e.to_string())),
            None => break,
        };
        parser.push(&piece, &mut events).map_err(|e| cut(&e.to_string()))?;
        for ev in events.drain(..) {
            fold.event(&ev, sink)?;
        }
        if fold.finished {
            break;
        }
    }
    if !fold.finished {
        parser.finish(&mut events);
        for ev in events.drain(..) {
            fold.event(&ev, sink)?;
        }
    }
    fold.reply()
}

/// A streamed answer folded back into the body it stands for.
struct Fold {
    provider: Provider,
    /// Anthropic: the `message` of `message_start`, its `content` filled in.
    /// OpenAI: `model`, `usage` and the parts of the first choice.
    message: Map<String, Value>,
    /// Anthropic: tool-call inputs as written so far, by block index.
    /// OpenAI: the tool calls by `index` (id, name, arguments so far).
    pieces: Vec<(u64, Value, String)>,
    /// OpenAI: the text and refusal so far.
    text: String,
    refusal: String,
    /// The provider said the answer is complete.
    complete: bool,
    /// Nothing more will come (Anthropic `message_stop`, OpenAI `[DONE]`).
    finished: bool,
}

impl Fold {
    fn new(provider: Provider) -> Self {
        Fold {
            provider,
            message: Map::new(),
            pieces: Vec::new(),
            text: String::new(),
            refusal: String::new(),
            complete: false,
            finished: false,
        }
    }

    fn event(&mut self, ev: &SseEvent, sink: &dyn Fn(Delta<'_>)) -> Result<(), Failed> {
        match self.provider {
            Provider::Anthropic => self.anthropic(ev, sink),
            Provider::OpenAi => self.openai(ev, sink),
        }
    }

    fn parse(data: &str) -> Result<Value, Failed> {
        hearth_json::from_slice(data.as_bytes())
            .map_err(|e| Failed::Retry { why: format!("unreadable event ({e})"), after_ms: None })
    }

    fn anthropic(&mut self, ev: &SseEvent, sink: &dyn Fn(Delta<'_>)) -> Result<(), Failed> {
        if ev.event == "ping" {
            return Ok(());
        }
        let v = Self::parse(&ev.data)?;
        let index = v["index"].as_u64().unwrap_or(0);
        match v["type"].as_str().unwrap_or(ev.event.as_str()) {
            "message_start" => {
                if let Value::Object(m) = v["message"].clone() {
                    self.message = m;
                }
                self.message.insert("content".into(), json!([]));
            }
            "content_block_start" => {
                let block = v["content_block"].clone();
                if let Some(Value::Array(content)) = self.message.get_mut("content") {
                    content.push(block);
                }
                self.pieces.push((index, Value::Null, String::new()));
            }
            "content_block_delta" => {
                let delta = &v["delta"];
                let Some(Value::Array(content)) = self.message.get_mut("content") else { return Ok(()) };
                let Some(pos) = self.pieces.iter().position(|(i, _, _)| *i == index) else { return Ok(()) };
                let block = &mut content[pos];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let piece = delta["text"].as_str().unwrap_or("");
                        append(block, "text", piece);
                        if block["type"] == "text" && !piece.is_empty() {
                            sink(Delta::Text(piece));
                        }
                    }
                    Some("input_json_delta") => {
                        self.pieces[pos].2.push_str(delta["partial_json"].as_str().unwrap_or(""))
                    }
                    Some("thinking_delta") => append(block, "thinking", delta["thinking"].as_str().unwrap_or("")),
                    Some("signature_delta") => block["signature"] = delta["signature"].clone(),
                    Some("citations_delta") => {
                        if !block["citations"].is_array() {
                            block["citations"] = json!([]);
                        }
                        if let Some(list) = block["citations"].as_array_mut() {
                            list.push(delta["citation"].clone());
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => self.close_input(index),
            "message_delta" => {
                if let Some(stop) = v["delta"].get("stop_reason").filter(|s| !s.is_null()) {
                    self.message.insert("stop_reason".into(), stop.clone());
                    self.complete = true;
                }
                // The usage here is cumulative: it replaces what message_start said.
                if let (Some(Value::Object(usage)), Value::Object(more)) =
                    (self.message.get_mut("usage"), v["usage"].clone())
                {
                    usage.extend(more);
                } else if v["usage"].is_object() {
                    self.message.insert("usage".into(), v["usage"].clone());
                }
            }
            "message_stop" => {
                self.complete = true;
                self.finished = true;
            }
            "error" => {
                let kind = v["error"]["type"].as_str().unwrap_or("api_error");
                let message = v["error"]["message"].as_str().unwrap_or(kind).to_owned();
                let status = anthropic_error_status(kind);
                return Err(if super::retryable(status) {
                    Failed::Retry { why: format!("{kind} in the stream: {message}"), after_ms: None }
                } else {
                    Failed::Final(LlmError::Rejected { status, message })
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// A tool call's input is complete: its JSON pieces become its input
    /// (pieces that are no JSON, a call cut at the output limit, are kept
    /// for the turn to report, as a non-streamed answer's would be).
    fn close_input(&mut self, index: u64) {
        let Some(pos) = self.pieces.iter().position(|(i, _, _)| *i == index) else { return };
        let raw = std::mem::take(&mut self.pieces[pos].2);
        let Some(Value::Array(content)) = self.message.get_mut("content") else { return };
        let Some(block) = content.get_mut(pos) else { return };
        if raw.is_empty() {
            return;
        }
        // What the pieces spell is the input as a non-streamed answer carries
        // it (the rules make it an object later, whatever it is); pieces that
        // spell no JSON at all are kept as text for the turn to report.
        block["input"] = match hearth_json::from_slice::<Value>(raw.as_bytes()) {
            Ok(input) => input,
            Err(_) => super::rules::tool_input(&Value::String(raw)).into_owned(),
        };
    }

    fn openai(&mut self, ev: &SseEvent, sink: &dyn Fn(Delta<'_>)) -> Result<(), Failed> {
        if ev.data.trim() == "[DONE]" {
            self.finished = true;
            return Ok(());
        }
        let v = Self::parse(&ev.data)?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let message = err["message"].as_str().unwrap_or("error in the stream").to_owned();
            let status = err["code"].as_u64().and_then(|c| u16::try_from(c).ok()).unwrap_or(500);
            return Err(if super::retryable(status) {
                Failed::Retry { why: format!("error in the stream: {message}"), after_ms: None }
            } else {
                Failed::Final(LlmError::Rejected { status, message })
            });
        }
        if let Some(model) = v.get("model").filter(|m| m.is_string()) {
            self.message.insert("model".into(), model.clone());
        }
        if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
            self.message.insert("usage".into(), usage.clone());
        }
        let Some(choice) =
            v["choices"].as_array().and_then(|c| c.iter().find(|c| c["index"].as_u64().unwrap_or(0) == 0))
        else {
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            sink(Delta::Text(text));
        }
        if let Some(text) = delta["refusal"].as_str().filter(|t| !t.is_empty()) {
            self.refusal.push_str(text);
            sink(Delta::Text(text));
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(0);
            let pos = match self.pieces.iter().position(|(i, _, _)| *i == index) {
                Some(pos) => pos,
                None => {
                    self.pieces.push((index, json!({"id": "", "type": "function", "name": ""}), String::new()));
                    self.pieces.len() - 1
                }
            };
            let (_, head, arguments) = &mut self.pieces[pos];
            if let Some(id) = call["id"].as_str().filter(|s| !s.is_empty()) {
                head["id"] = json!(id);
            }
            if let Some(name) = call["function"]["name"].as_str() {
                append(head, "name", name);
            }
            arguments.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
        if let Some(reason) = choice.get("finish_reason").filter(|r| r.is_string()) {
            self.message.insert("finish_reason".into(), reason.clone());
            self.complete = true;
        }
        Ok(())
    }

    /// The reply, when the provider said the answer was complete.
    fn reply(mut self) -> Result<LlmReply, Failed> {
        if !self.complete {
            return Err(Failed::Retry {
                why: "the answer stream ended before the answer was complete".into(),
                after_ms: None,
            });
        }
        let body = match self.provider {
            Provider::Anthropic => {
                let open: Vec<u64> =
                    self.pieces.iter().filter(|(_, _, raw)| !raw.is_empty()).map(|(i, _, _)| *i).collect();
                for index in open {
                    self.close_input(index);
                }
                Value::Object(self.message)
            }
            Provider::OpenAi => {
                let calls: Vec<Value> = self
                    .pieces
                    .iter()
                    .map(|(_, head, arguments)| {
                        json!({"id": head["id"], "type": "function",
                               "function": {"name": head["name"], "arguments": arguments}})
                    })
                    .collect();
                let mut message = json!({
                    "role": "assistant",
                    "content": if self.text.is_empty() { Value::Null } else { json!(self.text) },
                });
                if !self.refusal.is_empty() {
                    message["refusal"] = json!(self.refusal);
                }
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(calls);
                }
                let finish = self.message.remove("finish_reason").unwrap_or(Value::Null);
                self.message
                    .insert("choices".into(), json!([{"index": 0, "message": message, "finish_reason": finish}]));
                Value::Object(self.message)
            }
        };
        super::decode(self.provider, &body).map_err(Failed::Final)
    }
}

fn append(v: &mut Value, field: &str, piece: &str) {
    match v.get_mut(field) {
        Some(Value::String(s)) => s.push_str(piece),
        _ => v[field] = json!(piece),
    }
}

/// The HTTP status an Anthropic error type stands for (their error docs).
fn anthropic_error_status(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

#[cfg(test)]
mod tests;
