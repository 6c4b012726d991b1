//! A MIME reader (RFC 5322, 2045–2047, 2231) for what the email channel
//! takes from a message: headers (unfolded; encoded words decoded where they
//! are text), the parts of a multipart tree, their transfer encodings
//! (base64, quoted-printable) and charsets ([`super::charsets`], through the
//! runtime's decoder: every function that makes text takes it).
//!
//! Hand-written instead of a crate for the upload's sake: `mail-parser` cost
//! ~58 KiB gzip, mostly a parser for every header of every mail RFC and
//! charset tables the agent never needs. Everything here is forgiving, as
//! mail readers must be: a malformed part is read as well as it can be,
//! never an error; only a message with no header at all is refused.

/// One part: its headers (name, unfolded value) and its body, still in its
/// transfer encoding.
pub struct Part<'a> {
    pub headers: Vec<(String, String)>,
    /// Beside each header: whether it held 8-bit bytes that are not UTF-8
    /// (kept as Latin-1 code points until [`Part::header_in`] reads them).
    pub raw8: Vec<bool>,
    pub body: &'a [u8],
}

use super::charsets::Decoder;

/// What stands in a header for an encoded word in a charset that cannot be
/// read.
pub const UNREADABLE: &str = "[unreadable text]";

/// What the model reads for a text part that cannot be read.
pub fn unreadable_part(why: &str) -> String {
    format!("[This part of the email could not be read: {why}. Its text is left out.]")
}

/// Multipart trees deeper than this are read as opaque attachments.
const MAX_DEPTH: usize = 16;

impl<'a> Part<'a> {
    /// Headers and body of `raw`; headers end at the first empty line, or at
    /// the first line that is not a header.
    pub fn parse(raw: &'a [u8]) -> Part<'a> {
        let mut headers: Vec<(String, String)> = Vec::new();
        let mut raw8: Vec<bool> = Vec::new();
        let mut pos = 0;
        while pos < raw.len() {
            let end = raw[pos..].iter().position(|&b| b == b'\n').map_or(raw.len(), |i| pos + i + 1);
            let line = trim_eol(&raw[pos..end]);
            if line.is_empty() {
                pos = end;
                break;
            }
            if matches!(line[0], b' ' | b'\t') {
                match (headers.last_mut(), raw8.last_mut()) {
                    // A folded line: the break goes, its whitespace stays.
                    (Some((_, v)), Some(r)) => {
                        v.push_str(&header_text(line));
                        *r |= std::str::from_utf8(line).is_err();
                    }
                    _ => break,
                }
            } else {
                let Some(colon) = line.iter().position(|&b| b == b':') else { break };
                // Old mailers put blanks before the colon (RFC 5322 §4.5.3).
                let name = line[..colon].trim_ascii_end();
                if name.is_empty() || !name.iter().all(|&b| b.is_ascii_graphic()) {
                    break;
                }
                let value = header_text(&line[colon + 1..]);
                headers.push((String::from_utf8_lossy(name).into_owned(), value));
                raw8.push(std::str::from_utf8(&line[colon + 1..]).is_err());
            }
            pos = end;
        }
        Part { headers, raw8, body: &raw[pos..] }
    }

    /// The first header of that name (any case), unfolded, trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
    }

    /// The first header of that name as text: 8-bit bytes that are not
    /// UTF-8 (old mailers put raw Shift_JIS or Latin-1 there) read in
    /// `charset` (the message's text's), or [`UNREADABLE`]; encoded words
    /// left for [`decode_words`].
    pub fn header_in(&self, name: &str, charset: &str, dec: Decoder) -> Option<String> {
        let i = self.headers.iter().position(|(n, _)| n.eq_ignore_ascii_case(name))?;
        let value = self.headers[i].1.trim();
        if !self.raw8.get(i).copied().unwrap_or(false) {
            return Some(value.to_owned());
        }
        Some(super::charsets::decode(charset, &word_bytes(value), dec).unwrap_or_else(|_| UNREADABLE.to_owned()))
    }

    /// `type/subtype`, lower case; `default` when there is none.
    pub fn mime_type(&self, default: &str) -> String {
        match self.header("Content-Type") {
            Some(ct) => {
                let t = ct.split([';', ' ', '\t']).next().unwrap_or("").to_ascii_lowercase();
                if t.contains('/') {
                    t
                } else {
                    default.to_owned()
                }
            }
            None => default.to_owned(),
        }
    }

    /// A parameter of a structured header (`Content-Type`'s `charset`,
    /// `Content-Disposition`'s `filename`), RFC 2231 continuations and
    /// charsets included; encoded words (which mailers use there too) decoded.
    pub fn param(&self, header: &str, name: &str, dec: Decoder) -> Option<String> {
        param(self.header(header)?, name, dec)
    }

    /// The body without its transfer encoding.
    pub fn decoded(&self) -> Vec<u8> {
        let cte = self.header("Content-Transfer-Encoding").unwrap_or("").to_ascii_lowercase();
        match cte.trim() {
            "base64" => base64(self.body),
            "quoted-printable" => quoted_printable(self.body, false),
            _ => self.body.to_vec(),
        }
    }

    /// The body as text, in its charset; a part that cannot be read is a
    /// sentence saying so (for the model: never mojibake).
    pub fn text(&self, dec: Decoder) -> String {
        self.text_or_why(dec).unwrap_or_else(|why| unreadable_part(&why))
    }

    /// The body as text, or why it cannot be read.
    pub fn text_or_why(&self, dec: Decoder) -> Result<String, String> {
        let charset = self.param("Content-Type", "charset", dec).unwrap_or_default();
        super::charsets::decode(&charset, &self.decoded(), dec)
    }

    /// Whether this part says it is an attachment, or has a file name.
    pub fn is_attachment(&self, dec: Decoder) -> bool {
        let disposition = self.header("Content-Disposition").unwrap_or("");
        disposition.split(';').next().is_some_and(|d| d.trim().eq_ignore_ascii_case("attachment"))
            || self.filename(dec).is_some()
    }

    pub fn filename(&self, dec: Decoder) -> Option<String> {
        self.param("Content-Disposition", "filename", dec).or_else(|| self.param("Content-Type", "name", dec))
    }

    /// The parts of a multipart body (empty for any other part).
    pub fn children(&self, dec: Decoder) -> Vec<Part<'a>> {
        let Some(boundary) = self.param("Content-Type", "boundary", dec) else { return vec![] };
        split_multipart(self.body, boundary.as_bytes()).into_iter().map(Part::parse).collect()
    }
}

/// The parts of a message that are not multipart, in order (a
/// `message/rfc822` part is one leaf: an attached email stays whole).
pub fn leaves<'a>(part: Part<'a>, out: &mut Vec<Part<'a>>, depth: usize, dec: Decoder) {
    let default = "text/plain";
    if part.mime_type(default).starts_with("multipart/") && depth < MAX_DEPTH {
        let digest = part.mime_type(default) == "multipart/digest";
        for mut child in part.children(dec) {
            if digest && child.header("Content-Type").is_none() {
                child.headers.push(("Content-Type".into(), "message/rfc822".into()));
            }
            leaves(child, out, depth + 1, dec);
        }
    } else {
        out.push(part);
    }
}

/// The parts between `--boundary` lines, without the line break that
/// belongs to the delimiter; the preamble and the epilogue are left out.
fn split_multipart<'a>(body: &'a [u8], boundary: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    let mut pos = 0;
    while pos < body.len() {
        let end = body[pos..].iter().position(|&b| b == b'\n').map_or(body.len(), |i| pos + i + 1);
        let line = trim_eol(&body[pos..end]);
        if line.len() >= 2 + boundary.len() && line.starts_with(b"--") && &line[2..2 + boundary.len()] == boundary {
            let rest = &line[2 + boundary.len()..];
            let closing = rest.starts_with(b"--");
            let rest = if closing { &rest[2..] } else { rest };
            if rest.iter().all(|b| b.is_ascii_whitespace()) {
                if let Some(s) = start {
                    // The line break before the delimiter is the delimiter's.
                    let mut e = pos;
                    if e > s && body[e - 1] == b'\n' {
                        e -= 1;
                        if e > s && body[e - 1] == b'\r' {
                            e -= 1;
                        }
                    }
                    parts.push(&body[s..e.max(s)]);
                }
                if closing {
                    return parts;
                }
                start = Some(end);
            }
        }
        pos = end;
    }
    // No closing delimiter: the last part runs to the end.
    if let Some(s) = start {
        parts.push(&body[s..]);
    }
    parts
}

/// A header line's bytes as text: UTF-8 when they are (as modern mailers
/// send them), else Latin-1, so that raw 8-bit bytes (which old mailers
/// put even inside encoded words) survive to be decoded.
fn header_text(line: &[u8]) -> String {
    match std::str::from_utf8(line) {
        Ok(s) => s.to_owned(),
        Err(_) => line.iter().map(|&b| b as char).collect(),
    }
}

/// An encoded word's text back as bytes (see [`header_text`]).
fn word_bytes(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match u8::try_from(c as u32) {
            Ok(b) => out.push(b),
            Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A structured header's parameter (see [`Part::param`]).
pub fn param(value: &str, name: &str, dec: Decoder) -> Option<String> {
    // (section number, value, whether it is RFC 2231 extended)
    let mut pieces: Vec<(u32, String, bool)> = Vec::new();
    for (key, v) in params(value) {
        let key = key.to_ascii_lowercase();
        let Some(rest) = key.strip_prefix(name) else { continue };
        let (rest, extended) = match rest.strip_suffix('*') {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let section = match rest.strip_prefix('*') {
            Some(n) => match n.parse::<u32>() {
                Ok(n) => n,
                Err(_) => continue,
            },
            None if rest.is_empty() => 0,
            None => continue,
        };
        pieces.push((section, v, extended));
    }
    if pieces.is_empty() {
        return None;
    }
    crate::order::sort_by_key(&mut pieces, |p| p.0);
    // `charset'language'%xx…` in the first extended section sets the charset.
    let mut charset = String::new();
    let mut bytes = Vec::new();
    for (i, (_, v, extended)) in pieces.iter().enumerate() {
        if !extended {
            bytes.extend_from_slice(v.as_bytes());
            continue;
        }
        let mut v = v.as_str();
        if i == 0 {
            let mut it = v.splitn(3, '\'');
            if let (Some(cs), Some(_lang), Some(rest)) = (it.next(), it.next(), it.next()) {
                charset = cs.to_owned();
                v = rest;
            }
        }
        bytes.extend(percent_decode(v.as_bytes()));
    }
    let text = super::charsets::decode(&charset, &bytes, dec).unwrap_or_else(|_| UNREADABLE.to_owned());
    Some(if pieces[0].2 { text } else { decode_words(&text, dec) })
}

/// `key=value` pairs after the value of a structured header (after its
/// first `;`, or its first blank where a mailer left the `;` out); quoted
/// values unquoted.
fn params(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let value = value.trim();
    let b = value.as_bytes();
    let mut i = b.iter().position(|&c| matches!(c, b';' | b' ' | b'\t')).map_or(b.len(), |p| p + 1);
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b';') {
            i += 1;
        }
        let k0 = i;
        while i < b.len() && !matches!(b[i], b'=' | b';') {
            i += 1;
        }
        let key = value[k0..i].trim().to_owned();
        if i >= b.len() || b[i] == b';' {
            continue;
        }
        i += 1; // '='
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut v = String::new();
        if i < b.len() && b[i] == b'"' {
            i += 1;
            let mut s = Vec::new();
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                s.push(b[i]);
                i += 1;
            }
            i += 1;
            v.push_str(&String::from_utf8_lossy(&s));
        } else {
            let v0 = i;
            while i < b.len() && b[i] != b';' {
                i += 1;
            }
            v.push_str(value[v0..i].trim());
        }
        if !key.is_empty() {
            out.push((key, v));
        }
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn percent_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' && i + 2 < s.len() {
            if let (Some(h), Some(l)) = (hex(s[i + 1]), hex(s[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// Quoted-printable (RFC 2045 §6.7): `=XX` is a byte, `=` at a line's end a
/// soft break; in encoded words (`q`), `_` is a space. A broken escape stays
/// as it is.
pub fn quoted_printable(s: &[u8], q: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'=' => {
                if let (Some(h), Some(l)) = (s.get(i + 1).and_then(|&b| hex(b)), s.get(i + 2).and_then(|&b| hex(b))) {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                // A soft line break, possibly with trailing blanks before it.
                let mut j = i + 1;
                while j < s.len() && matches!(s[j], b' ' | b'\t') {
                    j += 1;
                }
                if s.get(j) == Some(&b'\r') {
                    j += 1;
                }
                if s.get(j) == Some(&b'\n') {
                    i = j + 1;
                    continue;
                }
                if j >= s.len() {
                    break;
                }
                out.push(b'=');
                i += 1;
            }
            b'_' if q => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Base64, forgiving: line breaks and other characters outside the alphabet
/// are skipped, padding ends it.
pub fn base64(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in s {
        if c == b'=' {
            break;
        }
        let Some(v) = super::b64_value(c) else { continue };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// Header text with its encoded words (RFC 2047, `=?charset?Q|B?…?=`)
/// decoded; the blanks between two encoded words go, as the RFC says.
pub fn decode_words(s: &str, dec: Decoder) -> String {
    let mut out = String::new();
    let mut rest = s;
    let mut after_word = false;
    while let Some(start) = rest.find("=?") {
        let (before, from) = rest.split_at(start);
        match encoded_word(from, dec) {
            Some((text, len)) => {
                if !(after_word && before.chars().all(char::is_whitespace)) {
                    out.push_str(before);
                }
                out.push_str(&text);
                rest = &from[len..];
                after_word = true;
            }
            None => {
                out.push_str(before);
                out.push_str("=?");
                rest = &from[2..];
                after_word = false;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One encoded word at the start of `s`: its text and its length.
fn encoded_word(s: &str, dec: Decoder) -> Option<(String, usize)> {
    let body = s.strip_prefix("=?")?;
    let q1 = body.find('?')?;
    let charset = body[..q1].split('*').next().unwrap_or("");
    let enc = body.get(q1 + 1..q1 + 2)?;
    if body.get(q1 + 2..q1 + 3) != Some("?") {
        return None;
    }
    let text_start = q1 + 3;
    let text_len = body[text_start..].find("?=")?;
    let text = &body[text_start..text_start + text_len];
    if text.contains(char::is_whitespace) {
        return None;
    }
    let bytes = match enc {
        "Q" | "q" => quoted_printable(&word_bytes(text), true),
        "B" | "b" => base64(text.as_bytes()),
        _ => return None,
    };
    let text = super::charsets::decode(charset, &bytes, dec).unwrap_or_else(|_| UNREADABLE.to_owned());
    Some((text, 2 + text_start + text_len + 2))
}

/// The mailboxes of an address list (`To`, `Cc`, `From`): address and
/// display name. Groups (`team: a@x, b@y;`) give their members; a mailbox
/// without an `@` is left out.
pub fn addresses(value: &str, dec: Decoder) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for item in split_list(value) {
        // A group's name goes; its members stay.
        let item = match item.find(':') {
            Some(c) if !item[..c].contains(['<', '"', '@']) => &item[c + 1..],
            _ => item.as_str(),
        };
        let item = item.trim().trim_end_matches(';').trim();
        let (addr, name) = match (item.rfind('<'), item.rfind('>')) {
            (Some(l), Some(r)) if l < r => (item[l + 1..r].trim().to_owned(), Some(display_name(&item[..l], dec))),
            _ => (strip_comments(item).trim().to_owned(), comment(item, dec)),
        };
        if addr.contains('@') {
            out.push((addr, name.filter(|n| !n.trim().is_empty())));
        }
    }
    out
}

/// Splits at commas outside quotes, angle brackets and comments.
fn split_list(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut angle, mut paren, mut escaped) = (false, false, 0u32, false);
    for c in value.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if quoted {
            quoted = c != '"';
        } else {
            match c {
                '"' => quoted = true,
                '<' => angle = true,
                '>' => angle = false,
                '(' => paren += 1,
                ')' => paren = paren.saturating_sub(1),
                ',' if !angle && paren == 0 => {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

/// A display name: unquoted, comments out, encoded words decoded.
fn display_name(s: &str, dec: Decoder) -> String {
    let s = strip_comments(s);
    let s = s.trim();
    let s = match s.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => s.to_owned(),
    };
    decode_words(&s, dec).trim().to_owned()
}

/// The text of the first comment, `a@b (Name)`'s name.
fn comment(s: &str, dec: Decoder) -> Option<String> {
    let l = s.find('(')?;
    let r = s[l..].find(')')? + l;
    Some(decode_words(s[l + 1..r].trim(), dec))
}

fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let (mut depth, mut quoted) = (0u32, false);
    for c in s.chars() {
        match c {
            '"' if depth == 0 => {
                quoted = !quoted;
                out.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Message ids of `In-Reply-To` and `References`, without angle brackets.
pub fn message_ids(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    if value.contains('<') {
        let mut rest = value;
        while let Some(l) = rest.find('<') {
            let Some(r) = rest[l..].find('>') else { break };
            let id = rest[l + 1..l + r].trim();
            if !id.is_empty() {
                out.push(id.to_owned());
            }
            rest = &rest[l + r + 1..];
        }
    } else {
        out.extend(value.split_whitespace().map(str::to_owned));
    }
    out
}
