//! Slack's request signature (api.slack.com/authentication/verifying-requests-from-slack):
//! `X-Slack-Signature` is `v0=` and the hex HMAC-SHA256, keyed with the app's
//! signing secret, of `v0:{X-Slack-Request-Timestamp}:{raw body}`. A
//! timestamp more than five minutes from now is refused before any hashing
//! (a replayed request); the comparison is constant-time. The HMAC is the
//! runtime's WebCrypto ([`Front::hmac_sha256`]).

use crate::channels::shared::web::{constant_eq, hex};
use crate::ports::Front;

pub const SIGNATURE_HEADER: &str = "X-Slack-Signature";
pub const TIMESTAMP_HEADER: &str = "X-Slack-Request-Timestamp";

/// How far a request's timestamp may be from now (Slack's own advice).
pub const MAX_SKEW_SECONDS: i64 = 5 * 60;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing {0} header")]
    MissingHeader(&'static str),
    #[error("{TIMESTAMP_HEADER} is not a number of seconds")]
    BadTimestamp,
    #[error("the request is {0} s from now: older than 5 minutes (a replay?) or from the future")]
    Stale(i64),
    #[error("signature does not match")]
    BadSignature,
    #[error("the runtime could not compute the HMAC: {0}")]
    Crypto(String),
}

/// Checks a request's signature headers against its raw body at `now_ms`.
pub async fn verify<F: Front>(
    front: &F,
    secret: &str,
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    now_ms: i64,
) -> Result<(), VerifyError> {
    let signature = signature.ok_or(VerifyError::MissingHeader(SIGNATURE_HEADER))?;
    let timestamp = timestamp.ok_or(VerifyError::MissingHeader(TIMESTAMP_HEADER))?;
    let seconds: i64 = timestamp.trim().parse().map_err(|_| VerifyError::BadTimestamp)?;
    let skew = now_ms.div_euclid(1000) - seconds;
    if skew.abs() > MAX_SKEW_SECONDS {
        return Err(VerifyError::Stale(skew));
    }
    let mut base = Vec::with_capacity(body.len() + timestamp.len() + 4);
    base.extend_from_slice(b"v0:");
    base.extend_from_slice(timestamp.trim().as_bytes());
    base.push(b':');
    base.extend_from_slice(body);
    let mac = front.hmac_sha256(secret.as_bytes(), &base).await.map_err(VerifyError::Crypto)?;
    let expected = format!("v0={}", hex(&mac));
    if constant_eq(signature.trim().to_ascii_lowercase().as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err(VerifyError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    // Slack's documented example ("Verifying requests from Slack", the worked
    // example; tests/fixtures/real-world/SOURCES.md).
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: &str = "1531420618";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
    const AT: i64 = 1_531_420_618_000;

    fn check(sig: Option<&str>, ts: Option<&str>, body: &str, now: i64) -> Result<(), VerifyError> {
        block_on(verify(&FakeFront::default(), SECRET, sig, ts, body.as_bytes(), now))
    }

    #[test]
    fn slacks_documented_example_verifies() {
        assert_eq!(check(Some(SIGNATURE), Some(TS), BODY, AT), Ok(()));
        // Within the window either way.
        assert_eq!(check(Some(SIGNATURE), Some(TS), BODY, AT + 299_000), Ok(()));
        assert_eq!(check(Some(SIGNATURE), Some(TS), BODY, AT - 299_000), Ok(()));
    }

    #[test]
    fn tampering_staleness_and_missing_headers_are_refused() {
        assert_eq!(check(Some(SIGNATURE), Some(TS), &format!("{BODY}x"), AT), Err(VerifyError::BadSignature));
        assert_eq!(check(Some(SIGNATURE), Some("1531420619"), BODY, AT), Err(VerifyError::BadSignature));
        let flipped = SIGNATURE.replace("a2114d", "a2114e");
        assert_eq!(check(Some(&flipped), Some(TS), BODY, AT), Err(VerifyError::BadSignature));
        assert_eq!(check(Some("v0="), Some(TS), BODY, AT), Err(VerifyError::BadSignature));
        assert_eq!(check(Some(SIGNATURE), Some(TS), BODY, AT + 301_000), Err(VerifyError::Stale(301)));
        assert_eq!(check(Some(SIGNATURE), Some(TS), BODY, AT - 301_000), Err(VerifyError::Stale(-301)));
        assert_eq!(check(Some(SIGNATURE), Some("soon"), BODY, AT), Err(VerifyError::BadTimestamp));
        assert_eq!(check(None, Some(TS), BODY, AT), Err(VerifyError::MissingHeader(SIGNATURE_HEADER)));
        assert_eq!(check(Some(SIGNATURE), None, BODY, AT), Err(VerifyError::MissingHeader(TIMESTAMP_HEADER)));
    }
}
