//! The Discord side of the reply channel: the first chunk of an answer edits
//! the deferred response (`PATCH .../messages/@original`), further chunks go
//! as follow-ups, in order. Discord's 429 (`retry_after`, seconds, in the body
//! and the `Retry-After` header) is honoured; 5xx and network errors are
//! retried with backoff.
//!
//! An interaction token lives 15 minutes. When a turn finishes after that
//! (a long queue, slow tools), Hearth does not call Discord with the dead
//! token: it logs it and, when `DISCORD_BOT_TOKEN` is set, posts the answer
//! to the channel with the bot token (`POST /channels/{id}/messages`). Without
//! a bot token the user sees Discord's "The application did not respond" on
//! the deferred message, and the answer stays in the session's history.

use super::interaction::{ReplyExtra, DISCORD_MAX_CHARS};
use crate::adapters::{self, FetchHttp};
use crate::telegram::format::split_message;
use durable::inbound::ReplyTarget;
use durable::ports::{ChannelError, Http, HttpRequest, LogLevel};
use durable::retry::{parse_retry_after, send_retrying, Backoff, Verdict};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashSet;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DcError {
    #[error("discord {status}: {message}")]
    Api { status: u16, message: String },
    #[error("discord unavailable: {0}")]
    Unavailable(String),
    #[error("{0}")]
    Config(String),
}

pub(crate) const USER_AGENT: &str = concat!("DiscordBot (https://github.com/hearth, ", env!("CARGO_PKG_VERSION"), ")");

pub struct DiscordApi {
    pub base: String,
    /// `DISCORD_APPLICATION_ID`; the interaction's own `application_id` when unset.
    pub app_id: Option<String>,
    pub bot_token: Option<String>,
    pub backoff: Backoff,
    /// Tokens whose deferred response was already edited by this object:
    /// later sends for them are follow-ups.
    edited: RefCell<HashSet<String>>,
}

/// The wait Discord asks for on a 429: the body's `retry_after` (float
/// seconds), else the `Retry-After` header.
pub fn retry_after_ms(body: &Value, header: Option<&str>) -> Option<u64> {
    match body["retry_after"].as_f64() {
        Some(s) if s.is_finite() && s >= 0.0 => Some((s * 1000.0).ceil() as u64),
        _ => parse_retry_after(header),
    }
}

impl DiscordApi {
    /// The reply channel of an agent's sessions.
    pub fn for_agent(vars: &impl durable::settings::Vars, cfg: &durable::settings::AgentConfig) -> DiscordApi {
        let agent = cfg.agent.as_str();
        DiscordApi::new(
            cfg.discord_api_base.clone(),
            durable::settings::setting(vars, agent, "DISCORD_APPLICATION_ID"),
            durable::settings::setting(vars, agent, "DISCORD_BOT_TOKEN"),
            Backoff { attempts: 5, base_ms: cfg.llm.retry_base_ms, max_ms: cfg.llm.retry_max_ms },
        )
    }

    pub fn new(base: String, app_id: Option<String>, bot_token: Option<String>, backoff: Backoff) -> Self {
        DiscordApi { base, app_id, bot_token, backoff, edited: RefCell::default() }
    }

    async fn call(&self, method: &'static str, path: &str, body: &Value, bot_auth: bool) -> Result<Value, DcError> {
        let url = format!("{}{path}", self.base);
        let mut req = HttpRequest::post_json(url, body, 30_000).header("user-agent", USER_AGENT);
        req.method = method;
        if bot_auth {
            let token =
                self.bot_token.as_deref().ok_or_else(|| DcError::Config("DISCORD_BOT_TOKEN is not set".into()))?;
            req = req.header("authorization", &format!("Bot {token}"));
        }
        // Log the route, never the token in it.
        let route = path.split('/').take(3).collect::<Vec<_>>().join("/");
        send_retrying(
            &FetchHttp,
            &req,
            &self.backoff,
            async |ms| adapters::sleep(ms).await,
            |msg| adapters::log(LogLevel::Warn, &format!("discord {method} {route}: {msg}")),
            |resp| {
                let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
                if (200..300).contains(&resp.status) {
                    return Verdict::Done(v);
                }
                let message = v["message"].as_str().map(str::to_owned).unwrap_or_else(|| resp.text());
                if resp.status == 429 {
                    Verdict::Retry {
                        why: format!("429: {message}"),
                        after_ms: retry_after_ms(&v, resp.header("retry-after")),
                    }
                } else if resp.status >= 500 {
                    Verdict::Retry { why: format!("{}: {message}", resp.status), after_ms: None }
                } else {
                    Verdict::Fail(DcError::Api { status: resp.status, message })
                }
            },
            |gave_up| DcError::Unavailable(gave_up.to_string()),
        )
        .await
    }

    fn message(content: &str) -> Value {
        // Model output must not ping @everyone or roles.
        json!({"content": content, "allowed_mentions": {"parse": []}})
    }

    /// Sends a whole reply on an interaction (see the module docs).
    pub async fn send_reply(&self, target: &ReplyTarget, text: &str) -> Result<(), DcError> {
        // Proactive messages (heartbeat notifications to a Discord owner) have no
        // interaction to answer; opening a DM with the bot token is not built yet.
        let extra = ReplyExtra::from_target(target).ok_or_else(|| {
            DcError::Config(
                "discord can only answer slash commands for now (no proactive messages to a Discord owner)".into(),
            )
        })?;
        let chunks = split_message(text, DISCORD_MAX_CHARS);
        if extra.token_expired(adapters::now_ms()) {
            return self.send_after_expiry(target, &chunks).await;
        }
        let app = self
            .app_id
            .clone()
            .or(extra.app.clone())
            .ok_or_else(|| DcError::Config("DISCORD_APPLICATION_ID is not set".into()))?;
        let hook = format!("/webhooks/{app}/{}", extra.token);
        for chunk in &chunks {
            let first = self.edited.borrow_mut().insert(extra.token.clone());
            let sent = if first {
                self.call("PATCH", &format!("{hook}/messages/@original"), &Self::message(chunk), false).await
            } else {
                self.call("POST", &hook, &Self::message(chunk), false).await
            };
            if let Err(e) = sent {
                // Never silence: say so in a follow-up (best effort; the token may be what failed).
                let note = format!("⚠️ I could not deliver (all of) my reply: {e}");
                let _ = self.call("POST", &hook, &Self::message(&note), false).await;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Downloads an attachment of a command (`/ask attachment:`): the signed
    /// CDN URL Discord put in the interaction. Only Discord's CDN hosts (or
    /// the origin of `DISCORD_API_BASE`, for stand-ins) are fetched.
    pub async fn download_attachment(&self, url: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        if !attachment_url_allowed(url, &self.base) {
            return Err(ChannelError::Failed("attachment URL is not on Discord's CDN".into()));
        }
        let mut made = 0;
        loop {
            made += 1;
            let req =
                HttpRequest { method: "GET", url: url.to_owned(), headers: vec![], body: vec![], timeout_ms: 120_000 };
            let (why, wait) = match FetchHttp.send(req).await {
                Ok(resp) if resp.status == 200 => {
                    return match resp.body.len() as u64 {
                        n if n > max_bytes => Err(ChannelError::TooLarge(n)),
                        _ => Ok(resp.body),
                    };
                }
                Ok(resp) if resp.status == 429 || resp.status >= 500 => {
                    let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
                    (format!("HTTP {}", resp.status), retry_after_ms(&v, resp.header("retry-after")))
                }
                Ok(resp) => return Err(ChannelError::Failed(format!("attachment download: HTTP {}", resp.status))),
                Err(e) => (e.to_string(), None),
            };
            match self.backoff.delay(made, wait) {
                Some(ms) => adapters::sleep(ms).await,
                None => return Err(ChannelError::Failed(format!("attachment download: {why}"))),
            }
        }
    }

    async fn send_after_expiry(&self, target: &ReplyTarget, chunks: &[String]) -> Result<(), DcError> {
        adapters::log(
            LogLevel::Warn,
            &format!("discord interaction token expired before the reply for channel {} was ready", target.chat_id),
        );
        if self.bot_token.is_none() {
            return Err(DcError::Config(
                "the interaction token expired (15 minutes) and DISCORD_BOT_TOKEN is not set to post to the channel"
                    .into(),
            ));
        }
        let path = format!("/channels/{}/messages", target.chat_id);
        for (i, chunk) in chunks.iter().enumerate() {
            let content = if i == 0 { format!("(late answer to your /ask)\n{chunk}") } else { chunk.clone() };
            let content: String =
                if content.encode_utf16().count() > DISCORD_MAX_CHARS { chunk.clone() } else { content };
            self.call("POST", &path, &Self::message(&content), true).await?;
        }
        Ok(())
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..url.len() - rest.len() + end])
}

/// Discord's attachment CDN, or the configured API's own origin (stand-ins).
pub fn attachment_url_allowed(url: &str, api_base: &str) -> bool {
    let Some(o) = origin(url) else { return false };
    o == "https://cdn.discordapp.com" || o == "https://media.discordapp.net" || origin(api_base) == Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_come_only_from_discord() {
        let api = "https://discord.com/api/v10";
        assert!(attachment_url_allowed("https://cdn.discordapp.com/attachments/1/2/a.png?ex=1&is=2&hm=3", api));
        assert!(attachment_url_allowed("https://media.discordapp.net/attachments/1/2/a.png", api));
        assert!(!attachment_url_allowed("https://cdn.discordapp.com.evil.example/a.png", api));
        assert!(!attachment_url_allowed("https://evil.example/?https://cdn.discordapp.com/", api));
        assert!(!attachment_url_allowed("http://169.254.169.254/latest", api));
        assert!(!attachment_url_allowed("file:///etc/passwd", api));
        assert!(attachment_url_allowed("http://127.0.0.1:9/attachments/x.png", "http://127.0.0.1:9/api/v10"));
        assert!(!attachment_url_allowed("http://127.0.0.1:10/attachments/x.png", "http://127.0.0.1:9/api/v10"));
    }

    #[test]
    fn retry_after_prefers_the_body() {
        let body = json!({"message": "You are being rate limited.", "retry_after": 0.5, "global": false});
        assert_eq!(retry_after_ms(&body, Some("1")), Some(500));
        assert_eq!(retry_after_ms(&json!({}), Some("2")), Some(2000));
        assert_eq!(retry_after_ms(&Value::Null, None), None);
        assert_eq!(retry_after_ms(&json!({"retry_after": 1.2345}), None), Some(1235));
    }
}
