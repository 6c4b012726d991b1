//! Email read from real messages (`tests/fixtures/real-world/email/mime/`,
//! from mail-parser's published test corpus) and the handler's whole flow
//! on a test front: who may write, threads, the owner's main session,
//! attachments kept for the session.

// The readers' own cases, one file each.
mod auth;
mod charsets;
mod date;
mod forwards;
mod mime;

use super::inbound::{handle, Verdict};
use super::*;

fn read(raw: &[u8]) -> Result<Mail, String> {
    super::read(raw, &crate::testing::decode_text)
}
use crate::inbound::{ChannelKind, ChatKind, SessionKey};
use crate::testing::FakeFront;
use futures::executor::block_on;

fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/email/mime");
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn charsets_and_quoted_printable_are_decoded() {
    let m = read(&fixture("mail-parser-legacy-003.eml")).unwrap();
    assert_eq!(m.subject, "Die Hasen und die Frösche", "an ISO-8859-1 encoded word");
    assert!(
        m.text.starts_with("Die Hasen und die Frösche\n\nDie Hasen klagten einst über ihre mißliche Lage"),
        "{}",
        &m.text[..120]
    );
    assert_eq!(m.to, ["mueller@example.com"]);
    assert_eq!(
        m.from.as_ref().map(|(a, n)| (a.as_str(), n.as_deref())),
        Some(("dwsauder@example.com", Some("Doug Sauder")))
    );
    assert_eq!(m.message_id.as_deref(), Some("4.2.0.58.20000519002557.00a88870@pop.example.com"));
    let utf7 = read(&fixture("mail-parser-legacy-001.eml")).unwrap();
    assert_eq!(utf7.subject, "Die Hasen und die Frösche (Microsoft Outlook 00)", "UTF-7");
    // `Date:` with its zone: Wed, 17 May 2000 19:18:39 -0400 and Fri, 19 May 2000 00:29:55 -0400.
    assert_eq!((utf7.date, m.date), (Some(958_605_519), Some(958_710_595)));
    let order = |mail: &Mail| super::inbound::to_inbound(mail, "ember@example.com", "ana@example.com", 0).order;
    assert_eq!(order(&m).map(|o| (o.stream, o.pos)), Some(("email".to_owned(), 958_710_595)));
    assert!(order(&utf7).unwrap().pos < order(&m).unwrap().pos, "written first, ordered first");
    let undated = read(b"From: pat@example.org\r\nTo: ember@example.com\r\nSubject: Hi\r\n\r\nhello\r\n").unwrap();
    assert_eq!((undated.date, order(&undated)), (None, None), "no Date: arrival order");
}

#[test]
fn an_html_only_message_is_read_as_text() {
    let raw = b"From: pat@example.org\r\nTo: ember@example.com\r\nSubject: Hi\r\nMIME-Version: 1.0\r\n\
Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
<html><head><style>p{color:red}</style></head><body><p>Caf=C3=A9 at <b>noon</b>&nbsp;&amp; then</p>\r\n\
<p>the museum</p></body></html>\r\n";
    let m = read(raw).unwrap();
    assert!(m.text.contains("Café at noon"), "{:?}", m.text);
    assert!(m.text.contains("& then") && m.text.contains("the museum"), "{:?}", m.text);
    assert!(!m.text.contains('<') && !m.text.contains("color"), "{:?}", m.text);
}

#[test]
fn attachments_come_out_whole() {
    let m = read(&fixture("mail-parser-legacy-041.eml")).unwrap();
    assert_eq!(m.attachments.len(), 1);
    let a = &m.attachments[0];
    assert_eq!(a.name.as_deref(), Some("redball.png"));
    assert!(a.bytes.starts_with(b"\x89PNG"), "base64 decoded");
    let m = read(&fixture("mail-parser-thirdparty-019.eml")).unwrap();
    let names: Vec<Option<&str>> = m.attachments.iter().map(|a| a.name.as_deref()).collect();
    assert!(names.contains(&Some("attach2.png")), "{names:?}");
    assert!(m.attachments.iter().all(|a| a.mime == "image/png"));
    // A forwarded email travels as an attachment of its own.
    let fwd = read(&fixture("mail-parser-rfc-002.eml")).unwrap();
    assert!(
        fwd.attachments.iter().any(|a| a.mime == "message/rfc822"),
        "{:?}",
        fwd.attachments.iter().map(|a| &a.mime).collect::<Vec<_>>()
    );
}

#[test]
fn a_real_reply_loses_its_signature_and_names_its_authentication() {
    let m = read(&fixture("mail-parser-thirdparty-015.eml")).unwrap();
    assert_eq!(m.subject, "Re: (#5290765) Proxmox Shop E-Mails");
    let body = quote::stripped(&m.text);
    assert!(body.starts_with("Hallo Stoiko,"), "{body}");
    assert!(
        body.ends_with("Beste Grüße"),
        "the signature after -- is gone: …{}",
        &body[body.len().saturating_sub(60)..]
    );
    assert!(
        !m.auth_results.is_empty() && m.auth_results.iter().all(|r| r.trim().starts_with("gmx.net;")),
        "{:?}",
        m.auth_results
    );
    // gmx.net's results are not Email Routing's: nothing is proven by them.
    assert!(
        matches!(super::auth::prove(&m, "mx.cloudflare.net"), super::auth::Sender::Unproven(w) if w.contains("no authentication results"))
    );
}

// --- the handler on a test front ---

const AGENT: &str = "ember@agents.example";

fn front() -> FakeFront {
    FakeFront::with(&[
        ("EMAIL_ADDRESS", AGENT),
        ("EMAIL_NAME", "Ember"),
        ("OWNER_IDS", "email:olga@example.com"),
        ("ALLOW_FROM", "email:pat@example.org"),
        ("LLM_API_KEY", "k"),
    ])
}

/// Email Routing's results for a message its `From:` domain really sent
/// (DKIM and DMARC pass, as it writes them above the sender's headers).
pub(super) fn genuine(from: &str) -> String {
    let domain = from.rsplit('@').next().unwrap_or("").trim_end_matches('>');
    format!(
        "Authentication-Results: mx.cloudflare.net;\r\n\tdkim=pass header.d={domain} header.s=s1 header.b=AbCd;\r\n\tdmarc=pass header.from={domain} policy.dmarc=none;\r\n\tspf=pass (mx.cloudflare.net: domain of x@{domain} designates 192.0.2.1 as permitted sender) smtp.mailfrom=x@{domain};\r\n\tarc=none smtp.remote-ip=192.0.2.1\r\n"
    )
}

fn email(from: &str, to: &str, cc: &str, id: &str, extra: &str, body: &str) -> Vec<u8> {
    let cc = if cc.is_empty() { String::new() } else { format!("Cc: {cc}\r\n") };
    let auth = if extra.contains("Authentication-Results") { String::new() } else { genuine(from) };
    format!(
        "{auth}From: {from}\r\nTo: {to}\r\n{cc}Subject: Trip plans\r\nMessage-ID: <{id}>\r\nDate: Mon, 3 Aug 2026 10:00:00 +0000\r\n{extra}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    )
    .into_bytes()
}

#[test]
fn the_owner_writing_alone_is_the_main_session_and_replies_keep_the_thread() {
    let f = front();
    let raw = email("Olga <olga@example.com>", AGENT, "", "m1@example.com", "", "Book the train.\r\n\r\n-- \r\nOlga");
    assert!(matches!(block_on(handle(&f, "olga@example.com", AGENT, &raw)), Verdict::Accepted(_)));
    let queued = f.queued.borrow();
    let (key, m) = &queued[0];
    assert_eq!(*key, SessionKey::parse("agent:main:main").unwrap());
    assert_eq!(m.text, "[Subject: Trip plans]\nBook the train.", "the signature is not what she said");
    assert_eq!((m.kind, m.channel), (ChatKind::Direct, ChannelKind::Email));
    let extra: serde_json::Value = hearth_json::from_str(m.reply_target.extra.as_deref().unwrap()).unwrap();
    assert_eq!(extra["subject"], "Re: Trip plans");
    assert_eq!(extra["inReplyTo"], "m1@example.com");
    assert_eq!(extra["to"], serde_json::json!(["olga@example.com"]));
}

#[test]
fn a_thread_with_others_is_its_own_session_and_stays_one_across_replies() {
    let f = front();
    let first =
        email("Pat <pat@example.org>", AGENT, "olga@example.com", "t1@example.org", "", "Shall we go to Lisbon?");
    assert!(matches!(block_on(handle(&f, "pat@example.org", AGENT, &first)), Verdict::Accepted(_)));
    // Olga answers in the thread (References), then Pat answers the agent's reply (In-Reply-To only).
    let second = email(
        "olga@example.com",
        &format!("pat@example.org, {AGENT}"),
        "",
        "t2@example.com",
        "In-Reply-To: <t1@example.org>\r\nReferences: <t1@example.org>\r\n",
        "Yes!\r\n\r\nOn Mon, Pat wrote:\r\n> Shall we go to Lisbon?",
    );
    block_on(handle(&f, "olga@example.com", AGENT, &second));
    let agents_reply = compose::message_id(&thread_of(&read(&first).unwrap()), AGENT, "x", "first");
    let third = email(
        "pat@example.org",
        AGENT,
        "olga@example.com",
        "t3@example.org",
        &format!("In-Reply-To: <{agents_reply}>\r\n"),
        "Great.",
    );
    block_on(handle(&f, "pat@example.org", AGENT, &third));
    let queued = f.queued.borrow();
    let keys: Vec<String> = queued.iter().map(|(k, _)| k.render()).collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| k == &keys[0]), "one thread, one session: {keys:?}");
    assert!(keys[0].starts_with("agent:main:email:group:"), "{}", keys[0]);
    assert_eq!(queued[1].1.text, "Yes!", "the quoted history is not read again");
    assert_eq!(queued[1].1.user_text(), "[olga@example.com]: Yes!");
}

#[test]
fn strangers_failed_authentication_and_robots_do_not_reach_the_agent() {
    let f = front();
    let stranger = email("eve@example.net", AGENT, "", "s1@example.net", "", "hello");
    let Verdict::Rejected(why) = block_on(handle(&f, "eve@example.net", AGENT, &stranger)) else { panic!() };
    assert!(why.contains("email:eve@example.net"), "{why}");
    let forged = email(
        "olga@example.com",
        AGENT,
        "",
        "s2@example.net",
        "Authentication-Results: mx.cloudflare.net; spf=fail smtp.mailfrom=olga@example.com; dkim=none; dmarc=fail header.from=example.com\r\n",
        "it is me, really",
    );
    assert!(
        matches!(block_on(handle(&f, "attacker@example.net", AGENT, &forged)), Verdict::Rejected(w) if w.contains("could not be verified"))
    );
    let robot = email(
        "olga@example.com",
        AGENT,
        "",
        "s3@example.com",
        "Auto-Submitted: auto-replied\r\n",
        "I am out of office",
    );
    assert!(
        matches!(block_on(handle(&f, "olga@example.com", AGENT, &robot)), Verdict::Accepted(w) if w.contains("automatic"))
    );
    let elsewhere = email("olga@example.com", "someone@agents.example", "", "s4@example.com", "", "hi");
    assert!(matches!(
        block_on(handle(&f, "olga@example.com", "someone@agents.example", &elsewhere)),
        Verdict::Rejected(_)
    ));
    assert!(f.queued.borrow().is_empty());
}

#[test]
fn attachments_are_kept_for_the_session_beside_its_media() {
    let f = front();
    let raw = String::from_utf8(fixture("mail-parser-legacy-041.eml")).unwrap();
    // The real message, addressed to the agent from its owner.
    let raw = raw.replacen("From: ", "X-Original-From: ", 1).replacen("To: ", "X-Original-To: ", 1);
    let raw = format!("{}From: olga@example.com\r\nTo: {AGENT}\r\n{raw}", genuine("olga@example.com"));
    assert!(matches!(block_on(handle(&f, "olga@example.com", AGENT, raw.as_bytes())), Verdict::Accepted(_)));
    let queued = f.queued.borrow();
    let media = &queued[0].1.media;
    assert_eq!(media.len(), 1);
    assert!(media[0].handle.starts_with("media/agent:main:main/email-"), "{}", media[0].handle);
    assert_eq!(media[0].filename.as_deref(), Some("redball.png"));
    let stash = f.stash.borrow();
    assert!(stash.get(&media[0].handle).is_some_and(|(b, _)| b.starts_with(b"\x89PNG")));
}

#[test]
fn auto_replies_without_the_standard_header_are_never_answered() {
    let f = front();
    let olga = "Olga <olga@example.com>";
    let replying = "In-Reply-To: <abc.1@agents.example>\r\n";
    let cases: &[(&str, &str)] = &[
        ("X-Autoreply", "X-Autoreply: yes\r\n"),
        ("X-Autorespond", "X-Autorespond: Out of office\r\n"),
        ("Precedence: auto_reply", "Precedence: auto_reply\r\n"),
        ("X-Autogenerated: Reply", "X-Autogenerated: Reply\r\n"),
        ("a delivery report", "Content-Type: multipart/report; report-type=delivery-status\r\n"),
    ];
    for (i, (what, extra)) in cases.iter().enumerate() {
        let raw = email(olga, AGENT, "", &format!("auto{i}@example.com"), extra, "I am away until Monday.");
        assert!(
            matches!(block_on(handle(&f, "olga@example.com", AGENT, &raw)), Verdict::Accepted(w) if w.contains("automatic")),
            "{what}"
        );
    }
    let subjects = [
        "Automatic reply: Trip plans",
        "Out of Office: Trip plans",
        "Automatische Antwort: Reise",
        "自动回复: 行程",
        "Réponse automatique : Voyage",
    ];
    for (i, subject) in subjects.iter().enumerate() {
        let raw = String::from_utf8(email(olga, AGENT, "", &format!("subj{i}@example.com"), "", "I am away."))
            .unwrap()
            .replace("Subject: Trip plans", &format!("Subject: {subject}"));
        assert!(
            matches!(block_on(handle(&f, "olga@example.com", AGENT, raw.as_bytes())), Verdict::Accepted(w) if w.contains("automatic")),
            "{subject}"
        );
    }
    // "Auto:" only on a reply to the agent: a new message about a car is read.
    let auto = |id: &str, extra: &str| {
        String::from_utf8(email(olga, AGENT, "", id, extra, "Winterreifen bitte."))
            .unwrap()
            .replace("Subject: Trip plans", "Subject: Auto: Reifenwechsel")
    };
    assert!(
        matches!(block_on(handle(&f, "olga@example.com", AGENT, auto("car1@example.com", replying).as_bytes())), Verdict::Accepted(w) if w.contains("automatic"))
    );
    assert!(f.queued.borrow().is_empty(), "none of them reached the agent");
    assert!(
        matches!(block_on(handle(&f, "olga@example.com", AGENT, auto("car2@example.com", "").as_bytes())), Verdict::Accepted(w) if w.contains("queued"))
    );
}

#[test]
fn a_reply_goes_to_the_sender_only() {
    let f = front();
    let raw = email(
        "Pat <pat@example.org>",
        &format!("{AGENT}, stranger@example.net"),
        "olga@example.com, third@example.net",
        "only1@example.org",
        "Reply-To: someone-else@example.net\r\n",
        "Lisbon?",
    );
    assert!(matches!(block_on(handle(&f, "pat@example.org", AGENT, &raw)), Verdict::Accepted(_)));
    let queued = f.queued.borrow();
    let extra: serde_json::Value = hearth_json::from_str(queued[0].1.reply_target.extra.as_deref().unwrap()).unwrap();
    assert_eq!(extra["to"], serde_json::json!(["pat@example.org"]));
    assert!(extra["cc"].as_array().is_none_or(|c| c.is_empty()), "{extra}");
}
