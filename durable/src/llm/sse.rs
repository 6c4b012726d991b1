//! Server-sent events (`text/event-stream`), read as the bytes arrive.
//!
//! The providers stream their answers as SSE (Anthropic: `event:` + `data:`
//! pairs; OpenAI: bare `data:` lines ending in `data: [DONE]`). Pieces of a
//! response arrive cut anywhere: in the middle of a line, between `\r` and
//! `\n`, inside a multi-byte character. The parser keeps the unfinished line
//! and hands out whole events only, following the WHATWG rules: lines end in
//! CRLF, LF or CR; `:` starts a comment; `data` lines of one event are joined
//! with `\n`; an event ends at a blank line, and one cut off by the end of
//! the stream is dropped.

/// One event. `event` is `message` when the stream names none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// A line longer than this is refused: no provider sends one, and a body
/// that never ends a line must not grow memory without bound.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event stream: {0}")]
pub struct SseError(pub String);

/// The incremental parser: [`SseParser::push`] the pieces in order.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The unfinished line.
    line: Vec<u8>,
    /// The last piece ended in `\r`: a `\n` opening the next one belongs to it.
    after_cr: bool,
    /// The byte-order mark is skipped once, at the very start.
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Reads one piece; whole events are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut bytes = bytes;
        if !self.started && !bytes.is_empty() {
            self.started = true;
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(bytes);
        }
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n".as_slice()).unwrap_or(bytes);
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' | b'\r' => {
                    let end = i;
                    if bytes[i] == b'\r' {
                        match bytes.get(i + 1) {
                            Some(b'\n') => i += 1,
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    if self.line.is_empty() {
                        self.take_line(&bytes[start..end], out);
                    } else {
                        self.line.extend_from_slice(&bytes[start..end]);
                        let line = std::mem::take(&mut self.line);
                        self.take_line(&line, out);
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        if start < bytes.len() {
            if self.line.len() + bytes.len() - start > MAX_LINE_BYTES {
                return Err(SseError(format!("a line longer than {MAX_LINE_BYTES} bytes")));
            }
            self.line.extend_from_slice(&bytes[start..]);
        }
        Ok(())
    }

    /// The end of the stream: a last event not followed by its blank line is
    /// handed out too (SDK fixtures and some servers end that way; a cut
    /// event then fails to parse as JSON, which the caller treats as a cut
    /// stream).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.take_line(&line, out);
        }
        self.take_line(&[], out);
    }

    /// One line: a field, a comment, or the blank line that ends an event.
    fn take_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                let event = if self.event.is_empty() { "message".to_owned() } else { std::mem::take(&mut self.event) };
                out.push(SseEvent { event, data: std::mem::take(&mut self.data) });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ".as_slice()).unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            // `id` and `retry` matter to reconnecting browsers, not to us.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for piece in pieces {
            p.push(piece, &mut out).unwrap();
        }
        p.finish(&mut out);
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into() }
    }

    #[test]
    fn events_cut_anywhere_come_out_whole() {
        let body =
            "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n";
        let want = vec![ev("message_start", "{\"a\":1}"), ev("ping", "{\"type\": \"ping\"}")];
        for cut in 0..body.len() {
            let (a, b) = body.as_bytes().split_at(cut);
            assert_eq!(all(&[a, b]), want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.as_bytes().chunks(1).collect();
        assert_eq!(all(&bytes), want, "byte by byte");
    }

    #[test]
    fn line_endings_multiline_data_and_a_cut_character() {
        // CRLF, a lone CR, a CR at the end of a piece, "data" without a colon.
        assert_eq!(all(&[b"data: a\r", b"\ndata: b\r\r"]), vec![ev("message", "a\nb")]);
        assert_eq!(all(&[b"data\n\n"]), vec![ev("message", "")]);
        assert_eq!(all(&[b"\xEF\xBB\xBFdata:x\n\n"]), vec![ev("message", "x")], "BOM and no space after the colon");
        let text = "data: {\"text\":\"héllo ✓\"}\n\n".as_bytes();
        let at = text.iter().position(|&b| b == 0xC3).unwrap() + 1;
        assert_eq!(all(&[&text[..at], &text[at..]]), vec![ev("message", "{\"text\":\"héllo ✓\"}")]);
        // An event the stream cut off before its blank line waits for the end.
        let mut p = SseParser::default();
        let mut out = Vec::new();
        p.push(b"data: [DONE]\n\ndata: {\"partial", &mut out).unwrap();
        assert_eq!(out, vec![ev("message", "[DONE]")]);
        p.finish(&mut out);
        assert_eq!(out.last(), Some(&ev("message", "{\"partial")));
    }

    #[test]
    fn an_endless_line_is_an_error_not_a_memory_leak() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        let piece = vec![b'x'; 1024 * 1024];
        let mut failed = false;
        for _ in 0..9 {
            if p.push(&piece, &mut out).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }

    #[test]
    fn real_transcripts_parse() {
        let dir = format!("{}/../tests/fixtures/real-world/llm", env!("CARGO_MANIFEST_DIR"));
        let read = |f: &str| std::fs::read(format!("{dir}/{f}")).unwrap();
        let anthropic = all(&[&read("anthropic/stream-tool-use.sse")]);
        assert_eq!(anthropic.first().map(|e| e.event.as_str()), Some("message_start"));
        assert_eq!(anthropic.last().map(|e| e.event.as_str()), Some("message_stop"));
        let openai = all(&[&read("openai/stream-text-include-usage.sse")]);
        assert_eq!(openai.last().map(|e| e.data.as_str()), Some("[DONE]"));
        assert!(openai.iter().all(|e| e.event == "message"));
    }
}
