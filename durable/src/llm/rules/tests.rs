use super::*;

fn assistant(content: Vec<AssistantBlock>, timestamp: i64) -> Message {
    Message::Assistant { content, timestamp, model: None, stop_reason: None, usage: None }
}

fn call(id: &str, arguments: Value) -> AssistantBlock {
    AssistantBlock::ToolCall { id: id.into(), name: "read_file".into(), arguments }
}

fn result(id: &str) -> Message {
    Message::ToolResult {
        tool_call_id: id.into(),
        tool_name: "read_file".into(),
        content: vec![ResultBlock::Text { text: "ok".into() }],
        is_error: false,
        timestamp: 3,
    }
}

fn ids(m: &Message) -> Vec<String> {
    match m {
        Message::Assistant { content, .. } => content
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect(),
        Message::ToolResult { tool_call_id, .. } => vec![tool_call_id.clone()],
        Message::User { .. } => vec![],
    }
}

fn shape(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .map(|m| match m {
            Message::User { .. } => "user".to_owned(),
            Message::Assistant { .. } => format!("assistant {}", ids(m).join(",")),
            Message::ToolResult { tool_call_id, is_error, .. } => format!("result {tool_call_id} {is_error}"),
        })
        .collect()
}

#[test]
fn blank_user_text_becomes_a_visible_placeholder() {
    assert_eq!(conform(Message::user_text(" \n\t", 1)), Message::user_text(EMPTY_USER_TEXT, 1));
    assert_eq!(conform(Message::user_text("", 1)).text(), EMPTY_USER_TEXT);
    // A stored message: the reminder block, and the user's empty text (a
    // location or a dice before the channel describes them).
    let m = Message::User {
        content: UserContent::Blocks(vec![
            UserBlock::Text { text: "<system-reminder>now</system-reminder>".into() },
            UserBlock::Text { text: "".into() },
        ]),
        sender: None,
        channel: None,
        timestamp: 1,
    };
    let fixed = conform(m);
    assert_eq!(fixed.text(), format!("<system-reminder>now</system-reminder>\n{EMPTY_USER_TEXT}"));
    let none = Message::User { content: UserContent::Blocks(vec![]), sender: None, channel: None, timestamp: 1 };
    assert_eq!(conform(none).text(), EMPTY_USER_TEXT);
    // Media blocks are left to hydration.
    let photo = Message::User {
        content: UserContent::Blocks(vec![UserBlock::Image { mime_type: "image/png".into(), r2_key: "k".into() }]),
        sender: None,
        channel: None,
        timestamp: 1,
    };
    assert!(matches!(wire_form(&photo), Cow::Borrowed(_)));
}

#[test]
fn a_whitespace_reply_keeps_its_calls_and_an_empty_one_gets_a_placeholder() {
    let only_space = assistant(vec![AssistantBlock::Text { text: "  \n".into() }], 5);
    assert_eq!(conform(only_space).text(), EMPTY_REPLY);
    let thinking_only = assistant(vec![AssistantBlock::Thinking { thinking: "hmm".into() }], 5);
    let fixed = conform(thinking_only);
    assert_eq!(fixed.text(), EMPTY_REPLY);
    let with_call =
        assistant(vec![AssistantBlock::Text { text: " ".into() }, call("toolu_1", json!({"path": "a"}))], 5);
    let fixed = conform(with_call);
    assert_eq!(fixed.text(), "", "no placeholder beside a tool call");
    assert_eq!(ids(&fixed), ["toolu_1"]);
    let empty_result = Message::ToolResult {
        tool_call_id: "toolu_1".into(),
        tool_name: "read_file".into(),
        content: vec![ResultBlock::Text { text: "".into() }],
        is_error: true,
        timestamp: 1,
    };
    assert_eq!(conform(empty_result).text(), EMPTY_TOOL_OUTPUT);
}

#[test]
fn tool_ids_are_made_valid_unique_and_stable() {
    for ok in ["toolu_01AbmHJypDhKqBF7NKdRPJ6d", "call_abc", "a-b_C9"] {
        assert!(matches!(wire_tool_id(ok), Cow::Borrowed(_)), "{ok}");
    }
    // Real shapes: ids with characters outside the pattern (ClawRouter#17),
    // empty ids from an OpenAI-compatible server (pi#4854).
    let a = wire_tool_id("functions.read_file:0");
    let b = wire_tool_id("functions.read_file/0");
    assert!(valid_tool_id(&a) && valid_tool_id(&b), "{a} {b}");
    assert_ne!(a, b, "ids that differ only in invalid characters stay apart");
    assert_eq!(a, wire_tool_id("functions.read_file:0"), "the same id repairs the same way");

    let m = assistant(
        vec![call("", json!({})), call("", json!({})), call("dup", json!({})), call("dup", json!({}))],
        1_700_000_000_123,
    );
    let fixed = conform(m.clone());
    let got = ids(&fixed);
    assert_eq!(got, ["call_1700000000123_0", "call_1700000000123_1", "dup", "call_1700000000123_3"]);
    assert_eq!(conform(fixed.clone()), fixed, "idempotent");
    assert_eq!(ids(&conform(m)), got, "the same message repairs the same way");
}

#[test]
fn tool_names_and_inputs_are_made_acceptable() {
    assert_eq!(wire_tool_name(""), UNNAMED_TOOL);
    assert_eq!(wire_tool_name("read file"), "read_file");
    assert!(matches!(wire_tool_name("memory_search"), Cow::Borrowed(_)));
    assert_eq!(wire_tool_name(&"x".repeat(80)).len(), 64);

    assert_eq!(tool_input(&json!({"a": 1})).into_owned(), json!({"a": 1}));
    assert_eq!(tool_input(&Value::Null).into_owned(), json!({}));
    assert_eq!(tool_input(&json!("")).into_owned(), json!({}));
    // A model that double-encodes its input.
    assert_eq!(tool_input(&json!("{\"path\": \"SOUL.md\"}")).into_owned(), json!({"path": "SOUL.md"}));
    assert_eq!(tool_input(&json!("SOUL.md")).into_owned(), json!({UNPARSED_INPUT: "SOUL.md"}));
    assert_eq!(tool_input(&json!([1, 2])).into_owned(), json!({UNPARSED_INPUT: [1, 2]}));

    let m = assistant(vec![call("toolu_1", json!("SOUL.md"))], 1);
    let Message::Assistant { content, .. } = conform(m) else { unreachable!() };
    assert_eq!(
        content,
        [AssistantBlock::ToolCall {
            id: "toolu_1".into(),
            name: "read_file".into(),
            arguments: json!({UNPARSED_INPUT: "SOUL.md"})
        }]
    );
}

#[test]
fn an_unanswered_tool_call_gets_an_interrupted_result_and_orphans_go() {
    let history = vec![
        result("stale"), // its call was compacted away
        Message::user_text("read it", 1),
        assistant(vec![call("a", json!({})), call("b", json!({}))], 2),
        result("b"), // evicted after one of two tools
        Message::user_text("hello?", 4),
        assistant(vec![call("c", json!({}))], 5), // evicted before the tool ran
    ];
    assert!(matches!(paired(&history), Cow::Owned(_)));
    let fixed = pair_tool_calls(history);
    assert_eq!(
        shape(&fixed),
        ["user", "assistant a,b", "result b false", "result a true", "user", "assistant c", "result c true"]
    );
    assert!(fixed[3].text().contains(INTERRUPTED_TOOL));
    // Already well-formed: unchanged, and not copied.
    assert_eq!(pair_tool_calls(fixed.clone()), fixed);
    assert!(matches!(paired(&fixed), Cow::Borrowed(_)));
}

#[test]
fn calls_stored_with_empty_ids_stay_paired_with_their_results() {
    // Stored before the rules: a server sent two calls without ids.
    let history = vec![
        Message::user_text("read both", 1),
        assistant(vec![call("", json!({"path": "A"})), call("", json!({"path": "B"}))], 2),
        result(""),
        result(""),
        Message::user_text("thanks", 4),
    ];
    let fixed = paired(&history).into_owned();
    assert_eq!(
        shape(&fixed),
        ["user", "assistant call_2_0,call_2_1", "result call_2_0 false", "result call_2_1 false", "user"]
    );
    assert!(matches!(paired(&fixed), Cow::Borrowed(_)), "a second pass changes nothing");
    // Encoding the message on its own gives the ids its results now carry.
    assert_eq!(ids(&wire_form(&history[1])), ["call_2_0", "call_2_1"]);
}

#[test]
fn the_strict_form_is_text_only() {
    let history = [
        Message::User {
            content: UserContent::Blocks(vec![
                UserBlock::Image { mime_type: "image/png".into(), r2_key: "media/k/a.png".into() },
                UserBlock::File {
                    mime_type: "application/pdf".into(),
                    r2_key: "media/k/b.pdf".into(),
                    filename: Some("b.pdf".into()),
                },
                UserBlock::Text { text: "look".into() },
            ]),
            sender: None,
            channel: None,
            timestamp: 1,
        },
        assistant(
            vec![AssistantBlock::Thinking { thinking: "t".into() }, call("toolu_1", json!({"path": "SOUL.md"}))],
            2,
        ),
        result("toolu_1"),
        assistant(vec![AssistantBlock::Text { text: "done".into() }], 4),
    ];
    let strict: Vec<Message> = history.iter().map(strict_form).collect();
    for m in &strict {
        match m {
            Message::User { content: UserContent::Blocks(b), .. } => {
                assert!(b.iter().all(|b| matches!(b, UserBlock::Text { .. })))
            }
            Message::User { .. } => {}
            Message::Assistant { content, .. } => {
                assert!(content.iter().all(|b| matches!(b, AssistantBlock::Text { .. })))
            }
            Message::ToolResult { .. } => panic!("a tool result is left: {m:?}"),
        }
        assert!(well_formed(m), "{m:?}");
    }
    assert!(strict[0].text().contains("image/png") && strict[0].text().contains("b.pdf"));
    assert_eq!(strict[1].text(), "[Tool call: read_file {\"path\":\"SOUL.md\"}]");
    assert_eq!(strict[2].text(), "[Tool result of read_file: ok]");
}
