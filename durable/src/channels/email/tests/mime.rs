//! The MIME reader against `mail-parser` (the crate it replaced, kept as a
//! dev-dependency for this comparison) on mail-parser's whole published
//! corpus (`tests/fixtures/real-world/email/corpus/`, 107 messages: legacy
//! mailers' charsets and encodings, the RFCs' examples, third-party mail and
//! deliberately malformed messages). What the agent reads of a message must
//! come out the same; where it does not, the test names the message and the
//! field, and the few known differences are listed with their reason.

use super::super::{Attachment, Mail};

fn read(raw: &[u8]) -> Result<Mail, String> {
    super::super::read(raw, &crate::testing::decode_text)
}
use mail_parser::{HeaderValue, MessageParser, MimeHeaders, PartType};

fn ids(v: &HeaderValue<'_>) -> Vec<String> {
    let clean = |s: &str| s.trim().trim_start_matches('<').trim_end_matches('>').to_owned();
    match v {
        HeaderValue::Text(t) => t.split_whitespace().map(clean).filter(|s| !s.is_empty()).collect(),
        HeaderValue::TextList(l) => l.iter().map(|t| clean(t)).filter(|s| !s.is_empty()).collect(),
        _ => vec![],
    }
}

fn reference(raw: &[u8]) -> Result<Mail, String> {
    let msg = MessageParser::default().parse(raw).ok_or("not an email (no headers could be read)")?;
    let addresses = |a: Option<&mail_parser::Address<'_>>| -> Vec<String> {
        a.map(|a| a.iter().filter_map(|x| x.address()).map(str::to_ascii_lowercase).collect()).unwrap_or_default()
    };
    let from = msg.from().and_then(|a| a.first()).and_then(|f| {
        Some((f.address()?.to_ascii_lowercase(), f.name().map(str::to_owned).filter(|n| !n.trim().is_empty())))
    });
    // An HTML-only message is read with the web reader's HTML-to-text
    // (mail-parser's own brings a 2,000-entity table: ~40 KiB of upload).
    let text = match msg.text_part(0).map(|p| &p.body) {
        Some(PartType::Text(t)) => t.replace("\r\n", "\n"),
        Some(PartType::Html(h)) => crate::web::html::to_text(h, None).text,
        _ => String::new(),
    };
    let mut attachments = Vec::new();
    for part in msg.attachments() {
        let mime = part
            .content_type()
            .map(|ct| match ct.subtype() {
                Some(sub) => format!("{}/{}", ct.ctype(), sub),
                None => ct.ctype().to_owned(),
            })
            .unwrap_or_else(|| "application/octet-stream".into())
            .to_ascii_lowercase();
        // An attached email (message/rfc822) keeps its raw bytes.
        let bytes = match part.message() {
            Some(inner) => inner.raw_message().to_vec(),
            None => part.contents().to_vec(),
        };
        attachments.push(Attachment { name: part.attachment_name().map(str::to_owned), mime, bytes });
    }
    let subject = msg.subject().unwrap_or("").trim().to_owned();
    let raw_header = |name: &str| msg.header_raw(name).map(|v| v.trim().to_owned());
    let automatic = super::super::automatic(&raw_header, &subject, from.as_ref().map(|f| f.0.as_str()))
        || msg.return_address() == Some("");
    let auth_results = msg
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let from_all = msg
        .header_values("From")
        .flat_map(|v| {
            v.as_address()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.address())
                        .filter(|a| a.contains('@'))
                        .map(str::to_ascii_lowercase)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect();
    Ok(Mail {
        message_id: msg.message_id().map(|m| m.trim_matches(['<', '>']).to_owned()),
        in_reply_to: ids(msg.in_reply_to()),
        references: ids(msg.references()),
        from,
        to: addresses(msg.to()),
        cc: addresses(msg.cc()),
        subject,
        date: msg.date().filter(|d| d.is_valid()).map(|d| d.to_timestamp()),
        text,
        attachments,
        from_all,
        auth_results,
        automatic,
    })
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/email/corpus");
    let mut out = Vec::new();
    for folder in ["legacy", "malformed", "rfc", "thirdparty"] {
        let mut files: Vec<_> = std::fs::read_dir(dir.join(folder)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files {
            out.push((format!("{folder}/{}", f.file_name().unwrap().to_string_lossy()), std::fs::read(&f).unwrap()));
        }
    }
    out
}

/// Whitespace-insensitive: the two readers may fold a header's blanks or a
/// body's trailing line break differently; the words must be the same.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn differences(name: &str, ours: &Mail, theirs: &Mail) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |field: &str, same: bool, a: String, b: String| {
        if !same {
            out.push(format!("{name} {field}: ours {a:.300} / mail-parser {b:.300}"));
        }
    };
    check(
        "subject",
        words(&ours.subject) == words(&theirs.subject),
        format!("{:?}", ours.subject),
        format!("{:?}", theirs.subject),
    );
    check("from", ours.from == theirs.from, format!("{:?}", ours.from), format!("{:?}", theirs.from));
    check("to", ours.to == theirs.to, format!("{:?}", ours.to), format!("{:?}", theirs.to));
    check("cc", ours.cc == theirs.cc, format!("{:?}", ours.cc), format!("{:?}", theirs.cc));
    check(
        "message_id",
        ours.message_id == theirs.message_id,
        format!("{:?}", ours.message_id),
        format!("{:?}", theirs.message_id),
    );
    check(
        "in_reply_to",
        ours.in_reply_to == theirs.in_reply_to,
        format!("{:?}", ours.in_reply_to),
        format!("{:?}", theirs.in_reply_to),
    );
    check(
        "references",
        ours.references == theirs.references,
        format!("{:?}", ours.references),
        format!("{:?}", theirs.references),
    );
    check("text", words(&ours.text) == words(&theirs.text), format!("{:?}", ours.text), format!("{:?}", theirs.text));
    let att = |m: &Mail| {
        m.attachments.iter().map(|a: &Attachment| (a.name.clone(), a.mime.clone(), a.bytes.len())).collect::<Vec<_>>()
    };
    check("attachments", att(ours) == att(theirs), format!("{:?}", att(ours)), format!("{:?}", att(theirs)));
    let bytes_same = ours.attachments.len() == theirs.attachments.len()
        && ours.attachments.iter().zip(&theirs.attachments).all(|(a, b)| a.bytes == b.bytes);
    check("attachment bytes", bytes_same, String::new(), String::new());
    let unfolded = |m: &Mail| m.auth_results.iter().map(|v| words(v)).collect::<Vec<_>>();
    check(
        "auth",
        unfolded(ours) == unfolded(theirs),
        format!("{:?}", ours.auth_results),
        format!("{:?}", theirs.auth_results),
    );
    check(
        "from_all",
        ours.from_all == theirs.from_all,
        format!("{:?}", ours.from_all),
        format!("{:?}", theirs.from_all),
    );
    check(
        "automatic",
        ours.automatic == theirs.automatic,
        format!("{:?}", ours.automatic),
        format!("{:?}", theirs.automatic),
    );
    out
}

/// Where the two readers differ, and why (each checked by hand, and against
/// Python's `email` package where the bytes of a part differ).
const KNOWN: &[(&[&str], &[&str], &str)] = &[
    (
        &["legacy/010.eml", "legacy/016.eml", "legacy/020.eml", "legacy/022.eml", "legacy/023.eml", "legacy/026.eml", "legacy/027.eml", "legacy/052.eml"],
        &["subject", "attachments"],
        "raw Latin-1 bytes in a header (Eudora, Outlook 2000), inside encoded words too: ours keeps them (Frösche), mail-parser gives U+FFFD",
    ),
    (
        &["legacy/023.eml", "legacy/045.eml", "legacy/047.eml", "rfc/000.eml"],
        &["attachments", "attachment bytes"],
        "mail-parser decodes more bytes than the part holds; ours decodes what Python's email package does (747, 755, 747; 45 and 22)",
    ),
    (
        &["legacy/026.eml"],
        &["attachments", "attachment bytes"],
        "x-uuencode, decoded by neither; the line break before a delimiter is the delimiter's (RFC 2046 5.1.1), mail-parser keeps it",
    ),
    (
        &["rfc/004.eml", "thirdparty/007.eml"],
        &["attachments"],
        "a part of a multipart/digest without a Content-Type is message/rfc822 (RFC 2046 5.1.5); mail-parser says application/octet-stream",
    ),
    (&["thirdparty/007.eml"], &["from"], "From: moderator (no domain) is no address the channel can answer"),
    (
        &["legacy/052.eml"],
        &["text"],
        "8-bit Latin-1 with no charset declared: ours reads it as windows-1252 (Frösche), mail-parser gives U+FFFD",
    ),
    (
        &["thirdparty/015.eml"],
        &["attachments", "attachment bytes"],
        "three attached emails (Python's email package finds three too); mail-parser runs them into one",
    ),
    (
        &["thirdparty/002.eml"],
        &["attachments", "attachment bytes"],
        "a third inline text part (invalid base64) is an alternative text, as the second is, not an attachment",
    ),
];

/// The deliberately malformed messages (boundaries reused or nested as
/// prefixes, delimiters missing): read as well as they can be, never a
/// panic or an error; their text and parts may differ.
fn malformed(name: &str, field: &str) -> bool {
    name.starts_with("malformed/") && matches!(field, "text" | "attachments" | "attachment bytes")
}

#[test]
fn the_mime_reader_reads_the_corpus_as_mail_parser_did() {
    let mut all = Vec::new();
    let files = corpus();
    assert!(files.len() >= 100, "{}", files.len());
    for (name, raw) in &files {
        match (read(raw), reference(raw)) {
            (Ok(ours), Ok(theirs)) => all.extend(differences(name, &ours, &theirs)),
            (a, b) => {
                if a.is_ok() != b.is_ok() {
                    all.push(format!("{name}: ours {:?} / mail-parser {:?}", a.err(), b.err()));
                }
            }
        }
    }
    let unexplained: Vec<&String> = all
        .iter()
        .filter(|d| {
            let mut it = d.splitn(3, [' ', ':']);
            let (name, field) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
            let field = if field == "attachment" { "attachment bytes" } else { field };
            !(malformed(name, field)
                || KNOWN.iter().any(|(files, fields, _)| files.contains(&name) && fields.contains(&field)))
        })
        .collect();
    assert!(unexplained.is_empty(), "{} differences from mail-parser:\n{unexplained:#?}", unexplained.len());
}

#[test]
fn a_message_cut_anywhere_is_read_without_a_panic() {
    // Mail arrives cut short (size limits, broken relays): every prefix of
    // every corpus message, at a few hundred cut points each.
    for (_, raw) in corpus() {
        let step = (raw.len() / 300).max(1);
        for end in (0..raw.len()).step_by(step) {
            let _ = read(&raw[..end]);
        }
    }
}

#[test]
fn parameters_encoded_words_and_groups_are_read_as_the_rfcs_write_them() {
    use super::super::mime::{addresses, decode_words, param};
    // RFC 2231: continuations, a charset, percent-encoding.
    let cd = "attachment; filename*0*=utf-8''Gr%C3%BC; filename*1*=%C3%9Fe; filename*2=\".txt\"";
    let dec = &crate::testing::decode_text;
    assert_eq!(param(cd, "filename", dec).as_deref(), Some("Grüße.txt"));
    assert_eq!(param("text/plain; charset=\"ISO-8859-1\"", "charset", dec).as_deref(), Some("ISO-8859-1"));
    // RFC 2047: the blank between two encoded words goes, others stay.
    assert_eq!(decode_words("=?utf-8?B?R3LDvA==?= =?utf-8?Q?=C3=9Fe?= aus Wien", dec), "Grüße aus Wien");
    // Groups give their members; display names are unquoted.
    let to = addresses("team: \"Doe, Jane\" <jane@example.com>, bob@example.com (Bob);, undisclosed-recipients:;", dec);
    assert_eq!(
        to,
        [
            ("jane@example.com".to_owned(), Some("Doe, Jane".to_owned())),
            ("bob@example.com".to_owned(), Some("Bob".to_owned()))
        ]
    );
}
