//! The interactions endpoint's whole flow on a test front: the Ed25519
//! signature, the interaction read and routed, what is queued and what
//! Discord is answered.

use super::*;
use crate::testing::FakeFront;
use ed25519_dalek::{Signer, SigningKey};
use futures::executor::block_on;
use serde_json::{json, Value};

const OWNER: &str = "53908232506183680";

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

fn front(owner: &str) -> FakeFront {
    let public = crate::channels::shared::web::hex(key().verifying_key().as_bytes());
    FakeFront::with(&[
        ("DISCORD_PUBLIC_KEY", public.as_str()),
        ("DISCORD_APPLICATION_ID", "99"),
        ("DISCORD_BOT_TOKEN", "bot-token"),
        ("OWNER_IDS", owner),
        ("LLM_API_KEY", "k"),
    ])
}

fn signed(body: &[u8]) -> WebRequest {
    let ts = "1800000000";
    let mut message = ts.as_bytes().to_vec();
    message.extend_from_slice(body);
    let signature = crate::channels::shared::web::hex(&key().sign(&message).to_bytes());
    WebRequest::post(body.to_vec())
        .with_header(super::verify::SIGNATURE_HEADER, &signature)
        .with_header(super::verify::TIMESTAMP_HEADER, ts)
}

fn call(front: &FakeFront, req: &WebRequest) -> (u16, Value) {
    let r = block_on(handle(front, "main", req));
    (r.status, hearth_json::from_str(&r.body).unwrap_or(Value::String(r.body)))
}

/// A command in the bot's DM, created at the front's time (the snowflake
/// carries it; the turn's deadline is counted from it).
fn command(front: &FakeFront, user: &str, name: &str, prompt: Option<&str>) -> Vec<u8> {
    let id = ((front.now.get() - 1_420_070_400_000) as u64) << 22;
    let options = prompt.map(|p| json!([{"name": "prompt", "type": 3, "value": p}])).unwrap_or(json!([]));
    json!({"id": id.to_string(), "type": 2, "application_id": "99", "token": "tok", "channel_id": "700",
        "context": 1, "user": {"id": user, "username": "mason"},
        "data": {"id": "c1", "name": name, "type": 1, "options": options}})
    .to_string()
    .into_bytes()
}

#[test]
fn a_signed_ping_is_answered_and_anything_unsigned_or_altered_is_401() {
    let f = front(&format!("discord:{OWNER}"));
    let ping = br#"{"id":"787053080478613555","token":"ThisIsATokenFromDiscordThatIsVeryLong","type":1,"version":1}"#;
    assert_eq!(call(&f, &signed(ping)), (200, json!({"type": 1})));
    assert_eq!(call(&f, &WebRequest::post(ping.to_vec())).0, 401, "no signature");
    let mut altered = signed(ping);
    altered.body.push(b' ');
    assert_eq!(call(&f, &altered).0, 401, "another body");
    let other_key = SigningKey::from_bytes(&[8u8; 32]);
    let forged = WebRequest::post(ping.to_vec())
        .with_header(
            super::verify::SIGNATURE_HEADER,
            &crate::channels::shared::web::hex(&other_key.sign(ping).to_bytes()),
        )
        .with_header(super::verify::TIMESTAMP_HEADER, "");
    assert_eq!(call(&f, &forged).0, 401, "signed by someone else");
}

#[test]
fn the_owners_ask_is_deferred_and_queued_in_the_main_session_once() {
    let f = front(&format!("discord:{OWNER}"));
    let body = command(&f, OWNER, "ask", Some("what's on today?"));
    assert_eq!(call(&f, &signed(&body)), (200, json!({"type": 5})));
    // A repeat of the same interaction is answered, not queued twice.
    assert_eq!(call(&f, &signed(&body)), (200, json!({"type": 5})));
    let queued = f.queued.borrow();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].0.render(), "agent:main:main");
    assert_eq!(queued[0].1.text, "what's on today?");
}

#[test]
fn a_stranger_gets_their_id_in_an_ephemeral_note_and_no_turn() {
    let f = front(&format!("discord:{OWNER}"));
    let (status, answer) = call(&f, &signed(&command(&f, "123456789", "ask", Some("hi"))));
    assert_eq!((status, answer["type"].as_u64()), (200, Some(4)));
    assert_eq!(answer["data"]["flags"], 64, "only they see it");
    assert!(answer["data"]["content"].as_str().unwrap().contains("discord:123456789"), "{answer}");
    assert!(f.queued.borrow().is_empty());
}

#[test]
fn status_is_answered_at_once_and_a_queue_failure_is_said_not_left_thinking() {
    let f = front(&format!("discord:{OWNER}"));
    let (_, answer) = call(&f, &signed(&command(&f, OWNER, "status", None)));
    assert_eq!(answer["type"], 4);
    assert!(f.queued.borrow().is_empty(), "no turn for /status");
    *f.enqueue_error.borrow_mut() = Some("the session object is overloaded".into());
    let (status, answer) = call(&f, &signed(&command(&f, OWNER, "ask", Some("hello"))));
    assert_eq!((status, answer["type"].as_u64()), (200, Some(4)));
    assert!(answer["data"]["content"].as_str().unwrap().contains("try again"), "{answer}");
}

#[test]
fn buttons_and_autocomplete_get_the_answers_discord_expects() {
    let f = front(&format!("discord:{OWNER}"));
    let button = br#"{"id":"1","type":3,"token":"t","data":{"custom_id":"x","component_type":2},"user":{"id":"5","username":"u"}}"#;
    let (_, answer) = call(&f, &signed(button));
    assert_eq!((answer["type"].as_u64(), answer["data"]["flags"].as_u64()), (Some(4), Some(64)));
    let auto = br#"{"id":"2","type":4,"token":"t","data":{"name":"ask"},"user":{"id":"5","username":"u"}}"#;
    assert_eq!(call(&f, &signed(auto)).1, json!({"type": 8, "data": {"choices": []}}));
}
