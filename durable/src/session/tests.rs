//! The turn loop against in-memory doubles: what a user would notice.

use super::deps::SessionDeps;
use super::drain::{drain, is_reset_command, is_undo_command, DrainReport};
use super::store::SessionStore;
use crate::inbound::{ChannelKind, Inbound, SessionKey};
use crate::settings::AgentConfig;
use crate::testing::{Fault, StoreOp, TestPlatform};
use crate::workspace::WorkspaceCache;
use futures::executor::block_on;
use r2_layout::Message;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

pub(super) fn config() -> AgentConfig {
    let vars: HashMap<String, String> =
        // Chat previews have tests of their own (host/tests/api.rs).
        [
            ("OWNER_IDS", "telegram:1"),
            ("LLM_API_KEY", "k"),
            ("RETRY_BASE_MS", "10"),
            ("LLM_MAX_ATTEMPTS", "3"),
            ("STREAM_REPLIES", "off"),
        ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    AgentConfig::load(&vars, "main").unwrap()
}

pub(super) fn inbound(n: u32, text: &str) -> Inbound {
    crate::testing::telegram_dm(format!("telegram:update:{n}"), text, None)
}

pub(super) fn anthropic_text(text: &str) -> serde_json::Value {
    json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "model": "m",
           "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}})
}

pub(super) struct Fixture {
    pub(super) p: TestPlatform,
    pub(super) cfg: AgentConfig,
    pub(super) key: SessionKey,
    pub(super) cache: RefCell<WorkspaceCache>,
    pub(super) load_ops: Cell<Option<u32>>,
    pub(super) media_cache: RefCell<crate::media::MediaCache>,
    pub(super) history: RefCell<super::history::HistoryCache>,
    pub(super) wire_memo: RefCell<crate::llm::wire::WireMemo>,
    pub(super) recall: crate::memory::recall::RecallGate,
    pub(super) mcp: RefCell<crate::mcp::toolset::McpState>,
    pub(super) meter: RefCell<crate::session::meter_state::MeterState>,
    pub(super) watch: crate::session::watch::Watch,
}

impl Fixture {
    pub(super) fn new() -> Self {
        let p = TestPlatform::default();
        SessionStore::new(&p.sql).init().unwrap();
        Fixture {
            p,
            cfg: config(),
            key: SessionKey::parse("agent:main:main").unwrap(),
            cache: RefCell::default(),
            load_ops: Cell::default(),
            media_cache: RefCell::default(),
            history: RefCell::default(),
            wire_memo: RefCell::default(),
            recall: Default::default(),
            mcp: RefCell::default(),
            meter: RefCell::default(),
            watch: Default::default(),
        }
    }
    pub(super) fn enqueue(&self, m: &Inbound) -> bool {
        SessionStore::new(&self.p.sql).enqueue(&m.dedupe_key, &serde_json::to_string(m).unwrap(), 0).unwrap()
    }
    pub(super) fn drain(&self) -> DrainReport {
        self.try_drain().unwrap()
    }
    /// Scripts the model's answer, queues a message and runs the queue.
    pub(super) fn say(&self, n: u32, text: &str, answer: &str) {
        self.p.http.push_json(200, anthropic_text(answer));
        self.enqueue(&inbound(n, text));
        self.drain();
    }
    pub(super) fn deps(&self) -> SessionDeps<'_> {
        SessionDeps {
            config: &self.cfg,
            key: &self.key,
            workspace_cache: &self.cache,
            workspace_load_ops: &self.load_ops,
            media_cache: &self.media_cache,
            history: &self.history,
            wire_memo: &self.wire_memo,
            recall: &self.recall,
            mcp: &self.mcp,
            meter: &self.meter,
            watch: &self.watch,
        }
    }
    pub(super) fn try_drain(&self) -> Result<DrainReport, crate::ports::StorageError> {
        block_on(drain(&self.p, &self.deps()))
    }
    pub(super) fn session_id(&self) -> Option<String> {
        SessionStore::new(&self.p.sql).meta("session_id").unwrap()
    }
    pub(super) fn object(&self, key: &str) -> Option<String> {
        self.p.store.objects.borrow().get(key).map(|o| String::from_utf8_lossy(&o.body).into_owned())
    }
    pub(super) fn requests(&self) -> usize {
        self.p.http.requests.borrow().len()
    }
    /// The Archive entries of a memory store: (name, content).
    pub(super) fn archive_entries(&self, store: &str) -> Vec<(String, String)> {
        use crate::protocol::memory::{MemoryCall, MemoryReply};
        let call = MemoryCall::Search {
            store: store.into(),
            query: "archive".into(),
            k: 50,
            kind: Some(hearth_memory::Kind::Archive),
            record: false,
        };
        match self.p.memory.hub.borrow_mut().call(call) {
            Ok(MemoryReply::Hits { hits }) => hits.into_iter().map(|h| (h.entry.name, h.entry.content)).collect(),
            other => panic!("{other:?}"),
        }
    }
    /// Fills the history with six long exchanges, then shrinks the window so
    /// the next request no longer fits.
    pub(super) fn long_history(&mut self) {
        for i in 0..6 {
            self.p.http.push_json(200, anthropic_text(&"answer ".repeat(120)));
            self.enqueue(&inbound(10 + i, &format!("question {i} {}", "words ".repeat(120))));
            self.drain();
        }
        // Six long exchanges overflow it; the prompt and every tool's schema
        // (round four added `remind`) fit in it.
        self.cfg.lifecycle.context_window = 5_000;
        self.cfg.lifecycle.context_reserve = 200;
    }
    pub(super) fn history(&self) -> Vec<Message> {
        let store = SessionStore::new(&self.p.sql);
        let sid = store.meta("session_id").unwrap().unwrap();
        store.history(&sid).unwrap()
    }
    pub(super) fn sent(&self) -> Vec<String> {
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
    let backoff: Vec<u64> =
        f.p.slept.borrow().iter().copied().filter(|&ms| ms != super::turn::TYPING_REFRESH_MS).collect();
    assert_eq!(backoff, [10]);
}

#[test]
fn an_llm_that_keeps_failing_tells_the_user_and_keeps_the_message() {
    let f = Fixture::new();
    for _ in 0..3 {
        f.p.http
            .push_json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
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
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "TOOLS.md"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
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
    f.cfg.llm.provider = crate::settings::Provider::OpenAi;
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

pub(super) fn sent_last(f: &Fixture) -> String {
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
    f.long_history();
    let requests_before = f.p.http.requests.borrow().len();
    f.p.http.push_json(
        200,
        anthropic_text("## Summary\nWe talked about questions 0-3.\n## Memories\n- Ana asks many questions"),
    );
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
fn a_turn_interrupted_after_its_answer_sends_it_once_without_another_llm_call() {
    let f = Fixture::new();
    f.p.http.push_json(200, anthropic_text("the answer"));
    f.enqueue(&inbound(1, "question"));
    f.drain();
    // Simulate eviction after the answer was stored and sent, before `finish`.
    let payload = serde_json::to_string(&inbound(1, "question")).unwrap();
    f.p.sql.conn.execute("UPDATE inbox SET state = 'active', payload = ?1", [&payload]).unwrap();
    f.drain();
    assert_eq!(f.p.http.requests.borrow().len(), 1, "no second LLM call");
    assert_eq!(f.sent(), ["the answer"], "the outbox knows it went");
    assert_eq!(SessionStore::new(&f.p.sql).open_count().unwrap(), 0);
    // Evicted before the answer even reached the outbox: the resumed turn
    // queues and sends it, still without another model call.
    f.p.sql.conn.execute("DELETE FROM outbox", []).unwrap();
    f.p.sql.conn.execute("UPDATE inbox SET state = 'active', payload = ?1", [&payload]).unwrap();
    f.drain();
    assert_eq!(f.p.http.requests.borrow().len(), 1);
    assert_eq!(f.sent(), ["the answer", "the answer"]);
}

#[test]
fn a_reply_that_cannot_be_sent_now_is_kept_and_sent_once_by_a_later_alarm() {
    let f = Fixture::new();
    let down = crate::ports::SendOutcome::Retry { after_ms: Some(120_000), why: "telegram 429".into() };
    f.p.channel.take_down("1", down);
    f.say(1, "hello", "first answer");
    f.p.http.push_json(200, anthropic_text("second answer"));
    f.enqueue(&inbound(2, "again"));
    f.drain();
    assert!(f.sent().is_empty());
    assert_eq!(f.p.channel.attempts.borrow().len(), 1, "the second reply waits behind the first, untried");
    assert_eq!(
        f.p.slept.borrow().iter().filter(|&&ms| ms > super::turn::TYPING_REFRESH_MS).count(),
        0,
        "no turn sat out the wait"
    );
    assert_eq!(crate::delivery::next_due(&f.p.sql).unwrap(), Some(120_000));
    f.p.channel.recover();
    f.p.now.set(120_000);
    f.drain(); // the alarm, with nothing queued
    assert_eq!(f.sent(), ["first answer", "second answer"]);
    f.drain();
    assert_eq!(f.sent(), ["first answer", "second answer"]);
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

fn tool_call(id: &str) -> serde_json::Value {
    json!({"content": [{"type": "tool_use", "id": id, "name": "read_file", "input": {"path": "SOUL.md"}}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}})
}

fn anthropic_stop(text: &str, stop: &str) -> serde_json::Value {
    json!({"content": [{"type": "text", "text": text}], "stop_reason": stop, "usage": {"input_tokens": 1, "output_tokens": 1}})
}

/// The `tool_result` blocks of an Anthropic request body.
fn tool_results(req: &serde_json::Value) -> Vec<serde_json::Value> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

#[test]
fn a_turn_evicted_mid_tool_round_resumes_and_the_session_keeps_working() {
    let f = Fixture::new();
    f.enqueue(&inbound(1, "read my soul"));
    // Evicted after the model's tool call was saved, before the tool ran.
    let store = SessionStore::new(&f.p.sql);
    let item = store.next_open().unwrap().unwrap();
    let sid = store.session_id(|| "s1".into(), 0).unwrap();
    store.start(item.seq, &sid, Some(&Message::user_text("read my soul", 0))).unwrap();
    let call = Message::Assistant {
        content: vec![r2_layout::AssistantBlock::ToolCall {
            id: "t1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "SOUL.md"}),
        }],
        timestamp: 1,
        model: None,
        stop_reason: Some("toolUse".into()),
        usage: None,
    };
    store.append(&sid, &call).unwrap();
    f.p.http.push_json(200, anthropic_text("the read was interrupted, trying again later"));
    f.drain();
    let req = f.p.http.request_json(0);
    let results = tool_results(&req);
    assert_eq!(results.len(), 1, "{req}");
    assert_eq!((results[0]["tool_use_id"].as_str(), results[0]["is_error"].as_bool()), (Some("t1"), Some(true)));
    assert!(results[0]["content"].to_string().contains("interrupted"));
    // Every later message still works, with the pair intact.
    f.say(2, "and now?", "fine");
    assert_eq!(f.sent(), ["the read was interrupted, trying again later", "fine"]);
    assert_eq!(tool_results(&f.p.http.request_json(1)).len(), 1);
}

#[test]
fn a_resumed_active_reset_is_still_a_reset() {
    let f = Fixture::new();
    f.say(1, "hello", "the previous answer");
    let sid = f.session_id().unwrap();
    // Evicted right after the /reset row went active.
    f.enqueue(&inbound(2, "/reset"));
    f.p.sql.conn.execute("UPDATE inbox SET state = 'active', attempts = 1 WHERE state = 'pending'", []).unwrap();
    f.p.http.push_json(200, anthropic_text("NONE"));
    f.drain();
    assert_eq!(f.sent(), ["the previous answer", "🧹 Fresh start. I archived our conversation (2 messages)."]);
    assert!(f.object(&format!("agents/main/sessions/{sid}.jsonl.gz")).is_some());
    assert_eq!(f.session_id(), None);
}

#[test]
fn a_reset_retried_after_a_storage_error_neither_archives_nor_notes_twice() {
    let f = Fixture::new();
    f.say(1, "I like tea", "the previous answer");
    let sid = f.session_id().unwrap();
    let archive_key = format!("agents/main/sessions/{sid}.jsonl.gz");
    f.p.http.push_json(200, anthropic_text("## Summary\nTea talk.\n## Memories\n- Ana likes tea"));
    f.enqueue(&inbound(2, "/reset"));
    // Archive and memories are done; clearing the history fails.
    *f.p.sql.fail_writes_containing.borrow_mut() = Some("DELETE FROM history".into());
    assert!(f.try_drain().is_err(), "the storage error stops the drain (the alarm retries)");
    assert!(f.object(&archive_key).is_some());
    *f.p.sql.fail_writes_containing.borrow_mut() = None;
    f.drain();
    assert_eq!(f.requests(), 2, "no second extraction call");
    assert_eq!(f.p.store.ops_matching(&format!("put {archive_key}")), 1, "archived once");
    let note = f.object("agents/main/memory/1970-01-01.md").unwrap();
    assert_eq!(note.matches("- Ana likes tea").count(), 1, "{note}");
    assert_eq!(f.archive_entries("main").len(), 1);
    assert_eq!(
        f.sent(),
        [
            "the previous answer",
            "🧹 Fresh start. I archived our conversation (2 messages) and noted 1 things to remember."
        ]
    );
    assert_eq!(f.session_id(), None);
}

/// A reset stopped by a storage error once `fails_after` is recorded in its
/// progress (as an eviction right after that write would stop it), then retried.
fn reset_stopped_after(fails_after: &str) -> (Fixture, String) {
    let f = Fixture::new();
    f.say(1, "I like tea", "the previous answer");
    let sid = f.session_id().unwrap();
    f.p.http
        .push_json(200, anthropic_text("## Summary\nTea talk.\n## Memories\n- Ana likes tea\n- Ana drinks it black"));
    f.enqueue(&inbound(2, "/reset"));
    *f.p.sql.fail_writes_of_value.borrow_mut() = Some(fails_after.into());
    assert!(f.try_drain().is_err(), "the storage error stops the drain (the alarm retries)");
    *f.p.sql.fail_writes_of_value.borrow_mut() = None;
    (f, sid)
}

const DAILY_NOTE: &str = "agents/main/memory/1970-01-01.md";

fn assert_noted_once(f: &Fixture, sid: &str) {
    assert_eq!(f.requests(), 2, "the saved extraction is used, not asked for again");
    assert_eq!(f.p.store.ops_matching(&format!("put agents/main/sessions/{sid}.jsonl.gz")), 1, "archived once");
    assert_eq!(f.p.store.ops_matching(&format!("put {DAILY_NOTE}")), 1, "the daily note is written once");
    let note = f.object(DAILY_NOTE).unwrap();
    assert_eq!(note.matches("### Extracted before reset").count(), 1, "{note}");
    assert_eq!(note.matches("- Ana likes tea").count(), 1, "{note}");
    let entries = f.archive_entries("main");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].0, format!("archive {sid}"));
    assert_eq!(
        sent_last(f),
        "🧹 Fresh start. I archived our conversation (2 messages) and noted 2 things to remember."
    );
    assert_eq!(f.session_id(), None);
}

#[test]
fn a_reset_stopped_right_after_its_daily_note_writes_nothing_twice_on_retry() {
    let (f, sid) = reset_stopped_after("\"inDailyNote\":true");
    assert!(f.object(DAILY_NOTE).unwrap().contains("- Ana likes tea"), "the note was written before the stop");
    assert!(f.archive_entries("main").is_empty(), "stopped before the memory entry");
    f.drain();
    assert_noted_once(&f, &sid);
}

#[test]
fn a_reset_stopped_right_after_its_memory_entry_writes_nothing_twice_on_retry() {
    let (f, sid) = reset_stopped_after("\"inMemory\":true");
    assert_eq!(f.archive_entries("main").len(), 1, "the entry was added before the stop");
    f.drain();
    assert_noted_once(&f, &sid);
}

#[test]
fn a_failed_media_delete_does_not_stop_the_reset() {
    let f = Fixture::new();
    f.p.store.put_text("media/agent:main:main/a.jpg", "jpeg");
    f.say(1, "hello", "hi");
    f.p.store.inject(Fault::once(StoreOp::Delete, "media/"));
    f.say(2, "/reset", "NONE");
    assert!(sent_last(&f).contains("Fresh start"), "{:?}", f.sent());
    assert_eq!(f.session_id(), None, "cleared");
    assert!(f.p.logs.borrow().iter().any(|l| l.contains("not (all) deleted")));
    assert!(f.object("media/agent:main:main/a.jpg").is_some(), "left for the next reset");
    // The next reset takes the leftover with it.
    f.say(3, "again", "hi");
    f.say(4, "/new", "NONE");
    assert!(f.object("media/agent:main:main/a.jpg").is_none());
}

#[test]
fn a_failed_part_archive_keeps_the_history_and_the_turn_is_trimmed_once() {
    let mut f = Fixture::new();
    f.long_history();
    let before = f.history();
    let requests_before = f.requests();
    f.p.store.inject(Fault::once(StoreOp::Put, "agents/main/sessions/"));
    f.p.http.push_json(200, anthropic_text("## Summary\nLots of questions.\n## Memories\n- Ana asks a lot"));
    f.say(99, "and now?", "fine");
    assert_eq!(f.requests(), requests_before + 2, "the compaction call and one turn call");
    assert_eq!(f.sent().last().map(String::as_str), Some("fine"));
    let store = SessionStore::new(&f.p.sql);
    let sid = f.session_id().unwrap();
    assert_eq!(store.compaction_count(&sid).unwrap(), 0, "no marker");
    assert_eq!(&f.history()[..before.len()], &before[..], "nothing removed");
    assert!(f.object("agents/main/memory/1970-01-01.md").is_none(), "no memories noted");
    assert!(f.archive_entries("main").is_empty());
    let turn = f.p.http.request_json(requests_before + 1);
    assert!(turn["messages"][0]["content"].to_string().contains("were left out to fit"), "trimmed with a note");
}

#[test]
fn an_unusable_summary_throws_nothing_away() {
    for (what, reply) in [
        ("empty", anthropic_text("")),
        ("tool call", tool_call("x1")),
        ("cut off", anthropic_stop("## Summary\nWe talked about quest", "max_tokens")),
    ] {
        let mut f = Fixture::new();
        f.long_history();
        let before = f.history();
        f.p.http.push_json(200, reply);
        f.p.http.push_json(200, anthropic_text("fine"));
        f.enqueue(&inbound(99, "and now?"));
        f.drain();
        let sid = f.session_id().unwrap();
        assert_eq!(SessionStore::new(&f.p.sql).compaction_count(&sid).unwrap(), 0, "{what}: no marker");
        assert_eq!(&f.history()[..before.len()], &before[..], "{what}: nothing removed");
        assert!(!f.p.store.objects.borrow().keys().any(|k| k.contains("-part")), "{what}: no part archive");
        assert_eq!(f.sent().last().map(String::as_str), Some("fine"), "{what}");
    }
}

#[test]
fn the_marker_names_the_memory_entry_as_the_memory_named_it() {
    let mut f = Fixture::new();
    f.long_history();
    let sid = f.session_id().unwrap();
    // The name the compaction asks for is taken: the memory adds a suffix.
    let wanted = format!("archive {sid}-part0");
    block_on(crate::ports::MemoryService::add_archive(&f.p.memory, "main", &wanted, "an older summary", 0)).unwrap();
    let requests_before = f.requests();
    f.p.http.push_json(200, anthropic_text("## Summary\nWe talked about questions.\n## Memories\nNONE"));
    f.say(99, "and now?", "fine");
    let marker = SessionStore::new(&f.p.sql).latest_compaction(&sid).unwrap().expect("compacted");
    assert_ne!(marker.archive_name, wanted);
    let entries = f.archive_entries("main");
    let entry = entries.iter().find(|(n, _)| *n == marker.archive_name).expect("the marker's name is an entry");
    assert!(entry.1.contains("We talked about questions."));
    let turn = f.p.http.request_json(requests_before + 1);
    let first = turn["messages"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(first.contains(&format!("'{}'", marker.archive_name)) && first.contains("memory_get"), "{first}");
}

#[test]
fn the_summary_names_the_entry_memory_get_fetches() {
    let mut f = Fixture::new();
    f.long_history();
    let sid = f.session_id().unwrap();
    f.p.http.push_json(200, anthropic_text("## Summary\nWe talked about questions.\n## Memories\nNONE"));
    f.say(99, "and now?", "fine");
    let turn = f.p.http.request_json(f.requests() - 1);
    let first = turn["messages"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(first.contains(&format!("archive entry 'archive {sid}-part0': memory_get fetches it")), "{first}");
    // And memory_get finds it by that name.
    let got = f.p.memory.hub.borrow_mut().call(crate::protocol::memory::MemoryCall::Get {
        store: "main".into(),
        name: format!("archive {sid}-part0"),
        record: false,
    });
    assert!(
        matches!(got, Ok(crate::protocol::memory::MemoryReply::Entry { entry: Some(e) }) if e.content.contains("We talked about questions."))
    );
    // Without the memory, the summary points at the part archive instead.
    let mut f = Fixture::new();
    f.long_history();
    f.p.memory.unavailable.set(true);
    f.p.http.push_json(200, anthropic_text("## Summary\nWe talked about questions.\n## Memories\nNONE"));
    f.say(99, "and now?", "fine");
    let turn = f.p.http.request_json(f.requests() - 1);
    let first = turn["messages"][0]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(first.contains("the compacted messages are archived as ") && first.contains("-part0.jsonl.gz"), "{first}");
}

#[test]
fn a_reset_after_a_compaction_archives_the_summary_first() {
    let mut f = Fixture::new();
    f.long_history();
    f.p.http.push_json(200, anthropic_text("## Summary\nWe talked about questions 0-3.\n## Memories\nNONE"));
    f.say(99, "and now?", "fine");
    let sid = f.session_id().unwrap();
    let rows = f.history().len();
    f.say(100, "/reset", "NONE");
    let obj = f.p.store.objects.borrow().get(&format!("agents/main/sessions/{sid}.jsonl.gz")).cloned().unwrap();
    let msgs = r2_layout::archive::decode(&obj.body).unwrap();
    assert_eq!(msgs.len(), rows + 1);
    assert!(
        msgs[0].text().starts_with("[Summary of our earlier conversation") && msgs[0].text().contains("questions 0-3")
    );
    let meta: HashMap<_, _> = obj.custom_metadata.into_iter().collect();
    assert_eq!(meta["messageCount"], (rows + 1).to_string());
}

#[test]
fn a_reset_whose_clear_fails_halfway_keeps_the_whole_archive() {
    let mut f = Fixture::new();
    f.long_history();
    f.p.http.push_json(200, anthropic_text("## Summary\nWe talked about questions 0-3.\n## Memories\nNONE"));
    f.say(99, "and now?", "fine");
    let sid = f.session_id().unwrap();
    let archive_key = format!("agents/main/sessions/{sid}.jsonl.gz");
    let whole = f.history().len() + 1; // the rows since the compaction, and its summary
    f.p.http.push_json(200, anthropic_text("NONE"));
    f.enqueue(&inbound(100, "/reset"));
    // The history rows are deleted, then deleting the compaction markers fails.
    *f.p.sql.fail_writes_containing.borrow_mut() = Some("DELETE FROM compactions".into());
    assert!(f.try_drain().is_err());
    assert_eq!(f.history().len() + 1, whole, "the failed clear took nothing with it");
    *f.p.sql.fail_writes_containing.borrow_mut() = None;
    f.drain();
    let obj = f.p.store.objects.borrow().get(&archive_key).cloned().unwrap();
    assert_eq!(r2_layout::archive::decode(&obj.body).unwrap().len(), whole, "the retry kept the whole archive");
    assert_eq!(f.session_id(), None);
}

#[test]
fn memories_of_a_group_stay_in_the_groups_memory() {
    let mut f = Fixture::new();
    f.key = SessionKey::parse("agent:main:telegram:group:-100").unwrap();
    f.long_history();
    f.cfg.lifecycle.context_window = 3_000; // a group's prompt has fewer tools
                                            // Compaction in the group.
    f.p.http.push_json(200, anthropic_text("## Summary\nPicnic planning.\n## Memories\n- the group meets on Sundays"));
    f.say(99, "and now?", "fine");
    // Reset of the group.
    f.say(100, "/reset", "## Summary\nMore picnic.\n## Memories\n- Pat brings the bread");
    assert!(sent_last(&f).contains("noted 1 things"), "{:?}", f.sent());
    let daily: Vec<String> =
        f.p.store.objects.borrow().keys().filter(|k| k.starts_with("agents/main/memory/")).cloned().collect();
    assert!(daily.is_empty(), "the owner's daily notes are untouched: {daily:?}");
    let group = f.archive_entries("group:telegram:-100");
    assert_eq!(group.len(), 2, "{group:?}");
    assert!(group.iter().any(|(_, c)| c.contains("Picnic planning.") && c.contains("- the group meets on Sundays")));
    assert!(group.iter().any(|(_, c)| c.contains("More picnic.") && c.contains("- Pat brings the bread")));
    assert!(f.archive_entries("main").is_empty(), "nothing in the owner's store");
}

#[test]
fn a_main_reset_notes_memories_in_the_daily_file_and_the_memory() {
    let f = Fixture::new();
    f.say(1, "I like tea", "hi");
    let sid = f.session_id().unwrap();
    f.say(2, "/reset", "## Summary\nWe talked about tea.\n## Memories\n- Ana likes tea");
    assert!(f.object("agents/main/memory/1970-01-01.md").unwrap().contains("- Ana likes tea"));
    let entries = f.archive_entries("main");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].0, format!("archive {sid}"));
    assert!(entries[0].1.contains("We talked about tea.") && entries[0].1.contains("- Ana likes tea"));
}

#[test]
fn reset_memories_go_to_the_local_day_of_the_last_activity() {
    let mut f = Fixture::new();
    f.cfg.timezone = "Europe/Paris".into();
    // 1970-01-01 23:30 UTC is already 1970-01-02 00:30 in Paris.
    f.p.now.set(23 * 3_600_000 + 30 * 60_000);
    f.say(1, "a late thought", "late answer");
    // Reset on 1970-01-03 at 10:00 Paris time.
    f.p.now.set(2 * 86_400_000 + 9 * 3_600_000);
    f.say(2, "/reset", "- Ana thinks late at night");
    let note = f.object("agents/main/memory/1970-01-02.md").expect("the day of the last activity, local time");
    assert!(note.contains("### Extracted before reset (10:00)\n- Ana thinks late at night"), "{note}");
    assert!(f.object("agents/main/memory/1970-01-01.md").is_none(), "not the UTC date");
    assert!(f.object("agents/main/memory/1970-01-03.md").is_none(), "not the day of the reset");
}

#[test]
fn an_oversize_message_is_cut_to_fit_in_one_request() {
    let mut f = Fixture::new();
    f.cfg.lifecycle.context_window = 4_000;
    f.cfg.lifecycle.context_reserve = 200;
    f.p.http.push_json(200, anthropic_text("that is long"));
    f.enqueue(&inbound(1, &"x".repeat(40_000)));
    f.drain();
    assert_eq!(f.requests(), 1, "no compaction call, no retry");
    let body = String::from_utf8(f.p.http.requests.borrow()[0].body.clone()).unwrap();
    assert!(body.contains("characters cut here to fit the model's context window"));
    assert!(body.len() < 4_000 * 4, "{} bytes", body.len());
    assert_eq!(f.sent(), ["that is long"]);
    assert!(f.history()[0].text().len() > 40_000, "the history keeps the whole message");
}

#[test]
fn a_slow_model_call_keeps_typing_shown() {
    use super::turn::TYPING_REFRESH_MS;
    use std::future::Future;
    const { assert!(TYPING_REFRESH_MS < 5_000, "chat apps drop \"typing…\" after about 5 s") };
    let f = Fixture::new();
    f.p.http.pending_polls.set(3);
    f.p.http.push_json(200, anthropic_text("done thinking"));
    f.enqueue(&inbound(1, "think hard"));
    let deps = f.deps();
    let mut turn = std::pin::pin!(drain(&f.p, &deps));
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    let mut pauses = 0;
    while turn.as_mut().poll(&mut cx).is_pending() {
        pauses += 1;
        // Shown when the turn starts, then again each time a whole refresh
        // interval has passed: at every pause one interval is running.
        let intervals_begun = f.p.slept.borrow().len() as u32;
        assert_eq!(f.p.channel.typing.get(), intervals_begun, "pause {pauses}");
    }
    let slept = f.p.slept.borrow().clone();
    assert!(slept.len() >= 3, "the model kept us waiting through several intervals: {slept:?}");
    assert!(slept.iter().all(|&ms| ms == TYPING_REFRESH_MS), "{slept:?}");
    assert_eq!(f.sent(), ["done thinking"]);
}

#[test]
fn scheduled_runs_and_admin_resets_have_no_chat_to_type_or_answer_in() {
    let f = Fixture::new();
    f.p.http.pending_polls.set(3);
    f.p.http.push_json(200, anthropic_text("HEARTBEAT_OK"));
    let mut run = inbound(1, "[Heartbeat] check");
    run.channel = crate::inbound::ChannelKind::System;
    run.reply_target.channel = crate::inbound::ChannelKind::Notify;
    f.enqueue(&run);
    f.drain();
    assert!(!f.p.slept.borrow().contains(&super::turn::TYPING_REFRESH_MS), "no typing refresh without a chat");
    let mut admin = inbound(2, "/reset");
    admin.channel = ChannelKind::Admin;
    admin.reply_target.channel = ChannelKind::Admin;
    f.p.http.push_json(200, anthropic_text("NONE"));
    f.enqueue(&admin);
    f.drain();
    assert!(
        !f.p.channel.sent.borrow().iter().any(|(t, _)| t.channel == ChannelKind::Admin),
        "nothing sent to a non-existent chat"
    );
    assert!(f.p.logs.borrow().iter().any(|l| l.starts_with("admin: 🧹 Fresh start")));
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
    assert_eq!(f.sent(), vec![super::drain::QUEUED_PAST_DEADLINE.to_owned()]);
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
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "TOOLS.md"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    let report = f.drain();
    assert_eq!(report.llm_calls, 1, "no second model call after the deadline");
    assert_eq!(f.p.http.requests.borrow().len(), 2);
    assert_eq!(f.sent(), vec![super::turn::TURN_PAST_DEADLINE.to_owned()]);
    // The tool round is kept, so asking again continues from it.
    assert!(f.history().iter().any(|h| matches!(h, Message::ToolResult { .. })));
}

#[test]
fn status_shows_the_last_workspace_loads_r2_operations_and_none_while_one_runs() {
    use std::future::Future;
    let f = Fixture::new();
    f.say(1, "hello", "hi");
    let first = f.load_ops.get().expect("known after a turn");
    assert!(first > 1, "the first load lists and reads: {first}");
    // A slow bucket and a slow model: look at the count at every pause of the next turn.
    f.p.store.pending_polls.set(1);
    f.p.http.pending_polls.set(1);
    f.p.http.push_json(200, anthropic_text("hi again"));
    f.enqueue(&inbound(2, "again"));
    f.p.store.ops.borrow_mut().clear();
    let deps = f.deps();
    let mut turn = std::pin::pin!(drain(&f.p, &deps));
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    let (mut loading, mut asking) = (Vec::new(), Vec::new());
    while turn.as_mut().poll(&mut cx).is_pending() {
        match f.requests() {
            1 => loading.push(f.load_ops.get()),
            _ => asking.push(f.load_ops.get()),
        }
    }
    // The cache is out for the load: its count is unknown, not the 0 of an empty cache.
    assert!(!loading.is_empty() && loading.iter().all(Option::is_none), "{loading:?}");
    assert!(!asking.is_empty() && asking.iter().all(|&o| o == Some(1)), "steady state, one listing: {asking:?}");
    assert_eq!(f.load_ops.get(), Some(1));
    assert_eq!(f.sent().last().map(String::as_str), Some("hi again"));
}

#[test]
fn the_photos_of_an_album_are_one_turn_after_a_short_wait() {
    let f = Fixture::new();
    let now = f.p.now.get();
    for (n, caption) in [(31, "our trip"), (32, "the lake"), (33, "")] {
        let m = Inbound { batch: Some("telegram:album:5".into()), received_at: now, ..inbound(n, caption) };
        f.enqueue(&m);
    }
    // The first waits for the rest: no turn yet, and the drain says when to come back.
    let report = f.drain();
    assert_eq!((report.turns, f.requests()), (0, 0));
    assert_eq!(report.wake_at, Some(now + super::batch::BATCH_WAIT_MS));
    f.p.now.set(now + super::batch::BATCH_WAIT_MS);
    f.p.http.push_json(200, anthropic_text("Lovely photos."));
    let report = f.drain();
    assert_eq!((report.turns, f.requests()), (1, 1), "one answer for the album");
    let body = f.p.http.request_json(0).to_string();
    assert!(body.contains("our trip\\nthe lake"), "{body}");
    assert_eq!(f.sent(), ["Lovely photos."]);
}

mod code;
mod conversation;
mod handoff;
mod meter;
mod parked;
mod poison;
mod reminders;
mod sequence;

#[test]
fn undo_reverts_the_agents_last_workspace_change_without_a_model_call() {
    let f = Fixture::new();
    f.p.store.put_text("agents/main/USER.md", "Olga likes tea.\n");
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "tool_use", "id": "w1", "name": "edit_file",
               "input": {"path": "USER.md", "old_text": "tea", "new_text": "coffee"}}],
               "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    f.p.http.push_json(200, anthropic_text("noted"));
    f.enqueue(&inbound(1, "I switched to coffee"));
    f.drain();
    assert_eq!(f.object("agents/main/USER.md").as_deref(), Some("Olga likes coffee.\n"));
    let calls = f.requests();
    f.enqueue(&inbound(2, "/undo"));
    f.drain();
    assert_eq!(f.requests(), calls, "no LLM call for /undo");
    assert_eq!(f.object("agents/main/USER.md").as_deref(), Some("Olga likes tea.\n"));
    let told = sent_last(&f);
    assert!(told.contains("put USER.md back as it was") && told.contains("edit_file"), "{told}");
    f.enqueue(&inbound(3, "/undo@hearth_bot"));
    f.drain();
    assert!(sent_last(&f).contains("Nothing to undo"), "{}", sent_last(&f));
    assert!(is_undo_command("/UNDO") && !is_undo_command("/undo everything please") && !is_undo_command("undo"));
}
