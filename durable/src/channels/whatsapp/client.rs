//! The Graph API client of the Cloud API, with the system user's access
//! token (`WHATSAPP_ACCESS_TOKEN`): replies are text messages to
//! `/{phone-number-id}/messages` (one piece per call; the outbox retries and
//! orders them), a message being answered is marked read with the typing
//! indicator, and media is downloaded by id (`/{media-id}` for a short-lived
//! URL, then that URL, both with the token).
//!
//! The customer-service window: a reply is sent only while the window of
//! the message it answers is open (24 hours from the person's message). A
//! reply due later is not sent (the API would refuse it with 131047, or
//! accept it and report it failed): it is given up as unreachable, which
//! logs it and tells the owner (on another channel when there is one).

use super::{classify, ReplyExtra};
use crate::inbound::ReplyTarget;
use crate::ports::{ChannelError, Http, HttpRequest, Io, OutgoingChunk, SendOutcome};
use crate::retry::Backoff;
use crate::settings::{setting, AgentConfig, Vars};
use serde_json::{json, Value};

/// The Graph API, unless `WHATSAPP_API_BASE` says otherwise (stand-ins).
pub const DEFAULT_API_BASE: &str = "https://graph.facebook.com/v23.0";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhatsAppApi {
    pub base: String,
    pub token: String,
    /// The business number that sends when a target names none (a
    /// notification to the owner): `WHATSAPP_PHONE_NUMBER_ID`.
    pub phone_number_id: Option<String>,
    pub backoff: Backoff,
}

impl WhatsAppApi {
    /// The business account of an agent (`None` without `WHATSAPP_ACCESS_TOKEN`).
    pub fn for_agent(vars: &impl Vars, cfg: &AgentConfig) -> Option<WhatsAppApi> {
        let agent = cfg.agent.as_str();
        Some(WhatsAppApi {
            base: setting(vars, agent, "WHATSAPP_API_BASE")
                .unwrap_or_else(|| DEFAULT_API_BASE.into())
                .trim_end_matches('/')
                .to_owned(),
            token: setting(vars, agent, "WHATSAPP_ACCESS_TOKEN")?,
            phone_number_id: setting(vars, agent, "WHATSAPP_PHONE_NUMBER_ID"),
            backoff: Backoff { attempts: 4, base_ms: cfg.llm.retry_base_ms, max_ms: cfg.llm.retry_max_ms },
        })
    }

    fn authorized(&self, req: HttpRequest) -> HttpRequest {
        req.header("authorization", &format!("Bearer {}", self.token))
    }

    /// One attempt at one piece of a reply: a text message, the first piece
    /// quoting the message it answers.
    pub async fn send_chunk<I: Io>(&self, io: &I, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let extra = ReplyExtra::of(target);
        if let Some(until) = extra.as_ref().map(|e| e.until).filter(|&u| io.now_ms() >= u) {
            let ago = (io.now_ms() - until) / 60_000;
            let late = if ago < 120 { format!("{ago} min") } else { format!("{} h", ago / 60) };
            return SendOutcome::Unreachable(format!(
                "outside WhatsApp's 24-hour customer-service window (it closed {late} ago): \
                 WhatsApp takes free-form replies only within 24 hours of the person's last message"
            ));
        }
        let Some(from) = extra.map(|e| e.from).or_else(|| self.phone_number_id.clone()) else {
            return SendOutcome::Unreachable("WHATSAPP_PHONE_NUMBER_ID is not set".into());
        };
        let text = piece.formatted.as_deref().unwrap_or(&piece.text);
        let mut body = json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": target.chat_id,
            "type": "text",
            "text": {"body": text, "preview_url": false},
        });
        if let (true, Some(id)) = (piece.first, target.reply_to.as_deref()) {
            body["context"] = json!({ "message_id": id });
        }
        let req = self.authorized(HttpRequest::post_json(format!("{}/{from}/messages", self.base), &body, 30_000));
        match io.http().send(req).await {
            Ok(resp) => classify::send(resp.status, &resp.body, resp.header("retry-after")),
            Err(e) => SendOutcome::Retry { after_ms: None, why: format!("whatsapp: {e}") },
        }
    }

    /// Marks the message being answered read, with the typing indicator
    /// (shown until the answer, up to 25 s). Best effort, one try.
    pub async fn typing<I: Io>(&self, io: &I, target: &ReplyTarget) {
        let (Some(extra), Some(id)) = (ReplyExtra::of(target), target.reply_to.as_deref()) else { return };
        if io.now_ms() >= extra.until {
            return;
        }
        let body = json!({"messaging_product": "whatsapp", "status": "read", "message_id": id,
                          "typing_indicator": {"type": "text"}});
        let req =
            self.authorized(HttpRequest::post_json(format!("{}/{}/messages", self.base, extra.from), &body, 5_000));
        let _ = io.http().send(req).await;
    }

    /// Downloads a media item by id: its URL (and size) from `/{media-id}`,
    /// then the bytes from that URL, both with the token. Larger than
    /// `max_bytes` is refused before the download.
    pub async fn download<I: Io>(&self, io: &I, media_id: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        let info_req = self.authorized(HttpRequest::get(format!("{}/{media_id}", self.base), 30_000));
        let info =
            crate::channels::shared::download::download(io, &self.backoff, "whatsapp media info", info_req, 64 * 1024)
                .await?;
        let info: Value =
            hearth_json::from_slice(&info).map_err(|e| ChannelError::Failed(format!("media info is not JSON: {e}")))?;
        if let Some(size) = info["file_size"].as_u64().filter(|s| *s > max_bytes) {
            return Err(ChannelError::TooLarge(size));
        }
        let url = info["url"].as_str().ok_or_else(|| ChannelError::Failed("media info has no url".into()))?;
        if !media_url_allowed(url, &self.base) {
            return Err(ChannelError::Failed("the media URL is not on Meta's media host".into()));
        }
        let req = self.authorized(HttpRequest::get(url.to_owned(), 120_000));
        crate::channels::shared::download::download(io, &self.backoff, "whatsapp media", req, max_bytes).await
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..url.len() - rest.len() + end])
}

/// Meta's media host (the URLs `/{media-id}` gives), or the configured
/// API's own origin (stand-ins): the token goes nowhere else.
pub fn media_url_allowed(url: &str, api_base: &str) -> bool {
    let Some(o) = origin(url) else { return false };
    o == "https://lookaside.fbsbx.com" || o == "https://graph.facebook.com" || origin(api_base) == Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    fn api() -> WhatsAppApi {
        WhatsAppApi {
            base: "https://graph.test/v23.0".into(),
            token: "EAAG-token".into(),
            phone_number_id: None,
            backoff: Backoff { attempts: 2, base_ms: 1, max_ms: 1 },
        }
    }

    fn target(until: i64) -> ReplyTarget {
        ReplyTarget {
            channel: ChannelKind::Whatsapp,
            chat_id: "972987654321".into(),
            reply_to: Some("wamid.abc".into()),
            extra: Some(ReplyExtra { from: "1122334455667".into(), until }.render()),
            ..Default::default()
        }
    }

    #[test]
    fn a_reply_goes_from_the_number_that_received_the_message_quoting_it() {
        let front = FakeFront::with(&[]);
        front.http.reply(200, r#"{"messaging_product":"whatsapp","contacts":[{"input":"972987654321","wa_id":"972987654321"}],"messages":[{"id":"wamid.out"}]}"#);
        let piece = crate::channels::render(ChannelKind::Whatsapp, "**hi** there", true, true, true);
        assert_eq!(block_on(api().send_chunk(&front, &target(front.now.get() + 1000), &piece)), SendOutcome::Delivered);
        let req = front.http.requests.borrow()[0].clone();
        assert_eq!(req.url, "https://graph.test/v23.0/1122334455667/messages");
        assert!(req.headers.contains(&("authorization".into(), "Bearer EAAG-token".into())));
        let body: Value = hearth_json::from_slice(&req.body).unwrap();
        assert_eq!(body["text"]["body"], "*hi* there");
        assert_eq!(
            (body["to"].as_str(), body["context"]["message_id"].as_str()),
            (Some("972987654321"), Some("wamid.abc"))
        );
    }

    #[test]
    fn outside_the_window_nothing_is_sent_and_the_reason_is_plain() {
        let front = FakeFront::with(&[]);
        let piece = crate::channels::render(ChannelKind::Whatsapp, "late", true, true, true);
        let late = target(front.now.get() - 2 * 3600 * 1000);
        let SendOutcome::Unreachable(why) = block_on(api().send_chunk(&front, &late, &piece)) else { panic!() };
        assert!(why.contains("24-hour customer-service window") && why.contains("2 h ago"), "{why}");
        assert!(front.http.requests.borrow().is_empty(), "the API is not asked");
    }

    #[test]
    fn media_is_fetched_by_id_with_the_token_and_refused_when_too_big() {
        let front = FakeFront::with(&[]);
        front.http.reply(200, r#"{"messaging_product":"whatsapp","url":"https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1","mime_type":"image/jpeg","sha256":"x","file_size":4,"id":"65463453"}"#);
        front.http.reply_bytes(200, b"JPEG");
        assert_eq!(block_on(api().download(&front, "65463453", 1000)), Ok(b"JPEG".to_vec()));
        let reqs = front.http.requests.borrow().clone();
        assert_eq!(reqs[0].url, "https://graph.test/v23.0/65463453");
        assert!(reqs[1].url.starts_with("https://lookaside.fbsbx.com/"));
        assert!(reqs.iter().all(|r| r.headers.contains(&("authorization".into(), "Bearer EAAG-token".into()))));
        front.http.reply(200, r#"{"url":"https://lookaside.fbsbx.com/x","file_size":99999999}"#);
        assert_eq!(block_on(api().download(&front, "1", 1000)), Err(ChannelError::TooLarge(99_999_999)));
        front.http.reply(200, r#"{"url":"https://evil.example/x","file_size":1}"#);
        assert!(matches!(block_on(api().download(&front, "1", 1000)), Err(ChannelError::Failed(_))));
    }
}
