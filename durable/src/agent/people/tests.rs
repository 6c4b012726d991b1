//! The Agent object's roster and approvals against in-memory doubles: a
//! stranger's code approved, the session opened, revoked and closed, each
//! change in the workspace history; a tool call's request asked of the
//! owner on Telegram, decided by the owner's tap only, once.

use super::PeopleAnswer;
use crate::agent::approvals::ApprovalAnswer;
use crate::agent::host::tests::host;
use crate::inbound::{ChannelKind, SessionKey};
use crate::protocol::approvals::{ApprovalAsk, ApprovalCall, Decision, Origin};
use crate::protocol::dreams::Tap;
use crate::protocol::people::{Acting, Door, PeopleCall, Standing};
use crate::settings::Principal;
use futures::executor::block_on;
use serde_json::json;

const VARS: &[(&str, &str)] = &[
    ("OWNER_IDS", "telegram:4242"),
    ("TELEGRAM_BOT_TOKEN", "1:T"),
    ("TELEGRAM_API_BASE", "https://tg.test"),
    ("RETRY_BASE_MS", "1"),
    ("RETRY_MAX_MS", "1"),
];

fn door(sender: &str) -> PeopleCall {
    PeopleCall::Door(Door {
        agent: "main".into(),
        channel: ChannelKind::Telegram,
        sender: sender.into(),
        sender_name: "Pat".into(),
        chat: sender.into(),
        group: None,
        command: None,
        cooldown_ms: 3_600_000,
        configured_owner: true,
    })
}

fn owner() -> Acting {
    Acting { by: "telegram:4242".into(), place: "telegram chat 4242".into() }
}

#[test]
fn a_code_approved_opens_the_session_and_a_revocation_closes_it_each_in_the_history() {
    let h = host(VARS);
    let Ok(PeopleAnswer::Door(first)) = block_on(h.people(&door("9"))) else { panic!() };
    assert_eq!(first.standing, Standing::Stranger);
    let notice = first.notice.unwrap();
    let code = notice.split("this code: ").nth(1).unwrap()[..8].to_owned();
    let Ok(PeopleAnswer::Door(again)) = block_on(h.people(&door("9"))) else { panic!() };
    assert_eq!(again.notice, None, "told once per cooldown");
    let approve = PeopleCall::Approve { agent: "main".into(), code: code.clone(), acting: owner() };
    let Ok(PeopleAnswer::Reply(r)) = block_on(h.people(&approve)) else { panic!() };
    assert!(r.ok, "{}", r.text);
    assert_eq!(r.tell.as_ref().map(|t| t.target.chat_id.as_str()), Some("9"), "the person is told");
    assert_eq!(h.runtime().queue.admitted.borrow().as_slice(), [("agent:main:telegram:dm:9".to_owned(), true)]);
    let Ok(PeopleAnswer::Door(now)) = block_on(h.people(&door("9"))) else { panic!() };
    assert_eq!((now.standing, now.roster.generation), (Standing::Guest, 1));
    let revoke =
        PeopleCall::Revoke { agent: "main".into(), who: Principal::new(ChannelKind::Telegram, "9"), acting: owner() };
    let Ok(PeopleAnswer::Reply(r)) = block_on(h.people(&revoke)) else { panic!() };
    assert!(r.ok);
    assert_eq!(
        h.runtime().queue.admitted.borrow().last().cloned(),
        Some(("agent:main:telegram:dm:9".to_owned(), false))
    );
    // OWNER_IDS cannot be revoked from the chat.
    let me = PeopleCall::Revoke {
        agent: "main".into(),
        who: Principal::new(ChannelKind::Telegram, "4242"),
        acting: owner(),
    };
    let Ok(PeopleAnswer::Reply(r)) = block_on(h.people(&me)) else { panic!() };
    assert!(!r.ok && r.text.contains("OWNER_IDS"), "{}", r.text);
    // Both changes are in the workspace history's log, with who and where.
    let logged: Vec<String> = h
        .runtime()
        .store
        .objects
        .borrow()
        .iter()
        .filter(|(k, _)| k.starts_with("history/main/log/"))
        .map(|(_, o)| String::from_utf8_lossy(&o.body).into_owned())
        .collect();
    assert_eq!(logged.len(), 2);
    assert!(logged
        .iter()
        .any(|c| c.contains("approved telegram:9") && c.contains("by telegram:4242 in telegram chat 4242")));
    assert!(logged.iter().all(|c| c.contains("\"path\":\"PEOPLE.md\"")));
}

fn ask(call: &str) -> ApprovalCall {
    ApprovalCall::Ask(ApprovalAsk {
        agent: "main".into(),
        session_key: SessionKey::parse("agent:main:telegram:group:-100").unwrap(),
        seq: 3,
        call_id: call.into(),
        tool: "web_fetch".into(),
        args: r#"{"url":"https://example.com"}"#.into(),
        origin: Origin { channel: ChannelKind::Telegram, chat: "-100".into(), group: true, sender: "Pat".into() },
        timeout_ms: 60_000,
    })
}

fn tap(from: &str, data: &str) -> Tap {
    Tap {
        agent: "main".into(),
        channel: ChannelKind::Telegram,
        callback_id: "cb".into(),
        from: from.into(),
        data: data.into(),
        respond_to: None,
        chat: Some("4242".into()),
        message_id: Some(501),
    }
}

#[test]
fn a_call_from_a_group_is_asked_privately_and_only_the_owners_first_tap_counts() {
    let h = host(VARS);
    let http = &h.runtime().http;
    http.push_json(
        200,
        json!({"ok": true, "result": {"message_id": 501, "chat": {"id": 4242, "type": "private"}, "date": 1}}),
    );
    let Ok(ApprovalAnswer::State(s)) = block_on(h.approvals(&ask("c1"))) else { panic!() };
    assert_eq!(s.decision, Decision::Waiting);
    assert_eq!(s.asked_in.as_ref().map(|a| a.chat.as_str()), Some("4242"), "the owner's private chat, not the group");
    let prompt = http.request_json(0);
    assert_eq!(prompt["chat_id"], "4242");
    assert_eq!(prompt["reply_markup"]["inline_keyboard"][0][0]["callback_data"], format!("ok:{}:a", s.id));
    // Asked again (a resumed turn): the same request, no second message.
    let Ok(ApprovalAnswer::State(same)) = block_on(h.approvals(&ask("c1"))) else { panic!() };
    assert_eq!((same.id, http.requests.borrow().len()), (s.id, 1));
    // Someone else's tap: told so, nothing decided, nobody woken.
    http.push_json(200, json!({"ok": true, "result": true}));
    let o = block_on(h.tap(&tap("777", &format!("ok:{}:a", s.id)))).unwrap();
    assert_eq!((o.note.as_str(), o.state), ("Only my owner can decide this.", None));
    assert!(h.runtime().queue.woken.borrow().is_empty());
    // The owner's: decided, the session woken, the buttons settled.
    http.push_json(200, json!({"ok": true, "result": true}));
    http.push_json(200, json!({"ok": true, "result": true}));
    let o = block_on(h.tap(&tap("4242", &format!("ok:{}:a", s.id)))).unwrap();
    assert_eq!(o.state.as_deref(), Some("approved"));
    assert_eq!(h.runtime().queue.woken.borrow().as_slice(), ["agent:main:telegram:group:-100"]);
    // A second tap (Deny this time) changes nothing.
    http.push_json(200, json!({"ok": true, "result": true}));
    http.push_json(200, json!({"ok": true, "result": true}));
    let o = block_on(h.tap(&tap("4242", &format!("ok:{}:d", s.id)))).unwrap();
    assert_eq!((o.note.as_str(), o.state.as_deref()), ("Already approved.", Some("approved")));
    // Past its time, a waiting request asked with `expire` is a no.
    http.push_json(200, json!({"ok": true, "result": {"message_id": 502}}));
    let Ok(ApprovalAnswer::State(late)) = block_on(h.approvals(&ask("c2"))) else { panic!() };
    h.runtime().now.set(h.runtime().now.get() + 60_000);
    let status = ApprovalCall::Status { agent: "main".into(), id: late.id, expire: true };
    let Ok(ApprovalAnswer::State(gone)) = block_on(h.approvals(&status)) else { panic!() };
    assert_eq!(gone.decision, Decision::Expired);
}
