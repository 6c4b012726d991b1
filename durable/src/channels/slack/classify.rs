//! What Slack's answer to one Web API call means. Slack answers HTTP 200
//! with `{"ok": false, "error": "…"}` for most failures (its error names are
//! the documented ones of each method, e.g. `chat.postMessage`), and HTTP
//! 429 with a `Retry-After` header (seconds) when rate-limited.

use crate::ports::SendOutcome;
use crate::retry::parse_retry_after;
use serde_json::Value;

/// Errors about the conversation or the app's access, not the message:
/// anything else sent there fails the same way.
const UNREACHABLE: &[&str] = &[
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "user_not_found",
    "user_disabled",
    "cannot_dm_bot",
    "account_inactive",
    "invalid_auth",
    "not_authed",
    "token_revoked",
    "token_expired",
    "missing_scope",
    "no_permission",
    "ekm_access_denied",
    "restricted_action",
    "team_access_not_granted",
];

/// Errors that pass (Slack says to try again).
const TRANSIENT: &[&str] =
    &["ratelimited", "internal_error", "fatal_error", "request_timeout", "service_unavailable", "team_added_to_org"];

/// `ok` and the error name of an answer's body.
pub fn ok_and_error(body: &[u8]) -> (bool, String) {
    let v: Value = hearth_json::from_slice(body).unwrap_or(Value::Null);
    (v["ok"] == Value::Bool(true), v["error"].as_str().unwrap_or("").to_owned())
}

/// Slack's answer to `chat.postMessage` (or `chat.update`).
pub fn send(status: u16, body: &[u8], retry_after: Option<&str>) -> SendOutcome {
    let (ok, error) = ok_and_error(body);
    if (200..300).contains(&status) && ok {
        return SendOutcome::Delivered;
    }
    let why = if error.is_empty() { format!("slack HTTP {status}") } else { format!("slack {status}: {error}") };
    match status {
        429 => SendOutcome::Retry { after_ms: parse_retry_after(retry_after), why },
        500.. => SendOutcome::Retry { after_ms: None, why },
        _ if TRANSIENT.contains(&error.as_str()) => {
            SendOutcome::Retry { after_ms: parse_retry_after(retry_after), why }
        }
        _ if UNREACHABLE.contains(&error.as_str()) || status == 401 || status == 403 => SendOutcome::Unreachable(why),
        // msg_too_long, no_text, invalid_blocks, too_many_attachments...: this piece.
        _ => SendOutcome::Rejected(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_answers() {
        assert_eq!(send(200, br#"{"ok":true,"channel":"C1","ts":"1.2"}"#, None), SendOutcome::Delivered);
        assert_eq!(
            send(429, br#"{"ok":false,"error":"ratelimited"}"#, Some("30")),
            SendOutcome::Retry { after_ms: Some(30_000), why: "slack 429: ratelimited".into() }
        );
        assert!(matches!(send(200, br#"{"ok":false,"error":"internal_error"}"#, None), SendOutcome::Retry { .. }));
        assert!(matches!(send(503, b"<html>", None), SendOutcome::Retry { after_ms: None, .. }));
        assert_eq!(
            send(200, br#"{"ok":false,"error":"channel_not_found"}"#, None),
            SendOutcome::Unreachable("slack 200: channel_not_found".into())
        );
        assert!(matches!(send(200, br#"{"ok":false,"error":"invalid_auth"}"#, None), SendOutcome::Unreachable(_)));
        assert_eq!(
            send(200, br#"{"ok":false,"error":"msg_too_long"}"#, None),
            SendOutcome::Rejected("slack 200: msg_too_long".into())
        );
        assert!(matches!(send(200, br#"{"ok":false,"error":"invalid_blocks"}"#, None), SendOutcome::Rejected(_)));
    }
}
