//! Slack's events read from the documented payloads in
//! `tests/fixtures/real-world/slack/`, and the webhook's whole flow
//! (signature, retries, routing, the owner's main session) on a test front.

use super::*;
use crate::channels::shared::web::{WebReply, WebRequest};
use crate::inbound::SessionKey;
use crate::testing::{hmac_sha256, FakeFront};
use futures::executor::block_on;

fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/slack");
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn event_of(name: &str) -> (Option<String>, Value) {
    match read(&fixture(name)).unwrap() {
        Envelope::Event { bot_user, event, .. } => (bot_user, event),
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn the_documented_url_verification_is_read() {
    assert_eq!(
        read(&fixture("url-verification-docs.json")).unwrap(),
        Envelope::UrlVerification { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into() }
    );
    assert!(read(b"{not json").is_err());
    assert_eq!(read(br#"{"type":"app_rate_limited"}"#).unwrap(), Envelope::Other("app_rate_limited".into()));
}

#[test]
fn a_mention_in_a_channel_is_a_group_message_answered_in_its_thread() {
    let (bot, event) = event_of("app-mention-docs.json");
    // The docs' authorization is a user's, not the bot's: the leading mention is dropped anyway.
    assert_eq!(bot, None);
    let m = to_inbound(&event, None, 5).unwrap();
    assert_eq!((m.kind, m.chat_id.as_str(), m.sender_id.as_str()), (ChatKind::Group, "C123ABC456", "U061F7AUR"));
    assert_eq!(m.text, "is it everything a river should be?");
    assert_eq!(m.dedupe_key, "slack:C123ABC456:1515449522.000016");
    let order = m.order.as_ref().unwrap();
    assert_eq!((order.stream.as_str(), order.pos), ("slack", 1_515_449_522_000_016), "its ts, in microseconds");
    assert_eq!(m.thread_id.as_deref(), Some("1515449522.000016"), "a top-level mention starts a thread");
    assert_eq!(m.reply_target.thread_id.as_deref(), Some("1515449522.000016"));
    assert!(m.addressed);
}

#[test]
fn a_mention_in_a_thread_stays_in_that_thread_and_reads_as_words() {
    let (bot, event) = event_of("spec-app-mention-in-thread.json");
    assert_eq!(bot.as_deref(), Some("U0LAN0Z89"));
    let m = to_inbound(&event, bot.as_deref(), 5).unwrap();
    assert_eq!(m.text, "and what about the delta & the sea? see this (https://en.wikipedia.org/wiki/River)");
    assert_eq!(m.thread_id.as_deref(), Some("1515449522.000016"), "the thread's root, the conversation");
    assert_eq!(m.reply_target.reply_to.as_deref(), Some("1515449530.000100"));
    // The same message as a `message.channels` event is not a second turn.
    let mut as_message = event.clone();
    as_message["type"] = "message".into();
    as_message["channel_type"] = "channel".into();
    assert_eq!(to_inbound(&as_message, bot.as_deref(), 5), Err(Ignored::ChannelMessage));
}

#[test]
fn a_direct_message_and_its_file() {
    let (_, event) = event_of("message-im-docs.json");
    let m = to_inbound(&event, None, 5).unwrap();
    assert_eq!(
        (m.kind, m.chat_id.as_str(), m.text.as_str()),
        (ChatKind::Direct, "D024BE91L", "Hello hello can you hear me?")
    );
    assert_eq!((m.thread_id, m.reply_target.thread_id), (None, None), "a DM's answer follows the message");
    let (_, event) = event_of("message-file-share-docs.json");
    let m = to_inbound(&event, None, 5).unwrap();
    assert_eq!(m.text, "We got one!");
    assert_eq!(m.media.len(), 1);
    let f = &m.media[0];
    assert_eq!(f.handle, "https://files.slack.com/files-pri/T061EG9R6-F0RDC39U1/download/ghostrap.png");
    assert_eq!(
        (f.mime_type.as_str(), f.filename.as_deref(), f.size),
        ("image/png", Some("ghostrap.png"), Some(196920))
    );
}

#[test]
fn bots_edits_and_service_messages_start_nothing() {
    let (_, event) = event_of("bot-message-docs.json");
    assert_eq!(to_inbound(&event, None, 5), Err(Ignored::Bot));
    let (_, mut event) = event_of("message-im-docs.json");
    event["subtype"] = "message_changed".into();
    assert_eq!(to_inbound(&event, None, 5), Err(Ignored::Subtype("message_changed".into())));
    // Hearth's own reply in the DM comes back as a message event with its bot user.
    let (_, mut own) = event_of("message-im-docs.json");
    own["user"] = "U0LAN0Z89".into();
    assert_eq!(to_inbound(&own, Some("U0LAN0Z89"), 5), Err(Ignored::Bot));
    let (_, mut empty) = event_of("message-im-docs.json");
    empty["text"] = "".into();
    assert_eq!(to_inbound(&empty, None, 5), Err(Ignored::Empty));
}

// --- the webhook, end to end on a test front ---

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

fn front(owner: &str) -> FakeFront {
    FakeFront::with(&[
        ("SLACK_SIGNING_SECRET", SECRET),
        ("SLACK_BOT_TOKEN", "xoxb-test"),
        ("SLACK_API_BASE", "https://slack.test/api"),
        ("OWNER_IDS", owner),
        ("ALLOW_FROM", "slack:C123ABC456"),
        ("LLM_API_KEY", "k"),
    ])
}

/// The request as Slack signs it at the front's time.
fn signed(front: &FakeFront, body: &[u8]) -> WebRequest {
    let ts = (front.now.get() / 1000).to_string();
    let mut base = format!("v0:{ts}:").into_bytes();
    base.extend_from_slice(body);
    let sig = format!("v0={}", crate::channels::shared::web::hex(&hmac_sha256(SECRET.as_bytes(), &base)));
    WebRequest::post(body.to_vec()).with_header("X-Slack-Request-Timestamp", &ts).with_header("X-Slack-Signature", &sig)
}

fn call(front: &FakeFront, req: &WebRequest) -> WebReply {
    block_on(webhook::handle(front, "main", req))
}

#[test]
fn the_owners_dm_is_the_main_session_and_a_retry_is_answered_once() {
    let f = front("slack:U2147483697");
    let body = fixture("message-im-docs.json");
    let r = call(&f, &signed(&f, &body));
    assert_eq!((r.status, r.body.as_str()), (200, "queued"));
    // Slack retries (its answer was lost, say): the same message, not a second turn.
    let retry =
        signed(&f, &body).with_header("X-Slack-Retry-Num", "1").with_header("X-Slack-Retry-Reason", "http_timeout");
    assert_eq!(call(&f, &retry).body, "duplicate");
    let queued = f.queued.borrow();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].0, SessionKey::parse("agent:main:main").unwrap());
}

#[test]
fn bad_signatures_stale_requests_and_strangers_are_refused() {
    let f = front("slack:U2147483697");
    let body = fixture("message-im-docs.json");
    let mut forged = signed(&f, &body);
    forged.body.extend_from_slice(b" ");
    assert_eq!(call(&f, &forged).status, 401);
    let unsigned = WebRequest::post(body.clone());
    assert_eq!(call(&f, &unsigned).status, 401);
    // Signed six minutes ago: a replay.
    let old = signed(&f, &body);
    f.now.set(f.now.get() + 6 * 60_000);
    assert_eq!(call(&f, &old).status, 401);
    assert!(f.queued.borrow().is_empty());
    // A DM from someone not allowed: told their id after the answer, no turn.
    let g = front("slack:U999");
    let r = call(&g, &signed(&g, &body));
    assert_eq!((r.status, r.body.as_str()), (200, "not allowed"));
    assert!(matches!(r.later.as_deref(), Some(crate::channels::shared::web::Later::Tell { .. })));
    assert!(g.queued.borrow().is_empty());
    // Nor is a stranger's name asked of Slack.
    assert!(g.http.requests.borrow().is_empty());
}

#[test]
fn the_request_url_check_is_answered_with_its_challenge() {
    let f = front("");
    let r = call(&f, &signed(&f, &fixture("url-verification-docs.json")));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, r#"{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#);
}

#[test]
fn a_mention_in_an_allowed_channel_is_its_threads_session() {
    let f = front("slack:U2147483697");
    f.http.reply(200, std::str::from_utf8(&fixture("users-info-docs.json")).unwrap());
    let r = call(&f, &signed(&f, &fixture("spec-app-mention-in-thread.json")));
    assert_eq!(r.body, "queued");
    assert_eq!(f.queued.borrow()[0].0.render(), "agent:main:slack:group:C123ABC456:topic:1515449522.000016");
    // The sender's name from users.info, queued with the message (its id stays the id).
    let (id, name) = (f.queued.borrow()[0].1.sender_id.clone(), f.queued.borrow()[0].1.sender_name.clone());
    assert_eq!((id.as_str(), name.as_str()), ("U061F7AUR", "spengler"));
    assert!(f.http.requests.borrow()[0].url.ends_with("/users.info?user=U061F7AUR"));
    // The bot's own messages never start a turn.
    let r = call(&f, &signed(&f, &fixture("bot-message-docs.json")));
    assert_eq!((r.status, r.body.as_str()), (200, "ignored: written by a bot"));
}
