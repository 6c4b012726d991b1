//! Interactions read from real payloads and the answers they get.

use super::*;

fn ask_in_guild() -> Interaction {
    parse(
        br#"{"id":"1180000000000000000","type":2,"application_id":"99","token":"tok-1",
        "guild_id":"5","channel_id":"600","context":0,
        "member":{"user":{"id":"42","username":"olga","global_name":"Olga"},"roles":[]},
        "data":{"id":"c1","name":"ask","type":1,
          "options":[{"name":"prompt","type":3,"value":"what is this?"},{"name":"attachment","type":11,"value":"777"}],
          "resolved":{"attachments":{"777":{"id":"777","filename":"cat.png","size":1234,
            "url":"https://cdn.discordapp.com/attachments/1/777/cat.png","content_type":"image/png"}}}}}"#,
    )
    .unwrap()
}

#[test]
fn commands_and_options() {
    let i = ask_in_guild();
    let Some(Command::Ask { prompt, attachment }) = i.command() else { panic!() };
    assert_eq!(prompt, "what is this?");
    let a = attachment.unwrap();
    assert_eq!(a.filename, "cat.png");
    let m = attachment_media(&a);
    assert_eq!((m.mime_type.as_str(), m.kind.as_str(), m.size), ("image/png", "attachment", Some(1234)));
    for (name, want) in [("reset", Command::Reset), ("status", Command::Status), ("x", Command::Unknown("x".into()))] {
        let i = parse(format!(r#"{{"id":"1","type":2,"data":{{"name":"{name}"}}}}"#).as_bytes()).unwrap();
        assert_eq!(i.command(), Some(want));
    }
    assert_eq!(parse(br#"{"id":"1","type":1}"#).unwrap().command(), None);
    assert!(parse(b"{not json").is_err());
    assert!(parse(br#"{"type":2}"#).is_err(), "id is required");
}

#[test]
fn guild_commands_are_group_messages_and_dms_direct() {
    let now = 1_800_000_000_000;
    let i = ask_in_guild();
    let inbound = to_inbound(&i, "hi".into(), vec![], now, TURN_WINDOW_MS).unwrap();
    assert_eq!(inbound.kind, ChatKind::Group);
    assert_eq!(
        (inbound.chat_id.as_str(), inbound.sender_id.as_str(), inbound.sender_name.as_str()),
        ("600", "42", "Olga")
    );
    assert_eq!(inbound.dedupe_key, "discord:interaction:1180000000000000000");
    assert!(inbound.addressed);
    let order = inbound.order.as_ref().unwrap();
    assert_eq!((order.stream.as_str(), order.pos), ("discord", 1_180_000_000_000_000_000), "its snowflake");
    assert_eq!(inbound.reply_target.channel, ChannelKind::Discord);
    let extra = ReplyExtra::from_target(&inbound.reply_target).unwrap();
    assert_eq!(extra.token, "tok-1");
    assert_eq!(extra.app.as_deref(), Some("99"));
    assert_eq!(extra.created, snowflake_ms("1180000000000000000").unwrap());

    let dm = parse(
        br#"{"id":"2","type":2,"token":"t","channel":{"id":"900","type":1},"context":1,
        "user":{"id":"42","username":"olga"},"data":{"name":"ask","options":[{"name":"prompt","value":"x"}]}}"#,
    )
    .unwrap();
    let inbound = to_inbound(&dm, "x".into(), vec![], now, TURN_WINDOW_MS).unwrap();
    assert_eq!(
        (inbound.kind, inbound.chat_id.as_str(), inbound.sender_name.as_str()),
        (ChatKind::Direct, "900", "olga")
    );
    // A private channel (user-installed app in someone else's DM or group DM) is shared.
    let private =
        parse(br#"{"id":"3","type":2,"token":"t","channel_id":"901","context":2,"user":{"id":"42"}}"#).unwrap();
    assert_eq!(private.chat_kind(), ChatKind::Group);

    let no_user = parse(br#"{"id":"4","type":2,"token":"t","channel_id":"1"}"#).unwrap();
    assert_eq!(to_inbound(&no_user, "x".into(), vec![], now, TURN_WINDOW_MS), Err(InteractionError::Missing("user")));
    let no_token = parse(br#"{"id":"4","type":2,"channel_id":"1","user":{"id":"1"}}"#).unwrap();
    assert_eq!(to_inbound(&no_token, "x".into(), vec![], now, TURN_WINDOW_MS), Err(InteractionError::Missing("token")));
}

#[test]
fn threads_are_conversations_under_their_parent_channel() {
    let now = 1_800_000_000_000;
    let in_thread = parse(
        br#"{"id":"7","type":2,"token":"t","guild_id":"5","channel_id":"700","context":0,
        "channel":{"id":"700","type":11,"parent_id":"600","guild_id":"5","name":"a thread"},
        "member":{"user":{"id":"42","username":"olga"}},"data":{"name":"ask"}}"#,
    )
    .unwrap();
    assert_eq!(in_thread.thread_parent(), Some("600"));
    let m = to_inbound(&in_thread, "hi".into(), vec![], now, TURN_WINDOW_MS).unwrap();
    assert_eq!((m.chat_id.as_str(), m.thread_id.as_deref()), ("600", Some("700")));
    assert_eq!(m.reply_target.chat_id, "700", "late answers go to the thread");
    // A text channel's parent_id is its category, not a conversation.
    let in_channel = parse(
        br#"{"id":"8","type":2,"token":"t","guild_id":"5","channel_id":"600","context":0,
        "channel":{"id":"600","type":0,"parent_id":"900","guild_id":"5"},"member":{"user":{"id":"42"}}}"#,
    )
    .unwrap();
    assert_eq!(in_channel.thread_parent(), None);
    let m = to_inbound(&in_channel, "hi".into(), vec![], now, TURN_WINDOW_MS).unwrap();
    assert_eq!((m.chat_id.as_str(), m.thread_id), ("600", None));
}

#[test]
fn the_turn_deadline_is_carried_with_the_reply_target() {
    let i = ask_in_guild();
    let created = snowflake_ms("1180000000000000000").unwrap();
    let m = to_inbound(&i, "hi".into(), vec![], 1_800_000_000_000, TURN_WINDOW_MS).unwrap();
    assert_eq!(m.reply_target.deadline_ms, Some(created + 13 * 60 * 1000));
    assert!(!m.reply_target.past_deadline(created + 12 * 60 * 1000));
    assert!(m.reply_target.past_deadline(created + 13 * 60 * 1000));
    // The deadline comes before the token's end, so the note still gets through.
    let extra = ReplyExtra::from_target(&m.reply_target).unwrap();
    assert!(!extra.token_expired(created + 13 * 60 * 1000));
    let short = to_inbound(&i, "hi".into(), vec![], 1_800_000_000_000, 1_000).unwrap();
    assert_eq!(short.reply_target.deadline_ms, Some(created + 1_000));
}

#[test]
fn token_lifetime() {
    // Discord's documented example snowflake: 2016-04-30 11:18:25.796 UTC.
    assert_eq!(snowflake_ms("175928847299117063"), Some(1_462_015_105_796));
    assert_eq!(snowflake_ms("nope"), None);
    let now = 1_800_000_000_000;
    let i = parse(br#"{"id":"175928847299117063","type":2}"#).unwrap();
    assert_eq!(i.created_ms(now), 1_462_015_105_796);
    // A snowflake from the future falls back to now.
    assert_eq!(i.created_ms(1_000), 1_000);
    let e = ReplyExtra { token: "t".into(), app: None, created: now };
    assert!(!e.token_expired(now));
    assert!(!e.token_expired(now + 14 * 60 * 1000));
    assert!(e.token_expired(now + 14 * 60 * 1000 + 30_000));
    assert!(e.token_expired(now + 16 * 60 * 1000));
    assert_eq!(ReplyExtra::from_target(&ReplyTarget::default()), None);
}

fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/discord");
    std::fs::read(dir.join(name)).unwrap()
}

#[test]
fn every_real_interaction_parses() {
    for (file, kind) in [
        ("interaction-application-command-minimal.json", APPLICATION_COMMAND),
        ("interaction-autocomplete.json", APPLICATION_COMMAND_AUTOCOMPLETE),
        ("interaction-chat-input-dm.json", APPLICATION_COMMAND),
        ("interaction-chat-input-guild.json", APPLICATION_COMMAND),
        ("interaction-message-command.json", APPLICATION_COMMAND),
        ("interaction-message-component-button.json", MESSAGE_COMPONENT),
        ("interaction-message-component-minimal.json", MESSAGE_COMPONENT),
        ("interaction-message-component-string-select.json", MESSAGE_COMPONENT),
        ("interaction-modal-submit.json", MODAL_SUBMIT),
        ("interaction-ping-minimal.json", PING),
        ("interaction-user-command.json", APPLICATION_COMMAND),
    ] {
        let i = parse(&fixture(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(i.kind, kind, "{file}");
    }
}

#[test]
fn a_message_command_asks_about_its_message() {
    let i = parse(&fixture("interaction-message-command.json")).unwrap();
    assert_eq!(i.command(), Some(Command::AskAbout { attachments: vec![] }));
    let m = to_inbound(&i, String::new(), vec![], 1_800_000_000_000, TURN_WINDOW_MS).unwrap();
    assert_eq!(m.user_text(), "[Asking about a message from ian: \"some message\"]\n[ian]");
    // A slash command has no message to refer to.
    let ask = parse(&fixture("interaction-chat-input-guild.json")).unwrap();
    assert!(ask.context().is_empty());
    // The message's attachments come along (as media), named in the context.
    let with_file = parse(
        br#"{"id":"9","type":2,"token":"t","channel_id":"1","user":{"id":"42","username":"olga"},
        "data":{"name":"Ask Hearth","type":3,"target_id":"5","resolved":{"messages":{"5":{"id":"5","content":"",
        "author":{"id":"7","username":"pat","global_name":"Pat"},
        "attachments":[{"id":"a","filename":"cat.png","url":"https://cdn.discordapp.com/attachments/1/a/cat.png","content_type":"image/png"}]}}}}}"#,
    )
    .unwrap();
    let Some(Command::AskAbout { attachments }) = with_file.command() else { panic!() };
    assert_eq!(attachments[0].filename, "cat.png");
    assert_eq!(with_file.context()[0].render(), "[Asking about a message from Pat: \"[cat.png]\"]");
    // A message command whose message did not resolve has nothing to ask about.
    let missing = parse(br#"{"id":"9","type":2,"data":{"name":"Ask Hearth","type":3,"target_id":"5"}}"#).unwrap();
    assert!(missing.target_message().is_none() && missing.context().is_empty());
}

#[test]
fn responses_and_texts() {
    assert_eq!(pong(), json!({"type": 1}));
    assert_eq!(deferred(), json!({"type": 5}));
    let e = ephemeral("no");
    assert_eq!((e["type"].as_u64(), e["data"]["flags"].as_u64()), (Some(4), Some(64)));
    assert_eq!(no_choices(), json!({"type": 8, "data": {"choices": []}}));
    assert!(not_handled_text(MESSAGE_COMPONENT).starts_with("Buttons and menus"));
    assert!(not_handled_text(MODAL_SUBMIT).starts_with("Forms"));
    let status = |v: Value| hearth_json::from_value(v).unwrap();
    let s = status_text(&status(json!({"sessionKey": "agent:main:main", "sessionId": "u", "open": 0,
        "messageCount": 2, "usage": {"input": 200, "output": 20, "cacheRead": 100, "cacheWrite": 40, "totalTokens": 360}})));
    assert!(
        s.contains("agent:main:main") && s.contains("Messages: 2") && s.contains("200 in") && s.contains("360 total"),
        "{s}"
    );
    assert!(!s.contains("waiting"), "{s}");
    let s = status_text(&status(json!({"sessionKey": "agent:main:main", "sessionId": "u", "messageCount": 2,
        "outbox": {"waiting": [{"id": "answer:3", "kind": "reply", "channel": "discord", "chatId": "1", "parts": 1}],
                   "undelivered": []}})));
    assert!(s.contains("Replies waiting to be delivered: 1") && !s.contains("not delivered"), "{s}");
    let s = status_text(&status(json!({"sessionKey": null, "sessionId": null, "open": 0, "messages": []})));
    assert!(s.contains("no conversation yet"), "{s}");
}
