//! What Discord's answer to one send means: delivered, try again later (and
//! when), this piece is refused, or the chat cannot be reached. Pure, so the
//! client only sends and hands the answer here; the outbox decides.
//!
//! Discord answers `{"message": "You are being rate limited.", "retry_after":
//! 64.57, "global": false}` with a `Retry-After` header, and `{"message": ...,
//! "code": ...}` for errors (discord.com/developers/docs/topics/rate-limits,
//! /topics/opcodes-and-status-codes#json).

use crate::ports::SendOutcome;
use crate::retry::parse_retry_after;
use serde_json::Value;

/// Discord's answer to a webhook edit, a follow-up or a channel message.
pub fn send(status: u16, body: &[u8], retry_after_header: Option<&str>) -> SendOutcome {
    if (200..300).contains(&status) {
        return SendOutcome::Delivered;
    }
    let v: Value = hearth_json::from_slice(body).unwrap_or(Value::Null);
    let message = match v["message"].as_str() {
        Some(m) => m.to_owned(),
        None => String::from_utf8_lossy(body).chars().take(200).collect(),
    };
    let why = format!("discord {status}: {message}");
    match status {
        429 => SendOutcome::Retry { after_ms: retry_after_ms(&v, retry_after_header), why },
        500.. => SendOutcome::Retry { after_ms: None, why },
        401 | 403 | 404 => SendOutcome::Unreachable(why),
        _ => SendOutcome::Rejected(why),
    }
}

/// The wait Discord asks for on a 429: the body's `retry_after` (float
/// seconds), else the `Retry-After` header.
pub fn retry_after_ms(body: &Value, header: Option<&str>) -> Option<u64> {
    match body["retry_after"].as_f64() {
        Some(s) if s.is_finite() && s >= 0.0 => Some((s * 1000.0).ceil() as u64),
        _ => parse_retry_after(header),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discord_answers() {
        assert_eq!(send(200, b"{}", None), SendOutcome::Delivered);
        assert_eq!(send(204, b"", None), SendOutcome::Delivered);
        let limited = br#"{"message": "You are being rate limited.", "retry_after": 0.5, "global": false}"#;
        assert!(matches!(send(429, limited, Some("1")), SendOutcome::Retry { after_ms: Some(500), .. }));
        assert!(matches!(send(429, b"", Some("2")), SendOutcome::Retry { after_ms: Some(2000), .. }));
        assert!(matches!(send(503, b"upstream", None), SendOutcome::Retry { after_ms: None, .. }));
        let form = br#"{"message": "Invalid Form Body", "code": 50035}"#;
        assert_eq!(send(400, form, None), SendOutcome::Rejected("discord 400: Invalid Form Body".into()));
        let token = br#"{"message": "Invalid Webhook Token", "code": 50027}"#;
        assert!(matches!(send(401, token, None), SendOutcome::Unreachable(_)));
    }

    #[test]
    fn discord_retry_after_prefers_the_body() {
        let body = json!({"message": "You are being rate limited.", "retry_after": 0.5, "global": false});
        assert_eq!(retry_after_ms(&body, Some("1")), Some(500));
        assert_eq!(retry_after_ms(&json!({}), Some("2")), Some(2000));
        assert_eq!(retry_after_ms(&Value::Null, None), None);
        assert_eq!(retry_after_ms(&json!({"retry_after": 1.2345}), None), Some(1235));
    }
}
