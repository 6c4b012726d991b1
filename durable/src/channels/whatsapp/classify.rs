//! What the Cloud API's answer to one send means. Errors come as HTTP 4xx
//! with `{"error": {"message", "type", "code", "error_subcode",
//! "error_data": {"details"}, "fbtrace_id"}}`; the codes are those of
//! developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes.

use crate::ports::SendOutcome;
use crate::retry::parse_retry_after;
use serde_json::Value;

/// Re-engagement: more than 24 hours since the person last wrote.
pub const OUTSIDE_WINDOW: i64 = 131047;

/// Throughput and rate limits: worth another try later.
const RATE_LIMITS: &[i64] = &[4, 80007, 130429, 131048, 131056, 133016];
/// Unknown, temporary or "try again" errors.
const TRANSIENT: &[i64] = &[1, 2, 131000, 131016];
/// The number, the app or the recipient cannot be reached at all now.
const UNREACHABLE: &[i64] = &[
    OUTSIDE_WINDOW,
    190,    // access token expired or invalid
    10,     // permission denied
    200,    // permission error
    368,    // temporarily blocked for policy violations
    131005, // access denied
    131026, // message undeliverable (not on WhatsApp, old app, not accepted the terms)
    131030, // recipient not in the allowed list (test numbers)
    131031, // business account locked
    131045, // phone number not registered
    133010, // phone number not registered with the Cloud API
];

/// `code` and a readable reason of an error answer.
pub fn error_of(body: &[u8]) -> (Option<i64>, String) {
    let v: Value = hearth_json::from_slice(body).unwrap_or(Value::Null);
    let e = &v["error"];
    let code = e["code"].as_i64();
    let message = e["message"].as_str().unwrap_or("");
    let details = e["error_data"]["details"].as_str().unwrap_or("");
    let why = match (message.is_empty(), details.is_empty()) {
        (_, false) if details != message => format!("{message}: {details}"),
        (false, _) => message.to_owned(),
        _ => String::from_utf8_lossy(body).chars().take(200).collect(),
    };
    (code, why)
}

/// The Cloud API's answer to a `/messages` send.
pub fn send(status: u16, body: &[u8], retry_after: Option<&str>) -> SendOutcome {
    if (200..300).contains(&status) {
        return SendOutcome::Delivered;
    }
    let (code, reason) = error_of(body);
    let why = match code {
        Some(OUTSIDE_WINDOW) => format!(
            "whatsapp {status} ({OUTSIDE_WINDOW}): outside the 24-hour customer-service window ({reason}); \
             the person must write first (or a template message be sent)"
        ),
        Some(c) => format!("whatsapp {status} ({c}): {reason}"),
        None => format!("whatsapp {status}: {reason}"),
    };
    let is = |list: &[i64]| code.is_some_and(|c| list.contains(&c));
    if status == 429 || is(RATE_LIMITS) {
        SendOutcome::Retry { after_ms: parse_retry_after(retry_after), why }
    } else if status >= 500 || is(TRANSIENT) {
        SendOutcome::Retry { after_ms: None, why }
    } else if is(UNREACHABLE) || matches!(status, 401 | 403) {
        SendOutcome::Unreachable(why)
    } else {
        SendOutcome::Rejected(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_api_answers() {
        assert_eq!(
            send(200, br#"{"messaging_product":"whatsapp","messages":[{"id":"wamid.X"}]}"#, None),
            SendOutcome::Delivered
        );
        let window = br#"{"error":{"message":"(#131047) Re-engagement message","type":"OAuthException","code":131047,
            "error_data":{"messaging_product":"whatsapp","details":"Message failed to send because more than 24 hours have passed since the customer last replied to this number."},
            "fbtrace_id":"A1b2"}}"#;
        let SendOutcome::Unreachable(why) = send(400, window, None) else { panic!() };
        assert!(why.contains("24-hour") && why.contains("more than 24 hours have passed"), "{why}");
        let rate = br#"{"error":{"message":"(#130429) Rate limit hit","code":130429}}"#;
        assert!(matches!(send(400, rate, None), SendOutcome::Retry { .. }));
        assert!(matches!(send(503, b"", None), SendOutcome::Retry { after_ms: None, .. }));
        let token = br#"{"error":{"message":"Error validating access token","type":"OAuthException","code":190}}"#;
        assert!(matches!(send(401, token, None), SendOutcome::Unreachable(_)));
        let bad = br#"{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100}}"#;
        assert!(matches!(send(400, bad, None), SendOutcome::Rejected(_)));
        assert!(RATE_LIMITS.contains(&130429));
    }
}
