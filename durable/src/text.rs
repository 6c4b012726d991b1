//! Text helpers every floor uses: bounded cuts, base64, and the notes that
//! stand in for media a model cannot take.
//!
//! They live on the ground floor because the LLM encoders, the tools, the
//! memory and the media all need them; none of those should import another
//! feature to get a string cut.

use base64::Engine as _;
use r2_layout::UserBlock;
use sha2::{Digest, Sha256};

/// Appended where [`truncate_chars`] cut a text.
pub const TRUNCATED_MARKER: &str = "\n[truncated]";

/// How the runtime's notes to the model start and end, inside a user message: the
/// time (`prompt`), recalled memory (`memory::recall`). Nobody said them: listings
/// and conversation memory leave them out ([`is_reminder`]).
pub const REMINDER_OPEN: &str = "<system-reminder>";
pub const REMINDER_CLOSE: &str = "</system-reminder>";

/// Whether a user message's text block is one of the runtime's reminders.
pub fn is_reminder(text: &str) -> bool {
    text.trim_start().starts_with(REMINDER_OPEN)
}

/// `body` as a reminder block.
pub fn reminder(body: &str) -> String {
    format!("{REMINDER_OPEN}{body}{REMINDER_CLOSE}")
}

/// How a transcript block starts (it follows the audio's reference block).
pub const TRANSCRIPT_PREFIX: &str = "[Transcript of the ";

/// Cuts `text` to at most `max` characters (never inside a UTF-8 sequence),
/// marking the cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(TRUNCATED_MARKER.chars().count());
    let end = text.char_indices().nth(keep).map(|(i, _)| i).unwrap_or(text.len());
    let mut s = text[..end].to_owned();
    s.push_str(TRUNCATED_MARKER);
    s
}

/// The end of `text` within `limit` UTF-16 units (what Telegram and Discord
/// count), starting with `…` when cut: a preview of a long answer shows
/// what is being written now.
pub fn tail_utf16(text: &str, limit: usize) -> String {
    let text = text.trim();
    if text.encode_utf16().count() <= limit {
        return text.to_owned();
    }
    let mut units = 1; // the ellipsis
    let mut start = text.len();
    for (i, c) in text.char_indices().rev() {
        units += c.len_utf16();
        if units > limit {
            break;
        }
        start = i;
    }
    format!("…{}", &text[start..])
}

/// Standard base64 with padding (what both providers take for media).
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A text stand-in for media the model cannot take. When a transcript of it
/// comes next (voice, audio) the note says so instead of "not available".
pub fn file_note(mime: &str, filename: Option<&str>, transcript_follows: bool) -> String {
    let what = match filename {
        Some(f) if !f.is_empty() => format!("attached file {f:?} ({mime})"),
        _ => format!("attached file ({mime})"),
    };
    if transcript_follows {
        format!("[{what}; its transcript follows]")
    } else {
        format!("[{what}; its content is not available to you]")
    }
}

/// Whether block `i` of a user message is followed by its transcript.
pub fn transcript_follows(blocks: &[UserBlock], i: usize) -> bool {
    matches!(blocks.get(i + 1), Some(UserBlock::Text { text }) if text.starts_with(TRANSCRIPT_PREFIX))
}

/// Unicode NFC. In the Worker this is the runtime's own `String.prototype
/// .normalize` (ICU, already in every isolate); natively it is
/// `icu_normalizer`, the same algorithm: tests check the Rust build, and the
/// upload does not carry a second copy of the normalisation tables (~22 KiB
/// gzip).
pub fn nfc(s: &str) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        String::from(js_sys::JsString::from(s).normalize("NFC"))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        icu_normalizer::ComposingNormalizerBorrowed::new_nfc().normalize(s).into_owned()
    }
}

/// Lowercase hex SHA-256 of `bytes`: how pins and the workspace history
/// name contents.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
    out
}

/// Splits `text` into pieces of at most `limit` UTF-16 units (what the chat
/// platforms count), preferring paragraph breaks, then line breaks, then
/// spaces; never inside a character. Each channel sends its replies cut so.
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest = text.trim();
    while rest.encode_utf16().count() > limit {
        // Byte index of the furthest char boundary within the limit.
        let mut units = 0;
        let mut hard = 0;
        for (i, c) in rest.char_indices() {
            units += c.len_utf16();
            if units > limit {
                break;
            }
            hard = i + c.len_utf8();
        }
        let window = &rest[..hard];
        let cut =
            ["\n\n", "\n", " "].iter().find_map(|sep| window.rfind(sep).filter(|&i| i > hard / 3)).unwrap_or(hard);
        let (head, tail) = rest.split_at(cut.max(1).min(rest.len()));
        if !head.trim().is_empty() {
            chunks.push(head.trim_end().to_owned());
        }
        rest = tail.trim_start();
    }
    if !rest.is_empty() {
        chunks.push(rest.to_owned());
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_keeps_the_end_within_the_limit() {
        assert_eq!(tail_utf16(" short ", 10), "short");
        let t = tail_utf16("one two three 😀", 8);
        assert_eq!(t, "…hree 😀");
        assert!(t.encode_utf16().count() <= 8);
    }
    #[test]
    fn messages_split_on_boundaries_within_the_limit() {
        let utf16_len = |s: &str| s.encode_utf16().count();
        let para = "word ".repeat(300); // 1500 chars
        let text = format!("{para}\n\n{para}\n\n{para}");
        let chunks = split_message(&text, 4096);
        assert_eq!(chunks.len(), 2);
        assert!(chunks.iter().all(|c| utf16_len(c) <= 4096));
        assert_eq!(chunks.join(" ").split_whitespace().count(), 900);
        let long = "x".repeat(10_000);
        let chunks = split_message(&long, 4096);
        assert_eq!(chunks.iter().map(|c| c.len()).collect::<Vec<_>>(), [4096, 4096, 1808]);
        let emoji = "😀".repeat(3000); // 2 UTF-16 units each
        assert!(split_message(&emoji, 4096).iter().all(|c| utf16_len(c) <= 4096));
        assert!(split_message("   ", 4096).is_empty());
    }
}
