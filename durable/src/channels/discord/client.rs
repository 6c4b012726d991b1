//! The Discord side of the reply channel, one piece per call (the session's
//! outbox, durable's `delivery`, cuts replies at 2000 characters, retries
//! and orders them): the first piece answering a command edits the deferred
//! response (`PATCH .../messages/@original`), later pieces are follow-ups.
//! A deferred response that is gone (404) is answered with a follow-up.
//!
//! An interaction token lives 15 minutes. A piece still waiting after that
//! (a long queue, slow tools, Discord failing for minutes) is not sent with
//! the dead token: with `DISCORD_BOT_TOKEN` it is posted to the channel with
//! the bot token (`POST /channels/{id}/messages`); without one the piece
//! cannot be delivered, and the outbox reports it to the owner. The answer
//! stays in the session's history either way.

use super::classify;
use super::interaction::ReplyExtra;
use super::MAX_CHARS;
use crate::inbound::ReplyTarget;
use crate::ports::{ChannelError, Http, HttpRequest, Io, LogLevel, OutgoingChunk, SendOutcome};
use crate::retry::Backoff;
use serde_json::{json, Value};

pub(crate) const USER_AGENT: &str = concat!("DiscordBot (https://github.com/hearth, ", env!("CARGO_PKG_VERSION"), ")");

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscordApi {
    pub base: String,
    /// `DISCORD_APPLICATION_ID`; the interaction's own `application_id` when unset.
    pub app_id: Option<String>,
    pub bot_token: Option<String>,
    /// For attachment downloads (replies are retried by the outbox).
    pub backoff: Backoff,
}

impl DiscordApi {
    /// The reply channel of an agent's sessions.
    pub fn for_agent(vars: &impl crate::settings::Vars, cfg: &crate::settings::AgentConfig) -> DiscordApi {
        let agent = cfg.agent.as_str();
        DiscordApi {
            base: cfg.discord_api_base.clone(),
            app_id: crate::settings::setting(vars, agent, "DISCORD_APPLICATION_ID"),
            bot_token: crate::settings::setting(vars, agent, "DISCORD_BOT_TOKEN"),
            backoff: Backoff { attempts: 5, base_ms: cfg.llm.retry_base_ms, max_ms: cfg.llm.retry_max_ms },
        }
    }

    /// One request, classified (see [`classify`]).
    async fn send_once<I: Io>(
        &self,
        io: &I,
        method: &'static str,
        path: &str,
        content: &str,
        bot_auth: bool,
    ) -> SendOutcome {
        // Model output must not ping @everyone or roles.
        let body = json!({"content": content, "allowed_mentions": {"parse": []}});
        self.send_body(io, method, path, &body, bot_auth).await
    }

    async fn send_body<I: Io>(
        &self,
        io: &I,
        method: &'static str,
        path: &str,
        body: &Value,
        bot_auth: bool,
    ) -> SendOutcome {
        let mut req =
            HttpRequest::post_json(format!("{}{path}", self.base), body, 30_000).header("user-agent", USER_AGENT);
        req.method = method;
        if bot_auth {
            let Some(token) = self.bot_token.as_deref() else {
                return SendOutcome::Unreachable("DISCORD_BOT_TOKEN is not set".into());
            };
            req = req.header("authorization", &format!("Bot {token}"));
        }
        match io.http().send(req).await {
            Ok(resp) => classify::send(resp.status, &resp.body, resp.header("retry-after")),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("discord: {e}") },
        }
    }

    /// One attempt at one piece of a reply to a command (see the module docs).
    pub async fn send_chunk<I: Io>(&self, io: &I, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        // No interaction: a message that came over the Gateway (answered in
        // its channel with the bot token, the first piece as a reply to it).
        let Some(extra) = ReplyExtra::from_target(target) else {
            return self.post_message(io, target, piece).await;
        };
        if extra.token_expired(io.now_ms()) {
            return self.send_to_channel(io, target, piece, "the interaction token expired (15 minutes)").await;
        }
        let Some(app) = self.app_id.clone().or(extra.app.clone()) else {
            return SendOutcome::Unreachable("DISCORD_APPLICATION_ID is not set".into());
        };
        let hook = format!("/webhooks/{app}/{}", extra.token);
        let sent = if piece.opens {
            match self.send_once(io, "PATCH", &format!("{hook}/messages/@original"), &piece.text, false).await {
                // The deferred response was deleted: a follow-up still reaches the user.
                SendOutcome::Unreachable(why) if why.starts_with("discord 404") => {
                    io.log(LogLevel::Warn, &format!("deferred response gone ({why}); following up"));
                    self.send_once(io, "POST", &hook, &piece.text, false).await
                }
                other => other,
            }
        } else {
            self.send_once(io, "POST", &hook, &piece.text, false).await
        };
        match sent {
            // Discord refused the token before its time: the channel, if we can.
            SendOutcome::Unreachable(why) if self.bot_token.is_some() => {
                self.send_to_channel(io, target, piece, &why).await
            }
            other => other,
        }
    }

    /// A piece posted to the target's channel with the bot token; the first
    /// piece of a reply to a Gateway message references it (`message_reference`,
    /// still sent if that message was deleted meanwhile). A 429 comes back as
    /// a retry after the bucket's `retry_after`, which the outbox honours.
    async fn post_message<I: Io>(&self, io: &I, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let mut body = json!({"content": piece.text, "allowed_mentions": {"parse": [], "replied_user": true}});
        if let (true, Some(id)) = (piece.first, target.reply_to.as_deref()) {
            body["message_reference"] = json!({"message_id": id, "fail_if_not_exists": false});
        }
        self.send_body(io, "POST", &format!("/channels/{}/messages", target.chat_id), &body, true).await
    }

    /// A voice reply as an audio attachment: in the channel with the bot
    /// token (Gateway messages), else as a follow-up of the interaction.
    pub async fn send_voice<I: Io>(&self, io: &I, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        let mut payload =
            json!({"attachments": [{"id": 0, "filename": "reply.ogg"}], "allowed_mentions": {"parse": []}});
        let (path, bot) = match ReplyExtra::from_target(target) {
            Some(extra) if !extra.token_expired(io.now_ms()) => {
                let Some(app) = self.app_id.clone().or(extra.app.clone()) else {
                    return SendOutcome::Unreachable("DISCORD_APPLICATION_ID is not set".into());
                };
                (format!("/webhooks/{app}/{}", extra.token), false)
            }
            _ => {
                if let Some(id) = target.reply_to.as_deref() {
                    payload["message_reference"] = json!({"message_id": id, "fail_if_not_exists": false});
                }
                (format!("/channels/{}/messages", target.chat_id), true)
            }
        };
        let payload = payload.to_string();
        let (content_type, body) = crate::channels::shared::multipart::multipart(
            &[("payload_json", &payload)],
            ("files[0]", "reply.ogg", "audio/ogg", audio),
        );
        let mut req = HttpRequest {
            method: "POST",
            url: format!("{}{path}", self.base),
            headers: vec![("content-type".into(), content_type), ("user-agent".into(), USER_AGENT.into())],
            body,
            timeout_ms: 60_000,
        };
        if bot {
            let Some(token) = self.bot_token.as_deref() else {
                return SendOutcome::Unreachable("DISCORD_BOT_TOKEN is not set".into());
            };
            req = req.header("authorization", &format!("Bot {token}"));
        }
        match io.http().send(req).await {
            Ok(resp) => classify::send(resp.status, &resp.body, resp.header("retry-after")),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("discord: {e}") },
        }
    }

    /// "Bot is typing…" in the target's channel (Gateway messages; an
    /// interaction shows "thinking…" by itself). Best effort.
    pub async fn typing<I: Io>(&self, io: &I, target: &ReplyTarget) {
        if ReplyExtra::from_target(target).is_some() || self.bot_token.is_none() {
            return;
        }
        let path = format!("/channels/{}/typing", target.chat_id);
        let _ = self.send_body(io, "POST", &path, &json!({}), true).await;
    }

    /// Posts a piece to the command's channel with the bot token, when the
    /// interaction token cannot carry it.
    async fn send_to_channel<I: Io>(
        &self,
        io: &I,
        target: &ReplyTarget,
        piece: &OutgoingChunk,
        why: &str,
    ) -> SendOutcome {
        if self.bot_token.is_none() {
            return SendOutcome::Unreachable(format!("{why} and DISCORD_BOT_TOKEN is not set to post to the channel"));
        }
        io.log(
            LogLevel::Warn,
            &format!("discord: {why}; posting the reply to channel {} with the bot token", target.chat_id),
        );
        let late = format!("(late answer to your /ask)\n{}", piece.text);
        let content = if piece.first && late.encode_utf16().count() <= MAX_CHARS { late } else { piece.text.clone() };
        self.send_once(io, "POST", &format!("/channels/{}/messages", target.chat_id), &content, true).await
    }

    /// A short text outside any session (the note to a stranger), sent now,
    /// piece by piece as Markdown (Discord renders it itself).
    pub async fn send_text<I: Io>(&self, io: &I, target: &ReplyTarget, text: &str) -> Result<(), String> {
        for (i, piece) in crate::text::split_message(text, MAX_CHARS).iter().enumerate() {
            let piece = OutgoingChunk { text: piece.clone(), formatted: None, first: i == 0, opens: i == 0 };
            match self.send_chunk(io, target, &piece).await {
                SendOutcome::Delivered => {}
                other => return Err(format!("{other:?}")),
            }
        }
        Ok(())
    }

    /// Downloads an attachment of a command (`/ask attachment:`): the signed
    /// CDN URL Discord put in the interaction. Only Discord's CDN hosts (or
    /// the origin of `DISCORD_API_BASE`, for stand-ins) are fetched.
    pub async fn download_attachment<I: Io>(&self, io: &I, url: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        if !attachment_url_allowed(url, &self.base) {
            return Err(ChannelError::Failed("attachment URL is not on Discord's CDN".into()));
        }
        let mut made = 0;
        loop {
            made += 1;
            let req =
                HttpRequest { method: "GET", url: url.to_owned(), headers: vec![], body: vec![], timeout_ms: 120_000 };
            let (why, wait) = match io.http().send(req).await {
                Ok(resp) if resp.status == 200 => {
                    return match resp.body.len() as u64 {
                        n if n > max_bytes => Err(ChannelError::TooLarge(n)),
                        _ => Ok(resp.body),
                    };
                }
                Ok(resp) if resp.status == 429 || resp.status >= 500 => {
                    let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
                    (format!("HTTP {}", resp.status), classify::retry_after_ms(&v, resp.header("retry-after")))
                }
                Ok(resp) => return Err(ChannelError::Failed(format!("attachment download: HTTP {}", resp.status))),
                Err(e) => (e.to_string(), None),
            };
            match self.backoff.delay(made, wait) {
                Some(ms) => io.sleep(ms).await,
                None => return Err(ChannelError::Failed(format!("attachment download: {why}"))),
            }
        }
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
}
