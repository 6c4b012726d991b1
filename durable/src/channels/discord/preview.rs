//! Discord previews: the deferred answer of a command (`PATCH
//! .../messages/@original`) edited as the model writes; the answer then
//! edits it once more (as before) and adds follow-ups when it is long. One
//! attempt per update; Discord's 429 (`retry_after`) pauses the updates.

use super::classify::retry_after_ms;
use super::client::{DiscordApi, USER_AGENT};
use super::interaction::ReplyExtra;
use super::MAX_CHARS;
use crate::inbound::ReplyTarget;
use crate::ports::{Http, HttpRequest, Io, Preview, PreviewOutcome};
use serde_json::{json, Value};

impl DiscordApi {
    pub async fn preview<I: Io>(&self, io: &I, target: &ReplyTarget, p: &Preview<'_>) -> PreviewOutcome {
        let Some(extra) = ReplyExtra::from_target(target) else {
            return PreviewOutcome::Unsupported("not an interaction".into());
        };
        if extra.token_expired(io.now_ms()) {
            return PreviewOutcome::Unsupported("the interaction token expired".into());
        }
        let Some(app) = self.app_id.clone().or(extra.app.clone()) else {
            return PreviewOutcome::Unsupported("DISCORD_APPLICATION_ID is not set".into());
        };
        let url = format!("{}/webhooks/{app}/{}/messages/@original", self.base, extra.token);
        let body = json!({"content": crate::text::tail_utf16(p.text, MAX_CHARS),
                          "allowed_mentions": {"parse": []}});
        let mut req = HttpRequest::post_json(url, &body, 10_000).header("user-agent", USER_AGENT);
        req.method = "PATCH";
        match io.http().send(req).await {
            Ok(resp) if (200..300).contains(&resp.status) => PreviewOutcome::Shown { handle: None },
            Ok(resp) if resp.status == 429 => {
                let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
                PreviewOutcome::Wait(retry_after_ms(&v, resp.header("retry-after")).unwrap_or(1000))
            }
            Ok(resp) if resp.status == 404 => PreviewOutcome::Unsupported(format!("404: {}", resp.text())),
            Ok(resp) => PreviewOutcome::Failed(format!("{}: {}", resp.status, resp.text())),
            Err(e) => PreviewOutcome::Failed(e.to_string()),
        }
    }
}
