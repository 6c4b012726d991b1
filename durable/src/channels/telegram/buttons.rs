//! Buttons on Telegram (Bot API): a message with an inline keyboard
//! (`sendMessage` with `reply_markup.inline_keyboard`), the answer to a
//! tap (`answerCallbackQuery`, the short note Telegram shows), and the
//! buttons once settled (`editMessageReplyMarkup`: one button that says how
//! it went). A `callback_data` is at most 64 bytes.

use super::client::{TelegramApi, TgError};
use crate::channels::shared::button::Button;
use crate::ports::Io;
use serde_json::{json, Value};

fn keyboard(rows: &[Button]) -> Value {
    let row: Vec<Value> = rows.iter().map(|b| json!({"text": b.label, "callback_data": b.data})).collect();
    json!({"inline_keyboard": [row]})
}

impl TelegramApi {
    /// `text` with `buttons` under it, in `chat`: the message's id.
    pub async fn post_buttons<I: Io>(
        &self,
        io: &I,
        chat: &str,
        text: &str,
        buttons: &[Button],
    ) -> Result<String, TgError> {
        let body = json!({"chat_id": chat, "text": text, "reply_markup": keyboard(buttons),
            "link_preview_options": {"is_disabled": true}});
        let msg = self.call(io, "sendMessage", &body).await?;
        msg["message_id"]
            .as_i64()
            .map(|m| m.to_string())
            .ok_or_else(|| TgError::Unavailable("sendMessage answered without a message_id".into()))
    }

    /// The message's buttons become `settled` (one button).
    pub async fn settle_buttons<I: Io>(
        &self,
        io: &I,
        chat: &str,
        message: &str,
        settled: &Button,
    ) -> Result<(), TgError> {
        let Ok(message_id) = message.parse::<i64>() else {
            return Err(TgError::Api { code: 400, description: format!("not a message id: {message}") });
        };
        let body =
            json!({"chat_id": chat, "message_id": message_id, "reply_markup": keyboard(std::slice::from_ref(settled))});
        self.call(io, "editMessageReplyMarkup", &body).await.map(|_| ())
    }

    /// Answers a tap with the note Telegram shows (at most 200 characters).
    pub async fn answer_tap<I: Io>(&self, io: &I, callback_id: &str, note: &str) -> Result<(), TgError> {
        let body = json!({"callback_query_id": callback_id, "text": crate::text::truncate_chars(note, 200)});
        self.call(io, "answerCallbackQuery", &body).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::Backoff;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    fn api() -> TelegramApi {
        TelegramApi {
            base: "https://tg.test".into(),
            token: "1:T".into(),
            backoff: Backoff { attempts: 1, base_ms: 1, max_ms: 1 },
        }
    }

    #[test]
    fn an_inline_keyboard_then_its_settled_button_then_the_tap_answered() {
        let f = FakeFront::default();
        f.http.reply(200, r#"{"ok":true,"result":{"message_id":77,"chat":{"id":42,"type":"private"},"date":1}}"#);
        f.http.reply(200, r#"{"ok":true,"result":true}"#);
        f.http.reply(200, r#"{"ok":true,"result":true}"#);
        let buttons = [Button::approve("ok:1:a"), Button::deny("ok:1:d")];
        assert_eq!(block_on(api().post_buttons(&f, "42", "May I?", &buttons)).unwrap(), "77");
        block_on(api().settle_buttons(&f, "42", "77", &Button { label: "✅ Approved".into(), data: "ok:1:s".into() }))
            .unwrap();
        block_on(api().answer_tap(&f, "99", "Approved")).unwrap();
        let sent = f.http.sent_json();
        assert_eq!(sent[0].1["reply_markup"]["inline_keyboard"][0][1]["callback_data"], "ok:1:d");
        assert_eq!(sent[1].0, "https://tg.test/bot1:T/editMessageReplyMarkup");
        assert_eq!(sent[1].1["message_id"], 77);
        assert_eq!(sent[1].1["reply_markup"]["inline_keyboard"][0][0]["text"], "✅ Approved");
        assert_eq!(sent[2].1, json!({"callback_query_id": "99", "text": "Approved"}));
    }
}
