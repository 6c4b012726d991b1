//! Text in the charsets mail arrives in, made Unicode. The decoders are the
//! runtime's own: workerd's `TextDecoder`, which knows the WHATWG Encoding
//! Standard's labels (Shift_JIS, EUC-JP, ISO-2022-JP, EUC-KR and
//! ks_c_5601-1987, GB2312/GBK/GB18030, Big5, KOI8-R/U, ISO-8859-x, the
//! windows-125x pages…; checked in workerd by `tests/email.test.mjs`), at no
//! upload cost. The reader reaches it through a [`Decoder`], so it runs
//! natively too (tests decode with `encoding_rs`, the same standard). Here
//! is only what workerd lacks: UTF-7 (Outlook's), UTF-16 as MIME reads it
//! (big-endian without a byte-order mark), the aliases mailers write that
//! the standard does not list (`cp932`, `cp949`, `iso-2022-jp-2`…), and the
//! judgement of what was not read: a part in a charset no decoder knows, or
//! whose bytes are not that charset, is [`Err`] with the reason, to be told
//! to the model as such, never passed on as mojibake.

/// The runtime's decoder: `bytes` in the encoding a WHATWG `label` names,
/// malformed sequences as U+FFFD; `None` when it has none for `label`.
pub type Decoder<'a> = &'a dyn Fn(&str, &[u8]) -> Option<String>;

/// `bytes` in `charset` (a MIME charset name, any case; empty: US-ASCII,
/// MIME's default) as text, or why it cannot be read.
pub fn decode(charset: &str, bytes: &[u8], dec: Decoder) -> Result<String, String> {
    let label = charset.trim().trim_matches(['"', '\'']).to_ascii_lowercase();
    let compact: String = label.chars().filter(char::is_ascii_alphanumeric).collect();
    let ascii = bytes.iter().all(|&b| b < 0x80 && b != 0x1b);
    match compact.as_str() {
        "utf7" | "unicode11utf7" | "csunicode11utf7" => return Ok(utf7(bytes)),
        "utf16" | "utf16be" | "utf16le" | "unicode" => return Ok(utf16(&compact, bytes)),
        // 7-bit but not ASCII: `~{` opens GB2312 (no decoder: the standard
        // retired it, workerd refuses it).
        "hzgb2312" if !bytes.windows(2).any(|w| w == b"~{") => return Ok(ascii_text(bytes)),
        "hzgb2312" => return Err(format!("its charset ({label}) has no decoder here")),
        _ if ascii => return Ok(ascii_text(bytes)),
        _ => {}
    }
    let utf8 = std::str::from_utf8(bytes).ok();
    let name = match compact.as_str() {
        "utf8" | "unicode11utf8" | "xunicode20utf8" => {
            return match utf8 {
                Some(t) => Ok(t.to_owned()),
                None => judged(&label, String::from_utf8_lossy(bytes).into_owned()),
            }
        }
        // Undeclared (or declared ASCII) 8-bit text: UTF-8 when it is, which
        // is what mailers that forget the charset send today.
        "" | "usascii" | "ascii" | "ansix341968" | "us" | "iso646us" => {
            if let Some(t) = utf8 {
                return Ok(t.to_owned());
            }
            // Old Western mailers sent Latin-1 undeclared: accented letters
            // one at a time between ASCII ones. Double-byte (CJK) and
            // Cyrillic text comes in runs of high bytes: not guessed.
            if looks_latin(bytes) {
                if let Some(t) = dec("windows-1252", bytes) {
                    return judged("windows-1252", t);
                }
            }
            let named = if label.is_empty() { "none given" } else { &label };
            return Err(format!("its charset ({named}) does not say how to read its 8-bit bytes"));
        }
        "cp932" | "windows932" | "xmscp932" | "ibm943" => "shift_jis",
        "iso2022jp1" | "iso2022jp2" | "iso2022jp3" | "csiso2022jp2" => "iso-2022-jp",
        "cp949" | "windows949" | "uhc" | "xwindows949" | "ksc5601" | "ksc56011992" => "euc-kr",
        "cp936" | "windows936" | "euccn" | "xeuccn" | "cn" => "gbk",
        "cp950" | "windows950" | "big5hkscs2008" => "big5",
        "cp1250" | "cp1251" | "cp1252" | "cp1253" | "cp1254" | "cp1255" | "cp1256" | "cp1257" | "cp1258" => {
            return single_byte(&format!("windows-{}", &compact[2..]), bytes, utf8, dec)
        }
        // Not text: private-use code points for every high byte.
        "xuserdefined" | "binary" | "unknown" | "unknown8bit" | "xunknown" | "default" => {
            return Err(format!("its charset ({label}) is not one a text can be read in"))
        }
        _ => "",
    };
    let name = if name.is_empty() { label.as_str() } else { name };
    if is_single_byte(name) {
        return single_byte(name, bytes, utf8, dec);
    }
    match dec(name, bytes) {
        Some(text) => judged(&label, text),
        None => Err(format!("its charset ({label}) is not one Hearth can read")),
    }
}

/// A single-byte charset's text; bytes that are valid UTF-8 beyond ASCII
/// were UTF-8 whatever the label said (no Latin-1 or Cyrillic text of any
/// length is valid UTF-8 by chance), the most common mislabelling.
fn single_byte(name: &str, bytes: &[u8], utf8: Option<&str>, dec: Decoder) -> Result<String, String> {
    if let Some(t) = utf8 {
        return Ok(t.to_owned());
    }
    let compact: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    // `iso8859_1`, `windows1252`: the standard's names have the hyphens.
    let canonical = compact
        .strip_prefix("iso8859")
        .map(|n| format!("iso-8859-{n}"))
        .or_else(|| compact.strip_prefix("windows").map(|n| format!("windows-{n}")));
    match dec(name, bytes).or_else(|| canonical.and_then(|c| dec(&c, bytes))) {
        Some(text) => judged(name, text),
        None => Err(format!("its charset ({name}) is not one Hearth can read")),
    }
}

fn is_single_byte(name: &str) -> bool {
    let n: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    n.starts_with("iso8859")
        || n.starts_with("windows125")
        || n.starts_with("koi8")
        || matches!(
            n.as_str(),
            "latin1"
                | "latin2"
                | "l1"
                | "l2"
                | "cp819"
                | "ibm866"
                | "cp866"
                | "macintosh"
                | "xmaccyrillic"
                | "windows874"
                | "tis620"
        )
}

/// A decoded text, unless the decoder replaced so much of it that what is
/// left would mislead (the bytes were not in that charset).
fn judged(label: &str, text: String) -> Result<String, String> {
    let replaced = text.chars().filter(|&c| c == '\u{fffd}').count();
    let total = text.chars().count();
    if replaced > 50 || replaced * 20 > total {
        Err(format!("its bytes are not valid {label}"))
    } else {
        Ok(text)
    }
}

/// Whether 8-bit bytes read like Latin-1 letters among ASCII: most high
/// bytes stand alone (`Fr\xf6sche`), where double-byte and Cyrillic text
/// has them in runs.
fn looks_latin(bytes: &[u8]) -> bool {
    let high = |i: usize| bytes.get(i).is_some_and(|&b| b >= 0x80);
    let (mut all, mut alone) = (0usize, 0usize);
    for i in 0..bytes.len() {
        if high(i) {
            all += 1;
            let neighbour = i > 0 && high(i - 1) || high(i + 1);
            if !neighbour {
                alone += 1;
            }
        }
    }
    all > 0 && alone * 4 >= all * 3
}

fn ascii_text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

/// UTF-7 (RFC 2152): `+` opens modified base64 of UTF-16 units, `-` or any
/// other character closes it, `+-` is a plus sign.
fn utf7(bytes: &[u8]) -> String {
    let mut units: Vec<u16> = Vec::new();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if b != b'+' {
            out.push(b as char);
            continue;
        }
        if bytes.get(i) == Some(&b'-') {
            out.push('+');
            i += 1;
            continue;
        }
        let (mut acc, mut bits) = (0u32, 0u32);
        while let Some(v) = bytes.get(i).and_then(|&c| super::b64_value(c)) {
            acc = (acc << 6) | v as u32;
            bits += 6;
            if bits >= 16 {
                bits -= 16;
                units.push((acc >> bits) as u16);
                acc &= (1 << bits) - 1;
            }
            i += 1;
        }
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        out.extend(char::decode_utf16(units.drain(..)).map(|c| c.unwrap_or('\u{fffd}')));
    }
    out
}

/// UTF-16: big-endian unless a byte-order mark or the name says otherwise.
fn utf16(name: &str, bytes: &[u8]) -> String {
    let (mut le, mut body) = (name == "utf16le" || name == "unicode", bytes);
    if let [a, b, rest @ ..] = bytes {
        if (*a, *b) == (0xFF, 0xFE) || (*a, *b) == (0xFE, 0xFF) {
            le = *a == 0xFF;
            body = rest;
        }
    }
    let units =
        body.chunks_exact(2)
            .map(|p| if le { u16::from_le_bytes([p[0], p[1]]) } else { u16::from_be_bytes([p[0], p[1]]) });
    char::decode_utf16(units).map(|c| c.unwrap_or('\u{fffd}')).collect()
}
