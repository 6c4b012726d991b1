//! The Slack Web API client, with the bot token (`SLACK_BOT_TOKEN`,
//! `xoxb-…`): replies with `chat.postMessage` (one piece per call; the
//! outbox retries and orders them), an answer being written shown by one
//! message edited with `chat.update` and deleted with `chat.delete` once the
//! answer is sent (like Telegram's edit mode), and files downloaded from
//! their `url_private_download` with the token.

use super::classify;
use crate::inbound::ReplyTarget;
use crate::ports::{
    ChannelError, Http, HttpRequest, Io, LogLevel, OutgoingChunk, Preview, PreviewOutcome, SendOutcome,
};
use crate::retry::{parse_retry_after, Backoff};
use crate::settings::{setting, AgentConfig, Vars};
use serde_json::{json, Value};

/// Slack's Web API, unless `SLACK_API_BASE` says otherwise (stand-ins).
pub const DEFAULT_API_BASE: &str = "https://slack.com/api";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackApi {
    pub base: String,
    pub token: String,
    /// For file downloads (replies are retried by the outbox).
    pub backoff: Backoff,
}

impl SlackApi {
    /// The app of an agent (`None` without `SLACK_BOT_TOKEN`).
    pub fn for_agent(vars: &impl Vars, cfg: &AgentConfig) -> Option<SlackApi> {
        let agent = cfg.agent.as_str();
        Some(SlackApi {
            base: setting(vars, agent, "SLACK_API_BASE")
                .unwrap_or_else(|| DEFAULT_API_BASE.into())
                .trim_end_matches('/')
                .to_owned(),
            token: setting(vars, agent, "SLACK_BOT_TOKEN")?,
            backoff: Backoff { attempts: 4, base_ms: cfg.llm.retry_base_ms, max_ms: cfg.llm.retry_max_ms },
        })
    }

    fn request(&self, method: &str, body: &Value, timeout_ms: u32) -> HttpRequest {
        HttpRequest::post_json(format!("{}/{method}", self.base), body, timeout_ms)
            .header("authorization", &format!("Bearer {}", self.token))
    }

    /// `thread_ts` and `channel` of a target.
    fn place(target: &ReplyTarget, body: &mut Value) {
        body["channel"] = json!(target.chat_id);
        if let Some(t) = target.thread_id.as_deref() {
            body["thread_ts"] = json!(t);
        }
    }

    /// One attempt at one piece of a reply: `chat.postMessage`, in `mrkdwn`
    /// when the piece has it, in the target's thread.
    pub async fn send_chunk<I: Io>(&self, io: &I, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let mut body = match &piece.formatted {
            Some(mrkdwn) => json!({"text": mrkdwn, "mrkdwn": true}),
            None => json!({"text": piece.text, "mrkdwn": false}),
        };
        body["unfurl_links"] = json!(false);
        body["unfurl_media"] = json!(false);
        Self::place(target, &mut body);
        match io.http().send(self.request("chat.postMessage", &body, 30_000)).await {
            Ok(resp) => classify::send(resp.status, &resp.body, resp.header("retry-after")),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("slack: {e}") },
        }
    }

    /// Shows the answer so far: the first update posts a message, later ones
    /// edit it (`chat.update`). Plain text: unfinished Markdown is no markup.
    pub async fn preview<I: Io>(&self, io: &I, target: &ReplyTarget, p: &Preview<'_>) -> PreviewOutcome {
        let text = crate::text::tail_utf16(p.text, super::format::MAX_CHARS);
        let mut body = json!({"text": text, "mrkdwn": false});
        Self::place(target, &mut body);
        let (method, handle) = match p.handle {
            None => ("chat.postMessage", None),
            Some(ts) => {
                body["ts"] = json!(ts);
                ("chat.update", Some(ts.to_owned()))
            }
        };
        let resp = match io.http().send(self.request(method, &body, 10_000)).await {
            Ok(r) => r,
            Err(e) => return PreviewOutcome::Failed(format!("{method}: {e}")),
        };
        let (ok, error) = classify::ok_and_error(&resp.body);
        if resp.status == 429 || error == "ratelimited" {
            return PreviewOutcome::Wait(parse_retry_after(resp.header("retry-after")).unwrap_or(1000));
        }
        if !ok {
            return match error.as_str() {
                // The preview message is gone, or cannot be edited: no more previews this turn.
                "message_not_found"
                | "cant_update_message"
                | "edit_window_closed"
                | "channel_not_found"
                | "not_in_channel"
                | "is_archived" => PreviewOutcome::Unsupported(format!("{method}: {error}")),
                _ => PreviewOutcome::Failed(format!("{method} {}: {error}", resp.status)),
            };
        }
        let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
        PreviewOutcome::Shown { handle: handle.or_else(|| v["ts"].as_str().map(str::to_owned)) }
    }

    /// The answer was sent: the preview message goes.
    pub async fn end_preview<I: Io>(&self, io: &I, target: &ReplyTarget, ts: &str) {
        let body = json!({"channel": target.chat_id, "ts": ts});
        let outcome = io.http().send(self.request("chat.delete", &body, 10_000)).await;
        let failed = match &outcome {
            Ok(r) => !classify::ok_and_error(&r.body).0,
            Err(_) => true,
        };
        if failed {
            io.log(LogLevel::Warn, &format!("slack preview message {ts} not deleted: {outcome:?}"));
        }
    }

    /// Downloads a file shared in a message (its `url_private_download`),
    /// with the bot token. Only Slack's file host (or the configured API's
    /// own origin, for stand-ins) is asked: the token goes nowhere else.
    pub async fn download<I: Io>(&self, io: &I, url: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        if !file_url_allowed(url, &self.base) {
            return Err(ChannelError::Failed("the file's URL is not on Slack's file host".into()));
        }
        let req = HttpRequest::get(url.to_owned(), 120_000).header("authorization", &format!("Bearer {}", self.token));
        let bytes =
            crate::channels::shared::download::download(io, &self.backoff, "slack file", req, max_bytes).await?;
        // Without the token (or the files:read scope) Slack answers its sign-in page, with a 200.
        if bytes.starts_with(b"<!DOCTYPE html") || bytes.starts_with(b"<html") {
            return Err(ChannelError::Failed(
                "Slack answered a web page, not the file: the bot token needs the files:read scope".into(),
            ));
        }
        Ok(bytes)
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..url.len() - rest.len() + end])
}

/// Slack's file host, or the configured API's own origin (stand-ins).
pub fn file_url_allowed(url: &str, api_base: &str) -> bool {
    let Some(o) = origin(url) else { return false };
    o == "https://files.slack.com" || origin(api_base) == Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;
    use crate::settings::stream::StreamMode;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    fn api() -> SlackApi {
        SlackApi {
            base: "https://slack.test/api".into(),
            token: "xoxb-1".into(),
            backoff: Backoff { attempts: 2, base_ms: 1, max_ms: 1 },
        }
    }

    fn thread() -> ReplyTarget {
        ReplyTarget {
            channel: ChannelKind::Slack,
            chat_id: "C1".into(),
            thread_id: Some("1515449522.000016".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_piece_goes_to_its_thread_in_mrkdwn_with_the_bot_token() {
        let front = FakeFront::default();
        front.http.reply(200, r#"{"ok":true,"channel":"C1","ts":"1515449530.000100"}"#);
        let piece = crate::channels::render(ChannelKind::Slack, "**yes**, see [docs](https://a.io)", true, true, true);
        assert_eq!(block_on(api().send_chunk(&front, &thread(), &piece)), SendOutcome::Delivered);
        let req = front.http.requests.borrow()[0].clone();
        assert_eq!(req.url, "https://slack.test/api/chat.postMessage");
        assert!(req.headers.contains(&("authorization".into(), "Bearer xoxb-1".into())));
        let body: Value = hearth_json::from_slice(&req.body).unwrap();
        assert_eq!(body["text"], "*yes*, see <https://a.io|docs>");
        assert_eq!((body["channel"].as_str(), body["thread_ts"].as_str()), (Some("C1"), Some("1515449522.000016")));
    }

    #[test]
    fn a_preview_posts_once_then_edits_then_goes() {
        let front = FakeFront::default();
        front.http.reply(200, r#"{"ok":true,"channel":"C1","ts":"9.1"}"#);
        front.http.reply(200, r#"{"ok":true,"channel":"C1","ts":"9.1"}"#);
        front.http.reply(200, r#"{"ok":true}"#);
        let p = |text, handle| Preview { mode: StreamMode::Edit, text, handle, draft_id: 1 };
        assert_eq!(
            block_on(api().preview(&front, &thread(), &p("Let me", None))),
            PreviewOutcome::Shown { handle: Some("9.1".into()) }
        );
        block_on(api().preview(&front, &thread(), &p("Let me think", Some("9.1"))));
        block_on(api().end_preview(&front, &thread(), "9.1"));
        let sent = front.http.sent_json();
        assert_eq!(
            sent.iter().map(|(u, _)| u.rsplit('/').next().unwrap()).collect::<Vec<_>>(),
            ["chat.postMessage", "chat.update", "chat.delete"]
        );
        assert_eq!((sent[1].1["ts"].as_str(), sent[1].1["text"].as_str()), (Some("9.1"), Some("Let me think")));
        // A rate limit pauses the previews for as long as Slack asks.
        front.http.responses.borrow_mut().push_back(Ok(crate::ports::HttpResponse {
            status: 429,
            headers: vec![("retry-after".into(), "3".into())],
            body: br#"{"ok":false,"error":"ratelimited"}"#.to_vec(),
        }));
        assert_eq!(block_on(api().preview(&front, &thread(), &p("x", Some("9.1")))), PreviewOutcome::Wait(3000));
    }

    #[test]
    fn files_come_only_from_slack_with_the_token() {
        assert!(file_url_allowed("https://files.slack.com/files-pri/T1-F1/download/a.png", DEFAULT_API_BASE));
        assert!(!file_url_allowed("https://files.slack.com.evil.example/a.png", DEFAULT_API_BASE));
        assert!(!file_url_allowed("http://169.254.169.254/", DEFAULT_API_BASE));
        assert!(file_url_allowed("http://127.0.0.1:9/files-pri/x", "http://127.0.0.1:9/api"));
        let front = FakeFront::default();
        front.http.reply(200, "<!DOCTYPE html><html>sign in</html>");
        let url = "https://files.slack.com/files-pri/T1-F1/download/a.png";
        let e = block_on(api().download(&front, url, 1000)).unwrap_err();
        assert!(e.to_string().contains("files:read"), "{e}");
        front.http.reply_bytes(200, b"\x89PNG");
        assert_eq!(block_on(api().download(&front, url, 1000)), Ok(b"\x89PNG".to_vec()));
        let req = front.http.requests.borrow()[1].clone();
        assert!(req.headers.contains(&("authorization".into(), "Bearer xoxb-1".into())));
        assert!(matches!(
            block_on(api().download(&front, "https://evil.example/a", 1000)),
            Err(ChannelError::Failed(_))
        ));
    }
}
