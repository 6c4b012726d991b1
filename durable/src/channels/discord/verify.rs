//! Discord's request signature: Ed25519 over `X-Signature-Timestamp` + the
//! raw body, with the application's public key (hex, from the developer
//! portal). The route answers 401 on any [`VerifyError`] before it parses
//! anything (500 when the configured key itself is unusable).
//!
//! The headers, hex and message are handled here; the curve check itself is
//! the runtime's WebCrypto ([`Front::ed25519_verify`]: no Ed25519 code in the
//! upload). Natively the test front checks with `ed25519-dalek`, so the tests
//! below check this module's logic against a real Ed25519 and the e2e tests
//! (tests/discord.test.mjs, real key pairs) check the WebCrypto path.

use crate::ports::Front;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing {0} header")]
    MissingHeader(&'static str),
    #[error("{0} is not hex")]
    NotHex(&'static str),
    #[error("{what} has {len} bytes, expected {expected}")]
    WrongLength { what: &'static str, len: usize, expected: usize },
    #[error("not a valid Ed25519 public key")]
    BadKey,
    #[error("signature does not match")]
    BadSignature,
}

pub const SIGNATURE_HEADER: &str = "X-Signature-Ed25519";
pub const TIMESTAMP_HEADER: &str = "X-Signature-Timestamp";

/// Decodes hex (either case) into exactly `N` bytes.
fn hex_array<const N: usize>(what: &'static str, s: &str) -> Result<[u8; N], VerifyError> {
    let s = s.trim().as_bytes();
    if !s.len().is_multiple_of(2) {
        return Err(VerifyError::NotHex(what));
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut bytes = Vec::with_capacity(s.len() / 2);
    for pair in s.chunks(2) {
        match (nib(pair[0]), nib(pair[1])) {
            (Some(h), Some(l)) => bytes.push(h << 4 | l),
            _ => return Err(VerifyError::NotHex(what)),
        }
    }
    let len = bytes.len();
    bytes.try_into().map_err(|_| VerifyError::WrongLength { what, len, expected: N })
}

/// The application's public key (its 32 raw bytes), parsed once per request.
/// Whether they are a point on the curve shows at [`PublicKey::verify`]
/// ([`VerifyError::BadKey`]).
pub struct PublicKey([u8; 32]);

impl PublicKey {
    pub fn from_hex(hex: &str) -> Result<Self, VerifyError> {
        hex_array("DISCORD_PUBLIC_KEY", hex).map(PublicKey)
    }

    /// Checks the two headers against the raw body.
    pub async fn verify<F: Front>(
        &self,
        front: &F,
        signature: Option<&str>,
        timestamp: Option<&str>,
        body: &[u8],
    ) -> Result<(), VerifyError> {
        let signature = signature.ok_or(VerifyError::MissingHeader(SIGNATURE_HEADER))?;
        let timestamp = timestamp.ok_or(VerifyError::MissingHeader(TIMESTAMP_HEADER))?;
        let sig: [u8; 64] = hex_array(SIGNATURE_HEADER, signature)?;
        let mut message = Vec::with_capacity(timestamp.len() + body.len());
        message.extend_from_slice(timestamp.as_bytes());
        message.extend_from_slice(body);
        match front.ed25519_verify(&self.0, &sig, &message).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(VerifyError::BadSignature),
            Err(_) => Err(VerifyError::BadKey),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};
    use std::hash::{BuildHasher, Hasher};

    /// `PublicKey::verify`, awaited (natively it never waits on anything).
    trait Check {
        fn check(&self, signature: Option<&str>, timestamp: Option<&str>, body: &[u8]) -> Result<(), VerifyError>;
    }
    impl Check for PublicKey {
        fn check(&self, signature: Option<&str>, timestamp: Option<&str>, body: &[u8]) -> Result<(), VerifyError> {
            futures::executor::block_on(self.verify(&crate::testing::FakeFront::default(), signature, timestamp, body))
        }
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// A fresh key pair for each test, seeded from the process's random hasher keys.
    fn keypair() -> (SigningKey, String) {
        let mut seed = [0u8; 32];
        for chunk in seed.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0x6865_6172_7468);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
        let sk = SigningKey::from_bytes(&seed);
        let pk = hex(sk.verifying_key().as_bytes());
        (sk, pk)
    }

    fn sign(sk: &SigningKey, ts: &str, body: &[u8]) -> String {
        let mut m = ts.as_bytes().to_vec();
        m.extend_from_slice(body);
        hex(&sk.sign(&m).to_bytes())
    }

    const BODY: &[u8] = br#"{"type":1,"id":"1"}"#;
    const TS: &str = "1700000000";

    #[test]
    fn a_good_signature_verifies() {
        let (sk, pk) = keypair();
        let key = PublicKey::from_hex(&pk).unwrap();
        let sig = sign(&sk, TS, BODY);
        assert_eq!(key.check(Some(&sig), Some(TS), BODY), Ok(()));
        // Upper-case hex is hex too.
        assert_eq!(key.check(Some(&sig.to_uppercase()), Some(TS), BODY), Ok(()));
    }

    #[test]
    fn tampering_is_rejected() {
        let (sk, pk) = keypair();
        let key = PublicKey::from_hex(&pk).unwrap();
        let sig = sign(&sk, TS, BODY);
        let tampered_body = br#"{"type":2,"id":"1"}"#;
        assert_eq!(key.check(Some(&sig), Some(TS), tampered_body), Err(VerifyError::BadSignature));
        assert_eq!(key.check(Some(&sig), Some("1700000001"), BODY), Err(VerifyError::BadSignature));
        // Moving bytes between timestamp and body changes nothing in the message: still the same
        // bytes, so this must verify (it is what Discord signs), which shows the concatenation.
        assert_eq!(key.check(Some(&sig), Some(""), &[TS.as_bytes(), BODY].concat()), Ok(()));
        // Someone else's key.
        let (other, _) = keypair();
        let forged = sign(&other, TS, BODY);
        assert_eq!(key.check(Some(&forged), Some(TS), BODY), Err(VerifyError::BadSignature));
        // One flipped bit in the signature.
        let mut flipped = sig.clone().into_bytes();
        flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(key.check(Some(&flipped), Some(TS), BODY), Err(VerifyError::BadSignature));
    }

    #[test]
    fn malformed_input_is_rejected() {
        let (sk, pk) = keypair();
        let key = PublicKey::from_hex(&pk).unwrap();
        let sig = sign(&sk, TS, BODY);
        assert_eq!(key.check(None, Some(TS), BODY), Err(VerifyError::MissingHeader(SIGNATURE_HEADER)));
        assert_eq!(key.check(Some(&sig), None, BODY), Err(VerifyError::MissingHeader(TIMESTAMP_HEADER)));
        let truncated = &sig[..126];
        assert_eq!(
            key.check(Some(truncated), Some(TS), BODY),
            Err(VerifyError::WrongLength { what: SIGNATURE_HEADER, len: 63, expected: 64 })
        );
        assert_eq!(key.check(Some(&sig[..127]), Some(TS), BODY), Err(VerifyError::NotHex(SIGNATURE_HEADER)));
        let not_hex = format!("zz{}", &sig[2..]);
        assert_eq!(key.check(Some(&not_hex), Some(TS), BODY), Err(VerifyError::NotHex(SIGNATURE_HEADER)));
        assert_eq!(key.check(Some("é"), Some(TS), BODY), Err(VerifyError::NotHex(SIGNATURE_HEADER)));
        assert_eq!(
            key.check(Some(""), Some(TS), BODY),
            Err(VerifyError::WrongLength { what: SIGNATURE_HEADER, len: 0, expected: 64 })
        );
        // 32 bytes that are not a point on the curve: the key is at fault, not the request.
        let not_a_point = format!("02{}", "00".repeat(31));
        let not_a_point = PublicKey::from_hex(&not_a_point).unwrap();
        assert_eq!(not_a_point.check(Some(&sig), Some(TS), BODY), Err(VerifyError::BadKey));
        // The configured key.
        assert!(matches!(PublicKey::from_hex("xyz"), Err(VerifyError::NotHex(_))));
        assert!(matches!(PublicKey::from_hex(&pk[..62]), Err(VerifyError::WrongLength { len: 31, .. })));
        assert!(matches!(PublicKey::from_hex(&format!("{pk}00")), Err(VerifyError::WrongLength { len: 33, .. })));
    }
}
