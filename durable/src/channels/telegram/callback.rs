//! A tap on an inline keyboard button (`callback_query`): Hearth's only
//! buttons are dreaming's proposals (`dream:{id}:{a|r}`). Read from the
//! update's JSON field by field: a tap on a message sent via inline mode has
//! no `message` (an `inline_message_id` instead), an old message may be
//! "inaccessible" (`date: 0`, no text), and `data` is absent for game
//! buttons; none of that is an error.

use super::wire::Update;
use serde_json::Value;

/// What a tap says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ButtonTap {
    /// The `callback_query` id, to answer it (`answerCallbackQuery`).
    pub callback_id: String,
    /// Who tapped (Telegram user id).
    pub from: String,
    /// The button's `callback_data`, if it has one.
    pub data: Option<String>,
    /// The message the button is on (absent for inline-mode messages).
    pub chat: Option<String>,
    pub message_id: Option<i64>,
}

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// The tap of an update that is a `callback_query` (None otherwise, or when
/// it lacks its id or sender).
pub fn button_tap(update: &Update) -> Option<ButtonTap> {
    let q = update.other.get("callback_query")?;
    let callback_id = id_text(q.get("id")?)?;
    let from = id_text(q.get("from")?.get("id")?)?;
    let message = q.get("message").filter(|m| m.is_object());
    Some(ButtonTap {
        callback_id,
        from,
        data: q.get("data").and_then(Value::as_str).map(str::to_owned),
        chat: message.and_then(|m| m.get("chat")).and_then(|c| c.get("id")).and_then(id_text),
        message_id: message.and_then(|m| m.get("message_id")).and_then(Value::as_i64),
    })
}
