//! The Telegram Bot API client. Replies go one piece per call
//! ([`TelegramApi::send_chunk`]): the session's outbox (`crate::delivery`)
//! cuts them, retries them later and keeps their order. Other calls
//! (`getFile`, `getMe`, the note to strangers) honour Telegram's rate limits
//! (`429` with `parameters.retry_after`) and retry transient errors with
//! backoff, in the call.

use super::{classify, format};
use crate::inbound::ReplyTarget;
use crate::ports::{ChannelError, Http, HttpRequest, Io, LogLevel, OutgoingChunk, SendOutcome};
use crate::retry::{send_retrying, Backoff, Verdict};
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

/// Telegram's own Bot API server, unless `TELEGRAM_API_BASE` names another.
pub const BOT_API: &str = "https://api.telegram.org";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramApi {
    pub base: String,
    pub token: String,
    pub backoff: Backoff,
}

impl TelegramApi {
    /// The bot of an agent (`None` without `TELEGRAM_BOT_TOKEN`).
    pub fn for_agent(cfg: &crate::settings::AgentConfig) -> Option<TelegramApi> {
        Some(TelegramApi {
            base: cfg.telegram_api_base.clone().unwrap_or_else(|| BOT_API.to_owned()),
            token: cfg.telegram_bot_token.clone()?,
            backoff: Backoff { attempts: 5, base_ms: cfg.llm.retry_base_ms, max_ms: cfg.llm.retry_max_ms },
        })
    }

    /// The bot's own user id: the first part of its token.
    pub fn bot_id(&self) -> i64 {
        self.token.split(':').next().and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    pub(super) fn url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.base, self.token)
    }

    /// A method call, retried on 429 and 5xx; its `result`.
    pub async fn call<I: Io>(&self, io: &I, method: &str, body: &Value) -> Result<Value, TgError> {
        send_retrying(
            io.http(),
            &HttpRequest::post_json(self.url(method), body, 30_000),
            &self.backoff,
            async |ms| io.sleep(ms).await,
            |msg| io.log(LogLevel::Warn, &format!("telegram {method}: {msg}")),
            |resp| {
                let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
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

    /// Whether the target is a group: Telegram's group and supergroup ids are
    /// negative, a private chat's is the user's (positive) id.
    pub fn is_group(target: &ReplyTarget) -> bool {
        target.chat_id.starts_with('-')
    }

    /// `reply_parameters` answering the target's message, when it names one.
    fn reply_parameters(target: &ReplyTarget) -> Option<Value> {
        let id = target.reply_to.as_deref()?.parse::<i64>().ok()?;
        Some(json!({"message_id": id, "allow_sending_without_reply": true}))
    }

    /// One attempt at one piece of a reply: `sendMessage`, as HTML when the
    /// piece has it; in a group its first piece quotes the user's message
    /// (in a private chat the answer follows the message anyway).
    pub async fn send_chunk<I: Io>(&self, io: &I, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let body = Self::message_body(target, piece);
        match io.http().send(HttpRequest::post_json(self.url("sendMessage"), &body, 30_000)).await {
            Ok(resp) => classify::send(resp.status, &resp.body),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("telegram: {e}") },
        }
    }

    /// A voice note (`sendVoice`, Ogg/Opus) replying to the user's message,
    /// in private chats too: it follows the text answer, and the reply shows
    /// which message it speaks to.
    pub async fn send_voice<I: Io>(&self, io: &I, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        let mut fields: Vec<(&str, String)> = vec![("chat_id", target.chat_id.clone())];
        if let Some(t) = target.thread_id.as_deref() {
            fields.push(("message_thread_id", t.to_owned()));
        }
        if let Some(reply) = Self::reply_parameters(target) {
            fields.push(("reply_parameters", reply.to_string()));
        }
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (content_type, body) =
            crate::channels::shared::multipart::multipart(&fields, ("voice", "reply.ogg", "audio/ogg", audio));
        let req = HttpRequest {
            method: "POST",
            url: self.url("sendVoice"),
            headers: vec![("content-type".into(), content_type)],
            body,
            timeout_ms: 60_000,
        };
        match io.http().send(req).await {
            Ok(resp) => classify::send(resp.status, &resp.body),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("telegram: {e}") },
        }
    }

    fn message_body(target: &ReplyTarget, piece: &OutgoingChunk) -> Value {
        let mut body = match &piece.formatted {
            Some(html) => json!({"chat_id": target.chat_id, "text": html, "parse_mode": "HTML"}),
            None => json!({"chat_id": target.chat_id, "text": piece.text}),
        };
        body["link_preview_options"] = json!({"is_disabled": true});
        Self::target_fields(target, &mut body);
        if piece.first && Self::is_group(target) {
            if let Some(reply) = Self::reply_parameters(target) {
                body["reply_parameters"] = reply;
            }
        }
        body
    }

    /// Sends a short text outside any session (the note to a stranger):
    /// retried in the call, not kept if it still fails.
    pub async fn send_reply<I: Io>(&self, io: &I, target: &ReplyTarget, text: &str) -> Result<(), TgError> {
        for (i, piece) in crate::text::split_message(text, format::MAX_CHARS).iter().enumerate() {
            let rendered = format::chunk(piece, true, i == 0, false);
            let mut body = Self::message_body(target, &rendered);
            match self.call(io, "sendMessage", &body).await {
                Err(TgError::Api { code: 400, .. }) => {
                    let plain = format::chunk(piece, false, i == 0, false);
                    body = Self::message_body(target, &plain);
                    self.call(io, "sendMessage", &body).await?;
                }
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }

    /// A plain text to `chat` (no markup, quoting nothing): a note from the
    /// agent itself, such as dreaming's word to its owner.
    pub async fn send_text<I: Io>(&self, io: &I, chat: &str, text: &str) -> Result<(), TgError> {
        self.call(io, "sendMessage", &json!({"chat_id": chat, "text": text})).await.map(|_| ())
    }

    pub async fn typing<I: Io>(&self, io: &I, target: &ReplyTarget) {
        let mut body = json!({"chat_id": target.chat_id, "action": "typing"});
        Self::target_fields(target, &mut body);
        // Best effort, one try: typing is cosmetic.
        let _ = io.http().send(HttpRequest::post_json(self.url("sendChatAction"), &body, 5_000)).await;
    }

    /// Downloads a file by `file_id`: `getFile` for its path (and size), then
    /// `GET {base}/file/bot{token}/{file_path}`. Larger than `max_bytes`
    /// (Telegram's own limit is 20 MB) is refused before the download.
    pub async fn download_file<I: Io>(&self, io: &I, file_id: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        let file = match self.call(io, "getFile", &json!({"file_id": file_id})).await {
            Ok(f) => f,
            Err(TgError::Api { code: 400, description }) if description.contains("too big") => {
                return Err(ChannelError::TooLarge(max_bytes.saturating_add(1)))
            }
            Err(e) => return Err(ChannelError::Failed(e.to_string())),
        };
        if let Some(size) = file["file_size"].as_u64().filter(|s| *s > max_bytes) {
            return Err(ChannelError::TooLarge(size));
        }
        let path =
            file["file_path"].as_str().ok_or_else(|| ChannelError::Failed("getFile gave no file_path".into()))?;
        let url = format!("{}/file/bot{}/{path}", self.base, self.token);
        crate::channels::shared::download::download(
            io,
            &self.backoff,
            "telegram file",
            HttpRequest::get(url, 120_000),
            max_bytes,
        )
        .await
    }

    pub async fn get_me_username<I: Io>(&self, io: &I) -> Result<Option<String>, TgError> {
        let me = self.call(io, "getMe", &json!({})).await?;
        Ok(me["username"].as_str().map(str::to_owned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    fn api() -> TelegramApi {
        TelegramApi {
            base: "https://tg.test".into(),
            token: "123:ABC".into(),
            backoff: Backoff { attempts: 3, base_ms: 10, max_ms: 20 },
        }
    }

    fn dm(reply_to: Option<&str>) -> ReplyTarget {
        ReplyTarget {
            channel: ChannelKind::Telegram,
            chat_id: "42".into(),
            reply_to: reply_to.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn the_bot_talks_to_telegrams_own_server_unless_told_another() {
        let load = |pairs: &[(&str, &str)]| {
            let vars: std::collections::HashMap<String, String> =
                pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            TelegramApi::for_agent(&crate::settings::AgentConfig::load(&vars, "main").unwrap()).unwrap()
        };
        let own = load(&[("TELEGRAM_BOT_TOKEN", "123:ABC")]);
        assert_eq!(own.url("getMe"), "https://api.telegram.org/bot123:ABC/getMe");
        let local = load(&[("TELEGRAM_BOT_TOKEN", "123:ABC"), ("TELEGRAM_API_BASE", "http://localhost:8081/")]);
        assert_eq!(local.url("getMe"), "http://localhost:8081/bot123:ABC/getMe");
    }

    #[test]
    fn a_piece_is_sent_as_html_quoting_on_its_first_piece_in_groups_only() {
        let front = FakeFront::default();
        for id in 1..=3 {
            front.http.reply(200, &format!(r#"{{"ok":true,"result":{{"message_id":{id}}}}}"#));
        }
        let group = ReplyTarget { chat_id: "-100123".into(), ..dm(Some("7")) };
        let first = crate::channels::render(ChannelKind::Telegram, "**hi**", true, true, true);
        assert_eq!(block_on(api().send_chunk(&front, &group, &first)), SendOutcome::Delivered);
        let second = crate::channels::render(ChannelKind::Telegram, "more", true, false, false);
        assert_eq!(block_on(api().send_chunk(&front, &group, &second)), SendOutcome::Delivered);
        assert_eq!(block_on(api().send_chunk(&front, &dm(Some("7")), &first)), SendOutcome::Delivered);
        let sent = front.http.sent_json();
        assert_eq!(sent[0].0, "https://tg.test/bot123:ABC/sendMessage");
        assert_eq!(sent[0].1["text"], "<b>hi</b>");
        assert_eq!(sent[0].1["parse_mode"], "HTML");
        assert_eq!(sent[0].1["reply_parameters"]["message_id"], 7);
        assert!(sent[1].1.get("reply_parameters").is_none(), "only the first piece quotes");
        assert!(sent[2].1.get("reply_parameters").is_none(), "a private chat's answer quotes nothing");
    }

    #[test]
    fn a_voice_note_replies_to_the_message_it_answers_in_a_dm_too() {
        let front = FakeFront::default();
        front.http.reply(200, r#"{"ok":true,"result":{"message_id":3}}"#);
        assert_eq!(block_on(api().send_voice(&front, &dm(Some("9")), b"OggS")), SendOutcome::Delivered);
        let req = front.http.requests.borrow()[0].clone();
        let body = String::from_utf8_lossy(&req.body).into_owned();
        assert!(req.url.ends_with("/sendVoice"), "{}", req.url);
        assert!(
            body.contains("name=\"reply_parameters\"\r\n\r\n{\"allow_sending_without_reply\":true,\"message_id\":9}"),
            "{body}"
        );
        // Nothing to reply to (a heartbeat's voice): no reply_parameters.
        front.http.reply(200, r#"{"ok":true,"result":{"message_id":4}}"#);
        block_on(api().send_voice(&front, &dm(None), b"OggS"));
        assert!(!String::from_utf8_lossy(&front.http.requests.borrow()[1].body).contains("reply_parameters"));
    }

    #[test]
    fn a_flood_wait_is_honoured_and_a_refusal_is_final() {
        let front = FakeFront::default();
        front.http.reply(429, r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}"#);
        front.http.reply(200, r#"{"ok":true,"result":{"username":"hearth_bot"}}"#);
        assert_eq!(block_on(api().get_me_username(&front)), Ok(Some("hearth_bot".into())));
        assert_eq!(front.slept.borrow().as_slice(), [1000]);
        front.http.reply(400, r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#);
        let e = block_on(api().call(&front, "sendMessage", &json!({}))).unwrap_err();
        assert_eq!(e, TgError::Api { code: 400, description: "Bad Request: chat not found".into() });
    }

    #[test]
    fn a_file_too_big_for_the_bot_api_is_refused_before_the_download() {
        let front = FakeFront::default();
        front.http.reply(200, r#"{"ok":true,"result":{"file_id":"f","file_size":30000000,"file_path":"a.jpg"}}"#);
        assert_eq!(block_on(api().download_file(&front, "f", 1000)), Err(ChannelError::TooLarge(30_000_000)));
        assert_eq!(front.http.requests.borrow().len(), 1, "no download");
        front.http.reply(200, r#"{"ok":true,"result":{"file_id":"f","file_size":4,"file_path":"photos/a.jpg"}}"#);
        front.http.reply_bytes(200, b"JPEG");
        assert_eq!(block_on(api().download_file(&front, "f", 1000)), Ok(b"JPEG".to_vec()));
        assert_eq!(front.http.requests.borrow()[2].url, "https://tg.test/file/bot123:ABC/photos/a.jpg");
    }
}
