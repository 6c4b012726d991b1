//! Email, through Cloudflare Email Routing: mail to an agent's address
//! (`EMAIL_ADDRESS`) reaches the Worker's `email` handler ([`inbound`]),
//! replies leave through the `send_email` binding ([`client`], composed by
//! [`compose`]).
//!
//! A message is read with our own MIME reader ([`mime`], [`read`]:
//! multipart, charsets, quoted-printable and base64, attachments), and what the agent reads is
//! what the person wrote ([`quote`]: no quoted history, no signature).
//!
//! Threads: the owner writing to the agent alone is the main session, like
//! the owner's DMs elsewhere; any other thread (another person, or several
//! people in To/Cc) is a conversation of its own, found again by its root
//! message (`References`, `In-Reply-To`; the agent's own Message-IDs carry
//! their thread, so a reply that keeps only `In-Reply-To` finds it too).
//! Replies keep the thread: `Re:` subject, `In-Reply-To`, `References`.

pub mod auth;
pub mod charsets;
pub mod client;
pub mod compose;
mod date;
pub mod inbound;
pub mod mime;
pub mod quote;

use charsets::Decoder;

#[cfg(test)]
mod tests;

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
    /// Every `From:` address (lower case): one, in mail a person sent.
    pub from_all: Vec<String>,
    /// The `Authentication-Results` headers, top first ([`auth`] reads them).
    pub auth_results: Vec<String>,
    /// Sent by a program, not a person ([`automatic`]): never answered, so
    /// two agents cannot loop.
    pub automatic: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub name: Option<String>,
    pub mime: String,
    pub bytes: Vec<u8>,
}

/// The value of a base64 digit (the standard alphabet), for the MIME reader
/// and UTF-7.
fn b64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Reads a raw message, its text in its charsets through the runtime's
/// decoder `dec`; `Err` when it is not one (no headers at all).
pub fn read(raw: &[u8], dec: Decoder) -> Result<Mail, String> {
    // A message kept in an mbox starts with its `From sender date` line.
    let raw = match raw.strip_prefix(b"From ") {
        Some(rest) => rest.iter().position(|&b| b == b'\n').map_or(raw, |i| &rest[i + 1..]),
        None => raw,
    };
    let msg = mime::Part::parse(raw);
    if msg.headers.is_empty() {
        return Err("not an email (no headers could be read)".into());
    }
    let header = |name: &str| msg.header(name).unwrap_or("");
    let addresses = |name: &str| -> Vec<String> {
        msg.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| mime::addresses(v, dec))
            .map(|(a, _)| a.to_ascii_lowercase())
            .collect()
    };
    let mut leaves = Vec::new();
    mime::leaves(mime::Part::parse(raw), &mut leaves, 0, dec);
    // Raw 8-bit header text is read in the charset of the message's text.
    let charset = leaves
        .iter()
        .find(|p| p.mime_type("text/plain").starts_with("text/"))
        .and_then(|p| p.param("Content-Type", "charset", dec))
        .unwrap_or_default();
    let text_of = |name: &str| msg.header_in(name, &charset, dec).unwrap_or_default();
    let from = mime::addresses(&text_of("From"), dec).into_iter().next().map(|(a, n)| (a.to_ascii_lowercase(), n));
    // The text is the first text/plain part that is not an attachment, else
    // the first such HTML part, read with the web reader's HTML-to-text;
    // every other part is an attachment (an attached email keeps its bytes).
    // Further inline text parts are alternatives of it, as mail-parser read
    // them too. A part that cannot be read gives way to an alternative that
    // can, else it is said so.
    let mut plain: Option<Result<String, String>> = None;
    let mut html: Option<Result<String, String>> = None;
    let mut attachments = Vec::new();
    for part in &leaves {
        let mime = match part.header("Content-Type") {
            Some(_) => part.mime_type("text/plain"),
            None => "text/plain".to_owned(),
        };
        if !part.is_attachment(dec) && (mime == "text/plain" || mime == "text/html") {
            // An empty part (a broken mailer's stray delimiter) is no text.
            let text = part.text_or_why(dec);
            if text.as_ref().is_ok_and(|t| t.trim().is_empty()) {
                continue;
            }
            let slot = if mime == "text/plain" { &mut plain } else { &mut html };
            if slot.as_ref().is_none_or(|s| s.is_err() && text.is_ok()) {
                *slot = Some(text);
            }
            continue;
        }
        let mime = if part.header("Content-Type").is_some() { mime } else { "application/octet-stream".into() };
        attachments.push(Attachment { name: part.filename(dec), mime, bytes: part.decoded() });
    }
    let text = match (plain, html) {
        (Some(Ok(t)), _) => t.replace("\r\n", "\n"),
        (_, Some(Ok(h))) => crate::web::html::to_text(&h, None).text,
        (Some(Err(why)), _) | (None, Some(Err(why))) => mime::unreadable_part(&why),
        (None, None) => String::new(),
    };
    let subject = mime::decode_words(&text_of("Subject"), dec).trim().to_owned();
    let automatic =
        automatic(&|name| msg.header(name).map(str::to_owned), &subject, from.as_ref().map(|f| f.0.as_str()));
    // Only `Authentication-Results`: `ARC-Authentication-Results` is a
    // claim nobody here validated (see [`auth`]).
    let auth_results = msg
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, v)| v.clone())
        .collect();
    Ok(Mail {
        message_id: mime::message_ids(header("Message-ID")).into_iter().next(),
        in_reply_to: mime::message_ids(header("In-Reply-To")),
        references: mime::message_ids(header("References")),
        from,
        to: addresses("To"),
        cc: addresses("Cc"),
        subject,
        date: sent_at(header("Date")),
        text,
        attachments,
        from_all: addresses("From"),
        auth_results,
        automatic,
    })
}

/// Sent by a program, not a person: never answered, so an agent and an
/// auto-responder never write to each other forever. RFC 3834's
/// `Auto-Submitted`, bulk and list `Precedence`, bounces (null return path,
/// `MAILER-DAEMON`, delivery reports), and the responders that set none of
/// these: `X-Autoreply`, `X-Autorespond`, `X-Autogenerated: Reply`,
/// `Precedence: auto_reply`, or only a subject saying so ("Auto:",
/// "Automatic reply:", "Out of Office:" and their forms in other languages).
pub fn automatic(header: &dyn Fn(&str) -> Option<String>, subject: &str, from: Option<&str>) -> bool {
    let lower = |name: &str| header(name).map(|v| v.trim().to_ascii_lowercase());
    let set = |name: &str| lower(name).is_some_and(|v| !v.is_empty() && v != "no" && v != "false");
    set("Auto-Submitted")
        || lower("Precedence")
            .is_some_and(|p| matches!(p.as_str(), "bulk" | "list" | "junk" | "auto_reply" | "auto-reply"))
        || lower("X-Precedence").is_some_and(|p| p == "auto_reply")
        || set("X-Autoreply")
        || set("X-Autorespond")
        || set("X-Autoresponder")
        || set("X-Mail-Autoreply")
        || lower("X-Autogenerated").is_some_and(|v| v == "reply")
        || lower("X-FC-MachineGenerated").is_some_and(|v| v == "true")
        || lower("Content-Type").is_some_and(|c| c.starts_with("multipart/report"))
        || header("Return-Path").is_some_and(|r| r.trim_matches(['<', '>', ' ']).is_empty())
        || from.is_some_and(|a| a.starts_with("mailer-daemon@") || a.starts_with("postmaster@"))
        || automatic_subject(subject, header("In-Reply-To").is_some() || header("References").is_some())
}

/// A subject that says a program wrote it (auto-replies, out-of-office
/// notices and bounces, as mail programs word them). "Auto:" only on a
/// reply (an answer to the agent's mail): a new message "Auto: …" may be
/// about a car.
fn automatic_subject(subject: &str, reply: bool) -> bool {
    const STARTS: &[&str] = &[
        "auto-reply:",
        "auto reply:",
        "autoreply:",
        "auto response:",
        "auto-response:",
        "automatic reply:",
        "automatic response:",
        "out of office:",
        "out of office reply:",
        "out of the office:",
        "undeliverable:",
        "undelivered mail returned to sender",
        "delivery status notification",
        "mail delivery failed",
        "returned mail:",
        "automatische antwort:",
        "abwesenheitsnotiz:",
        "réponse automatique :",
        "réponse automatique:",
        "respuesta automática:",
        "risposta automatica:",
        "resposta automática:",
        "automatisch antwoord:",
        "autosvar:",
        "automaattinen vastaus:",
        "odpowiedź automatyczna:",
        "automatická odpověď:",
        "автоматический ответ:",
        "自动回复:",
        "自动回复：",
        "自動回覆:",
        "自動回覆：",
        "自動応答:",
        "自動応答：",
        "自動返信:",
        "自動返信：",
        "자동 회신:",
        "자동 응답:",
    ];
    let s = subject.trim().to_lowercase();
    STARTS.iter().any(|p| s.starts_with(p)) || reply && s.starts_with("auto:")
}

/// An attached email (`message/rfc822`, a forward as an attachment) read
/// like an inline forward: its headers and text appended to the message's
/// text under a forward line, its own attachments kept in its place (an
/// email inside it too, a few levels deep); the `.eml` itself is not kept
/// as a file nobody can open.
pub fn inline_forwards(mail: &mut Mail, dec: Decoder) {
    inline_forwards_at(mail, dec, 0);
}

const MAX_FORWARD_DEPTH: usize = 3;

fn inline_forwards_at(mail: &mut Mail, dec: Decoder, depth: usize) {
    if depth >= MAX_FORWARD_DEPTH || !mail.attachments.iter().any(|a| a.mime == "message/rfc822") {
        return;
    }
    let mut kept = Vec::new();
    for a in std::mem::take(&mut mail.attachments) {
        if a.mime != "message/rfc822" {
            kept.push(a);
            continue;
        }
        let Ok(mut inner) = read(&a.bytes, dec) else {
            kept.push(a);
            continue;
        };
        inline_forwards_at(&mut inner, dec, depth + 1);
        let head = mime::Part::parse(&a.bytes);
        let field = |name: &str| head.header(name).map(|v| mime::decode_words(v, dec).trim().to_owned());
        let mut block = String::from("---------- Forwarded message ---------");
        for name in ["From", "Date", "Subject", "To", "Cc"] {
            if let Some(v) = field(name).filter(|v| !v.is_empty()) {
                block.push_str(&format!("\n{name}: {v}"));
            }
        }
        block.push_str("\n\n");
        block.push_str(inner.text.trim_end());
        mail.text = if mail.text.trim().is_empty() { block } else { format!("{}\n\n{block}", mail.text.trim_end()) };
        kept.append(&mut inner.attachments);
    }
    mail.attachments = kept;
}

/// The `Date:` header as seconds since the epoch; `None` when absent or unreadable
/// (the mail is then ordered by its arrival). A wrong weekday is forgiven: mailers get it wrong.
fn sent_at(value: &str) -> Option<i64> {
    date::parse(value.trim())
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
