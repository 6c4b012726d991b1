//! An outgoing email as RFC 5322 text: the headers that keep a thread
//! together (`Message-ID`, `In-Reply-To`, `References`, `Re:` subject), a
//! `text/plain; charset=utf-8` body in quoted-printable (readable, and safe
//! for any mail server), non-ASCII header text as RFC 2047 encoded words,
//! and `Auto-Submitted: auto-replied` (RFC 3834), so other programs do not
//! answer the agent's replies automatically.
//!
//! The agent's Message-IDs name their thread (`<{thread}.{hash}@{domain}>`),
//! so a reply that keeps only `In-Reply-To` finds its conversation again.

/// What an email needs besides its body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Envelope {
    /// The agent's address and display name.
    pub from: String,
    pub from_name: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    /// The message answered (without angle brackets).
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
    /// The conversation (see [`super::thread_of`]).
    pub thread: String,
}

/// The thread an id the agent made names (`{16 hex}.{…}@…`).
pub fn thread_in(id: &str) -> Option<String> {
    let (local, _) = id.split_once('@')?;
    let (thread, _) = local.split_once('.')?;
    (thread.len() == 16 && thread.bytes().all(|b| b.is_ascii_hexdigit())).then(|| thread.to_owned())
}

/// A Message-ID for a message of `thread` with this content: the same
/// piece sent again (a retry) has the same id.
pub fn message_id(thread: &str, from: &str, body: &str, part: &str) -> String {
    let domain = from.rsplit_once('@').map(|(_, d)| d).unwrap_or("hearth.invalid");
    let hash = crate::text::sha256_hex(format!("{thread}\n{part}\n{body}").as_bytes());
    format!("{thread}.{}@{domain}", &hash[..20])
}

/// `text` as a header value: itself when plain ASCII, else UTF-8 encoded
/// words (RFC 2047, base64), each within the 75-character limit.
pub fn header_text(text: &str) -> String {
    let clean: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if clean.is_ascii() {
        return clean;
    }
    let mut words = Vec::new();
    let mut chunk = String::new();
    for c in clean.chars() {
        // 45 bytes of UTF-8 are 60 of base64: the word stays under 75.
        if chunk.len() + c.len_utf8() > 45 {
            words.push(std::mem::take(&mut chunk));
        }
        chunk.push(c);
    }
    words.push(chunk);
    words.iter().map(|w| format!("=?UTF-8?B?{}?=", crate::text::base64(w.as_bytes()))).collect::<Vec<_>>().join("\r\n ")
}

fn mailbox(address: &str, name: Option<&str>) -> String {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) if n.is_ascii() => format!("\"{}\" <{address}>", n.replace(['"', '\\'], "")),
        Some(n) => format!("{} <{address}>", header_text(n)),
        None => address.to_owned(),
    }
}

/// Quoted-printable (RFC 2045): lines of at most 76 characters, `=XX` for
/// what is not printable ASCII, CRLF line ends.
pub fn quoted_printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, line) in text.replace("\r\n", "\n").split('\n').enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        let bytes = line.as_bytes();
        let mut width = 0;
        for (j, &b) in bytes.iter().enumerate() {
            let last = j + 1 == bytes.len();
            let encoded = match b {
                b'=' => format!("={b:02X}"),
                // Spaces and tabs are kept, except at the end of a line.
                b' ' | b'\t' if last => format!("={b:02X}"),
                33..=126 | b' ' | b'\t' => (b as char).to_string(),
                _ => format!("={b:02X}"),
            };
            if width + encoded.len() > 75 {
                out.push_str("=\r\n");
                width = 0;
            }
            width += encoded.len();
            out.push_str(&encoded);
        }
    }
    out
}

/// The whole message, `date` in RFC 5322 form, `id` without brackets.
pub fn message(env: &Envelope, body: &str, date: &str, id: &str) -> String {
    let mut h = Vec::new();
    h.push(format!("From: {}", mailbox(&env.from, env.from_name.as_deref())));
    h.push(format!("To: {}", env.to.join(", ")));
    if !env.cc.is_empty() {
        h.push(format!("Cc: {}", env.cc.join(", ")));
    }
    h.push(format!("Subject: {}", header_text(&env.subject)));
    h.push(format!("Date: {date}"));
    h.push(format!("Message-ID: <{id}>"));
    if let Some(r) = &env.in_reply_to {
        h.push(format!("In-Reply-To: <{r}>"));
    }
    if !env.references.is_empty() {
        let refs: Vec<String> = env.references.iter().map(|r| format!("<{r}>")).collect();
        h.push(format!("References: {}", refs.join("\r\n ")));
    }
    h.push("MIME-Version: 1.0".into());
    h.push("Content-Type: text/plain; charset=utf-8".into());
    h.push("Content-Transfer-Encoding: quoted-printable".into());
    h.push("Auto-Submitted: auto-replied".into());
    format!("{}\r\n\r\n{}\r\n", h.join("\r\n"), quoted_printable(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_printable_round_trips_through_a_real_parser() {
        let body = "Grüße aus Köln = 100 % sure.  \nA very long line that goes on and on and on well past the seventy-six character limit of quoted printable.\n\tend";
        let env = Envelope {
            from: "ember@agents.example".into(),
            from_name: Some("Ember Ö".into()),
            to: vec!["ana@example.com".into()],
            cc: vec!["pat@example.org".into()],
            subject: "Re: Die Hasen und die Frösche".into(),
            in_reply_to: Some("root@example.com".into()),
            references: vec!["root@example.com".into()],
            thread: "0123456789abcdef".into(),
        };
        let id = message_id(&env.thread, &env.from, body, "0");
        let raw = message(&env, body, "Fri, 19 May 2000 04:29:55 +0000", &id);
        assert!(raw.lines().all(|l| l.len() <= 78), "{raw}");
        assert!(raw.is_ascii());
        let mail = super::super::read(raw.as_bytes(), &crate::testing::decode_text).unwrap();
        assert_eq!(mail.text.trim_end(), body);
        assert_eq!(mail.subject, "Re: Die Hasen und die Frösche");
        assert_eq!(mail.in_reply_to, ["root@example.com"]);
        assert_eq!(
            mail.from.as_ref().map(|(a, n)| (a.as_str(), n.as_deref())),
            Some(("ember@agents.example", Some("Ember Ö")))
        );
        assert_eq!(
            (mail.to.clone(), mail.cc.clone()),
            (vec!["ana@example.com".into()], vec!["pat@example.org".into()])
        );
        assert!(mail.automatic, "marked as an automatic reply");
        assert_eq!(thread_in(mail.message_id.as_deref().unwrap()).as_deref(), Some("0123456789abcdef"));
    }

    #[test]
    fn the_agents_ids_name_their_thread() {
        assert_eq!(thread_in("0123456789abcdef.abc@agents.example").as_deref(), Some("0123456789abcdef"));
        assert_eq!(thread_in("CAF=x.y@mail.gmail.com"), None);
        assert_eq!(
            message_id("0123456789abcdef", "a@b.c", "x", "0"),
            message_id("0123456789abcdef", "a@b.c", "x", "0")
        );
        assert_ne!(
            message_id("0123456789abcdef", "a@b.c", "x", "0"),
            message_id("0123456789abcdef", "a@b.c", "y", "0")
        );
    }
}
