//! Discord's request signature: Ed25519 over `X-Signature-Timestamp` + the
//! raw body, with the application's public key (hex, from the developer
//! portal). Pure, so it is tested natively; the route answers 401 on any
//! [`VerifyError`] before it parses anything.

use ed25519_dalek::{Signature, VerifyingKey};

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

/// The application's public key, parsed once per request.
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    pub fn from_hex(hex: &str) -> Result<Self, VerifyError> {
        let bytes: [u8; 32] = hex_array("DISCORD_PUBLIC_KEY", hex)?;
        VerifyingKey::from_bytes(&bytes).map(PublicKey).map_err(|_| VerifyError::BadKey)
    }

    /// Checks the two headers against the raw body.
    pub fn verify(&self, signature: Option<&str>, timestamp: Option<&str>, body: &[u8]) -> Result<(), VerifyError> {
        let signature = signature.ok_or(VerifyError::MissingHeader(SIGNATURE_HEADER))?;
        let timestamp = timestamp.ok_or(VerifyError::MissingHeader(TIMESTAMP_HEADER))?;
        let sig: [u8; 64] = hex_array(SIGNATURE_HEADER, signature)?;
        let mut message = Vec::with_capacity(timestamp.len() + body.len());
        message.extend_from_slice(timestamp.as_bytes());
        message.extend_from_slice(body);
        self.0.verify_strict(&message, &Signature::from_bytes(&sig)).map_err(|_| VerifyError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};
    use std::hash::{BuildHasher, Hasher};

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
        assert_eq!(key.verify(Some(&sig), Some(TS), BODY), Ok(()));
        // Upper-case hex is hex too.
        assert_eq!(key.verify(Some(&sig.to_uppercase()), Some(TS), BODY), Ok(()));
    }

    #[test]
    fn tampering_is_rejected() {
        let (sk, pk) = keypair();
        let key = PublicKey::from_hex(&pk).unwrap();
        let sig = sign(&sk, TS, BODY);
        let tampered_body = br#"{"type":2,"id":"1"}"#;
        assert_eq!(key.verify(Some(&sig), Some(TS), tampered_body), Err(VerifyError::BadSignature));
        assert_eq!(key.verify(Some(&sig), Some("1700000001"), BODY), Err(VerifyError::BadSignature));
        // Moving bytes between timestamp and body changes nothing in the message: still the same
        // bytes, so this must verify (it is what Discord signs), which shows the concatenation.
        assert_eq!(key.verify(Some(&sig), Some(""), &[TS.as_bytes(), BODY].concat()), Ok(()));
        // Someone else's key.
        let (other, _) = keypair();
        let forged = sign(&other, TS, BODY);
        assert_eq!(key.verify(Some(&forged), Some(TS), BODY), Err(VerifyError::BadSignature));
        // One flipped bit in the signature.
        let mut flipped = sig.clone().into_bytes();
        flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(key.verify(Some(&flipped), Some(TS), BODY), Err(VerifyError::BadSignature));
    }

    #[test]
    fn malformed_input_is_rejected() {
        let (sk, pk) = keypair();
        let key = PublicKey::from_hex(&pk).unwrap();
        let sig = sign(&sk, TS, BODY);
        assert_eq!(key.verify(None, Some(TS), BODY), Err(VerifyError::MissingHeader(SIGNATURE_HEADER)));
        assert_eq!(key.verify(Some(&sig), None, BODY), Err(VerifyError::MissingHeader(TIMESTAMP_HEADER)));
        let truncated = &sig[..126];
        assert_eq!(
            key.verify(Some(truncated), Some(TS), BODY),
            Err(VerifyError::WrongLength { what: SIGNATURE_HEADER, len: 63, expected: 64 })
        );
        assert_eq!(key.verify(Some(&sig[..127]), Some(TS), BODY), Err(VerifyError::NotHex(SIGNATURE_HEADER)));
        let not_hex = format!("zz{}", &sig[2..]);
        assert_eq!(key.verify(Some(&not_hex), Some(TS), BODY), Err(VerifyError::NotHex(SIGNATURE_HEADER)));
        assert_eq!(key.verify(Some("é"), Some(TS), BODY), Err(VerifyError::NotHex(SIGNATURE_HEADER)));
        assert_eq!(
            key.verify(Some(""), Some(TS), BODY),
            Err(VerifyError::WrongLength { what: SIGNATURE_HEADER, len: 0, expected: 64 })
        );
        // The configured key.
        assert!(matches!(PublicKey::from_hex("xyz"), Err(VerifyError::NotHex(_))));
        assert!(matches!(PublicKey::from_hex(&pk[..62]), Err(VerifyError::WrongLength { len: 31, .. })));
        assert!(matches!(PublicKey::from_hex(&format!("{pk}00")), Err(VerifyError::WrongLength { len: 33, .. })));
    }
}
