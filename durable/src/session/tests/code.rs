//! `run_code` in a turn, with a scripted sandbox (the isolate itself runs in
//! workerd: tests/codemode.test.mjs): who is offered it, and a script's
//! calls going through the session's own tools.

use super::*;
use crate::ports::SandboxEvent;
use crate::testing::ScriptedSandbox;

fn run_code(code: &str) -> serde_json::Value {
    json!({"content": [{"type": "tool_use", "id": "rc1", "name": "run_code", "input": {"code": code}}],
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

fn call(id: u32, name: &str, args: serde_json::Value) -> SandboxEvent {
    SandboxEvent::Call { id, name: name.into(), args: args.to_string() }
}

fn done(value: &str) -> SandboxEvent {
    SandboxEvent::Done(Ok(json!({"value": value, "valueChars": value.len(), "logs": [], "droppedLogs": 0,
        "error": null, "stopped": "", "steps": 3})
    .to_string()))
}

fn with_sandbox(f: &Fixture, runs: Vec<Vec<SandboxEvent>>) {
    *f.p.sandbox.borrow_mut() = Some(ScriptedSandbox { runs: runs.into(), ..Default::default() });
}

#[test]
fn run_code_is_offered_with_a_sandbox_in_the_owners_session_only() {
    let f = Fixture::new();
    f.say(1, "hi", "hello");
    assert!(!tool_names(&f, 0).contains(&"run_code".to_owned()), "no Worker Loader binding, no tool");
    with_sandbox(&f, vec![]);
    f.say(2, "hi again", "hello");
    let tools = f.p.http.request_json(1)["tools"].clone();
    let spec = tools.as_array().unwrap().iter().find(|t| t["name"] == "run_code").expect("offered");
    let description = spec["description"].as_str().unwrap();
    assert!(description.contains("hearth.read_file(path)") && description.contains("hearth.write_file(path, content)"));

    let mut friend = Fixture::new();
    friend.key = SessionKey::parse("agent:main:telegram:dm:2").unwrap();
    with_sandbox(&friend, vec![]);
    friend.say(1, "hi", "hello");
    assert!(!tool_names(&friend, 0).contains(&"run_code".to_owned()), "CODE_MODE=owner by default");
    friend.cfg.code.access = crate::settings::code::CodeAccess::All;
    friend.say(2, "hi", "hello");
    let tools = friend.p.http.request_json(1)["tools"].clone();
    let spec = tools.as_array().unwrap().iter().find(|t| t["name"] == "run_code").expect("CODE_MODE=all");
    assert!(!spec["description"].as_str().unwrap().contains("write_file"), "a shared session writes nothing");
}

#[test]
fn a_scripts_calls_go_through_the_sessions_tools_with_their_guards() {
    let f = Fixture::new();
    f.p.store.put_text("agents/main/TOOLS.md", "use tools wisely");
    with_sandbox(
        &f,
        vec![vec![
            call(1, "read_file", json!({"path": "TOOLS.md"})),
            call(2, "read_file", json!({"path": "../other/MEMORY.md"})),
            call(3, "write_file", json!({"path": "notes/x.md", "content": "from a script"})),
            call(4, "run_code", json!({"code": "1"})),
            done("\"use tools wisely\""),
        ]],
    );
    f.p.http.push_json(200, run_code("return await hearth.read_file('TOOLS.md')"));
    f.p.http.push_json(200, anthropic_text("it says to use tools wisely"));
    f.enqueue(&inbound(1, "what does TOOLS.md say?"));
    let r = f.drain();
    assert_eq!(r.llm_calls, 2, "one script, two model calls");
    let sandbox = f.p.sandbox.borrow();
    let sandbox = sandbox.as_ref().unwrap();
    let user = &sandbox.jobs[0].modules[2].1;
    assert!(user.contains("return await hearth.read_file('TOOLS.md')"), "{user}");
    let answers = sandbox.answers.borrow().clone();
    let answer = |id: u32| answers.iter().find(|a| a.0 == id).map(|a| (a.1, a.2.clone())).unwrap();
    assert_eq!(answer(1), (false, "use tools wisely".to_owned()));
    assert!(answer(2).0 && answer(2).1.contains("may not contain '..'"), "{answers:?}");
    assert!(!answer(3).0, "the owner's script may write");
    assert_eq!(f.object("agents/main/notes/x.md").as_deref(), Some("from a script"));
    assert_eq!(answer(4), (true, "no tool \"run_code\" here".to_owned()), "no script starts another");
    let results = tool_results(&f.p.http.request_json(1));
    let text = results[0]["content"].as_str().unwrap();
    assert!(text.starts_with("Result (JSON): \"use tools wisely\"\nTool calls (3):"), "{text}");
    assert_eq!(results[0].get("is_error"), None);
    assert_eq!(f.sent(), ["it says to use tools wisely"]);
}

#[test]
fn a_refused_or_failed_script_is_the_tools_error_and_the_turn_goes_on() {
    let f = Fixture::new();
    with_sandbox(
        &f,
        vec![vec![SandboxEvent::Done(Err(
            "Failed to start Worker:\nUncaught SyntaxError: Unexpected end of input\n  at user.js:2:1".into(),
        ))]],
    );
    f.p.http.push_json(200, run_code("import x from 'y'"));
    f.p.http.push_json(200, run_code("let a = 1\nreturn a +"));
    f.p.http.push_json(200, anthropic_text("sorry"));
    f.enqueue(&inbound(1, "go"));
    f.drain();
    let refused = tool_results(&f.p.http.request_json(1));
    assert_eq!(refused[0]["is_error"], true);
    assert!(refused[0]["content"].as_str().unwrap().contains("`import` is not available"));
    let sandbox_jobs = f.p.sandbox.borrow().as_ref().unwrap().jobs.len();
    assert_eq!(sandbox_jobs, 1, "a refused script never reaches the sandbox");
    let failed = tool_results(&f.p.http.request_json(2));
    assert_eq!(failed[1]["is_error"], true);
    assert!(
        failed[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: SyntaxError: Unexpected end of input (line 2: return a +)"),
        "{failed:?}"
    );
    assert_eq!(f.sent(), ["sorry"]);
}
