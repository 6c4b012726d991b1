//! Buttons on Slack (Block Kit): a message with a `section` and an
//! `actions` block of two buttons, posted with `chat.postMessage` to the
//! owner's user id (Slack puts it in the app's DM with them); a tap comes
//! to the app's Interactivity Request URL (the same `POST /slack/{agent}`)
//! as a form field `payload` holding a `block_actions` JSON, signed like
//! events; it is answered 200 at once and the message replaced through its
//! `response_url`. A decision made elsewhere settles the message with
//! `chat.update`.

use super::client::SlackApi;
use crate::channels::shared::button::Button;
use crate::ports::{Http, Io};
use serde_json::{json, Value};

fn blocks(text: &str, buttons: &[Button]) -> Value {
    let elements: Vec<Value> = buttons
        .iter()
        .map(|b| {
            json!({"type": "button", "text": {"type": "plain_text", "text": b.label, "emoji": true},
                "action_id": b.data, "value": b.data, "style": if b.is_yes() { "primary" } else { "danger" }})
        })
        .collect();
    json!([
        {"type": "section", "text": {"type": "plain_text", "text": crate::text::truncate_chars(text, 3000), "emoji": true}},
        {"type": "actions", "elements": elements},
    ])
}

/// The message once settled: its text, and how it went.
fn settled_blocks(text: &str, label: &str) -> Value {
    json!([
        {"type": "section", "text": {"type": "plain_text", "text": crate::text::truncate_chars(text, 3000), "emoji": true}},
        {"type": "context", "elements": [{"type": "plain_text", "text": label, "emoji": true}]},
    ])
}

/// What a `response_url` is sent to replace the tapped message.
pub fn replaced(text: &str, label: &str) -> Value {
    json!({"replace_original": true, "text": format!("{text}\n\n{label}"), "blocks": settled_blocks(text, label)})
}

/// A tap, as a `block_actions` payload says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockAction {
    pub user: String,
    /// The button's `action_id` (its data).
    pub data: String,
    pub response_url: Option<String>,
    pub channel: Option<String>,
    pub message_ts: Option<String>,
}

fn form_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Whether a request body is an interactivity payload (form-encoded
/// `payload=`), not an event.
pub fn is_interaction(content_type: Option<&str>, body: &[u8]) -> bool {
    content_type.is_some_and(|c| c.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"))
        || body.starts_with(b"payload=")
}

/// The tap in a form-encoded interactivity body. `Err`: not a button tap
/// Hearth reads (another payload type, no action, malformed).
pub fn read_action(body: &[u8]) -> Result<BlockAction, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_owned())?;
    let field = text.split('&').find_map(|pair| pair.strip_prefix("payload=")).ok_or("no payload field in the form")?;
    let v: Value = hearth_json::from_slice(&form_decode(field)).map_err(|e| format!("payload is not JSON: {e}"))?;
    let kind = v["type"].as_str().unwrap_or("");
    if kind != "block_actions" {
        return Err(format!("a {kind:?} payload"));
    }
    let action = v["actions"].get(0).ok_or("a block_actions payload without actions")?;
    let data = action["action_id"].as_str().or(action["value"].as_str()).ok_or("an action without action_id")?;
    let s = |v: &Value| v.as_str().map(str::to_owned);
    Ok(BlockAction {
        user: s(&v["user"]["id"]).ok_or("a block_actions payload without user.id")?,
        data: data.to_owned(),
        response_url: s(&v["response_url"]),
        channel: s(&v["container"]["channel_id"]).or_else(|| s(&v["channel"]["id"])),
        message_ts: s(&v["container"]["message_ts"]),
    })
}

impl SlackApi {
    async fn web<I: Io>(&self, io: &I, method: &str, body: &Value) -> Result<Value, String> {
        let req = crate::ports::HttpRequest::post_json(format!("{}/{method}", self.base), body, 30_000)
            .header("authorization", &format!("Bearer {}", self.token));
        let resp = io.http().send(req).await.map_err(|e| format!("slack {method}: {e}"))?;
        let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if resp.status == 200 && v["ok"] == true {
            Ok(v)
        } else {
            Err(format!("slack {method}: {} {}", resp.status, v["error"].as_str().unwrap_or("")))
        }
    }

    /// `text` with `buttons` in `user`'s DM with the app: `(channel, ts)`.
    pub async fn post_buttons<I: Io>(
        &self,
        io: &I,
        user: &str,
        text: &str,
        buttons: &[Button],
    ) -> Result<(String, String), String> {
        let body = json!({"channel": user, "text": text, "blocks": blocks(text, buttons), "unfurl_links": false});
        let v = self.web(io, "chat.postMessage", &body).await?;
        match (v["channel"].as_str(), v["ts"].as_str()) {
            (Some(c), Some(ts)) => Ok((c.to_owned(), ts.to_owned())),
            _ => Err("chat.postMessage answered without channel and ts".into()),
        }
    }

    /// The message becomes `text` and `label`, without buttons.
    pub async fn settle_buttons<I: Io>(
        &self,
        io: &I,
        channel: &str,
        ts: &str,
        text: &str,
        label: &str,
    ) -> Result<(), String> {
        let body = json!({"channel": channel, "ts": ts, "text": format!("{text}\n\n{label}"), "blocks": settled_blocks(text, label)});
        self.web(io, "chat.update", &body).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/real-world/slack/block-actions-bolt-python.json"
        ))
        .unwrap()
    }

    fn form(json: &[u8]) -> Vec<u8> {
        let mut out = b"payload=".to_vec();
        for &b in json {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b),
                b' ' => out.push(b'+'),
                _ => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
            }
        }
        out
    }

    #[test]
    fn a_real_block_actions_payload_is_read_from_its_form_body() {
        let body = form(&fixture());
        assert!(is_interaction(Some("application/x-www-form-urlencoded"), &body));
        assert!(!is_interaction(Some("application/json"), b"{\"type\":\"event_callback\"}"));
        let a = read_action(&body).unwrap();
        assert_eq!(a.user, "W111");
        assert_eq!(a.data, "a");
        assert_eq!(a.response_url.as_deref(), Some("https://hooks.slack.com/actions/T111/111/random-value"));
        assert_eq!((a.channel.as_deref(), a.message_ts.as_deref()), (Some("C111"), Some("111.222")));
        // Another payload type, a form without payload, broken JSON: errors, not panics.
        assert!(read_action(&form(br#"{"type":"view_submission"}"#)).unwrap_err().contains("view_submission"));
        assert!(read_action(b"token=x").is_err());
        assert!(read_action(b"payload=%7B%7Bnot").is_err());
        assert!(read_action(b"payload=%").is_err());
    }

    #[test]
    fn the_buttons_are_block_kit_and_the_settled_message_keeps_its_text() {
        let b = blocks("May I?", &[Button::approve("ok:1:a"), Button::deny("ok:1:d")]);
        assert_eq!(b[1]["type"], "actions");
        assert_eq!(b[1]["elements"][0]["action_id"], "ok:1:a");
        assert_eq!(b[1]["elements"][0]["style"], "primary");
        assert_eq!(b[1]["elements"][1]["style"], "danger");
        let r = replaced("May I?", "✅ Approved");
        assert_eq!(r["replace_original"], true);
        assert_eq!(r["blocks"][1]["elements"][0]["text"], "✅ Approved");
    }
}
