//! Email, through Cloudflare Email Routing: mail to an agent's address
//! (`EMAIL_ADDRESS`) reaches the Worker's `email` handler ([`inbound`]),
//! replies leave through the `send_email` binding ([`client`], composed by
//! [`compose`]).
//!
//! A message is read with `mail-parser` ([`read`]: multipart, charsets,
//! quoted-printable and base64, attachments), and what the agent reads is
//! what the person wrote ([`quote`]: no quoted history, no signature).
//!
//! Threads: the owner writing to the agent alone is the main session, like
//! the owner's DMs elsewhere; any other thread (another person, or several
//! people in To/Cc) is a conversation of its own, found again by its root
//! message (`References`, `In-Reply-To`; the agent's own Message-IDs carry
//! their thread, so a reply that keeps only `In-Reply-To` finds it too).
//! Replies keep the thread: `Re:` subject, `In-Reply-To`, `References`.

pub mod client;
pub mod compose;
pub mod inbound;
pub mod quote;

#[cfg(test)]
mod tests;

use mail_parser::{HeaderValue, MessageParser, MimeHeaders, PartType};

/// An email as the agent needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mail {
    /// Without the angle brackets.
    pub message_id: Option<String>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    /// The `From:` address (lower case) and display name.
    pub from: Option<(String, Option<String>)>,
    /// `To:` and `Cc:` addresses, lower case.
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    /// The `Date:` header, seconds since the epoch (the sender's clock).
    pub date: Option<i64>,
    /// The text part (or the HTML part made text), whole.
    pub text: String,
    pub attachments: Vec<Attachment>,
    /// `spf`, `dkim`, `dmarc` results from `Authentication-Results` headers.
    pub auth: Vec<(String, String, String)>,
    /// Sent by a program, not a person (`Auto-Submitted`, `Precedence:
    /// bulk|list|junk`, a bounce): never answered, so two agents cannot loop.
    pub automatic: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub name: Option<String>,
    pub mime: String,
    pub bytes: Vec<u8>,
}

fn ids(v: &HeaderValue<'_>) -> Vec<String> {
    let clean = |s: &str| s.trim().trim_start_matches('<').trim_end_matches('>').to_owned();
    match v {
        HeaderValue::Text(t) => t.split_whitespace().map(clean).filter(|s| !s.is_empty()).collect(),
        HeaderValue::TextList(l) => l.iter().map(|t| clean(t)).filter(|s| !s.is_empty()).collect(),
        _ => vec![],
    }
}

/// Reads a raw message; `Err` when it is not one (no headers at all).
pub fn read(raw: &[u8]) -> Result<Mail, String> {
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
    let header = |name: &str| msg.header_raw(name).map(str::trim).map(str::to_ascii_lowercase);
    let automatic = header("Auto-Submitted").is_some_and(|v| v != "no")
        || header("Precedence").is_some_and(|v| matches!(v.as_str(), "bulk" | "list" | "junk"))
        || msg.return_address() == Some("")
        || from.as_ref().is_some_and(|(a, _)| a.starts_with("mailer-daemon@") || a.starts_with("postmaster@"));
    let mut auth = Vec::new();
    for (name, value) in msg.headers_raw() {
        if name.eq_ignore_ascii_case("Authentication-Results")
            || name.eq_ignore_ascii_case("ARC-Authentication-Results")
        {
            auth.extend(auth_results(value));
        }
    }
    Ok(Mail {
        message_id: msg.message_id().map(|m| m.trim_matches(['<', '>']).to_owned()),
        in_reply_to: ids(msg.in_reply_to()),
        references: ids(msg.references()),
        from,
        to: addresses(msg.to()),
        cc: addresses(msg.cc()),
        subject: msg.subject().unwrap_or("").trim().to_owned(),
        date: msg.date().filter(|d| d.is_valid()).map(|d| d.to_timestamp()),
        text,
        attachments,
        auth,
        automatic,
    })
}

/// The results of one `Authentication-Results` (or `ARC-Authentication-
/// Results`) header (RFC 8601): `(server, method, result)` for `spf`,
/// `dkim` and `dmarc`. The server (the authserv-id) says who checked.
pub fn auth_results(value: &str) -> Vec<(String, String, String)> {
    let value = value.replace(['\r', '\n', '\t'], " ");
    let mut parts = value.split(';').map(str::trim);
    let mut server = parts.next().unwrap_or("").to_owned();
    // ARC's form starts with the instance: `i=1; mx.example.net; …`.
    if server.starts_with("i=") {
        server = parts.next().unwrap_or("").to_owned();
    }
    let server = server.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
    let mut out = Vec::new();
    for p in parts {
        let Some((method, rest)) = p.split_once('=') else { continue };
        let method = method.trim().to_ascii_lowercase();
        if matches!(method.as_str(), "spf" | "dkim" | "dmarc") {
            let result = rest.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
            out.push((server.clone(), method, result));
        }
    }
    out
}

/// What the authentication results of a message say, as far as `server`
/// checked it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authenticated {
    /// DMARC did not fail, and SPF or DKIM passed.
    Pass,
    /// DMARC failed, or neither SPF nor DKIM passed.
    Fail,
    /// `server` left no results (a local test, another route).
    Unknown,
}

pub fn authenticated(mail: &Mail, server: &str) -> Authenticated {
    let mine: Vec<&(String, String, String)> = mail.auth.iter().filter(|(s, _, _)| s == server).collect();
    if mine.is_empty() {
        return Authenticated::Unknown;
    }
    let has = |m: &str, r: &str| mine.iter().any(|(_, method, result)| method == m && result == r);
    if has("dmarc", "fail") || !(has("spf", "pass") || has("dkim", "pass")) {
        Authenticated::Fail
    } else {
        Authenticated::Pass
    }
}

/// The thread a message belongs to: a short id of its root message (the
/// first of `References`, else `In-Reply-To`, else itself). An id the agent
/// made (`{thread}.{…}@…`, see [`compose`]) names its thread directly.
pub fn thread_of(mail: &Mail) -> String {
    for id in mail.references.iter().chain(&mail.in_reply_to).chain(&mail.message_id) {
        if let Some(t) = compose::thread_in(id) {
            return t;
        }
    }
    let root = mail.references.first().or(mail.in_reply_to.first()).or(mail.message_id.as_ref());
    match root {
        Some(r) => crate::text::sha256_hex(r.as_bytes())[..16].to_owned(),
        None => crate::text::sha256_hex(mail.subject.as_bytes())[..16].to_owned(),
    }
}

/// `Re: {subject}` (once).
pub fn reply_subject(subject: &str) -> String {
    let s = subject.trim();
    if s.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:")) {
        s.to_owned()
    } else if s.is_empty() {
        "Re: your message".to_owned()
    } else {
        format!("Re: {s}")
    }
}
