//! Telegram previews of an answer being written (`crate::session::preview`):
//! `sendMessageDraft` (Bot API 9.5) in private chats, or one message sent
//! silently and edited with `editMessageText`, deleted once the answer is
//! sent. One attempt each, never retried: the next update supersedes it.
//!
//! Telegram's answers decide what follows: `429` (`parameters.retry_after`)
//! pauses the updates; "message is not modified" means it is shown already;
//! a chat that cannot have drafts (`TEXTDRAFT_PEER_INVALID`, or a Bot API
//! server without the method: 404) or a preview message that is gone ("message
//! to edit not found") ends that kind of preview for the turn.

use super::client::TelegramApi;
use super::format::MAX_CHARS;
use crate::inbound::ReplyTarget;
use crate::ports::{Http, HttpRequest, Io, LogLevel, Preview, PreviewOutcome};
use crate::settings::stream::StreamMode;
use serde_json::{json, Value};

/// A preview waits at most this long for Telegram.
const PREVIEW_TIMEOUT_MS: u32 = 10_000;

impl TelegramApi {
    async fn call_once<I: Io>(&self, io: &I, method: &str, body: &Value) -> Result<Value, PreviewOutcome> {
        let resp = match io.http().send(HttpRequest::post_json(self.url(method), body, PREVIEW_TIMEOUT_MS)).await {
            Ok(r) => r,
            Err(e) => return Err(PreviewOutcome::Failed(format!("{method}: {e}"))),
        };
        let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if (200..300).contains(&resp.status) && v["ok"] != Value::Bool(false) {
            return Ok(v["result"].clone());
        }
        let description = v["description"].as_str().unwrap_or("").to_owned();
        let lower = description.to_ascii_lowercase();
        Err(match resp.status {
            429 => PreviewOutcome::Wait(v["parameters"]["retry_after"].as_u64().unwrap_or(1).saturating_mul(1000)),
            400 if lower.contains("message is not modified") => PreviewOutcome::Shown { handle: None },
            404 => PreviewOutcome::Unsupported(format!("{method}: {description}")),
            400 if lower.contains("textdraft_peer_invalid")
                || lower.contains("message to edit not found")
                || lower.contains("message can't be edited") =>
            {
                PreviewOutcome::Unsupported(format!("{method}: {description}"))
            }
            status => PreviewOutcome::Failed(format!("{method} {status}: {description}")),
        })
    }

    /// Shows the answer so far (plain text: unfinished Markdown is no markup).
    pub async fn preview<I: Io>(&self, io: &I, target: &ReplyTarget, p: &Preview<'_>) -> PreviewOutcome {
        let text = crate::text::tail_utf16(p.text, MAX_CHARS);
        let mut body = json!({"chat_id": target.chat_id, "text": text});
        if let Some(t) = target.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok()) {
            body["message_thread_id"] = json!(t);
        }
        let handle = p.handle.map(str::to_owned);
        let result = match (p.mode, p.handle) {
            (StreamMode::Draft, _) => {
                body["draft_id"] = json!(p.draft_id);
                self.call_once(io, "sendMessageDraft", &body).await.map(|_| None)
            }
            (_, None) => {
                // The first update: a message of its own, without a notification
                // (the answer brings that).
                body["disable_notification"] = json!(true);
                body["link_preview_options"] = json!({"is_disabled": true});
                let quoted = target.reply_to.as_deref().filter(|_| TelegramApi::is_group(target));
                if let Some(r) = quoted.and_then(|r| r.parse::<i64>().ok()) {
                    body["reply_parameters"] = json!({"message_id": r, "allow_sending_without_reply": true});
                }
                self.call_once(io, "sendMessage", &body)
                    .await
                    .map(|sent| sent["message_id"].as_i64().map(|id| id.to_string()))
            }
            (_, Some(id)) => {
                body["message_id"] = json!(id.parse::<i64>().unwrap_or(0));
                body["link_preview_options"] = json!({"is_disabled": true});
                self.call_once(io, "editMessageText", &body).await.map(|_| handle.clone())
            }
        };
        match result {
            Ok(handle) => PreviewOutcome::Shown { handle },
            Err(PreviewOutcome::Shown { .. }) => PreviewOutcome::Shown { handle },
            Err(other) => other,
        }
    }

    /// The answer was sent: the preview message goes.
    pub async fn end_preview<I: Io>(&self, io: &I, target: &ReplyTarget, handle: &str) {
        let Ok(id) = handle.parse::<i64>() else { return };
        let body = json!({"chat_id": target.chat_id, "message_id": id});
        if let Err(e) = self.call_once(io, "deleteMessage", &body).await {
            io.log(LogLevel::Warn, &format!("preview message {id} not deleted: {e:?}"));
        }
    }
}
