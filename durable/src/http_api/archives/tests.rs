//! The sessions list and the archives natively: the live sessions as the
//! Agent object answers them beside the archives in the bucket, and one
//! archive gunzipped and decoded (or refused, naming why).

use crate::http_api::tests::{answers, ask, body, sent, STORE};
use crate::ports::{ObjectStore, PutOptions};
use futures::executor::block_on;
use r2_layout::message::Message;
use serde_json::json;

fn archive(key: &str, messages: &[Message], session_key: &str) {
    let store = STORE.with(|s| s.clone());
    let gz = block_on(store.gzip(&r2_layout::archive::encode_lines(messages))).unwrap();
    let meta = vec![("sessionKey".to_owned(), session_key.to_owned())];
    let opts = PutOptions { content_type: Some("application/gzip".into()), custom_metadata: meta };
    block_on(store.put(key, gz, opts)).unwrap();
}

#[test]
fn the_list_shows_live_sessions_and_archives_with_their_metadata() {
    archive("agents/main/sessions/s1.jsonl.gz", &[Message::user_text("hello", 1)], "agent:main:main");
    answers(&[(200, json!([{"sessionKey": "agent:main:main", "sessionId": "s2", "updatedAt": 5}]))]);
    let r = ask("GET", "agents/main/sessions", &[], "");
    assert_eq!(r.status, 200, "{}", r.text());
    let listed = body(&r);
    assert_eq!(listed["live"], json!([{"sessionKey": "agent:main:main", "sessionId": "s2", "updatedAt": 5}]));
    let archives = listed["archives"].as_array().unwrap();
    assert_eq!(archives.len(), 1, "{listed}");
    assert_eq!(archives[0]["key"], "agents/main/sessions/s1.jsonl.gz");
    assert_eq!(archives[0]["metadata"], json!({"sessionKey": "agent:main:main"}));
    assert!(archives[0]["size"].as_u64().unwrap() > 0);
    assert_eq!(sent()[0].0, crate::protocol::agent::SESSIONS_PATH);
    answers(&[]);
    assert_eq!(ask("GET", "agents/main/sessions", &[], "").status, 503, "the Agent object cannot be reached");
}

#[test]
fn an_archive_reads_back_decoded_and_a_bad_one_is_refused() {
    let said = [Message::user_text("my locker code is 3301", 1), Message::user_text("thanks", 2)];
    archive("agents/main/sessions/s1.jsonl.gz", &said, "agent:main:main");
    answers(&[]);
    let r = ask("GET", "agents/main/archives/s1", &[], "");
    assert_eq!(r.status, 200, "{}", r.text());
    let read = body(&r);
    assert_eq!(
        (read["sessionId"].clone(), read["key"].clone()),
        (json!("s1"), json!("agents/main/sessions/s1.jsonl.gz"))
    );
    assert_eq!(read["metadata"], json!({"sessionKey": "agent:main:main"}));
    assert_eq!(read["messages"], serde_json::to_value(said).unwrap());
    assert_eq!(body(&ask("GET", "agents/main/archives/s1.jsonl.gz", &[], ""))["sessionId"], "s1", "the file name too");

    let missing = ask("GET", "agents/main/archives/nope", &[], "");
    assert_eq!(missing.status, 404);
    assert!(missing.text().contains("no archive \"nope\""), "{}", missing.text());
    assert_eq!(ask("GET", "agents/main/archives/a%2Fb", &[], "").status, 400, "not a session id");
    let store = STORE.with(|s| s.clone());
    store.put_text("agents/main/sessions/broken.jsonl.gz", "not gzip");
    let broken = ask("GET", "agents/main/archives/broken", &[], "");
    assert_eq!(broken.status, 422);
    assert!(broken.text().contains("is not a readable archive"), "{}", broken.text());
    assert!(sent().is_empty(), "an archive is the bucket's");
}
