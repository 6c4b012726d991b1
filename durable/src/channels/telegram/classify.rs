//! What Telegram's answer to one send means: delivered, try again later
//! (and when), this piece is refused, or the chat cannot be reached. Pure,
//! so the client only sends and hands the answer here; the outbox decides.
//!
//! Telegram answers `{"ok": false, "error_code": 429, "description": "Too Many
//! Requests: retry after 35", "parameters": {"retry_after": 35}}`
//! (core.telegram.org/bots/api#making-requests, #responseparameters).

use crate::ports::SendOutcome;
use serde_json::Value;

/// Telegram 400s that are about the chat, not the message: sending anything
/// else there fails the same way.
const TELEGRAM_CHAT_GONE: &[&str] = &[
    "chat not found",
    "user not found",
    "peer_id_invalid",
    "bot was kicked",
    "bot is not a member",
    "not enough rights",
    "have no rights to send",
    "chat_write_forbidden",
    "group chat was upgraded",
    "user is deactivated",
];

/// Telegram's answer to `sendMessage`.
pub fn send(status: u16, body: &[u8]) -> SendOutcome {
    let v: Value = hearth_json::from_slice(body).unwrap_or(Value::Null);
    if (200..300).contains(&status) && v["ok"] != Value::Bool(false) {
        return SendOutcome::Delivered;
    }
    let description = v["description"].as_str().unwrap_or("").trim();
    let why =
        if description.is_empty() { format!("telegram {status}") } else { format!("telegram {status}: {description}") };
    let lower = description.to_ascii_lowercase();
    match status {
        429 => SendOutcome::Retry {
            after_ms: v["parameters"]["retry_after"].as_u64().map(|s| s.saturating_mul(1000)),
            why,
        },
        500.. => SendOutcome::Retry { after_ms: None, why },
        401 | 403 | 404 => SendOutcome::Unreachable(why),
        _ if TELEGRAM_CHAT_GONE.iter().any(|p| lower.contains(p)) => SendOutcome::Unreachable(why),
        _ => SendOutcome::Rejected(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tg(status: u16, body: Value) -> SendOutcome {
        send(status, &serde_json::to_vec(&body).unwrap())
    }

    #[test]
    fn telegram_answers() {
        assert_eq!(tg(200, json!({"ok": true, "result": {"message_id": 5}})), SendOutcome::Delivered);
        let flood = json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 120",
                           "parameters": {"retry_after": 120}});
        assert_eq!(
            tg(429, flood),
            SendOutcome::Retry {
                after_ms: Some(120_000),
                why: "telegram 429: Too Many Requests: retry after 120".into()
            }
        );
        assert!(matches!(send(502, b"<html>Bad Gateway</html>"), SendOutcome::Retry { after_ms: None, .. }));
        let blocked = json!({"ok": false, "error_code": 403, "description": "Forbidden: bot was blocked by the user"});
        assert_eq!(
            tg(403, blocked),
            SendOutcome::Unreachable("telegram 403: Forbidden: bot was blocked by the user".into())
        );
        let gone = json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"});
        assert!(matches!(tg(400, gone), SendOutcome::Unreachable(_)));
        let markup = json!({"ok": false, "error_code": 400,
                            "description": "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"});
        assert!(matches!(tg(400, markup), SendOutcome::Rejected(w) if w.contains("can't parse entities")));
        assert!(matches!(
            tg(401, json!({"ok": false, "error_code": 401, "description": "Unauthorized"})),
            SendOutcome::Unreachable(_)
        ));
    }
}
