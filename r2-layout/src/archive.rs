//! Session archives: one [`Message`] per line, gzip-compressed
//! (`sessions/{sessionId}.jsonl.gz` and `-part{ts}.jsonl.gz`, seed 003).
//! A person reads one with `gunzip -c x.jsonl.gz | jq .`.

use crate::message::Message;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("archive is not valid gzip: {0}")]
    Gzip(String),
    #[error("archive line {line} is not a message: {why}")]
    Line { line: usize, why: String },
    #[error("archive is larger than {0} bytes uncompressed")]
    TooLarge(usize),
}

/// Largest archive decoded whole (guards a hostile or corrupt object).
pub const MAX_DECODED_BYTES: usize = 64 * 1024 * 1024;

/// The archive's lines before compression: one message per line. The
/// Worker compresses them with the runtime's own gzip (`CompressionStream`,
/// no deflate code in the upload); see the `gzip` feature for a crate's.
pub fn encode_lines(messages: &[Message]) -> Vec<u8> {
    let mut out = Vec::with_capacity(messages.len() * 64);
    for m in messages {
        // Serialising our own enum cannot fail.
        if let Ok(line) = serde_json::to_vec(m) {
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
    }
    out
}

/// Messages from an archive's uncompressed lines (blank lines skipped).
pub fn decode_lines(text: &[u8]) -> Result<Vec<Message>, ArchiveError> {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            hearth_json::from_slice(l.as_bytes()).map_err(|e| ArchiveError::Line { line: i + 1, why: e.to_string() })
        })
        .collect()
}

#[cfg(feature = "gzip")]
mod gz {
    use super::{decode_lines, encode_lines, ArchiveError, Message, MAX_DECODED_BYTES};
    use flate2::read::GzDecoder;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::{Read, Write};

    /// Gzip with a crate (native tools and test stores).
    pub fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = GzEncoder::new(Vec::with_capacity(data.len() / 4 + 64), Compression::new(6));
        // A failed write into a Vec cannot happen.
        let _ = gz.write_all(data);
        gz.finish().unwrap_or_default()
    }

    /// Gunzip with a crate, refusing more than `max_bytes` uncompressed.
    pub fn gunzip(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, ArchiveError> {
        let mut out = Vec::new();
        GzDecoder::new(data)
            .take(max_bytes as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| ArchiveError::Gzip(e.to_string()))?;
        if out.len() > max_bytes {
            return Err(ArchiveError::TooLarge(max_bytes));
        }
        Ok(out)
    }

    /// Encodes messages as gzipped JSONL.
    pub fn encode(messages: &[Message]) -> Vec<u8> {
        gzip(&encode_lines(messages))
    }

    /// Decodes a gzipped JSONL archive back into messages.
    pub fn decode(bytes: &[u8]) -> Result<Vec<Message>, ArchiveError> {
        decode_limited(bytes, MAX_DECODED_BYTES)
    }

    /// [`decode`] with a smaller cap on the uncompressed size.
    pub fn decode_limited(bytes: &[u8], max_bytes: usize) -> Result<Vec<Message>, ArchiveError> {
        decode_lines(&gunzip(bytes, max_bytes)?)
    }
}

#[cfg(feature = "gzip")]
pub use gz::{decode, decode_limited, encode, gunzip, gzip};

#[cfg(all(test, feature = "gzip"))]
mod tests {
    use super::*;
    use crate::message::{AssistantBlock, ResultBlock};
    use flate2::read::GzDecoder;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::{Read, Write};

    #[test]
    fn round_trip_and_line_shape() {
        let msgs = vec![
            Message::user_text("Hello", 1708300000000),
            Message::Assistant {
                content: vec![AssistantBlock::Text { text: "Hi there!".into() }],
                timestamp: 1708300001000,
                model: None,
                stop_reason: None,
                usage: None,
            },
            Message::ToolResult {
                tool_call_id: "call_abc".into(),
                tool_name: "Bash".into(),
                content: vec![ResultBlock::Text { text: "output".into() }],
                is_error: false,
                timestamp: 1708300002000,
            },
        ];
        let gz = encode(&msgs);
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
        assert_eq!(decode(&gz).unwrap(), msgs);
        let mut text = String::new();
        GzDecoder::new(&gz[..]).read_to_string(&mut text).unwrap();
        assert_eq!(text.lines().next().unwrap(), r#"{"role":"user","content":"Hello","timestamp":1708300000000}"#);
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn bad_archives_are_errors() {
        assert!(matches!(decode(b"not gzip"), Err(ArchiveError::Gzip(_))));
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(b"{\"role\":\"user\",\"content\":\"a\",\"timestamp\":1}\nnope\n").unwrap();
        let bytes = gz.finish().unwrap();
        assert!(matches!(decode(&bytes), Err(ArchiveError::Line { line: 2, .. })));
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
        let big = encode(&[Message::user_text("a".repeat(2_000), 1)]);
        assert!(matches!(decode_limited(&big, 1_000), Err(ArchiveError::TooLarge(1_000))));
        assert_eq!(decode_limited(&big, 4_000).unwrap().len(), 1);
    }
}
