//! WhatsApp's notifications read from real payloads in
//! `tests/fixtures/real-world/whatsapp/`, and the webhook's whole flow
//! (subscription, signature, routing, the owner's main session).

use super::*;
use crate::channels::shared::web::{hex, WebReply, WebRequest};
use crate::inbound::SessionKey;
use crate::testing::{hmac_sha256, FakeFront};
use futures::executor::block_on;

fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/whatsapp");
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn only(name: &str) -> Incoming {
    let n = read(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(n.messages.len(), 1, "{name}");
    n.messages.into_iter().next().unwrap()
}

/// pywa's fixtures are from October 2023: read them as if received then.
const THEN: i64 = 1_697_045_000_000;

#[test]
fn every_message_kind_reads_as_what_it_is() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("pywa-text.json", "Body Text", &[]),
        ("pywa-image.json", "", &["photo"]),
        ("pywa-video.json", "caption", &["video"]),
        ("pywa-document.json", "caption", &["document"]),
        ("pywa-audio.json", "", &["audio"]),
        ("pywa-voice.json", "", &["voice"]),
        ("pywa-static-sticker.json", "", &["sticker"]),
        ("pywa-current-location.json", "[location: 12.25089, 43.90539]", &[]),
        (
            "pywa-chosen-location.json",
            "[location: 37.4611978, -122.2164385 (Facebook HQ, 1 Hacker Way, Menlo Park, CA 94025)]",
            &[],
        ),
        ("pywa-reply.json", "replied text", &[]),
        ("pywa-forwarded.json", "forwarded text", &[]),
        ("pywa-unsupported.json", "[a kind of WhatsApp message I cannot read: unsupported, Message type unknown]", &[]),
        ("pywa-order.json", "[an order from the catalog]", &[]),
    ];
    for (file, text, media) in cases {
        let m = to_inbound(&only(file), THEN).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(m.text, *text, "{file}");
        assert_eq!(m.media.iter().map(|x| x.kind.as_str()).collect::<Vec<_>>(), *media, "{file}");
        assert_eq!(
            (m.kind, m.chat_id.as_str(), m.sender_name.as_str()),
            (ChatKind::Direct, "972987654321", "Test Name")
        );
        assert_eq!(m.dedupe_key, "whatsapp:wamid.xyzxyz", "{file}");
        let order = m.order.as_ref().unwrap_or_else(|| panic!("{file}: no position"));
        assert_eq!(order.stream, "whatsapp", "{file}");
    }
    // Meta's timestamp, in seconds: the only position WhatsApp gives.
    assert_eq!(to_inbound(&only("pywa-text.json"), THEN).unwrap().order.unwrap().pos, 1_697_043_223);
    let doc = to_inbound(&only("pywa-document.json"), THEN).unwrap();
    assert_eq!(
        (doc.media[0].handle.as_str(), doc.media[0].filename.as_deref()),
        ("1234567890987654321", Some("filename.pdf"))
    );
    assert_eq!(doc.media[0].mime_type, "application/pdf");
    let contacts = to_inbound(&only("pywa-contacts.json"), THEN).unwrap();
    assert!(
        contacts.text.starts_with("[contact: Chandler Bing (+1 555-555-5555); Monica (+1 666-666-6666)"),
        "{}",
        contacts.text
    );
}

#[test]
fn replies_and_forwards_carry_their_context_and_the_window_counts_from_the_message() {
    let reply = to_inbound(&only("pywa-reply.json"), THEN).unwrap();
    assert_eq!(
        reply.user_text(),
        "[Replying to your message]\nreplied text",
        "a reply to the business number's message"
    );
    let fwd = to_inbound(&only("pywa-forwarded.json"), THEN).unwrap();
    assert!(fwd.user_text().starts_with("[Forwarded from someone"), "{}", fwd.user_text());
    let extra = ReplyExtra::of(&reply.reply_target).unwrap();
    assert_eq!(extra.from, "1122334455667");
    assert_eq!(extra.until, 1_697_044_746_000 + WINDOW_MS);
    // A notification that arrives late still counts from when the person wrote.
    let late = to_inbound(&only("pywa-reply.json"), THEN + 3 * WINDOW_MS).unwrap();
    assert_eq!(ReplyExtra::of(&late.reply_target).unwrap().until, 1_697_044_746_000 + WINDOW_MS);
}

#[test]
fn reactions_and_statuses_start_nothing() {
    assert_eq!(to_inbound(&only("pywa-reaction.json"), THEN), Err(Ignored::Reaction("😮".into())));
    assert_eq!(to_inbound(&only("pywa-unreaction-empty.json"), THEN), Err(Ignored::Reaction("removed".into())));
    for s in ["sent", "delivered", "read"] {
        let n = read(&fixture(&format!("pywa-status-{s}.json"))).unwrap();
        assert!(n.messages.is_empty());
        assert_eq!(n.statuses[0].status, s);
    }
    let failed = read(&fixture("pywa-status-failed.json")).unwrap();
    assert!(failed.statuses[0].error.as_deref().unwrap().contains("130472"), "{:?}", failed.statuses);
    assert!(read(br#"{"object":"page","entry":[]}"#).is_err());
}

// --- the webhook on a test front ---

const APP_SECRET: &str = "whatsapp-app-secret";

fn front(owner: &str) -> FakeFront {
    let f = FakeFront::with(&[
        ("WHATSAPP_VERIFY_TOKEN", "verify-me"),
        ("WHATSAPP_APP_SECRET", APP_SECRET),
        ("WHATSAPP_ACCESS_TOKEN", "EAAG"),
        ("OWNER_IDS", owner),
        ("LLM_API_KEY", "k"),
    ]);
    f.now.set(THEN);
    f
}

fn signed(body: &[u8]) -> WebRequest {
    WebRequest::post(body.to_vec())
        .with_header("X-Hub-Signature-256", &format!("sha256={}", hex(&hmac_sha256(APP_SECRET.as_bytes(), body))))
}

fn call(f: &FakeFront, req: &WebRequest) -> WebReply {
    block_on(webhook::handle(f, "main", req))
}

#[test]
fn meta_subscribes_with_the_verify_token() {
    let f = front("");
    let get = |token: &str| WebRequest {
        method: "GET".into(),
        query: vec![
            ("hub.mode".into(), "subscribe".into()),
            ("hub.verify_token".into(), token.into()),
            ("hub.challenge".into(), "1158201444".into()),
        ],
        ..Default::default()
    };
    let ok = webhook::subscribe(&f, "main", &get("verify-me"));
    assert_eq!((ok.status, ok.body.as_str()), (200, "1158201444"));
    assert_eq!(webhook::subscribe(&f, "main", &get("guess")).status, 403);
}

#[test]
fn the_owners_number_is_the_main_session_and_a_repeat_is_one_message() {
    let f = front("whatsapp:+972987654321");
    let body = fixture("pywa-text.json");
    assert_eq!(call(&f, &signed(&body)).body, "queued");
    assert_eq!(call(&f, &signed(&body)).body, "duplicate");
    let queued = f.queued.borrow();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].0, SessionKey::parse("agent:main:main").unwrap());
    assert_eq!(queued[0].1.text, "Body Text");
}

#[test]
fn unsigned_and_forged_notifications_are_refused() {
    let f = front("whatsapp:+972987654321");
    let body = fixture("pywa-text.json");
    assert_eq!(call(&f, &WebRequest::post(body.clone())).status, 401);
    let mut forged = signed(&body);
    forged.body = fixture("pywa-image.json");
    assert_eq!(call(&f, &forged).status, 401);
    assert!(f.queued.borrow().is_empty());
}

#[test]
fn a_stranger_is_told_their_id_and_statuses_and_reactions_queue_nothing() {
    let f = front("whatsapp:+15551234567");
    let r = call(&f, &signed(&fixture("pywa-text.json")));
    assert_eq!(r.body, "not allowed");
    assert!(
        matches!(r.later.as_deref(), Some(crate::channels::shared::web::Later::Tell { text, .. }) if text.contains("whatsapp:972987654321"))
    );
    let owner = front("whatsapp:+972987654321");
    assert_eq!(call(&owner, &signed(&fixture("pywa-status-delivered.json"))).body, "1 status update(s)");
    assert_eq!(call(&owner, &signed(&fixture("pywa-reaction.json"))).body, "ignored: a reaction (😮)");
    call(&owner, &signed(&fixture("pywa-status-failed.json")));
    assert!(owner.logs.borrow().iter().any(|l| l.contains("was not delivered") && l.contains("130472")));
    assert!(owner.queued.borrow().is_empty());
}
