//! One odd reply or a refused history must never stop a conversation, and an
//! answer that is not whole says what it is (issue 12).

use super::*;
use crate::llm::rules;
use crate::session::answer;
use r2_layout::AssistantBlock;

fn fixture(path: &str) -> serde_json::Value {
    let path = format!("{}/../tests/fixtures/real-world/llm/{path}", env!("CARGO_MANIFEST_DIR"));
    hearth_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Every text block of an Anthropic request body.
fn texts(req: &serde_json::Value) -> Vec<String> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_whitespace_reply_does_not_poison_the_next_request() {
    let f = Fixture::new();
    f.say(1, "say nothing", " \n ");
    assert_eq!(f.sent(), [answer::NOTHING_TO_ADD]);
    f.say(2, "still there?", "yes");
    assert_eq!(f.sent(), [answer::NOTHING_TO_ADD, "yes"]);
    let req = f.p.http.request_json(1);
    assert!(texts(&req).iter().all(|t| !t.trim().is_empty()), "{req}");
    assert!(texts(&req).iter().any(|t| t == rules::EMPTY_REPLY));
}

#[test]
fn a_tool_call_without_id_and_with_a_string_input_is_stored_valid_and_runs() {
    let f = Fixture::new();
    f.p.store.put_text("agents/main/TOOLS.md", "tool notes");
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "tool_use", "id": "", "name": "read_file", "input": "{\"path\": \"TOOLS.md\"}"}],
               "stop_reason": "tool_use"}),
    );
    f.p.http.push_json(200, anthropic_text("read it"));
    f.enqueue(&inbound(1, "read your notes"));
    f.drain();
    f.say(2, "thanks", "welcome");
    assert_eq!(f.sent(), ["read it", "welcome"]);
    let req = f.p.http.request_json(2);
    let msgs = req["messages"].as_array().unwrap();
    let call = msgs.iter().flat_map(|m| m["content"].as_array().unwrap()).find(|b| b["type"] == "tool_use").unwrap();
    assert!(rules::valid_tool_id(call["id"].as_str().unwrap()), "{call}");
    assert_eq!(call["input"], json!({"path": "TOOLS.md"}));
    let results = tool_results(&req);
    assert_eq!(results[0]["tool_use_id"], call["id"], "the result carries the repaired id");
    assert_eq!(results[0]["content"], "tool notes", "the tool ran with the parsed input");
}

#[test]
fn a_refused_history_is_repaired_once_and_kept_repaired() {
    let f = Fixture::new();
    f.p.http.push_json(200, tool_call("toolu_1"));
    f.p.http.push_json(200, anthropic_text("read"));
    f.enqueue(&inbound(1, "read your soul"));
    f.drain();
    // The provider refuses the history for a reason no rule foresaw.
    f.p.http.push_json(400, fixture("anthropic/error-400-unexpected-tool-use-id.json"));
    f.p.http.push_json(200, anthropic_text("back again"));
    f.enqueue(&inbound(2, "and now?"));
    f.drain();
    assert_eq!(f.sent(), ["read", "back again"]);
    assert_eq!(f.requests(), 4, "one refusal, one retry");
    let retry = f.p.http.request_json(3);
    assert!(tool_results(&retry).is_empty() && retry.to_string().contains("[Tool call: read_file"), "{retry}");
    // Kept in that form: the next turn is not refused first.
    let h = f.history();
    assert!(h.iter().all(|m| !matches!(m, Message::ToolResult { .. })), "{h:?}");
    assert!(h.iter().any(|m| m.text().contains("and now?")));
    f.say(3, "ok", "fine");
    assert_eq!(f.requests(), 5);
    assert_eq!(sent_last(&f), "fine");
}

#[test]
fn a_history_refused_twice_tells_the_user_about_reset_and_keeps_the_message() {
    let f = Fixture::new();
    f.p.http.push_json(400, fixture("anthropic/error-400-whitespace-text-block.json"));
    f.p.http.push_json(400, fixture("anthropic/error-400-whitespace-text-block.json"));
    f.enqueue(&inbound(1, "hello there"));
    f.drain();
    assert_eq!(f.requests(), 2);
    let told = sent_last(&f);
    assert!(told.contains("/reset") && told.contains("non-whitespace text") && told.contains("saved"), "{told}");
    assert!(f.history().iter().any(|m| m.text().contains("hello there")));
}

#[test]
fn a_reply_cut_while_calling_a_tool_runs_nothing_and_says_so() {
    let f = Fixture::new();
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "text", "text": "Writing it."},
               {"type": "tool_use", "id": "toolu_w", "name": "write_file", "input": {"path": "notes.md", "content": "# Half a"}}],
               "stop_reason": "max_tokens"}),
    );
    f.p.http.push_json(200, anthropic_stop("The first part is", "max_tokens"));
    f.enqueue(&inbound(1, "write a long note"));
    f.drain();
    assert!(f.object("agents/main/notes.md").is_none(), "a cut call is not run");
    let results = tool_results(&f.p.http.request_json(1));
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[0]["content"], answer::CUT_CALL);
    assert_eq!(f.sent(), [format!("The first part is\n\n{}", answer::CUT_NOTE)]);
}

#[test]
fn refusals_and_pauses_say_what_they_are() {
    // A refusal that carries a tool call: nothing runs, the user is told.
    let f = Fixture::new();
    f.p.http.push_json(200, fixture("anthropic/message-refusal-with-tool-use.json"));
    f.enqueue(&inbound(1, "what's the weather?"));
    f.drain();
    assert_eq!(f.sent(), [answer::DECLINED]);
    assert_eq!(f.requests(), 1);
    let h = f.history();
    assert!(matches!(h.last(), Some(Message::Assistant { content, .. })
        if content == &[AssistantBlock::Text { text: answer::DECLINED_IN_HISTORY.into() }]));
    f.say(2, "ok, something else", "sure");
    assert_eq!(sent_last(&f), "sure");

    // A paused turn is continued: its blocks go back as they came.
    let f = Fixture::new();
    f.p.http.push_json(200, fixture("anthropic/message-pause-turn.json"));
    f.p.http.push_json(200, anthropic_stop("Brownies need cocoa.", "end_turn"));
    f.enqueue(&inbound(1, "search the web"));
    f.drain();
    assert_eq!(f.sent(), ["Brownies need cocoa."]);
    let again = f.p.http.request_json(1);
    let last = again["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["role"].as_str(), last["content"][0]["type"].as_str()),
        (Some("assistant"), Some("server_tool_use"))
    );

    // Out of rounds while paused: the user is told how to go on.
    let mut f = Fixture::new();
    f.cfg.llm.max_tool_rounds = 1;
    f.p.http.push_json(200, fixture("anthropic/message-pause-turn.json"));
    f.enqueue(&inbound(1, "search the web"));
    f.drain();
    assert_eq!(f.sent(), [answer::PAUSED_BEFORE_ANSWER]);
}

#[test]
fn openai_refusals_and_cut_answers_with_the_real_bodies() {
    let mut f = Fixture::new();
    f.cfg.llm.provider = crate::settings::Provider::OpenAi;
    f.p.http.push_json(200, fixture("openai/chat-refusal.json"));
    f.enqueue(&inbound(1, "help me with something bad"));
    f.drain();
    assert_eq!(f.sent(), [format!("I'm very sorry, but I can't assist with that.\n\n{}", answer::DECLINED_NOTE)]);
    f.p.http.push_json(200, fixture("openai/chat-finish-length.json"));
    f.enqueue(&inbound(2, "a long one"));
    f.drain();
    assert_eq!(sent_last(&f), format!("{{\"\n\n{}", answer::CUT_NOTE));
}
