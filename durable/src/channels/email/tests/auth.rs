//! Who sent a message, on the header shapes Email Routing writes (an
//! `Authentication-Results: mx.cloudflare.net;` block above the sender's
//! headers, folded with tabs: dkim with `header.d`/`header.s`/`header.b`,
//! dmarc with `header.from` and `policy.dmarc`, spf for `smtp.helo` and
//! `smtp.mailfrom` with the receiver's comment, `arc=none smtp.remote-ip`;
//! see docs/email.md for the samples), and the spoofs of issue 31.

use super::super::auth::{aligned, ascii_domain, parse, prove, Sender};
use super::super::inbound::{handle, Verdict};

fn read(raw: &[u8]) -> Result<super::super::Mail, String> {
    super::super::read(raw, &crate::testing::decode_text)
}
use crate::testing::FakeFront;
use futures::executor::block_on;

const CF: &str = "mx.cloudflare.net";
const AGENT: &str = "ember@agents.example";

/// A message from `from`, headers above it as the receiver left them.
fn mail(headers_above: &str, from: &str) -> Vec<u8> {
    format!(
        "{headers_above}From: {from}\r\nTo: {AGENT}\r\nSubject: hello\r\nMessage-ID: <{}@owner.example>\r\n\r\nwhat do you remember about me?\r\n",
        crate::text::sha256_hex(headers_above.as_bytes())
    )
    .into_bytes()
}

fn verdict(headers_above: &str, from: &str) -> Sender {
    prove(&read(&mail(headers_above, from)).unwrap(), CF)
}

fn proven(s: &Sender) -> bool {
    matches!(s, Sender::Proven { .. })
}

/// The owner's genuine mail through Email Routing (DKIM and DMARC pass for
/// the `From:` domain; Gmail's shape, helo and mailfrom SPF both listed).
const GENUINE: &str = "Authentication-Results: mx.cloudflare.net;\r\n\tdkim=pass header.d=owner.example header.s=20251104 header.b=L6CZ3OJ0;\r\n\tdmarc=pass header.from=owner.example policy.dmarc=none;\r\n\tspf=none (mx.cloudflare.net: no SPF records found for postmaster@mail-yw1.owner.example) smtp.helo=mail-yw1.owner.example;\r\n\tspf=pass (mx.cloudflare.net: domain of olga@owner.example designates 2607:f8b0:4864:20::112d as permitted sender) smtp.mailfrom=olga@owner.example;\r\n\tarc=pass smtp.remote-ip=\"2607:f8b0:4864:20::112d\"\r\n";

/// Issue 31's table: every message that claims `From:` the owner and is not
/// from the owner.
pub(super) const SPOOFS: &[(&str, &str)] = &[
    (
        "spf and dkim pass for the attacker's own domain, dmarc=none",
        "Authentication-Results: mx.cloudflare.net; spf=pass smtp.mailfrom=bounce@attacker.example; dkim=pass header.d=attacker.example; dmarc=none\r\n",
    ),
    (
        "only a forged ARC-Authentication-Results of the receiver",
        "ARC-Authentication-Results: i=1; mx.cloudflare.net; dkim=pass header.d=owner.example; dmarc=pass header.from=owner.example; spf=pass smtp.mailfrom=olga@owner.example\r\n",
    ),
    (
        "only Authentication-Results of another authserv-id",
        "Authentication-Results: mail.attacker.example; dmarc=pass header.from=owner.example; dkim=pass header.d=owner.example\r\n",
    ),
    ("no authentication results at all", ""),
    (
        "the receiver's header says spf=fail, a forged one below it says pass",
        "Authentication-Results: mx.cloudflare.net; spf=fail smtp.mailfrom=olga@owner.example; dkim=none; dmarc=none\r\nAuthentication-Results: mx.cloudflare.net; dkim=pass header.d=owner.example; dmarc=pass header.from=owner.example\r\n",
    ),
];

#[test]
fn every_spoof_of_the_issue_is_unproven_and_the_genuine_mail_is_proven() {
    for (what, headers) in SPOOFS {
        let s = verdict(headers, "Olga <olga@owner.example>");
        assert!(!proven(&s), "{what}: {s:?}");
    }
    assert_eq!(
        verdict(GENUINE, "Olga <olga@owner.example>"),
        Sender::Proven { via: "dmarc", domain: "owner.example".into() }
    );
    // The reason names what passed, for the sender's postmaster.
    let Sender::Unproven(why) = verdict(SPOOFS[0].1, "olga@owner.example") else { panic!() };
    assert!(why.contains("dkim for attacker.example") && why.contains("none for owner.example"), "{why}");
}

#[test]
fn relaxed_alignment_accepts_the_organisation_and_nothing_wider() {
    // header.d=mail.owner.example for From: a@owner.example (no DMARC record).
    let sub = "Authentication-Results: mx.cloudflare.net; dkim=pass header.d=mail.owner.example; spf=softfail smtp.mailfrom=x@elsewhere.example; dmarc=none\r\n";
    assert_eq!(verdict(sub, "a@owner.example"), Sender::Proven { via: "dkim", domain: "mail.owner.example".into() });
    let spf = "Authentication-Results: mx.cloudflare.net; spf=pass smtp.mailfrom=bounce@owner.example; dkim=none; dmarc=none\r\n";
    assert!(proven(&verdict(spf, "a@news.owner.example")), "the parent's envelope");
    for (a, b, same) in [
        ("owner.example", "owner.example", true),
        ("mail.owner.example", "owner.example", true),
        ("mail.owner.co.uk", "owner.co.uk", true),
        // Siblings need the Public Suffix List (eu.org hands out names whose
        // DNS their registrants set): only the receiver's dmarc=pass aligns them.
        ("news.owner.com", "mail.owner.com", false),
        ("alice.eu.org", "attacker.eu.org", false),
        ("owner.co.uk", "attacker.co.uk", false),
        ("yahoo.co.jp", "attacker.co.jp", false),
        ("co.uk", "owner.co.uk", false),
        ("com", "owner.com", false),
        ("owner.com", "attacker.com", false),
        ("a.duckdns.org", "b.duckdns.org", false),
        ("news.owner.de", "mail.owner.de", false),
        ("owner.example", "notowner.example", false),
        ("attacker-owner.example", "owner.example", false),
    ] {
        assert_eq!(aligned(a, b), same, "{a} ~ {b}");
        assert_eq!(aligned(b, a), same, "{b} ~ {a}");
    }
}

#[test]
fn dmarc_fail_refuses_whatever_else_passed() {
    let h = "Authentication-Results: mx.cloudflare.net; dkim=pass header.d=mail.owner.example; dmarc=fail (p=reject) header.from=owner.example\r\n";
    assert!(matches!(verdict(h, "olga@owner.example"), Sender::Unproven(w) if w.contains("dmarc=fail")));
    // A dmarc=pass for another domain than From: proves nothing.
    let other = "Authentication-Results: mx.cloudflare.net; dmarc=pass header.from=attacker.example\r\n";
    assert!(!proven(&verdict(other, "olga@owner.example")));
}

#[test]
fn a_mailing_list_that_rewrote_from_is_the_list_and_one_that_did_not_is_refused() {
    // The list rewrote From: (DMARC pass for the list's domain): the sender is the list.
    let rewritten = "Authentication-Results: mx.cloudflare.net; dkim=pass header.d=lists.example; dmarc=pass header.from=lists.example; spf=pass smtp.mailfrom=team-bounces@lists.example\r\n";
    let m = read(&mail(rewritten, "\"Olga via Team\" <team@lists.example>")).unwrap();
    assert_eq!(m.from.as_ref().map(|f| f.0.as_str()), Some("team@lists.example"));
    assert_eq!(prove(&m, CF), Sender::Proven { via: "dmarc", domain: "lists.example".into() });
    // It kept Olga's From: and re-signed: nothing is aligned with owner.example.
    let kept = "Authentication-Results: mx.cloudflare.net; dkim=fail header.d=owner.example; dkim=pass header.d=lists.example; spf=pass smtp.mailfrom=team-bounces@lists.example; dmarc=none header.from=owner.example\r\n";
    assert!(!proven(&verdict(kept, "Olga <olga@owner.example>")));
}

#[test]
fn several_from_addresses_are_refused() {
    for from in ["olga@owner.example, eve@attacker.example", "eve@attacker.example, olga@owner.example"] {
        assert!(matches!(verdict(GENUINE, from), Sender::Unproven(w) if w.contains("several From")), "{from}");
    }
    // Two From: header fields, each with one address.
    let raw = format!("{GENUINE}From: olga@owner.example\r\nFrom: eve@attacker.example\r\nTo: {AGENT}\r\n\r\nhi\r\n");
    assert!(!proven(&prove(&read(raw.as_bytes()).unwrap(), CF)));
    let none = format!("{GENUINE}To: {AGENT}\r\nSubject: x\r\n\r\nhi\r\n");
    assert!(!proven(&prove(&read(none.as_bytes()).unwrap(), CF)));
}

#[test]
fn an_internationalised_domain_is_compared_in_its_ascii_form() {
    assert_eq!(ascii_domain("Bücher.Example").as_deref(), Some("xn--bcher-kva.example"));
    assert_eq!(ascii_domain("xn--bcher-kva.example.").as_deref(), Some("xn--bcher-kva.example"));
    assert_eq!(ascii_domain("evil.example/path"), None);
    // RFC 3492's own examples' kind: a label wholly outside ASCII, and mixed ones.
    assert_eq!(ascii_domain("日本語.jp").as_deref(), Some("xn--wgv71a119e.jp"));
    assert_eq!(ascii_domain("münchen.de").as_deref(), Some("xn--mnchen-3ya.de"));
    assert_eq!(ascii_domain("правительство.рф").as_deref(), Some("xn--80aealotwbjpid2k.xn--p1ai"));
    let h = "Authentication-Results: mx.cloudflare.net; dkim=pass header.d=xn--bcher-kva.example; dmarc=pass header.from=xn--bcher-kva.example\r\n";
    // An SMTPUTF8 mail writes the domain in Unicode; the receiver in punycode.
    assert!(proven(&verdict(h, "olga@bücher.example")));
    assert!(proven(&verdict(h, "olga@xn--bcher-kva.example")));
    assert!(!proven(&verdict(h, "olga@bucher.example")));
}

#[test]
fn the_header_is_read_as_rfc_8601_writes_it() {
    let (id, results) = parse(GENUINE.trim_start_matches("Authentication-Results:")).unwrap();
    assert_eq!(id, CF);
    let methods: Vec<(&str, &str)> = results.iter().map(|r| (r.method.as_str(), r.result.as_str())).collect();
    assert_eq!(methods, [("dkim", "pass"), ("dmarc", "pass"), ("spf", "none"), ("spf", "pass"), ("arc", "pass")]);
    assert_eq!(results[3].props, [("smtp.mailfrom".to_owned(), "olga@owner.example".to_owned())]);
    // A `;` or `=` inside a quoted envelope address or a comment starts nothing.
    let tricky = r#" mx.cloudflare.net 1; spf=pass (a comment; dmarc=pass header.from=owner.example) smtp.mailfrom="x;dmarc=pass"@attacker.example; dkim=none"#;
    let (id, results) = parse(tricky).unwrap();
    assert_eq!(id, CF);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].props, [("smtp.mailfrom".to_owned(), "x;dmarc=pass@attacker.example".to_owned())]);
    assert!(parse("").is_none());
    assert_eq!(parse("mx.cloudflare.net; none").map(|p| p.1.len()), Some(0));
    // Nothing panics on broken input.
    for cut in 0..GENUINE.len() {
        let _ = parse(&GENUINE[..cut]);
    }
    let _ = parse("x; (((unclosed; \"also unclosed");
}

// --- the handler: refused at the door, whatever EMAIL_AUTH says short of off ---

fn front(auth: Option<&str>) -> FakeFront {
    let mut vars = vec![
        ("EMAIL_ADDRESS", AGENT),
        ("OWNER_IDS", "email:olga@owner.example"),
        ("ALLOW_FROM", "email:pat@friend.example,email:ana@bücher.example"),
        ("LLM_API_KEY", "k"),
    ];
    if let Some(a) = auth {
        vars.push(("EMAIL_AUTH", a));
    }
    FakeFront::with(&vars)
}

#[test]
fn an_unproven_owner_or_allowed_sender_is_rejected_under_every_setting_but_off() {
    for setting in [None, Some("check"), Some("require"), Some("bogus")] {
        let f = front(setting);
        for (what, headers) in SPOOFS {
            let v = block_on(handle(&f, "bounce@attacker.example", AGENT, &mail(headers, "Olga <olga@owner.example>")));
            assert!(
                matches!(&v, Verdict::Rejected(w) if w.contains("could not be verified")),
                "{setting:?} {what}: {v:?}"
            );
            let v = block_on(handle(&f, "bounce@attacker.example", AGENT, &mail(headers, "pat@friend.example")));
            assert!(matches!(&v, Verdict::Rejected(_)), "{setting:?} {what} (allowed sender): {v:?}");
        }
        assert!(f.queued.borrow().is_empty(), "{setting:?}");
        let v = block_on(handle(&f, "olga@owner.example", AGENT, &mail(GENUINE, "Olga <olga@owner.example>")));
        assert!(matches!(v, Verdict::Accepted(_)), "{setting:?}: {v:?}");
        assert_eq!(f.queued.borrow().len(), 1);
        assert_eq!(f.queued.borrow()[0].0.render(), "agent:main:main");
    }
}

#[test]
fn email_auth_off_lets_a_local_test_in_and_says_so_for_every_message() {
    let f = front(Some("off"));
    for i in 0..2 {
        let raw = format!("From: olga@owner.example\r\nTo: {AGENT}\r\nMessage-ID: <off{i}@x>\r\n\r\nhi\r\n");
        assert!(matches!(block_on(handle(&f, "olga@owner.example", AGENT, raw.as_bytes())), Verdict::Accepted(_)));
    }
    let warned =
        f.logs.borrow().iter().filter(|l| l.contains("EMAIL_AUTH=off") && l.contains("local tests only")).count();
    assert_eq!(warned, 2, "{:?}", f.logs.borrow());
}

#[test]
fn an_internationalised_allowed_address_matches_its_punycode_form() {
    let f = front(None);
    let h = "Authentication-Results: mx.cloudflare.net; dkim=pass header.d=xn--bcher-kva.example; dmarc=pass header.from=xn--bcher-kva.example\r\n";
    let v = block_on(handle(&f, "ana@xn--bcher-kva.example", AGENT, &mail(h, "Ana <ana@xn--bcher-kva.example>")));
    assert!(matches!(v, Verdict::Accepted(_)), "{v:?}");
    assert_eq!(f.queued.borrow()[0].1.sender_id, "ana@bücher.example", "as ALLOW_FROM writes it");
}
