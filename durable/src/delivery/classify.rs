//! What a platform's answer to one send means: delivered, try again later
//! (and when), this piece is refused, or the chat cannot be reached. Pure,
//! so the adapters only send and hand the answer here.
//!
//! The shapes are the platforms' documented ones: Telegram answers
//! `{"ok": false, "error_code": 429, "description": "Too Many Requests: retry
//! after 35", "parameters": {"retry_after": 35}}`
//! (core.telegram.org/bots/api#making-requests, #responseparameters);
//! Discord `{"message": "You are being rate limited.", "retry_after": 64.57,
//! "global": false}` with a `Retry-After` header, and `{"message": ..., "code":
//! ...}` for errors (discord.com/developers/docs/topics/rate-limits,
//! /topics/opcodes-and-status-codes#json).

use crate::ports::SendOutcome;
use crate::retry::parse_retry_after;
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
pub fn telegram(status: u16, body: &[u8]) -> SendOutcome {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
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

/// Discord's answer to a webhook edit, a follow-up or a channel message.
pub fn discord(status: u16, body: &[u8], retry_after_header: Option<&str>) -> SendOutcome {
    if (200..300).contains(&status) {
        return SendOutcome::Delivered;
    }
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let message = match v["message"].as_str() {
        Some(m) => m.to_owned(),
        None => String::from_utf8_lossy(body).chars().take(200).collect(),
    };
    let why = format!("discord {status}: {message}");
    match status {
        429 => SendOutcome::Retry { after_ms: discord_retry_after_ms(&v, retry_after_header), why },
        500.. => SendOutcome::Retry { after_ms: None, why },
        401 | 403 | 404 => SendOutcome::Unreachable(why),
        _ => SendOutcome::Rejected(why),
    }
}

/// The wait Discord asks for on a 429: the body's `retry_after` (float
/// seconds), else the `Retry-After` header.
pub fn discord_retry_after_ms(body: &Value, header: Option<&str>) -> Option<u64> {
    match body["retry_after"].as_f64() {
        Some(s) if s.is_finite() && s >= 0.0 => Some((s * 1000.0).ceil() as u64),
        _ => parse_retry_after(header),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tg(status: u16, body: Value) -> SendOutcome {
        telegram(status, &serde_json::to_vec(&body).unwrap())
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
        assert!(matches!(telegram(502, b"<html>Bad Gateway</html>"), SendOutcome::Retry { after_ms: None, .. }));
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

    #[test]
    fn discord_answers() {
        assert_eq!(discord(200, b"{}", None), SendOutcome::Delivered);
        assert_eq!(discord(204, b"", None), SendOutcome::Delivered);
        let limited = br#"{"message": "You are being rate limited.", "retry_after": 0.5, "global": false}"#;
        assert!(matches!(discord(429, limited, Some("1")), SendOutcome::Retry { after_ms: Some(500), .. }));
        assert!(matches!(discord(429, b"", Some("2")), SendOutcome::Retry { after_ms: Some(2000), .. }));
        assert!(matches!(discord(503, b"upstream", None), SendOutcome::Retry { after_ms: None, .. }));
        let form = br#"{"message": "Invalid Form Body", "code": 50035}"#;
        assert_eq!(discord(400, form, None), SendOutcome::Rejected("discord 400: Invalid Form Body".into()));
        let token = br#"{"message": "Invalid Webhook Token", "code": 50027}"#;
        assert!(matches!(discord(401, token, None), SendOutcome::Unreachable(_)));
    }

    #[test]
    fn discord_retry_after_prefers_the_body() {
        let body = json!({"message": "You are being rate limited.", "retry_after": 0.5, "global": false});
        assert_eq!(discord_retry_after_ms(&body, Some("1")), Some(500));
        assert_eq!(discord_retry_after_ms(&json!({}), Some("2")), Some(2000));
        assert_eq!(discord_retry_after_ms(&Value::Null, None), None);
        assert_eq!(discord_retry_after_ms(&json!({"retry_after": 1.2345}), None), Some(1235));
    }
}
