//! The Telegram Bot API client. Replies go one piece per call
//! ([`TelegramApi::send_chunk`]): the session's outbox (durable's
//! `delivery`) cuts them, retries them later and keeps their order. Other
//! calls (`getFile`, `getMe`, the note to strangers) honour Telegram's rate
//! limits (`429` with `parameters.retry_after`) and retry transient errors
//! with backoff, in the call.

use crate::adapters::{self, FetchHttp};
use durable::delivery::chunk;
use durable::inbound::ReplyTarget;
use durable::ports::{ChannelError, Http, HttpRequest, LogLevel, OutgoingChunk, SendOutcome};
use durable::retry::{send_retrying, Backoff, Verdict};
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TgError {
    /// Telegram answered `ok: false` with a final error.
    Api { code: u16, description: String },
    /// Retries used up.
    Unavailable(String),
}

impl std::fmt::Display for TgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TgError::Api { code, description } => write!(f, "telegram {code}: {description}"),
            TgError::Unavailable(e) => write!(f, "telegram unavailable: {e}"),
        }
    }
}

pub struct TelegramApi {
    pub base: String,
    pub token: String,
    pub backoff: Backoff,
}

impl TelegramApi {
    /// The bot of an agent (`None` without `TELEGRAM_BOT_TOKEN`).
    pub fn for_agent(cfg: &durable::settings::AgentConfig) -> Option<TelegramApi> {
        Some(TelegramApi {
            base: cfg.telegram_api_base.clone(),
            token: cfg.telegram_bot_token.clone()?,
            backoff: Backoff { attempts: 5, base_ms: cfg.llm.retry_base_ms, max_ms: cfg.llm.retry_max_ms },
        })
    }

    pub async fn call(&self, method: &str, body: &Value) -> Result<Value, TgError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        send_retrying(
            &FetchHttp,
            &HttpRequest::post_json(url, body, 30_000),
            &self.backoff,
            async |ms| adapters::sleep(ms).await,
            |msg| adapters::log(LogLevel::Warn, &format!("telegram {method}: {msg}")),
            |resp| {
                let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
                if (200..300).contains(&resp.status) && v["ok"] != Value::Bool(false) {
                    return Verdict::Done(v["result"].clone());
                }
                let description = v["description"].as_str().unwrap_or("").to_owned();
                if resp.status == 429 || resp.status >= 500 {
                    let after_ms = v["parameters"]["retry_after"].as_u64().map(|s| s.saturating_mul(1000));
                    Verdict::Retry { why: format!("{}: {description}", resp.status), after_ms }
                } else {
                    Verdict::Fail(TgError::Api { code: resp.status, description })
                }
            },
            |gave_up| TgError::Unavailable(gave_up.to_string()),
        )
        .await
    }

    fn target_fields(target: &ReplyTarget, body: &mut Value) {
        if let Some(t) = target.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok()) {
            body["message_thread_id"] = json!(t);
        }
    }

    /// One attempt at one piece of a reply: `sendMessage`, as HTML when the
    /// piece has it; its first piece quotes the user's message (groups).
    pub async fn send_chunk(&self, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let body = Self::message_body(target, piece);
        let url = format!("{}/bot{}/sendMessage", self.base, self.token);
        match FetchHttp.send(HttpRequest::post_json(url, &body, 30_000)).await {
            Ok(resp) => durable::delivery::classify::telegram(resp.status, &resp.body),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("telegram: {e}") },
        }
    }

    /// A voice note (`sendVoice`, Ogg/Opus) replying to the user's message.
    pub async fn send_voice(&self, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        let mut fields: Vec<(&str, String)> = vec![("chat_id", target.chat_id.clone())];
        if let Some(t) = target.thread_id.as_deref() {
            fields.push(("message_thread_id", t.to_owned()));
        }
        if let Some(r) = target.reply_to.as_deref() {
            fields.push((
                "reply_parameters",
                json!({"message_id": r.parse::<i64>().unwrap_or(0), "allow_sending_without_reply": true}).to_string(),
            ));
        }
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (content_type, body) = durable::voice::multipart(&fields, ("voice", "reply.ogg", "audio/ogg", audio));
        let url = format!("{}/bot{}/sendVoice", self.base, self.token);
        let req = HttpRequest {
            method: "POST",
            url,
            headers: vec![("content-type".into(), content_type)],
            body,
            timeout_ms: 60_000,
        };
        match FetchHttp.send(req).await {
            Ok(resp) => durable::delivery::classify::telegram(resp.status, &resp.body),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("telegram: {e}") },
        }
    }

    fn message_body(target: &ReplyTarget, piece: &OutgoingChunk) -> Value {
        let mut body = match &piece.html {
            Some(html) => json!({"chat_id": target.chat_id, "text": html, "parse_mode": "HTML"}),
            None => json!({"chat_id": target.chat_id, "text": piece.text}),
        };
        body["link_preview_options"] = json!({"is_disabled": true});
        Self::target_fields(target, &mut body);
        if piece.first {
            if let Some(r) = target.reply_to.as_deref().and_then(|r| r.parse::<i64>().ok()) {
                body["reply_parameters"] = json!({"message_id": r, "allow_sending_without_reply": true});
            }
        }
        body
    }

    /// Sends a short text outside any session (the note to a stranger):
    /// retried in the call, not kept if it still fails.
    pub async fn send_reply(&self, target: &ReplyTarget, text: &str) -> Result<(), TgError> {
        for (i, piece) in chunk::pieces(durable::inbound::ChannelKind::Telegram, text).iter().enumerate() {
            let rendered = chunk::render(piece, true, i == 0, false);
            let mut body = Self::message_body(target, &rendered);
            match self.call("sendMessage", &body).await {
                Err(TgError::Api { code: 400, .. }) => {
                    body = Self::message_body(target, &chunk::render(piece, false, i == 0, false));
                    self.call("sendMessage", &body).await?;
                }
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }

    pub async fn typing(&self, target: &ReplyTarget) {
        let mut body = json!({"chat_id": target.chat_id, "action": "typing"});
        Self::target_fields(target, &mut body);
        // Best effort, one try: typing is cosmetic.
        let url = format!("{}/bot{}/sendChatAction", self.base, self.token);
        let _ = FetchHttp.send(HttpRequest::post_json(url, &body, 5_000)).await;
    }

    /// Downloads a file by `file_id`: `getFile` for its path (and size), then
    /// `GET {base}/file/bot{token}/{file_path}`. Larger than `max_bytes`
    /// (Telegram's own limit is 20 MB) is refused before the download.
    pub async fn download_file(&self, file_id: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        let file = match self.call("getFile", &json!({"file_id": file_id})).await {
            Ok(f) => f,
            Err(TgError::Api { code: 400, description }) if description.contains("too big") => {
                return Err(ChannelError::TooLarge(max_bytes.saturating_add(1)))
            }
            Err(e) => return Err(channel_error(e)),
        };
        if let Some(size) = file["file_size"].as_u64().filter(|s| *s > max_bytes) {
            return Err(ChannelError::TooLarge(size));
        }
        let path =
            file["file_path"].as_str().ok_or_else(|| ChannelError::Failed("getFile gave no file_path".into()))?;
        let url = format!("{}/file/bot{}/{path}", self.base, self.token);
        let mut made = 0;
        loop {
            made += 1;
            let req =
                HttpRequest { method: "GET", url: url.clone(), headers: vec![], body: vec![], timeout_ms: 120_000 };
            let why = match FetchHttp.send(req).await {
                Ok(resp) if resp.status == 200 => {
                    if resp.body.len() as u64 > max_bytes {
                        return Err(ChannelError::TooLarge(resp.body.len() as u64));
                    }
                    return Ok(resp.body);
                }
                Ok(resp) if resp.status == 429 || resp.status >= 500 => format!("HTTP {}", resp.status),
                Ok(resp) => return Err(ChannelError::Failed(format!("file download: HTTP {}", resp.status))),
                Err(e) => e.to_string(),
            };
            match self.backoff.delay(made, None) {
                Some(ms) => {
                    adapters::log(LogLevel::Warn, &format!("telegram file download failed ({why}); retry in {ms} ms"));
                    adapters::sleep(ms).await;
                }
                None => return Err(ChannelError::Failed(format!("file download: {why}"))),
            }
        }
    }

    pub async fn get_me_username(&self) -> Result<Option<String>, TgError> {
        let me = self.call("getMe", &json!({})).await?;
        Ok(me["username"].as_str().map(str::to_owned))
    }
}

pub fn channel_error(e: TgError) -> ChannelError {
    ChannelError::Failed(e.to_string())
}
