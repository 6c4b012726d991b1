//! Posts into a session's chat (`SessionHost::post`): said as they are, or
//! run as a turn; once per id; in the chat they name or the session knows.

use super::*;
use crate::protocol::session::{PostMode, PostRequest};
use crate::session::host::PostError;

fn post(key: &str, id: &str, mode: PostMode, text: &str, target: Option<ReplyTarget>) -> PostRequest {
    PostRequest {
        session_key: SessionKey::parse(key).unwrap(),
        id: id.into(),
        mode,
        text: text.into(),
        target,
        next_run_in_ms: None,
    }
}

fn telegram(chat: &str) -> ReplyTarget {
    ReplyTarget { channel: ChannelKind::Telegram, chat_id: chat.into(), ..Default::default() }
}

/// The LLM requests made so far.
fn llm_calls(p: &TestPlatform) -> Vec<serde_json::Value> {
    p.http.requests.borrow().iter().map(|r| hearth_json::from_slice(&r.body).unwrap()).collect()
}

#[test]
fn a_said_post_reaches_the_chat_and_the_history_once_without_a_model_call() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    block_on(h.enqueue(&request(1, "remind me later"))).unwrap();
    answer(&p, "I will");
    block_on(h.alarm()).unwrap();
    let calls = p.http.requests.borrow().len();

    // No target named: the chat the owner wrote from.
    let req = post("agent:main:main", "reminder:r1:1000", PostMode::Say, "⏰ Call the dentist", None);
    let reply = block_on(h.post(&req)).unwrap();
    assert!(reply.queued);
    assert_eq!(reply.target.as_ref().map(|t| t.chat_id.as_str()), Some("1"));
    assert!(h.runtime().wakes.get() >= 2, "the post wakes the alarm");
    block_on(h.alarm()).unwrap();
    assert_eq!(p.channel.texts_to("1"), ["I will", "⏰ Call the dentist"]);
    assert_eq!(p.http.requests.borrow().len(), calls, "no LLM call");
    let messages = h.status(false).unwrap().messages.unwrap();
    let last = messages.last().unwrap();
    assert!(matches!(last, r2_layout::Message::Assistant { .. }), "the agent said it");
    assert_eq!(last.text(), "⏰ Call the dentist");

    // The same id again (a retried call): nothing more.
    let again = block_on(h.post(&req)).unwrap();
    assert!(!again.queued && again.target.is_none());
    block_on(h.alarm()).unwrap();
    assert_eq!(p.channel.texts_to("1").len(), 2, "said once");
    assert_eq!(h.status(true).unwrap().message_count, 3);
}

#[test]
fn a_turn_post_answers_its_prompt_in_the_chat_it_names_and_is_no_command() {
    let h = host(&[("USAGE_SETTLE_MS", "0")]);
    let p = h.runtime().p.clone();
    let group = ReplyTarget { reply_to: Some("55".into()), ..telegram("-100123") };
    let key = "agent:main:telegram:group:-100123";
    // A reminder's text that looks like a command is a prompt all the same.
    let req = post(key, "task-1", PostMode::Turn, "/reset the plan: check the weather", Some(group.clone()));
    assert!(block_on(h.post(&req)).unwrap().queued);
    answer(&p, "No umbrella needed.");
    block_on(h.alarm()).unwrap();
    let calls = llm_calls(&p);
    assert_eq!(calls.len(), 1, "one turn, no reset");
    let sent = serde_json::to_string(&calls[0]["messages"]).unwrap();
    assert!(sent.contains("/reset the plan: check the weather"), "{sent}");
    assert!(!sent.contains("[]:"), "no sender name is made up: {sent}");
    let out = p.channel.sent.borrow();
    assert_eq!(out.len(), 1);
    assert_eq!((&out[0].0, out[0].1.as_str()), (&group, "No umbrella needed."));
    drop(out);
    // Booked as background work: a budget stops it before conversations.
    let report = p.usage.book.borrow_mut().report(
        &p.usage.sql,
        crate::usage::period::Period::parse("all").unwrap(),
        None,
        p.now.get(),
    );
    assert!(report.unwrap().by_kind.contains_key("job"));
}

#[test]
fn a_group_post_keeps_the_group_scope() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    p.store.put_text("agents/main/MEMORY.md", "- PRIVATE-OWNER-FACT");
    let key = "agent:main:telegram:group:-100123";
    block_on(h.post(&post(key, "g1", PostMode::Turn, "what do you know?", Some(telegram("-100123"))))).unwrap();
    answer(&p, "not much");
    block_on(h.alarm()).unwrap();
    let system = serde_json::to_string(&llm_calls(&p)[0]["system"]).unwrap();
    assert!(!system.contains("PRIVATE-OWNER-FACT"), "a group never sees the owner's memory");

    // The owner's main session does (the same post there).
    let main = host(&[]);
    let mp = main.runtime().p.clone();
    mp.store.put_text("agents/main/MEMORY.md", "- PRIVATE-OWNER-FACT");
    block_on(main.post(&post("agent:main:main", "m1", PostMode::Turn, "what do you know?", None))).unwrap();
    answer(&mp, "a lot");
    block_on(main.alarm()).unwrap();
    assert!(serde_json::to_string(&llm_calls(&mp)[0]["system"]).unwrap().contains("PRIVATE-OWNER-FACT"));
    assert_eq!(mp.channel.texts_to("1"), ["a lot"], "nobody wrote yet: the owner's first chat");
}

#[test]
fn a_post_that_cannot_go_anywhere_or_is_malformed_is_refused_and_queues_nothing() {
    let h = host(&[]);
    let friend = "agent:main:telegram:dm:777";
    let refused = |req: &PostRequest| match block_on(h.post(req)) {
        Err(PostError::Refused(why)) => why,
        other => panic!("not refused: {other:?}"),
    };
    assert!(refused(&post(friend, "x", PostMode::Say, "hi", None)).contains("name the target"));
    assert!(refused(&post(friend, "", PostMode::Say, "hi", Some(telegram("777")))).contains("id"));
    assert!(refused(&post(friend, "y", PostMode::Say, "  ", Some(telegram("777")))).contains("text"));
    let long = "x".repeat(PostRequest::MAX_TEXT_CHARS + 1);
    assert!(refused(&post(friend, "z", PostMode::Say, &long, Some(telegram("777")))).contains("at most"));
    assert_eq!(h.status(true).unwrap().open, 0);
    assert_eq!(h.runtime().wakes.get(), 0);
}

#[test]
fn a_post_into_an_http_thread_goes_to_the_notification_feed() {
    let h = host(&[]);
    let api = ReplyTarget {
        channel: ChannelKind::Api,
        chat_id: "work".into(),
        extra: Some("req-9".into()),
        ..Default::default()
    };
    let req = post("agent:main:api:work", "r", PostMode::Say, "⏰ stand-up in 5 minutes", Some(api));
    block_on(h.post(&req)).unwrap();
    block_on(h.alarm()).unwrap();
    assert_eq!(
        h.runtime().published.borrow().as_slice(),
        [("agent:main:api:work".to_owned(), "⏰ stand-up in 5 minutes".to_owned())]
    );
    assert!(h.runtime().p.channel.sent.borrow().is_empty());
    assert_eq!(h.status(true).unwrap().message_count, 1, "and in the thread's history");
}

#[test]
fn a_post_whatsapp_refuses_outside_its_window_is_reported_to_the_owner_elsewhere() {
    let h = host(&[("OWNER_IDS", "whatsapp:+4915123456789,telegram:1")]);
    let p = h.runtime().p.clone();
    let wa = ReplyTarget { channel: ChannelKind::Whatsapp, chat_id: "4915123456789".into(), ..Default::default() };
    // (WhatsApp's chat id is the number without `+`, as Meta sends it.)
    // What WhatsApp's client answers outside the 24-hour window (channels/whatsapp/client.rs).
    p.channel.take_down(
        "4915123456789",
        crate::ports::SendOutcome::Unreachable("outside WhatsApp's 24-hour customer-service window".into()),
    );
    block_on(h.post(&post("agent:main:main", "w1", PostMode::Say, "⏰ Pay the rent", Some(wa)))).unwrap();
    block_on(h.alarm()).unwrap();
    let told = p.channel.texts_to("1");
    assert_eq!(told.len(), 1, "the owner hears of it on Telegram");
    assert!(told[0].contains("24-hour") && told[0].contains("Pay the rent"), "{}", told[0]);
    assert_eq!(
        h.status(false).unwrap().messages.unwrap().last().unwrap().text(),
        "⏰ Pay the rent",
        "kept in the history"
    );
}

#[test]
fn a_recurring_turn_post_caches_its_prompt_like_a_heartbeat() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let mut req = post("agent:main:main", "every:1", PostMode::Turn, "check the inbox", None);
    req.next_run_in_ms = Some(30 * 60_000);
    block_on(h.post(&req)).unwrap();
    answer(&p, "nothing new");
    block_on(h.alarm()).unwrap();
    assert_eq!(cache_of(&p, 0).0, json!({"type": "ephemeral", "ttl": "1h"}));
    // A one-off keeps 5 minutes.
    block_on(h.post(&post("agent:main:main", "once:1", PostMode::Turn, "check the inbox", None))).unwrap();
    answer(&p, "still nothing");
    block_on(h.alarm()).unwrap();
    assert_eq!(cache_of(&p, 1).0, json!({"type": "ephemeral"}));
}

#[test]
fn the_chat_a_person_last_wrote_from_is_kept_without_the_message_it_answered() {
    let h = host(&[]);
    let p = h.runtime().p.clone();
    let mut first = request(1, "hi");
    first.inbound.reply_target.reply_to = Some("9".into());
    block_on(h.enqueue(&first)).unwrap();
    answer(&p, "hello");
    block_on(h.alarm()).unwrap();
    let reply = block_on(h.post(&post("agent:main:main", "p", PostMode::Say, "later", None))).unwrap();
    assert_eq!(reply.target, Some(ReplyTarget { reply_to: None, ..first.inbound.reply_target.clone() }));
    // A post is not a person: it does not move the chat the session knows.
    let other = post("agent:main:main", "q", PostMode::Say, "elsewhere", Some(telegram("2")));
    block_on(h.post(&other)).unwrap();
    let again = block_on(h.post(&post("agent:main:main", "r", PostMode::Say, "again", None))).unwrap();
    assert_eq!(again.target.map(|t| t.chat_id), Some("1".into()));
}
