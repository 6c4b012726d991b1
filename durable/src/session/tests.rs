//! The turn loop against in-memory doubles: what a user would notice.

use super::*;
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
