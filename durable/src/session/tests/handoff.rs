//! `delegate` in a turn, with other sessions as doubles (the peers run for
//! real in workerd: tests/delegation.test.mjs): who is offered it, what is
//! sent, refusals with no call, the timeout.

use super::*;
use crate::protocol::api::{ApiOutcome, ApiUsage};
use crate::settings::tasks::TasksConfig;

fn delegate(id: &str, agent: &str, task: &str) -> serde_json::Value {
    json!({"content": [{"type": "tool_use", "id": id, "name": "delegate", "input": {"agent": agent, "task": task}}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}})
}

fn tool_names(f: &Fixture, request: usize) -> Vec<String> {
    f.p.http.request_json(request)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn with_peers(pairs: &[(&str, &str)]) -> Fixture {
    let mut f = Fixture::new();
    let mut vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    vars.insert("AGENTS".into(), "main,research".into());
    f.cfg.tasks = TasksConfig::load(&vars, "main").unwrap();
    f
}

/// The tool results the last request carried, in order.
fn results(f: &Fixture) -> Vec<(String, bool)> {
    let n = f.requests();
    let body = f.p.http.request_json(n - 1);
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let text = b["content"].as_array().map_or_else(
                    || b["content"].as_str().unwrap_or_default().to_owned(),
                    |c| c.iter().filter_map(|x| x["text"].as_str()).collect(),
                );
                out.push((text, b["is_error"].as_bool().unwrap_or(false)));
            }
        }
    }
    out
}

#[test]
fn the_peers_answer_is_the_tool_result_and_only_the_task_crosses() {
    let f = with_peers(&[("ALLOWED_DELEGATES", "research")]);
    let usage = ApiUsage { prompt_tokens: 900, completion_tokens: 12, ..Default::default() };
    f.p.sessions.answers.borrow_mut().push_back(Some(ApiOutcome::Done {
        text: "Revenue was 4.2M.".into(),
        usage,
        stopped: false,
    }));
    f.p.http.push_json(200, delegate("d1", "research", "What was 2024 revenue?"));
    f.p.http.push_json(200, anthropic_text("It was 4.2M, says research."));
    f.enqueue(&inbound(1, "ask research about revenue"));
    f.drain();
    assert!(tool_names(&f, 0).contains(&"delegate".to_owned()));
    let asked = f.p.sessions.asked.borrow();
    assert_eq!(asked.len(), 1);
    let req = &asked[0];
    assert_eq!(req.session_key.agent().as_str(), "research");
    assert_eq!(req.session_key.scope(), r2_layout::Scope::Shared, "the peer answers without its private files");
    assert!(req.inbound.text.ends_with("What was 2024 revenue?"), "{}", req.inbound.text);
    assert!(!req.inbound.text.contains("ask research about revenue"), "only the task crosses, not the chat");
    assert!(
        req.inbound.dedupe_key.starts_with("delegate:agent:main:main:telegram:update:1:0:"),
        "{}",
        req.inbound.dedupe_key
    );
    let (text, err) = &results(&f)[0];
    assert!(!err && text.starts_with("research answered:\n\nRevenue was 4.2M."), "{text}");
    assert!(text.contains("900 prompt"), "{text}");
    assert_eq!(f.p.channel.texts().last().map(String::as_str), Some("It was 4.2M, says research."));
}

#[test]
fn a_peer_not_allowed_or_unknown_is_refused_with_no_call() {
    let f = with_peers(&[("ALLOWED_DELEGATES", "research,ghost")]);
    f.p.http.push_json(200, delegate("d1", "work", "x"));
    f.p.http.push_json(200, delegate("d2", "ghost", "x"));
    f.p.http.push_json(200, anthropic_text("I could not ask anyone."));
    f.enqueue(&inbound(1, "ask work"));
    f.drain();
    assert!(f.p.sessions.asked.borrow().is_empty(), "no call made");
    let r = results(&f);
    assert!(r[0].1 && r[0].0.contains("not one you may delegate to"), "{:?}", r[0]);
    assert!(r[1].1 && r[1].0.contains("not an agent of this Worker"), "{:?}", r[1]);
}

#[test]
fn no_peers_no_tool_and_a_delegated_session_cannot_pass_it_on() {
    let f = Fixture::new();
    f.say(1, "hi", "hello");
    assert!(!tool_names(&f, 0).contains(&"delegate".to_owned()), "none allowed by default");
    let mut f = with_peers(&[("ALLOWED_DELEGATES", "research")]);
    f.key = SessionKey::parse("agent:main:from:research:1:0123456789abcdef").unwrap();
    f.p.http.push_json(200, delegate("d1", "research", "pass it back"));
    f.p.http.push_json(200, anthropic_text("I answer myself."));
    f.enqueue(&inbound(1, "keep passing this"));
    f.drain();
    assert!(!tool_names(&f, 0).contains(&"delegate".to_owned()));
    assert!(f.p.sessions.asked.borrow().is_empty());
    assert!(results(&f)[0].0.contains("not available"), "{:?}", results(&f));
}

#[test]
fn a_turn_asks_a_few_times_then_answers() {
    let f = with_peers(&[("ALLOWED_DELEGATES", "research")]);
    for _ in 0..3 {
        f.p.sessions.answers.borrow_mut().push_back(Some(ApiOutcome::Done {
            text: "ask main".into(),
            usage: ApiUsage::default(),
            stopped: false,
        }));
    }
    for i in 0..5 {
        f.p.http.push_json(200, delegate(&format!("d{i}"), "research", "keep passing it"));
    }
    f.p.http.push_json(200, anthropic_text("Done passing."));
    f.enqueue(&inbound(1, "keep passing the task to research"));
    f.drain();
    assert_eq!(f.p.sessions.asked.borrow().len(), 3, "DELEGATE_CALLS_PER_TURN");
    let r = results(&f);
    assert!(r[3].1 && r[3].0.contains("already asked peers 3 times"), "{:?}", r[3]);
    assert_eq!(f.p.channel.texts().last().map(String::as_str), Some("Done passing."));
}

#[test]
fn a_peer_that_does_not_answer_in_time_is_stopped_and_the_model_told() {
    let f = with_peers(&[("ALLOWED_DELEGATES", "research"), ("DELEGATE_TIMEOUT_SECONDS", "30")]);
    f.p.sessions.answers.borrow_mut().push_back(None);
    f.p.http.push_json(200, delegate("d1", "research", "something slow"));
    f.p.http.push_json(200, anthropic_text("research is slow today."));
    f.enqueue(&inbound(1, "ask research"));
    f.drain();
    let r = results(&f);
    assert!(r[0].1 && r[0].0.contains("did not answer within 30 s"), "{:?}", r[0]);
    let stopped = f.p.sessions.stopped.borrow();
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].1.request, Some(f.p.sessions.asked.borrow()[0].inbound.dedupe_key.clone()));
    assert!(f.p.slept.borrow().contains(&30_000));
}

// ------------------------------------------------------------ spawn_task

use crate::protocol::tasks::{TaskCall, TaskReply, TaskRow};

fn row(id: &str, state: &str) -> TaskRow {
    TaskRow {
        id: id.into(),
        state: state.into(),
        title: "Read the paper".into(),
        origin: "agent:main:main".into(),
        created_at: 0,
        started_at: Some(0),
        ended_at: None,
        result: None,
        model: None,
        cost_usd: None,
        delivered: false,
    }
}

fn spawn_call(said: &str, task: &str) -> serde_json::Value {
    json!({"content": [{"type": "text", "text": said},
                       {"type": "tool_use", "id": "s1", "name": "spawn_task", "input": {"task": task}}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}})
}

#[test]
fn a_spawn_ends_the_turn_at_once_with_the_models_words_and_the_task_named() {
    let f = Fixture::new();
    let reply = TaskReply { ok: true, task: Some(row("t1", "running")), running: 1, max: 3, ..Default::default() };
    f.p.sessions.task_replies.borrow_mut().push_back(Some(reply));
    f.p.http.push_json(200, spawn_call("On it.", "Summarise the paper at https://example.org/p.pdf"));
    f.enqueue(&inbound(1, "summarise that paper in the background"));
    f.drain();
    assert_eq!(f.requests(), 1, "no second model call");
    let names = tool_names(&f, 0);
    assert!(names.contains(&"spawn_task".to_owned()) && names.contains(&"tasks".to_owned()));
    let calls = f.p.sessions.tasks.borrow();
    let TaskCall::Spawn(spawn) = &calls[0].call else { panic!("{:?}", calls[0]) };
    assert_eq!(spawn.origin, f.key);
    assert_eq!(spawn.target.chat_id, "1", "the result goes to this chat");
    assert_eq!(spawn.handoff, "Summarise the paper at https://example.org/p.pdf");
    let sent = f.p.channel.texts();
    assert_eq!(
        sent.last().map(String::as_str),
        Some("On it.\n\n⏳ Task t1 runs in the background; its result will be posted here.")
    );
    let last = f.history().pop().unwrap();
    assert!(matches!(last, Message::Assistant { .. }) && last.text().contains("Task t1"), "{last:?}");
}

#[test]
fn no_sub_agents_no_spawn_tool() {
    let mut f = Fixture::new();
    f.cfg.tasks.subagents_max = 0;
    f.say(1, "hi", "hello");
    assert!(!tool_names(&f, 0).iter().any(|n| n == "spawn_task" || n == "tasks"));
}

#[test]
fn tasks_in_chat_lists_without_a_model_call() {
    let f = Fixture::new();
    let list = TaskReply { ok: true, tasks: vec![row("t1", "running")], running: 1, max: 3, ..Default::default() };
    f.p.sessions.task_replies.borrow_mut().push_back(Some(list));
    f.enqueue(&inbound(1, "/tasks"));
    f.drain();
    assert_eq!(f.requests(), 0);
    let sent = f.p.channel.texts();
    assert!(sent[0].contains("t1 Read the paper (running"), "{sent:?}");
    let calls = f.p.sessions.tasks.borrow();
    assert!(matches!(&calls[0].call, TaskCall::List { origin: Some(o) } if *o == f.key), "only this chat's");
}

/// A sub-agent's session, started from its handoff as the Agent object does.
fn sub_agent(vars: &[(&str, &str)]) -> Fixture {
    let mut f = Fixture::new();
    let mut all: HashMap<String, String> =
        [("OWNER_IDS", "telegram:1"), ("LLM_API_KEY", "k"), ("RETRY_BASE_MS", "10"), ("STREAM_REPLIES", "off")]
            .iter()
            .chain(vars)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    all.entry("LLM_MODEL".into()).or_insert_with(|| "claude-sonnet-4-5".into());
    f.key = SessionKey::parse("agent:main:task:main:t1").unwrap();
    f.cfg = (*crate::session::subagent::task_config(&all, "main").unwrap()).clone();
    let (origin, target) = (SessionKey::parse("agent:main:main").unwrap(), inbound(1, "x").reply_target);
    let board = crate::tasks::board::Board::open(&f.p.sql).unwrap();
    let spawn =
        crate::protocol::tasks::TaskSpawn { origin, target, handoff: "Find three sources.".into(), title: "t".into() };
    let task = board.add(&spawn, 0).unwrap();
    f.enqueue(&crate::tasks::spawn::run_message(&task, 0, f.cfg.tasks.subagent_timeout_ms));
    f
}

fn reported(f: &Fixture) -> Vec<crate::protocol::tasks::TaskDone> {
    f.p.sessions
        .tasks
        .borrow()
        .iter()
        .filter_map(|r| match &r.call {
            TaskCall::Done(d) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_sub_agent_runs_on_its_model_without_spawning_and_reports_its_answer_once() {
    let f = sub_agent(&[("SUBAGENT_MODEL", "claude-haiku-4-5")]);
    f.p.http.push_json(200, anthropic_text("Three sources: A, B, C."));
    f.drain();
    let req = f.p.http.request_json(0);
    assert_eq!(req["model"], "claude-haiku-4-5");
    let names = tool_names(&f, 0);
    for absent in ["spawn_task", "tasks", "memory_write", "delegate"] {
        assert!(!names.contains(&absent.to_owned()), "{absent} in {names:?}");
    }
    assert!(names.contains(&"read_file".to_owned()));
    let user = req["messages"][0].to_string();
    assert!(user.contains("Find three sources.") && user.contains("Background task t1"), "{user}");
    assert!(f.p.channel.texts().is_empty(), "nothing is sent from the sub-agent's own session");
    let done = reported(&f);
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].id.as_str(), done[0].text.as_str(), done[0].ok), ("t1", "Three sources: A, B, C.", true));
    assert_eq!((done[0].model.as_str(), done[0].calls), ("claude-haiku-4-5", 1));
    f.drain();
    assert_eq!(reported(&f).len(), 1, "reported once");
}

#[test]
fn a_report_the_agent_did_not_take_is_sent_again() {
    let f = sub_agent(&[]);
    f.p.sessions.task_replies.borrow_mut().push_back(None);
    f.p.http.push_json(200, anthropic_text("done"));
    let first = f.drain();
    assert!(first.wake_at.is_some(), "come back to report");
    f.drain();
    let done = reported(&f);
    assert_eq!(done.len(), 2, "tried, then taken");
    assert_eq!(done[1].text, "done");
    f.drain();
    assert_eq!(reported(&f).len(), 2);
}

#[test]
fn a_sub_agent_past_its_cost_limit_stops_and_says_why() {
    let prices = r#"{"claude-sonnet-4-5": {"input": 3000000, "output": 3000000}}"#;
    let f = sub_agent(&[("LLM_PRICES", prices), ("SUBAGENT_MAX_COST_USD", "1")]);
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "TOOLS.md"}}],
               "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    f.p.http.push_json(200, anthropic_text("never asked"));
    f.drain();
    assert_eq!(f.requests(), 1, "the second call would pass the limit");
    let done = reported(&f);
    assert!(!done[0].ok && done[0].text.contains("SUBAGENT_MAX_COST_USD"), "{:?}", done[0]);
    assert!(done[0].cost_usd.unwrap() >= 1.0);
}
