//! Who sent a message. Anyone can write `From: you@example.com`; the
//! receiving server (Email Routing) checks SPF, DKIM and DMARC and writes what
//! it found at the top of the message, in an `Authentication-Results` header
//! (RFC 8601) under its own name, the authserv-id (`EMAIL_AUTH_SERVID`). A
//! sender is who the mail says only when that header says so **for the
//! `From:` domain** (RFC 7489's alignment):
//!
//! - `dmarc=pass` with `header.from` the `From:` domain (the receiver applied
//!   the Public Suffix List and the domain's own policy), or
//! - `dkim=pass` whose signing domain (`header.d`) is aligned with it, or
//! - `spf=pass` whose envelope sender (`smtp.mailfrom`) is aligned with it.
//!
//! `dmarc=fail` refuses whatever else passed (the domain asked for stricter
//! alignment than ours). Only the topmost such header counts: the receiver
//! prepends its own above everything the sender wrote, so every header below
//! it, every other authserv-id and every `ARC-*` header (an ARC chain nobody
//! here validated) is text the sender could have typed.
//!
//! Alignment without the Public Suffix List (~23 KiB gzip): see [`aligned`].
//! Domains are compared in their ASCII form ([`ascii_domain`]).

use super::Mail;

/// The server whose authentication results are believed unless
/// `EMAIL_AUTH_SERVID` says otherwise: Email Routing's, as it writes it
/// (`Authentication-Results: mx.cloudflare.net; dkim=pass header.d=…`).
pub const DEFAULT_AUTH_SERVID: &str = "mx.cloudflare.net";

/// What the receiver's results say of the `From:` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    /// Proven for the `From:` domain: by which method, for which domain.
    Proven { via: &'static str, domain: String },
    /// Not proven, and why (said in the SMTP rejection and the log).
    Unproven(String),
}

/// Whether `mail` was sent by its `From:` address, as far as `servid`'s
/// topmost `Authentication-Results` header says.
pub fn prove(mail: &Mail, servid: &str) -> Sender {
    let no = |why: String| Sender::Unproven(why);
    let from = match mail.from_all.as_slice() {
        [one] => one,
        [] => return no("it has no From: address".into()),
        _ => return no("it names several From: addresses".into()),
    };
    let Some(from_domain) = from.rsplit_once('@').and_then(|(_, d)| ascii_domain(d)) else {
        return no(format!("its From: address {from:?} has no usable domain"));
    };
    let servid = servid.trim().to_ascii_lowercase();
    let Some(results) = mail.auth_results.iter().find_map(|v| parse(v).filter(|(id, _)| *id == servid)) else {
        return no(format!("it carries no authentication results from {servid}"));
    };
    let results = results.1;
    if results.iter().any(|r| r.method == "dmarc" && r.result == "fail") {
        return no(format!("{servid} says dmarc=fail for {from_domain}"));
    }
    let passes = |method: &'static str| results.iter().filter(move |r| r.method == method && r.result == "pass");
    if passes("dmarc").any(|r| r.prop("header.from").and_then(ascii_domain).as_deref() == Some(from_domain.as_str())) {
        return Sender::Proven { via: "dmarc", domain: from_domain };
    }
    let signer = |r: &Resinfo| {
        r.prop("header.d")
            .or_else(|| r.prop("header.i").map(|i| i.rsplit('@').next().unwrap_or(i)))
            .and_then(ascii_domain)
    };
    for r in passes("dkim") {
        if let Some(d) = signer(r).filter(|d| aligned(d, &from_domain)) {
            return Sender::Proven { via: "dkim", domain: d };
        }
    }
    let envelope =
        |r: &Resinfo| r.prop("smtp.mailfrom").map(|m| m.rsplit('@').next().unwrap_or(m)).and_then(ascii_domain);
    for r in passes("spf") {
        if let Some(d) = envelope(r).filter(|d| aligned(d, &from_domain)) {
            return Sender::Proven { via: "spf", domain: d };
        }
    }
    // Say what passed, so the sender's postmaster can see why.
    let passed: Vec<String> = passes("dkim")
        .filter_map(|r| signer(r).map(|d| format!("dkim for {d}")))
        .chain(passes("spf").filter_map(|r| envelope(r).map(|d| format!("spf for {d}"))))
        .collect();
    if passed.is_empty() {
        no(format!("{servid} found no SPF, DKIM or DMARC pass for {from_domain}"))
    } else {
        no(format!("{servid} found {} but none for {from_domain}", passed.join(", ")))
    }
}

/// Two domains are aligned (RFC 7489 §3.1, relaxed) when they share their
/// organisational domain. Without the Public Suffix List, only what is
/// certain counts: equal domains, or one inside the other
/// (`mail.example.com` and `example.com`). Whoever passes SPF or DKIM for a
/// domain controls its DNS, and the DNS of a domain's parent or child is its
/// owner's, unless the shorter one is a suffix that others register under
/// ([`is_suffix`]).
///
/// Siblings (`news.example.com` and `mail.example.com`) are never aligned
/// here: telling `example.com` (one organisation) from `eu.org` or
/// `is-a.dev` (thousands of registrants, each setting their own DNS) needs
/// the list. A sibling-signed sender is still proven by the receiver's
/// `dmarc=pass`, which was computed with the real list.
pub fn aligned(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    long.ends_with(&format!(".{short}")) && !is_suffix(short)
}

/// A name others register under: a TLD, a generic second level of a
/// country's TLD (`co.uk`, `com.au`, `ne.jp`), or a shared name whose
/// subdomains' DNS their users set (dynamic DNS services).
fn is_suffix(domain: &str) -> bool {
    const GENERIC: &[&str] = &[
        "ac", "ad", "co", "com", "ed", "edu", "firm", "gen", "go", "gob", "gouv", "gov", "gr", "ind", "info", "int",
        "lg", "ltd", "me", "med", "mil", "ne", "net", "nic", "nom", "or", "org", "plc", "pro", "res", "sch", "web",
    ];
    const SHARED: &[&str] =
        &["afraid.org", "ddns.net", "duckdns.org", "dyndns.org", "hopto.org", "mooo.com", "no-ip.org", "zapto.org"];
    let labels: Vec<&str> = domain.split('.').collect();
    match labels.as_slice() {
        [_] => true,
        [second, tld] => tld.len() == 2 && GENERIC.contains(second) || SHARED.contains(&domain),
        _ => false,
    }
}

/// A domain as DNS compares it: lower case, no trailing dot, an
/// internationalised label as its ASCII form (`xn--` and RFC 3492's
/// punycode of the label in lower case and NFC, which is what IDNA makes of
/// the names people write). `None`: not a domain.
pub fn ascii_domain(domain: &str) -> Option<String> {
    let d = domain.trim().trim_matches(['<', '>', '"']).trim_end_matches('.');
    let mut labels = Vec::new();
    for label in d.split('.') {
        let label = if label.is_ascii() {
            label.to_ascii_lowercase()
        } else {
            format!("xn--{}", punycode(&crate::text::nfc(&label.to_lowercase()))?)
        };
        let ok = !label.is_empty() && label.len() <= 63;
        if !ok || !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return None;
        }
        labels.push(label);
    }
    Some(labels.join("."))
}

/// RFC 3492's encoding of a label's code points (the part after `xn--`).
fn punycode(label: &str) -> Option<String> {
    const BASE: u32 = 36;
    const TMIN: u32 = 1;
    const TMAX: u32 = 26;
    let adapt = |delta: u32, points: u32, first: bool| {
        let mut delta = if first { delta / 700 } else { delta / 2 };
        delta += delta / points;
        let mut k = 0;
        while delta > ((BASE - TMIN) * TMAX) / 2 {
            delta /= BASE - TMIN;
            k += BASE;
        }
        k + (BASE - TMIN + 1) * delta / (delta + 38)
    };
    let digit = |d: u32| char::from(if d < 26 { b'a' + d as u8 } else { b'0' + (d - 26) as u8 });
    let points: Vec<u32> = label.chars().map(u32::from).collect();
    let mut out: String = label.chars().filter(char::is_ascii).collect();
    let basic = out.len() as u32;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias, mut handled) = (128u32, 0u32, 72u32, basic);
    while (handled as usize) < points.len() {
        let m = *points.iter().filter(|&&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &c in &points {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        TMIN
                    } else if k >= bias + TMAX {
                        TMAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

/// One result of an `Authentication-Results` header: `method=result` and
/// its properties (`header.d`, `smtp.mailfrom`, …), names in lower case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resinfo {
    pub method: String,
    pub result: String,
    pub props: Vec<(String, String)>,
}

impl Resinfo {
    fn prop(&self, name: &str) -> Option<&str> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A token of the header: a word, a quoted string (unquoted), `;` or `=`,
/// and whether blanks or a comment came before it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String, bool),
    Semi,
    Eq,
}

/// RFC 8601's lexical layer: comments (nested, with `\` escapes) and blanks
/// separate, quoted strings are one word, so a `;` or `=` inside either (an
/// envelope address can hold them) never starts a result.
fn tokens(value: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = value.chars().peekable();
    let mut spaced = true;
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
                spaced = true;
            }
            '(' => {
                let mut depth = 0u32;
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '(' => depth += 1,
                        ')' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                spaced = true;
            }
            ';' => {
                chars.next();
                out.push(Token::Semi);
                spaced = true;
            }
            '=' => {
                chars.next();
                out.push(Token::Eq);
                spaced = false;
            }
            '"' => {
                chars.next();
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => s.extend(chars.next()),
                        '"' => break,
                        c => s.push(c),
                    }
                }
                out.push(Token::Word(s, spaced));
                spaced = false;
            }
            _ => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ';' | '=' | '"') {
                        break;
                    }
                    s.push(c);
                    chars.next();
                }
                out.push(Token::Word(s, spaced));
                spaced = false;
            }
        }
    }
    out
}

/// An `Authentication-Results` value: its authserv-id (lower case) and its
/// results. `None` when it has no authserv-id.
pub fn parse(value: &str) -> Option<(String, Vec<Resinfo>)> {
    let toks = tokens(value);
    let mut it = toks.split(|t| *t == Token::Semi);
    let head = it.next()?;
    let Some(Token::Word(id, _)) = head.first() else { return None };
    let mut out = Vec::new();
    for spec in it {
        // `method[/version] = result`, then `ptype.property = value` pairs;
        // a value may be several adjacent pieces (`"a;b"@example.com`).
        let mut pairs: Vec<(String, String)> = Vec::new();
        let (mut name, mut after_eq, mut in_value) = (None::<String>, false, false);
        for t in spec {
            match t {
                Token::Eq => after_eq = true,
                Token::Word(w, spaced) => {
                    if after_eq {
                        if let Some(n) = name.take() {
                            pairs.push((n.to_ascii_lowercase(), w.clone()));
                            in_value = true;
                        }
                        after_eq = false;
                    } else if in_value && !*spaced {
                        if let Some(last) = pairs.last_mut() {
                            last.1.push_str(w);
                        }
                    } else {
                        name = Some(w.clone());
                        in_value = false;
                    }
                }
                Token::Semi => {}
            }
        }
        let Some(((method, result), rest)) = pairs.split_first() else { continue };
        let method = method.split('/').next().unwrap_or("").to_owned();
        let props = rest.iter().filter(|(n, _)| n.contains('.')).cloned().collect();
        out.push(Resinfo { method, result: result.to_ascii_lowercase(), props });
    }
    Some((id.to_ascii_lowercase(), out))
}
