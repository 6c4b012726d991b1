//! The turn loop against in-memory doubles: what a user would notice.

use super::*;
use super::turn::is_reset_command;
use crate::config::AgentConfig;
use crate::prompt::WorkspaceCache;
use crate::routing::{ChatKind, Inbound, SessionKey};
use crate::ports::ReplyTarget;
use crate::testing::TestPlatform;
use futures::executor::block_on;
use r2_layout::Message;
use serde_json::json;
use std::cell::RefCell;
use std::collections::HashMap;

fn config() -> AgentConfig {
    let vars: HashMap<String, String> = [
        ("OWNER_IDS", "telegram:1"),
        ("LLM_API_KEY", "k"),
        ("RETRY_BASE_MS", "10"),
        ("LLM_MAX_ATTEMPTS", "3"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    AgentConfig::load(&vars, "main").unwrap()
}

fn inbound(n: u32, text: &str) -> Inbound {
    Inbound {
        dedupe_key: format!("telegram:update:{n}"),
        channel: "telegram".into(),
        kind: ChatKind::Direct,
        chat_id: "1".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: text.into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget { channel: "telegram".into(), chat_id: "1".into(), ..Default::default() },
        received_at: 0,
        media: vec![],
    }
}

fn anthropic_text(text: &str) -> serde_json::Value {
    json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "model": "m",
           "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}})
}

struct Fixture {
    p: TestPlatform,
    cfg: AgentConfig,
    key: SessionKey,
    cache: RefCell<WorkspaceCache>,
    media_cache: RefCell<crate::media::MediaCache>,
}

impl Fixture {
    fn new() -> Self {
        let p = TestPlatform::default();
        SessionStore::new(&p.sql).init().unwrap();
        Fixture { p, cfg: config(), key: SessionKey::parse("agent:main:main").unwrap(), cache: RefCell::default(), media_cache: RefCell::default() }
    }
    fn enqueue(&self, m: &Inbound) -> bool {
        SessionStore::new(&self.p.sql).enqueue(&m.dedupe_key, &serde_json::to_string(m).unwrap(), 0).unwrap()
    }
    fn drain(&self) -> DrainReport {
        let deps = SessionDeps { config: &self.cfg, key: &self.key, workspace_cache: &self.cache, media_cache: &self.media_cache };
        block_on(drain(&self.p, &deps)).unwrap()
    }
    fn history(&self) -> Vec<Message> {
        let store = SessionStore::new(&self.p.sql);
        let sid = store.meta("session_id").unwrap().unwrap();
        store.history(&sid).unwrap()
    }
    fn sent(&self) -> Vec<String> {
        self.p.channel.sent.borrow().iter().map(|(_, t)| t.clone()).collect()
    }
}

#[test]
fn a_message_gets_one_reply_with_the_workspace_in_order() {
    let f = Fixture::new();
    f.p.store.put_text("agents/main/SOUL.md", "I am calm.");
    f.p.store.put_text("agents/main/IDENTITY.md", "- **Name:** Kate");
    f.p.store.put_text("agents/main/MEMORY.md", "secret fact");
    f.p.http.push_json(200, anthropic_text("Hello Ana"));
    assert!(f.enqueue(&inbound(1, "hi")));
    assert_eq!(f.drain().turns, 1);
    assert_eq!(f.sent(), ["Hello Ana"]);
    let req = f.p.http.request_json(0);
    let system = req["system"][0]["text"].as_str().unwrap();
    let soul = system.find("## Your Soul").unwrap();
    let ident = system.find("## Your Identity").unwrap();
    let mem = system.find("## Long-Term Memory").unwrap();
    assert!(soul < ident && ident < mem, "{system}");
    assert!(system.contains("secret fact"));
    assert_eq!(f.history().len(), 2);
}

#[test]
fn shared_sessions_do_not_see_memory() {
    let mut f = Fixture::new();
    f.key = SessionKey::parse("agent:main:telegram:group:-100").unwrap();
    f.p.store.put_text("agents/main/SOUL.md", "I am calm.");
    f.p.store.put_text("agents/main/MEMORY.md", "secret fact");
    f.p.store.put_text("agents/main/USER.md", "user secret");
    f.p.http.push_json(200, anthropic_text("ok"));
    f.enqueue(&inbound(1, "hi"));
    f.drain();
    let body = String::from_utf8(f.p.http.requests.borrow()[0].body.clone()).unwrap();
    assert!(body.contains("I am calm."));
    assert!(!body.contains("secret fact") && !body.contains("user secret"));
}

#[test]
fn repeated_delivery_is_queued_once() {
    let f = Fixture::new();
    assert!(f.enqueue(&inbound(7, "hi")));
    assert!(!f.enqueue(&inbound(7, "hi")));
    f.p.http.push_json(200, anthropic_text("once"));
    f.drain();
    assert!(!f.enqueue(&inbound(7, "hi")), "still remembered after the turn");
    assert_eq!(f.sent(), ["once"]);
}

#[test]
fn a_500_then_success_gives_one_reply_after_backoff() {
    let f = Fixture::new();
    f.p.http.push_json(500, json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}));
    f.p.http.push_json(200, anthropic_text("recovered"));
    f.enqueue(&inbound(1, "hi"));
    f.drain();
    assert_eq!(f.sent(), ["recovered"]);
    assert_eq!(*f.p.slept.borrow(), [10]);
}

#[test]
fn an_llm_that_keeps_failing_tells_the_user_and_keeps_the_message() {
    let f = Fixture::new();
    for _ in 0..3 {
        f.p.http.push_json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    }
    f.enqueue(&inbound(1, "remember me"));
    f.drain();
    assert_eq!(f.p.http.requests.borrow().len(), 3);
    let sent = f.sent();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].contains("saved"), "{sent:?}");
    let h = f.history();
    assert_eq!(h.len(), 1);
    assert!(h[0].text().contains("remember me"));
}

#[test]
fn messages_are_answered_in_order_and_a_tool_call_round_trips() {
    let f = Fixture::new();
    f.p.store.put_text("agents/main/TOOLS.md", "use tools wisely");
    f.p.http.push_json(200, json!({"content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "TOOLS.md"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}));
    f.p.http.push_json(200, anthropic_text("first"));
    f.p.http.push_json(200, anthropic_text("second"));
    f.enqueue(&inbound(1, "one"));
    f.enqueue(&inbound(2, "two"));
    let r = f.drain();
    assert_eq!((r.turns, r.llm_calls), (2, 3));
    assert_eq!(f.sent(), ["first", "second"]);
    let second = f.p.http.request_json(1);
    let msgs = second["messages"].as_array().unwrap();
    let last = &msgs[msgs.len() - 1]["content"][0];
    assert_eq!(last["type"], "tool_result");
    assert_eq!(last["content"], "use tools wisely");
}

#[test]
fn an_interrupted_turn_resumes_without_duplicating_the_message() {
    let f = Fixture::new();
    let m = inbound(1, "hello");
    f.enqueue(&m);
    // Simulate eviction after the message went active, before the LLM answered.
    let store = SessionStore::new(&f.p.sql);
    let item = store.next_open().unwrap().unwrap();
    let sid = store.session_id(|| "s1".into(), 0).unwrap();
    store.start(item.seq, &sid, Some(&Message::user_text("hello", 0))).unwrap();
    f.p.http.push_json(200, anthropic_text("back"));
    f.drain();
    assert_eq!(f.sent(), ["back"]);
    let users = f.history().iter().filter(|m| matches!(m, Message::User { .. })).count();
    assert_eq!(users, 1);
}

#[test]
fn openai_encoding_round_trips_tools() {
    let mut f = Fixture::new();
    f.cfg.llm.provider = crate::config::Provider::OpenAi;
    f.p.http.push_json(200, json!({"model": "gpt", "choices": [{"message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"SOUL.md\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}));
    f.p.http.push_json(200, json!({"model": "gpt", "choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}}));
    f.enqueue(&inbound(1, "hi"));
    f.drain();
    assert_eq!(f.sent(), ["done"]);
    let req = f.p.http.request_json(1);
    let msgs = req["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(msgs[3]["role"], "tool");
    assert!(msgs[3]["content"].as_str().unwrap().contains("does not exist"));
    let store = SessionStore::new(&f.p.sql);
    let totals = store.usage_totals(&store.meta("session_id").unwrap().unwrap()).unwrap();
    assert_eq!((totals.input, totals.cache_read, totals.output), (10, 4, 3));
}

fn sent_last(f: &Fixture) -> String {
    f.sent().last().cloned().unwrap_or_default()
}

#[test]
fn reset_archives_the_history_then_clears_it() {
    let f = Fixture::new();
    f.p.store.put_text("media/agent:main:main/a.jpg", "jpeg");
    f.p.http.push_json(200, anthropic_text("hi"));
    f.enqueue(&inbound(1, "remember tea"));
    f.drain();
    let sid = SessionStore::new(&f.p.sql).meta("session_id").unwrap().unwrap();
    f.p.http.push_json(200, anthropic_text("- Ana likes tea"));
    f.enqueue(&inbound(2, "/reset"));
    f.drain();
    assert!(sent_last(&f).contains("archived our conversation (2 messages)"), "{:?}", f.sent());
    let key = format!("agents/main/sessions/{sid}.jsonl.gz");
    let obj = f.p.store.objects.borrow().get(&key).cloned().expect("archive written");
    let msgs = r2_layout::archive::decode(&obj.body).unwrap();
    assert_eq!(msgs.len(), 2);
    assert!(msgs[0].text().contains("remember tea"));
    let meta: HashMap<_, _> = obj.custom_metadata.into_iter().collect();
    assert_eq!(meta["messageCount"], "2");
    assert_eq!(meta["sessionKey"], "agent:main:main");
    assert_eq!(meta["agentId"], "main");
    assert!(!f.p.store.objects.borrow().contains_key("media/agent:main:main/a.jpg"), "media deleted");
    let note = f.p.store.objects.borrow().get("agents/main/memory/1970-01-01.md").cloned().expect("daily note");
    let note = String::from_utf8(note.body).unwrap();
    assert!(note.contains("### Extracted before reset (00:00)") && note.contains("- Ana likes tea"), "{note}");
    let store = SessionStore::new(&f.p.sql);
    assert_eq!(store.meta("session_id").unwrap(), None, "a new session starts with the next message");
    // The extraction request reused the conversation and appended its instruction last.
    let extraction = f.p.http.request_json(1);
    let msgs = extraction["messages"].as_array().unwrap();
    assert!(msgs.last().unwrap()["content"].to_string().contains("about to be archived"));
}

#[test]
fn a_failed_archive_write_keeps_everything() {
    let f = Fixture::new();
    f.p.http.push_json(200, anthropic_text("hi"));
    f.enqueue(&inbound(1, "precious"));
    f.drain();
    f.p.store.fail_puts.set(true);
    f.enqueue(&inbound(2, "/new"));
    f.drain();
    assert!(sent_last(&f).contains("nothing was deleted"));
    assert_eq!(f.history().len(), 2);
    // Retry once storage is back.
    f.p.store.fail_puts.set(false);
    f.p.http.push_json(200, anthropic_text("NONE"));
    f.enqueue(&inbound(3, "/reset"));
    f.drain();
    assert!(sent_last(&f).contains("2 messages"));
}

#[test]
fn an_overflowing_history_is_compacted_once_and_replayed_from_the_summary() {
    let mut f = Fixture::new();
    for i in 0..6 {
        f.p.http.push_json(200, anthropic_text(&"answer ".repeat(120)));
        f.enqueue(&inbound(10 + i, &format!("question {i} {}", "words ".repeat(120))));
        f.drain();
    }
    // Now the next request no longer fits.
    f.cfg.lifecycle.context_window = 4_000;
    f.cfg.lifecycle.context_reserve = 200;
    let requests_before = f.p.http.requests.borrow().len();
    f.p.http.push_json(200, anthropic_text("## Summary\nWe talked about questions 0-3.\n## Memories\n- Ana asks many questions"));
    f.p.http.push_json(200, anthropic_text("fine"));
    f.enqueue(&inbound(99, "and now?"));
    f.drain();
    let parts: Vec<String> = f.p.store.objects.borrow().keys().filter(|k| k.contains("-part")).cloned().collect();
    assert!(!parts.is_empty(), "part archive written");
    let reqs = f.p.http.requests.borrow().len();
    assert_eq!(reqs, requests_before + 2, "one compaction call, then the turn");
    let compaction = f.p.http.request_json(requests_before);
    let cmsgs = compaction["messages"].as_array().unwrap();
    assert!(cmsgs.last().unwrap()["content"].to_string().contains("being compacted"));
    let last = f.p.http.request_json(reqs - 1);
    let first_msg = last["messages"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(first_msg.contains("We talked about questions 0-3."), "{first_msg}");
    let daily = f.p.store.objects.borrow().get("agents/main/memory/1970-01-01.md").cloned().expect("daily note");
    assert!(String::from_utf8(daily.body).unwrap().contains("Extracted from context compaction"));
}

#[test]
fn reset_commands_are_recognised() {
    assert!(is_reset_command("/reset"));
    assert!(is_reset_command("/new@hearth_bot please"));
    assert!(is_reset_command("/RESET"));
    assert!(!is_reset_command("/resetting"));
    assert!(!is_reset_command("please /reset"));
}

#[test]
fn a_turn_interrupted_after_its_answer_resends_it_without_another_llm_call() {
    let f = Fixture::new();
    f.p.http.push_json(200, anthropic_text("the answer"));
    f.enqueue(&inbound(1, "question"));
    f.drain();
    // Simulate eviction after the answer was stored and sent, before `finish`.
    let payload = serde_json::to_string(&inbound(1, "question")).unwrap();
    f.p.sql.conn.execute("UPDATE inbox SET state = 'active', payload = ?1", [payload]).unwrap();
    f.drain();
    assert_eq!(f.p.http.requests.borrow().len(), 1, "no second LLM call");
    assert_eq!(f.sent(), ["the answer", "the answer"], "delivered at least once");
    assert_eq!(SessionStore::new(&f.p.sql).open_count().unwrap(), 0);
}

#[test]
fn daily_and_idle_policies_reset_before_the_next_message() {
    let mut f = Fixture::new();
    f.cfg.lifecycle.daily_at = Some((4, 0));
    f.p.http.push_json(200, anthropic_text("evening answer"));
    f.p.now.set(20 * 3_600_000); // 1970-01-01 20:00 UTC
    f.enqueue(&inbound(1, "late question"));
    f.drain();
    let first_sid = SessionStore::new(&f.p.sql).meta("session_id").unwrap().unwrap();
    // Next morning after 04:00: the old session is archived first.
    f.p.now.set(24 * 3_600_000 + 5 * 3_600_000);
    f.p.http.push_json(200, anthropic_text("NONE")); // extraction
    f.p.http.push_json(200, anthropic_text("morning answer"));
    f.enqueue(&inbound(2, "good morning"));
    f.drain();
    assert!(f.p.store.objects.borrow().contains_key(&format!("agents/main/sessions/{first_sid}.jsonl.gz")));
    let h = f.history();
    assert_eq!(h.len(), 2, "the new session holds only today's exchange");
    assert!(h[0].text().contains("good morning"));
    // Idle: 3 hours without activity with a 2-hour policy.
    f.cfg.lifecycle.daily_at = None;
    f.cfg.lifecycle.idle_hours = Some(2);
    f.p.now.set(f.p.now.get() + 3 * 3_600_000);
    f.p.http.push_json(200, anthropic_text("NONE"));
    f.p.http.push_json(200, anthropic_text("after a pause"));
    f.enqueue(&inbound(3, "back"));
    f.drain();
    assert_eq!(f.history().len(), 2);
    assert_eq!(f.p.store.objects.borrow().keys().filter(|k| k.starts_with("agents/main/sessions/")).count(), 2);
}

#[test]
fn a_message_queued_past_its_reply_deadline_spends_no_llm_call_and_is_kept() {
    let f = Fixture::new();
    f.p.now.set(1_000);
    let mut m = inbound(1, "answer me in time");
    m.reply_target.deadline_ms = Some(500);
    f.enqueue(&m);
    let report = f.drain();
    assert_eq!((report.turns, report.llm_calls), (1, 0));
    assert!(f.p.http.requests.borrow().is_empty(), "no LLM call");
    assert_eq!(f.sent(), vec![super::turn::QUEUED_PAST_DEADLINE.to_owned()]);
    assert!(f.history().iter().any(|h| h.text().contains("answer me in time")), "the message is kept");
}

#[test]
fn a_turn_reaching_its_reply_deadline_stops_between_model_calls_and_says_so() {
    let f = Fixture::new();
    let mut m = inbound(1, "read a lot");
    m.reply_target.deadline_ms = Some(5);
    f.enqueue(&m);
    // The first call is retried after 10 ms of backoff: the deadline passes during it.
    f.p.http.push_json(503, json!({"error": {"message": "busy"}}));
    f.p.http.push_json(200, json!({"content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "TOOLS.md"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}));
    let report = f.drain();
    assert_eq!(report.llm_calls, 1, "no second model call after the deadline");
    assert_eq!(f.p.http.requests.borrow().len(), 2);
    assert_eq!(f.sent(), vec![super::turn::TURN_PAST_DEADLINE.to_owned()]);
    // The tool round is kept, so asking again continues from it.
    assert!(f.history().iter().any(|h| matches!(h, Message::ToolResult { .. })));
}
