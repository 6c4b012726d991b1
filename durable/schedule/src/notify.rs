//! Notification dedupe: the same text is not sent to the owner twice within a window.
//!
//! Texts are compared by a hash of their normalized form (trimmed, runs of whitespace collapsed
//! to one space; case and punctuation kept, since they can change meaning). The hash is
//! FNV-1a 64: stable across builds and platforms (unlike `std`'s `DefaultHasher`), a few lines,
//! and collisions are harmless enough here (at worst one notification is held back). Store
//! [`SentNotification`]s (e.g. the last day's worth) and ask [`is_duplicate`] before sending.

use serde::Serialize;

/// Default dedupe window: 6 hours.
pub const DEFAULT_DEDUPE_WINDOW_MS: i64 = 6 * 60 * 60 * 1000;

/// A notification that was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SentNotification {
    /// [`notification_hash`] of the text.
    pub hash: u64,
    /// When it was sent, Unix ms.
    pub sent_at_ms: i64,
}

/// Trims and collapses every run of whitespace (any Unicode whitespace) to one space.
pub fn normalize_text(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// FNV-1a 64 of the normalized text.
pub fn notification_hash(text: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut first = true;
    for word in text.split_whitespace() {
        let sep: &[u8] = if first { b"" } else { b" " };
        first = false;
        for &b in sep.iter().chain(word.as_bytes()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

/// True when `text` was already sent less than `window_ms` before `now_ms` (a record dated
/// after `now_ms`, from clock skew, counts as recent).
pub fn is_duplicate(text: &str, now_ms: i64, sent: &[SentNotification], window_ms: i64) -> bool {
    let hash = notification_hash(text);
    sent.iter().any(|s| s.hash == hash && now_ms.saturating_sub(s.sent_at_ms) < window_ms)
}

/// Drops records too old to matter for `window_ms` (keeps the list small in storage).
pub fn prune_sent(sent: &mut Vec<SentNotification>, now_ms: i64, window_ms: i64) {
    sent.retain(|s| now_ms.saturating_sub(s.sent_at_ms) < window_ms);
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    #[test]
    fn fnv1a_reference_values() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(notification_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(notification_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(notification_hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn hash_is_over_normalized_text() {
        assert_eq!(normalize_text("  Rain \n\n tomorrow\t at  9 "), "Rain tomorrow at 9");
        assert_eq!(notification_hash("  Rain \n\n tomorrow\t at  9 "), notification_hash("Rain tomorrow at 9"));
        assert_ne!(notification_hash("Rain tomorrow"), notification_hash("rain tomorrow"));
        assert_ne!(notification_hash("ab"), notification_hash("a b"));
    }

    #[test]
    fn duplicate_window() {
        let t0 = 1_780_000_000_000;
        let sent = vec![SentNotification { hash: notification_hash("Server down"), sent_at_ms: t0 }];
        let w = DEFAULT_DEDUPE_WINDOW_MS;
        assert!(is_duplicate("Server down", t0, &sent, w));
        assert!(is_duplicate(" Server   down\n", t0 + 5 * H, &sent, w));
        assert!(is_duplicate("Server down", t0 + 6 * H - 1, &sent, w));
        assert!(!is_duplicate("Server down", t0 + 6 * H, &sent, w));
        assert!(!is_duplicate("Server up", t0 + H, &sent, w));
        assert!(is_duplicate("Server down", t0 - H, &sent, w)); // skewed clock
        assert!(!is_duplicate("Server down", t0, &[], w));
        assert!(!is_duplicate("Server down", i64::MAX, &sent, w));
        assert!(is_duplicate("Server down", i64::MIN, &sent, w));
    }

    #[test]
    fn prune() {
        let mut sent = vec![
            SentNotification { hash: 1, sent_at_ms: 0 },
            SentNotification { hash: 2, sent_at_ms: 5 * H },
            SentNotification { hash: 3, sent_at_ms: 7 * H },
        ];
        prune_sent(&mut sent, 7 * H, DEFAULT_DEDUPE_WINDOW_MS);
        assert_eq!(sent.iter().map(|s| s.hash).collect::<Vec<_>>(), [2, 3]);
    }
}
