//! Meta's two checks (developers.facebook.com/docs/graph-api/webhooks):
//! subscribing, Meta sends `GET ?hub.mode=subscribe&hub.verify_token=…
//! &hub.challenge=…` and wants the challenge back when the token is the one
//! set in the app dashboard (`WHATSAPP_VERIFY_TOKEN`); every notification is
//! a POST signed with `X-Hub-Signature-256: sha256={hex HMAC-SHA256 of the
//! raw body, keyed with the app secret}` (`WHATSAPP_APP_SECRET`). Both are
//! compared in constant time; the HMAC is the runtime's WebCrypto.

use crate::channels::shared::web::{constant_eq, hex};
use crate::ports::Front;

pub const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing {SIGNATURE_HEADER} header")]
    Missing,
    #[error("{SIGNATURE_HEADER} is not sha256=<hex>")]
    Malformed,
    #[error("signature does not match")]
    BadSignature,
    #[error("the runtime could not compute the HMAC: {0}")]
    Crypto(String),
}

/// The challenge to answer a subscription request with, when it is one
/// with the right token.
pub fn subscription<'a>(
    mode: Option<&str>,
    token: Option<&str>,
    challenge: Option<&'a str>,
    expected: &str,
) -> Option<&'a str> {
    let token_ok = constant_eq(token.unwrap_or("").as_bytes(), expected.as_bytes());
    (mode == Some("subscribe") && token_ok).then_some(challenge?).filter(|c| !c.is_empty())
}

/// Checks a notification's signature against its raw body.
pub async fn verify<F: Front>(
    front: &F,
    app_secret: &str,
    signature: Option<&str>,
    body: &[u8],
) -> Result<(), VerifyError> {
    let signature = signature.ok_or(VerifyError::Missing)?;
    let given = signature.trim().strip_prefix("sha256=").ok_or(VerifyError::Malformed)?;
    let mac = front.hmac_sha256(app_secret.as_bytes(), body).await.map_err(VerifyError::Crypto)?;
    if constant_eq(given.to_ascii_lowercase().as_bytes(), hex(&mac).as_bytes()) {
        Ok(())
    } else {
        Err(VerifyError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{hmac_sha256, FakeFront};
    use futures::executor::block_on;

    #[test]
    fn the_subscription_check_wants_the_right_token() {
        assert_eq!(subscription(Some("subscribe"), Some("t0k"), Some("1158201444"), "t0k"), Some("1158201444"));
        assert_eq!(subscription(Some("subscribe"), Some("wrong"), Some("1158201444"), "t0k"), None);
        assert_eq!(subscription(Some("subscribe"), None, Some("1158201444"), "t0k"), None);
        assert_eq!(subscription(Some("unsubscribe"), Some("t0k"), Some("1"), "t0k"), None);
        assert_eq!(subscription(Some("subscribe"), Some("t0k"), None, "t0k"), None);
    }

    #[test]
    fn a_notification_is_signed_with_the_app_secret() {
        let body = br#"{"object":"whatsapp_business_account","entry":[]}"#;
        let good = format!("sha256={}", hex(&hmac_sha256(b"app-secret", body)));
        let f = FakeFront::default();
        assert_eq!(block_on(verify(&f, "app-secret", Some(&good), body)), Ok(()));
        assert_eq!(
            block_on(verify(&f, "app-secret", Some(&good.to_uppercase().replace("SHA256", "sha256")), body)),
            Ok(())
        );
        assert_eq!(block_on(verify(&f, "other-secret", Some(&good), body)), Err(VerifyError::BadSignature));
        assert_eq!(block_on(verify(&f, "app-secret", Some(&good), b"{}")), Err(VerifyError::BadSignature));
        assert_eq!(block_on(verify(&f, "app-secret", Some("sha1=abc"), body)), Err(VerifyError::Malformed));
        assert_eq!(block_on(verify(&f, "app-secret", None, body)), Err(VerifyError::Missing));
    }
}
