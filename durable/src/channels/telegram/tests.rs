use super::*;
use crate::inbound::context::with_preface;

fn parse(json: &str) -> Update {
    hearth_json::from_str(json).unwrap()
}

fn bot() -> BotIdentity {
    BotIdentity { id: 999, username: Some("hearth_bot".into()) }
}

#[test]
fn private_text() {
    let u = parse(
        r#"{"update_id":1,"message":{"message_id":5,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Ana"},"text":"hi"}}"#,
    );
    let m = to_inbound(&u, &bot(), 0).unwrap();
    assert_eq!((m.kind, m.text.as_str(), m.addressed), (ChatKind::Direct, "hi", true));
    assert_eq!(m.dedupe_key, "telegram:update:1");
    // The message answered (a voice note replies to it; text quotes it only in groups).
    assert_eq!(m.reply_target.reply_to.as_deref(), Some("5"));
    assert!(m.context.is_empty());
    assert_eq!(m.batch, None);
}

#[test]
fn the_photos_of_an_album_share_a_batch() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/real-world/telegram/spec-media-group.json"),
    )
    .unwrap();
    let updates: Vec<Update> = hearth_json::from_str(&text).unwrap();
    let batches: Vec<Option<String>> = updates.iter().map(|u| to_inbound(u, &bot(), 0).unwrap().batch).collect();
    assert_eq!(
        batches,
        [Some("telegram:album:13612345678901234".into()), Some("telegram:album:13612345678901234".into())]
    );
    // Each photo keeps its place in the chat, so the album reads in the order sent.
    let orders: Vec<_> = updates.iter().map(|u| to_inbound(u, &bot(), 0).unwrap().order.unwrap()).collect();
    assert_eq!((orders[0].pos, orders[1].pos), (76, 77));
    assert_eq!(
        orders[1].after.as_deref(),
        Some("telegram:update:963500006"),
        "the update before it is the first photo"
    );
}

#[test]
fn a_message_is_ordered_by_its_id_in_its_chat_and_names_the_update_before_it() {
    let text = std::fs::read_to_string(fixture_dir().join("botapi-doc-text.json")).unwrap();
    let u = parse(&text);
    let m = to_inbound(&u, &bot(), 0).unwrap();
    let order = m.order.expect("a Telegram message has a position");
    assert_eq!(order.stream, "telegram:1111111");
    assert_eq!(order.pos, 1365, "its message_id");
    assert_eq!(order.after.as_deref(), Some("telegram:update:9999"), "update_id 10000 follows 9999");
}

#[test]
fn group_addressing() {
    let base = |extra: &str| {
        parse(&format!(
            r#"{{"update_id":2,"message":{{"message_id":6,"date":1,"chat":{{"id":-100,"type":"supergroup"}},"from":{{"id":7,"first_name":"Bo"}},{extra}}}}}"#
        ))
    };
    let plain = base(r#""text":"hello all""#);
    assert!(!to_inbound(&plain, &bot(), 0).unwrap().addressed);
    let mention = base(r#""text":"héllo @hearth_bot","entities":[{"type":"mention","offset":6,"length":11}]"#);
    assert!(mention.message.as_ref().unwrap().needs_username());
    let m = to_inbound(&mention, &bot(), 0).unwrap();
    assert!(m.addressed);
    assert_eq!(m.reply_target.reply_to.as_deref(), Some("6"));
    let other = base(r#""text":"@someone_else","entities":[{"type":"mention","offset":0,"length":13}]"#);
    assert!(!to_inbound(&other, &bot(), 0).unwrap().addressed);
    let cmd = base(r#""text":"/help","entities":[{"type":"bot_command","offset":0,"length":5}]"#);
    assert!(to_inbound(&cmd, &bot(), 0).unwrap().addressed);
    let cmd_other = base(r#""text":"/help@other_bot","entities":[{"type":"bot_command","offset":0,"length":15}]"#);
    assert!(!to_inbound(&cmd_other, &bot(), 0).unwrap().addressed);
    let reply = base(
        r#""text":"yes","reply_to_message":{"message_id":3,"date":1,"chat":{"id":-100,"type":"supergroup"},"from":{"id":999,"first_name":"H","is_bot":true},"text":"Shall I?"}"#,
    );
    let m = to_inbound(&reply, &bot(), 0).unwrap();
    assert!(m.addressed);
    assert_eq!(m.user_text(), "[Replying to your message: \"Shall I?\"]\n[Bo]: yes");
}

#[test]
fn topics_captions_and_media() {
    let u = parse(
        r#"{"update_id":3,"message":{"message_id":8,"date":1,"message_thread_id":77,"is_topic_message":true,"chat":{"id":-100,"type":"supergroup"},"from":{"id":7,"first_name":"Bo","username":"bo"},"caption":"look","photo":[{"file_id":"s","file_size":10,"width":90,"height":90},{"file_id":"b","file_size":900,"width":800,"height":800}]}}"#,
    );
    let m = to_inbound(&u, &bot(), 0).unwrap();
    assert_eq!(m.text, "look");
    assert_eq!(m.thread_id.as_deref(), Some("77"));
    assert_eq!(m.media[0].handle, "b");
    assert_eq!(m.sender_name, "Bo (@bo)");
}

#[test]
fn edits_start_no_turn() {
    let edit = parse(
        r#"{"update_id":9,"edited_message":{"message_id":8,"date":1,"edit_date":2,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ana"},"text":"hi (fixed)","photo":[{"file_id":"p","file_size":10,"width":9,"height":9}]}}"#,
    );
    assert_eq!(to_inbound(&edit, &bot(), 0), Err(Ignored::Edit));
}

#[test]
fn button_taps_are_read_from_every_real_callback_query() {
    let read = |name: &str| {
        let text = std::fs::read_to_string(fixture_dir().join(name)).unwrap();
        button_tap(&parse(&text))
    };
    let t = read("nutgram-callback-query.json").unwrap();
    assert_eq!(
        t,
        ButtonTap {
            callback_id: "666728699048485871".into(),
            from: "222222222".into(),
            data: Some("thedata".into()),
            chat: Some("222222222".into()),
            message_id: Some(69587),
        }
    );
    let old = read("nutgram-callback-query-inaccessible-message.json").unwrap();
    assert_eq!((old.chat.as_deref(), old.message_id), (Some("222222222"), Some(69587)));
    let gone = read("nutgram-callback-query-without-message.json").unwrap();
    assert_eq!((gone.chat, gone.message_id, gone.data.as_deref()), (None, None, Some("thedata")));
    let inline = read("botapi-doc-callback-query-inline.json").unwrap();
    assert_eq!((inline.from.as_str(), inline.chat), ("1111111", None));
    assert!(read("nutgram-callback-query-complex.json").is_some());
    assert!(read("teloxide-callback-query-game.json").is_some());
    assert_eq!(button_tap(&parse(r#"{"update_id":4,"callback_query":{"id":"x"}}"#)), None, "no sender");
    assert_eq!(button_tap(&parse(r#"{"update_id":4,"message":null}"#)), None);
}

#[test]
fn non_messages_and_channels_are_not_inbound() {
    let u = parse(r#"{"update_id":4,"callback_query":{"id":"x"}}"#);
    assert_eq!(to_inbound(&u, &bot(), 0), Err(Ignored::NotAMessage("callback_query".into())));
    let c =
        parse(r#"{"update_id":5,"message":{"message_id":1,"date":1,"chat":{"id":-1,"type":"channel"},"text":"x"}}"#);
    assert_eq!(to_inbound(&c, &bot(), 0), Err(Ignored::Chat("channel".into())));
    assert!(hearth_json::from_str::<Update>(r#"{"message":{}}"#).is_err());
    assert!(hearth_json::from_str::<Update>(r#"{"update_id":1,"message":{"chat":{}}}"#).is_err());
    assert_eq!(utf16_slice("ab", 1, 5), None);
}

#[test]
fn descriptive_content_with_parts_left_out_still_reads() {
    // A poll and a venue missing fields Telegram always sends: the update
    // still parses, and says what it can.
    let u = parse(
        r#"{"update_id":6,"message":{"message_id":1,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ana"},"poll":{"options":[{"text":"yes"}]}}}"#,
    );
    assert_eq!(to_inbound(&u, &bot(), 0).unwrap().text, "[poll: \"\"; options: \"yes\"]");
    let u = parse(
        r#"{"update_id":6,"message":{"message_id":1,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ana"},"venue":{"title":"Home"}}}"#,
    );
    assert_eq!(to_inbound(&u, &bot(), 0).unwrap().text, "[venue: Home (0.000000, 0.000000)]");
    // A kind of message nobody knows yet is named, not sent as nothing.
    let u = parse(
        r#"{"update_id":7,"message":{"message_id":1,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ana"},"hologram":{"id":1}}}"#,
    );
    assert_eq!(to_inbound(&u, &bot(), 0).unwrap().text, "[a kind of Telegram message I cannot read: hologram]");
    // A message without a chat has no type: ignored, not a failed request.
    let u = parse(r#"{"update_id":8,"message":{"message_id":1,"date":1,"from":{"id":42},"text":"hi"}}"#);
    assert_eq!(to_inbound(&u, &bot(), 0), Err(Ignored::Chat("untyped".into())));
}

// ---------------------------------------------------------------- real updates

/// What one real update must become.
enum Expect {
    /// A message: its chat kind, text, attachment kinds, and the preface its
    /// context renders to (empty: none).
    Message { kind: ChatKind, text: &'static str, media: &'static [&'static str], preface: &'static str },
    /// Ignored, for this reason.
    Skip(Ignored),
}

const D: ChatKind = ChatKind::Direct;
const G: ChatKind = ChatKind::Group;

fn msg(kind: ChatKind, text: &'static str, media: &'static [&'static str], preface: &'static str) -> Expect {
    Expect::Message { kind, text, media, preface }
}

fn not_a_message(kind: &str) -> Expect {
    Expect::Skip(Ignored::NotAMessage(kind.into()))
}

fn service(field: &str) -> Expect {
    Expect::Skip(Ignored::Service(field.into()))
}

/// Every file in `tests/fixtures/real-world/telegram/`, and what it becomes.
fn expectations() -> Vec<(&'static str, Vec<Expect>)> {
    vec![
        ("botapi-doc-audio.json", vec![msg(D, "", &["audio"], "")]),
        ("botapi-doc-callback-query-inline.json", vec![not_a_message("callback_query")]),
        ("botapi-doc-chosen-inline-result.json", vec![not_a_message("chosen_inline_result")]),
        ("botapi-doc-document.json", vec![msg(D, "", &["document"], "")]),
        ("botapi-doc-edited-message.json", vec![Expect::Skip(Ignored::Edit)]),
        ("botapi-doc-entities.json", vec![msg(D, "Bold and italics", &[], "")]),
        (
            "botapi-doc-forward-from-channel.json",
            vec![msg(D, "/start", &[], "[Forwarded from the channel \"Test channel\"]")],
        ),
        (
            "botapi-doc-forward-from-user.json",
            vec![msg(D, "/start", &[], "[Forwarded from Forward Firstname Forward Lastname]")],
        ),
        ("botapi-doc-inline-query.json", vec![not_a_message("inline_query")]),
        ("botapi-doc-reply.json", vec![msg(D, "/start", &[], "[Replying to a message: \"Original\"]")]),
        // The oldest example has no chat type: a positive id is a user's private chat.
        ("botapi-doc-text-no-chat-type.json", vec![msg(D, "/start", &[], "")]),
        ("botapi-doc-text.json", vec![msg(D, "/start", &[], "")]),
        ("botapi-doc-voice.json", vec![msg(D, "", &["voice"], "")]),
        // A GIF also arrives as a document (the Bot API sends both): fetched once, as the file.
        ("nutgram-animation.json", vec![msg(D, "", &["document"], "")]),
        ("nutgram-audio.json", vec![msg(D, "", &["audio"], "")]),
        // Sent to a business account the bot manages: answering needs the
        // business connection, which Hearth does not use.
        ("nutgram-business-message.json", vec![not_a_message("business_message")]),
        ("nutgram-callback-query-complex.json", vec![not_a_message("callback_query")]),
        ("nutgram-callback-query-inaccessible-message.json", vec![not_a_message("callback_query")]),
        ("nutgram-callback-query-without-message.json", vec![not_a_message("callback_query")]),
        ("nutgram-callback-query.json", vec![not_a_message("callback_query")]),
        ("nutgram-channel-post.json", vec![not_a_message("channel_post")]),
        ("nutgram-chat-member.json", vec![not_a_message("chat_member")]),
        (
            "nutgram-checklist.json",
            vec![msg(D, "[checklist \"Daily Tasks\": [ ] Apples; [ ] Bananas; [ ] Oranges]", &[], "")],
        ),
        ("nutgram-command-tag-valid.json", vec![msg(D, "/test@foo_bot", &[], "")]),
        ("nutgram-command-with-parameters.json", vec![msg(D, "/register HR John Doe", &[], "")]),
        ("nutgram-command.json", vec![msg(D, "/test", &[], "")]),
        ("nutgram-contact.json", vec![msg(D, "[contact: 911, phone 911; vCard: FN:911; TEL;VOICE:911]", &[], "")]),
        ("nutgram-dice.json", vec![msg(D, "[🎲 die thrown: 4 (of 6)]", &[], "")]),
        ("nutgram-document.json", vec![msg(D, "", &["document"], "")]),
        ("nutgram-edited-channel-post.json", vec![not_a_message("edited_channel_post")]),
        ("nutgram-edited-message.json", vec![Expect::Skip(Ignored::Edit)]),
        ("nutgram-entities.json", vec![msg(D, "test bold underline 😆👍 look here", &[], "")]),
        ("nutgram-forum-topic-created.json", vec![service("forum_topic_created")]),
        (
            "nutgram-game.json",
            vec![msg(D, "[game \"sdfsdfsdfsdfsf\": sdfsgdzhdfgghsd der sfdsfsadfdssadf sfsd fsdfdsfdf]", &[], "")],
        ),
        // A newer Bot API update kind (guest mode): not a message to the agent.
        ("nutgram-guest-message.json", vec![not_a_message("guest_message")]),
        ("nutgram-inline-query.json", vec![not_a_message("inline_query")]),
        ("nutgram-left-chat-member.json", vec![service("left_chat_member")]),
        ("nutgram-location.json", vec![msg(D, "[location: 41.899977, 12.501028]", &[], "")]),
        (
            "nutgram-message-different-topic-reply.json",
            vec![msg(G, "bbbb", &[], "[Replying to a message from Mario Bros (@MarioBros): \"aaaa\"]")],
        ),
        // Replies to the topic's first message are how topics work, not replies.
        ("nutgram-message-different-topic.json", vec![msg(G, "aaaa", &[], "")]),
        ("nutgram-message-forward-origin.json", vec![msg(D, "Ciao", &[], "[Forwarded from Stickers (@Stickers)]")]),
        (
            "nutgram-message-general-topic-reply.json",
            vec![msg(G, "bbbb", &[], "[Replying to a message from Mario Bros (@MarioBros): \"aaaaaa\"]")],
        ),
        ("nutgram-message-general-topic.json", vec![msg(G, "foo", &[], "")]),
        (
            "nutgram-message-poll.json",
            vec![msg(D, "[poll: \"What's your favorite color?\"; options: \"Red\" (1 vote), \"Blue\" (2 votes)]", &[], "")],
        ),
        ("nutgram-message-reaction.json", vec![not_a_message("message_reaction")]),
        ("nutgram-message-topic.json", vec![msg(G, "lòklò", &[], "")]),
        ("nutgram-message.json", vec![msg(D, "Ciao", &[], "")]),
        ("nutgram-my-chat-member.json", vec![not_a_message("my_chat_member")]),
        ("nutgram-new-chat-members.json", vec![service("new_chat_members")]),
        ("nutgram-not-command.json", vec![msg(D, "aa /test", &[], "")]),
        ("nutgram-photo.json", vec![msg(D, "asdasdasdasdasdasd", &["photo"], "")]),
        ("nutgram-pinned-message.json", vec![service("pinned_message")]),
        ("nutgram-poll-answer.json", vec![not_a_message("poll_answer")]),
        ("nutgram-poll.json", vec![not_a_message("poll")]),
        // A kind of message newer than Hearth: named, so the model can say it cannot read it.
        ("nutgram-rich-message.json", vec![msg(D, "[a kind of Telegram message I cannot read: rich_message]", &[], "")]),
        ("nutgram-sticker.json", vec![msg(D, "[sticker 🤣 from the set \"asas\"]", &["sticker"], "")]),
        ("nutgram-story.json", vec![msg(D, "[a story from Mario Bros (@MarioBros)]", &[], "")]),
        ("nutgram-text.json", vec![msg(D, "aaaaaaaaaa", &[], "")]),
        (
            "nutgram-users-shared.json",
            vec![msg(D, "[shared users: Luigi, id 123; Peach, id 456]", &[], "")],
        ),
        ("nutgram-venue.json", vec![msg(D, "[venue: McDonald's, Via Giolitti 65 (41.899977, 12.501028)]", &[], "")]),
        ("nutgram-video-note.json", vec![msg(D, "", &["video_note"], "")]),
        ("nutgram-video.json", vec![msg(D, "", &["video"], "")]),
        ("nutgram-voice.json", vec![msg(D, "", &["voice"], "")]),
        ("nutgram-web-app-data.json", vec![msg(D, "[data from the web app button \"sadasdas\": asdfsaasd]", &[], "")]),
        (
            "spec-external-reply-channel.json",
            vec![msg(
                D,
                "is this true?",
                &[],
                "[Replying to a message from the channel \"Daily News (@dailynews)\" (signed Ed.): \"[photo]\", quoting \"rates rise again\"]",
            )],
        ),
        (
            "spec-forward-origin-channel.json",
            vec![msg(D, "Rates rise again", &["photo"], "[Forwarded from the channel \"Daily News (@dailynews)\"]")],
        ),
        ("spec-forward-origin-hidden-user.json", vec![msg(D, "can you summarise this?", &[], "[Forwarded from Anna K.]")]),
        ("spec-forward-origin-user-group.json", vec![msg(G, "look what Luigi said", &[], "[Forwarded from Luigi]")]),
        // A media group is one update per item; only the first has the caption.
        (
            "spec-media-group.json",
            vec![msg(D, "two pictures from today", &["photo"], ""), msg(D, "", &["photo"], "")],
        ),
        (
            "spec-reply-with-quote.json",
            vec![msg(
                G,
                "@hearth_bot what do you think of this?",
                &[],
                "[Replying to your message: \"The meeting moved to Thursday at 10:00. Bring the Q3 numbers and the draft budget.\", quoting \"Bring the Q3 numbers\"]",
            )],
        ),
        (
            "teloxide-bot-command-reply-to-story-thread.json",
            vec![msg(
                G,
                "/report",
                &[],
                "[Replying to a message from Wert (@WertCrypto): \"[a story from TON Spin (@TONSpinChannel)]\"]",
            )],
        ),
        ("teloxide-callback-query-game.json", vec![not_a_message("callback_query")]),
        ("teloxide-dice-group.json", vec![msg(G, "[🎲 die thrown: 2 (of 6)]", &[], "")]),
        ("teloxide-empty-message.json", vec![Expect::Skip(Ignored::NoSender)]),
        ("teloxide-forum-topic-created.json", vec![service("forum_topic_created")]),
        ("teloxide-forum-topic-message.json", vec![msg(G, "blah", &[], "")]),
        (
            "teloxide-forward-origin-chat-anonymous-admin.json",
            vec![msg(G, "text", &[], "[Forwarded from the chat \"a\" (signed TITLE)]")],
        ),
        ("teloxide-media-group-video.json", vec![msg(D, "", &["video"], "")]),
        ("teloxide-my-chat-member-kicked.json", vec![not_a_message("my_chat_member")]),
        ("teloxide-photo-caption-entities.json", vec![msg(D, "www.example.com", &["photo"], "")]),
        ("teloxide-pinned-message.json", vec![service("pinned_message")]),
        ("teloxide-private-text-digit.json", vec![msg(D, "4", &[], "")]),
        // Animated: the model sees the sticker's still thumbnail and reads its emoji and set.
        (
            "teloxide-sticker-animated.json",
            vec![msg(D, "[sticker 😡 from the set \"AdvenTimeAnim\"]", &["sticker"], "")],
        ),
        ("teloxide-story-in-group.json", vec![msg(G, "[a story from TON Spin (@TONSpinChannel)]", &[], "")]),
        ("teloxide-text-cyrillic-emoji.json", vec![msg(D, "Лол кек 😂", &[], "")]),
        ("teloxide-text-effect-id.json", vec![msg(D, "El Psy Kongroo", &[], "")]),
        ("teloxide-text-link-preview-options.json", vec![msg(D, "hello there", &[], "")]),
        // Captured with its ids zeroed and without a sender.
        ("teloxide-venue-zero-ids.json", vec![Expect::Skip(Ignored::NoSender)]),
        ("teloxide-video-forwarded.json", vec![msg(D, "", &["video"], "")]),
    ]
}

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/telegram")
}

#[test]
fn every_real_update_becomes_the_expected_message_or_is_ignored_for_its_reason() {
    // The bot of the fixtures that reply to a bot (spec-reply-with-quote.json).
    let bot = BotIdentity { id: 7_000_000_001, username: Some("hearth_bot".into()) };
    let table = expectations();
    let mut files: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let listed: Vec<&str> = table.iter().map(|(f, _)| *f).collect();
    assert_eq!(files, listed, "every fixture file is listed once, in order");
    for (file, expected) in table {
        let raw = std::fs::read_to_string(fixture_dir().join(file)).unwrap();
        let value: serde_json::Value = hearth_json::from_str(&raw).unwrap();
        let updates: Vec<serde_json::Value> = match value {
            serde_json::Value::Array(items) => items,
            one => vec![one],
        };
        assert_eq!(updates.len(), expected.len(), "{file}");
        for (update, want) in updates.into_iter().zip(expected) {
            let update: Update = hearth_json::from_value(update).unwrap_or_else(|e| panic!("{file}: {e}"));
            let got = to_inbound(&update, &bot, 1);
            match (want, got) {
                (Expect::Message { kind, text, media, preface }, Ok(m)) => {
                    assert_eq!(m.kind, kind, "{file}: chat kind");
                    assert_eq!(m.text, text, "{file}: text");
                    let kinds: Vec<&str> = m.media.iter().map(|x| x.kind.as_str()).collect();
                    assert_eq!(kinds, media, "{file}: media");
                    assert_eq!(with_preface(&m.context, String::new()), preface, "{file}: context");
                    // What the history keeps is never empty: text, context or an attachment.
                    assert!(!m.user_text().trim().is_empty() || !m.media.is_empty(), "{file}: nothing to say");
                }
                (Expect::Skip(why), Err(got)) => assert_eq!(got, why, "{file}: reason"),
                (Expect::Message { .. }, Err(why)) => panic!("{file}: ignored ({why}), expected a message"),
                (Expect::Skip(why), Ok(m)) => panic!("{file}: became {:?}, expected ignored ({why})", m.text),
            }
        }
    }
}

#[test]
fn animated_stickers_send_their_still_thumbnail_and_still_stickers_themselves() {
    let bot = bot();
    let load = |f: &str| -> Update {
        hearth_json::from_str(&std::fs::read_to_string(fixture_dir().join(f)).unwrap()).unwrap()
    };
    let animated = to_inbound(&load("teloxide-sticker-animated.json"), &bot, 0).unwrap();
    assert_eq!(
        animated.media[0].handle, "AAMCAgADGQEAARIt0GMwiZ6n4nRbxdpM3pL8vPX6PVAhAAIjAAOw0PgMaabKAcaXKCABAAdtAAMpBA",
        "the thumbnail"
    );
    let still = to_inbound(&load("nutgram-sticker.json"), &bot, 0).unwrap();
    assert_eq!(still.media[0].handle, "yhufjikjhgjkghjffghgf");
    assert_eq!(still.media[0].mime_type, "image/webp");
}

#[test]
fn a_live_location_a_quiz_with_no_votes_and_a_reply_to_a_photo_read_as_such() {
    let base = |extra: &str| {
        parse(&format!(
            r#"{{"update_id":2,"message":{{"message_id":6,"date":1,"chat":{{"id":42,"type":"private"}},"from":{{"id":42,"first_name":"Ana"}},{extra}}}}}"#
        ))
    };
    let live = base(r#""location":{"latitude":1.5,"longitude":-2.25,"live_period":900,"horizontal_accuracy":12.4}"#);
    assert_eq!(to_inbound(&live, &bot(), 0).unwrap().text, "[live location: 1.500000, -2.250000 (±12 m)]");
    let quiz = base(
        r#""poll":{"id":"1","question":"2+2?","options":[{"text":"4","voter_count":0},{"text":"5","voter_count":0}],"total_voter_count":0,"type":"quiz","is_closed":true}"#,
    );
    assert_eq!(to_inbound(&quiz, &bot(), 0).unwrap().text, "[quiz: \"2+2?\"; options: \"4\", \"5\"; closed]");
    let reply = base(
        r#""text":"who is this?","reply_to_message":{"message_id":3,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ana"},"caption":"my cat","photo":[{"file_id":"p","width":9,"height":9}]}"#,
    );
    let m = to_inbound(&reply, &bot(), 0).unwrap();
    assert_eq!(m.user_text(), "[Replying to a message from Ana: \"[photo] my cat\"]\nwho is this?");
    assert!(m.media.is_empty(), "the replied-to photo is not fetched again");
}
