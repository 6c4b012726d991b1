//! Buttons on Discord (API v10): a message with an action row of two
//! buttons in the owner's DM with the bot (`POST /users/@me/channels`
//! opens the DM, `POST /channels/{id}/messages` with `components`), the
//! tap arriving at the interactions endpoint as a `MESSAGE_COMPONENT`
//! interaction (type 3, the button's `custom_id` in `data`), answered with
//! `UPDATE_MESSAGE` (type 7: the message replaced, buttons gone), and the
//! message settled otherwise (`PATCH /channels/{id}/messages/{id}`, when the
//! decision came from elsewhere). `custom_id` is at most 100 characters,
//! a label 80.

use super::client::{DiscordApi, USER_AGENT};
use crate::channels::shared::button::Button;
use crate::ports::{Http, HttpRequest, Io};
use serde_json::{json, Value};

/// Button styles (discord.com/developers/docs/components/reference#button-button-styles).
const SUCCESS: u8 = 3;
const DANGER: u8 = 4;

fn row(buttons: &[Button]) -> Value {
    let items: Vec<Value> = buttons
        .iter()
        .map(|b| {
            json!({"type": 2, "style": if b.is_yes() { SUCCESS } else { DANGER },
                "label": crate::text::truncate_chars(&b.label, 80), "custom_id": b.data})
        })
        .collect();
    json!([{"type": 1, "components": items}])
}

/// The interaction response to a tap: the message replaced with `text`, no buttons.
pub fn update_message(text: &str) -> Value {
    json!({"type": 7, "data": {"content": text, "components": [], "allowed_mentions": {"parse": []}}})
}

impl DiscordApi {
    async fn bot_call<I: Io>(&self, io: &I, method: &'static str, path: &str, body: &Value) -> Result<Value, String> {
        let token = self.bot_token.as_deref().ok_or("DISCORD_BOT_TOKEN is not set")?;
        let mut req = HttpRequest::post_json(format!("{}{path}", self.base), body, 30_000)
            .header("user-agent", USER_AGENT)
            .header("authorization", &format!("Bot {token}"));
        req.method = method;
        let resp = io.http().send(req).await.map_err(|e| format!("discord: {e}"))?;
        let v: Value = hearth_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if (200..300).contains(&resp.status) {
            Ok(v)
        } else {
            Err(format!("discord {method} {path}: {} {}", resp.status, v["message"].as_str().unwrap_or("")))
        }
    }

    /// `text` with `buttons` in `user`'s DM with the bot: `(channel, message)`.
    pub async fn post_buttons<I: Io>(
        &self,
        io: &I,
        user: &str,
        text: &str,
        buttons: &[Button],
    ) -> Result<(String, String), String> {
        let dm = self.bot_call(io, "POST", "/users/@me/channels", &json!({"recipient_id": user})).await?;
        let channel = dm["id"].as_str().ok_or("the DM channel came without an id")?.to_owned();
        let body = json!({"content": crate::text::truncate_chars(text, super::MAX_CHARS), "components": row(buttons),
            "allowed_mentions": {"parse": []}});
        let msg = self.bot_call(io, "POST", &format!("/channels/{channel}/messages"), &body).await?;
        let id = msg["id"].as_str().ok_or("the message came without an id")?.to_owned();
        Ok((channel, id))
    }

    /// The message becomes `text` and `label`, without buttons.
    pub async fn settle_buttons<I: Io>(
        &self,
        io: &I,
        channel: &str,
        message: &str,
        text: &str,
        label: &str,
    ) -> Result<(), String> {
        let content = crate::text::truncate_chars(&format!("{text}\n\n{label}"), super::MAX_CHARS);
        let body = json!({"content": content, "components": []});
        self.bot_call(io, "PATCH", &format!("/channels/{channel}/messages/{message}"), &body).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::Backoff;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    #[test]
    fn the_dm_is_opened_then_the_buttons_posted_then_settled() {
        let f = FakeFront::default();
        let api = DiscordApi {
            base: "https://discord.test/api/v10".into(),
            app_id: None,
            bot_token: Some("bot-token".into()),
            backoff: Backoff { attempts: 1, base_ms: 1, max_ms: 1 },
        };
        f.http.reply(200, r#"{"id":"319674150115610528","type":1,"recipients":[{"id":"82198898841029460"}]}"#);
        f.http.reply(200, r#"{"id":"334385199974967042","channel_id":"319674150115610528","content":"May I?"}"#);
        f.http.reply(200, r#"{"id":"334385199974967042"}"#);
        let buttons = [Button::approve("ok:3:a"), Button::deny("ok:3:d")];
        let at = block_on(api.post_buttons(&f, "82198898841029460", "May I?", &buttons)).unwrap();
        assert_eq!(at, ("319674150115610528".into(), "334385199974967042".into()));
        block_on(api.settle_buttons(&f, &at.0, &at.1, "May I?", "✅ Approved")).unwrap();
        let reqs = f.http.requests.borrow();
        assert_eq!(reqs[0].url, "https://discord.test/api/v10/users/@me/channels");
        assert!(reqs[0].headers.iter().any(|(k, v)| k == "authorization" && v == "Bot bot-token"));
        let sent: Value = hearth_json::from_slice(&reqs[1].body).unwrap();
        assert_eq!(sent["components"][0]["type"], 1);
        assert_eq!(
            sent["components"][0]["components"][0],
            json!({"type": 2, "style": 3, "label": "✅ Approve", "custom_id": "ok:3:a"})
        );
        assert_eq!(sent["components"][0]["components"][1]["style"], 4);
        assert_eq!(
            (reqs[2].method, reqs[2].url.as_str()),
            ("PATCH", "https://discord.test/api/v10/channels/319674150115610528/messages/334385199974967042")
        );
        assert_eq!(update_message("done")["type"], 7);
    }
}
