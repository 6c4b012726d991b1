//! The webhook's whole flow on a test front: the secret header, the update
//! read and routed, the session it is queued in, and what Telegram is
//! answered (a non-2xx makes it deliver the update again).

use super::*;
use crate::channels::shared::web::Later;
use crate::inbound::SessionKey;
use crate::testing::FakeFront;
use futures::executor::block_on;

const SECRET: &str = "s3cret_token-1";

fn front(owner: &str) -> FakeFront {
    FakeFront::with(&[
        ("TELEGRAM_WEBHOOK_SECRET", SECRET),
        ("TELEGRAM_BOT_TOKEN", "999:abc"),
        ("OWNER_IDS", owner),
        ("LLM_API_KEY", "k"),
    ])
}

fn post(body: &str, secret: Option<&str>) -> WebRequest {
    let req = WebRequest::post(body.as_bytes().to_vec());
    match secret {
        Some(s) => req.with_header(SECRET_HEADER, s),
        None => req,
    }
}

fn call(front: &FakeFront, req: &WebRequest) -> WebReply {
    block_on(handle(front, "main", req))
}

fn private_text(update_id: u64, from: u64, text: &str) -> String {
    format!(
        r#"{{"update_id":{update_id},"message":{{"message_id":{update_id},"date":1,"chat":{{"id":{from},"type":"private"}},
        "from":{{"id":{from},"is_bot":false,"first_name":"Ana"}},"text":"{text}"}}}}"#
    )
}

#[test]
fn a_wrong_or_missing_secret_is_refused_before_anything_is_read() {
    let f = front("telegram:42");
    for secret in [None, Some("wrong"), Some("s3cret_token-")] {
        assert_eq!(call(&f, &post(&private_text(1, 42, "hi"), secret)).status, 401, "{secret:?}");
    }
    // Not even JSON: still 401, the body is never read without the secret.
    assert_eq!(call(&f, &post("{not json", Some("nope"))).status, 401);
    assert!(f.queued.borrow().is_empty());
}

#[test]
fn the_owners_message_is_queued_in_the_main_session_once() {
    let f = front("telegram:42");
    let r = call(&f, &post(&private_text(7, 42, "hello"), Some(SECRET)));
    assert_eq!((r.status, r.body.as_str()), (200, "queued"));
    // Telegram delivers again (its answer was lost): the same update is not a second turn.
    let again = call(&f, &post(&private_text(7, 42, "hello"), Some(SECRET)));
    assert_eq!((again.status, again.body.as_str()), (200, "duplicate"));
    let queued = f.queued.borrow();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].0, SessionKey::parse("agent:main:main").unwrap());
    assert_eq!(queued[0].1.text, "hello");
}

#[test]
fn a_stranger_is_told_their_id_after_the_answer_and_starts_no_turn() {
    let f = front("telegram:42");
    let r = call(&f, &post(&private_text(8, 77, "who are you?"), Some(SECRET)));
    assert_eq!((r.status, r.body.as_str()), (200, "not allowed"));
    let Some(Later::Tell { target, text, .. }) = r.later.as_deref() else { panic!("{:?}", r.later) };
    assert_eq!((target.channel, target.chat_id.as_str()), (ChannelKind::Telegram, "77"));
    assert!(text.contains("telegram:77"), "{text}");
    assert!(f.queued.borrow().is_empty());
}

#[test]
fn an_update_that_cannot_be_queued_is_answered_503_so_telegram_delivers_it_again() {
    let f = front("telegram:42");
    *f.enqueue_error.borrow_mut() = Some("the session object is overloaded".into());
    let r = call(&f, &post(&private_text(9, 42, "hello"), Some(SECRET)));
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("overloaded"));
}

#[test]
fn edits_start_nothing_and_a_malformed_update_is_a_400() {
    let f = front("telegram:42");
    let edit = r#"{"update_id":10,"edited_message":{"message_id":3,"date":1,"edit_date":2,
        "chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Ana"},"text":"hi!"}}"#;
    let r = call(&f, &post(edit, Some(SECRET)));
    assert_eq!(r.status, 200);
    assert!(r.body.starts_with("ignored"), "{}", r.body);
    assert_eq!(call(&f, &post(r#"{"update_id":"x"}"#, Some(SECRET))).status, 400);
    assert!(f.queued.borrow().is_empty());
}

#[test]
fn an_albums_photos_are_queued_in_one_session_with_one_batch() {
    let f = front("telegram:42");
    let photo = |update_id: u64, caption: &str| {
        format!(
            r#"{{"update_id":{update_id},"message":{{"message_id":{update_id},"date":1,"media_group_id":"555",
            "chat":{{"id":42,"type":"private"}},"from":{{"id":42,"is_bot":false,"first_name":"Ana"}},
            "photo":[{{"file_id":"f{update_id}","file_unique_id":"u{update_id}","width":90,"height":90}}]{caption}}}}}"#
        )
    };
    assert_eq!(call(&f, &post(&photo(20, r#","caption":"our trip""#), Some(SECRET))).body, "queued");
    assert_eq!(call(&f, &post(&photo(21, ""), Some(SECRET))).body, "queued");
    let queued = f.queued.borrow();
    assert_eq!(queued.len(), 2, "each item is queued; the session joins them");
    assert!(queued
        .iter()
        .all(|(k, m)| k.render() == "agent:main:main" && m.batch.as_deref() == Some("telegram:album:555")));
}

#[test]
fn each_message_says_what_this_isolate_saw_of_the_updates_before_it() {
    use crate::inbound::Earlier;
    // The arrivals are per isolate (a thread here) and per agent.
    std::thread::spawn(|| {
        let f = front("telegram:42,telegram:43");
        let earlier = |f: &FakeFront| f.queued.borrow().last().and_then(|(_, m)| m.order.clone()).and_then(|o| o.earlier);
        let send = |f: &FakeFront, update: u64, from: u64| {
            assert_eq!(call(f, &post(&private_text(update, from, "hi"), Some(SECRET))).status, 200);
        };
        // A new isolate's first updates: nothing known before them.
        send(&f, 100, 42);
        assert_eq!(earlier(&f), None);
        // A moment on, another person's message: 100 arrived and was queued, so nothing is missing.
        f.now.set(f.now.get() + 1_000);
        send(&f, 101, 43);
        assert_eq!(earlier(&f), Some(Earlier::Arrived));
        // Update 103 arrives before 102: 102 is missing.
        f.now.set(f.now.get() + 5);
        send(&f, 103, 42);
        assert_eq!(earlier(&f), Some(Earlier::Missing));
        // 102 comes; then 104: nothing missing.
        send(&f, 102, 42);
        assert_eq!(earlier(&f), Some(Earlier::Arrived));
        send(&f, 104, 43);
        assert_eq!(earlier(&f), Some(Earlier::Arrived));
        // An update Telegram must deliver again (not queued: 503) is missing for the next one.
        *f.enqueue_error.borrow_mut() = Some("overloaded".into());
        assert_eq!(call(&f, &post(&private_text(105, 42, "hi"), Some(SECRET))).status, 503);
        *f.enqueue_error.borrow_mut() = None;
        send(&f, 106, 43);
        assert_eq!(earlier(&f), Some(Earlier::Missing));
        // An edit (no turn) is an update that arrived too.
        f.now.set(f.now.get() + 1_000);
        let edit = r#"{"update_id":107,"edited_message":{"message_id":5,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Ana"},"text":"x"}}"#;
        assert_eq!(call(&f, &post(edit, Some(SECRET))).status, 200);
        send(&f, 108, 42);
        assert_eq!(earlier(&f), Some(Earlier::Arrived));
    })
    .join()
    .unwrap();
}
