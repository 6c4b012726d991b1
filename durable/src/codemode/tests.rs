//! A script's calls answered through a scripted sandbox (the isolate itself
//! is tested in workerd: tests/codemode.test.mjs).

use super::program::{build, InnerTool};
use super::run::{drive, tell, InnerTools};
use super::*;
use crate::ports::{SandboxEvent, SandboxRun};
use crate::toolkit::ToolOutcome;
use futures::executor::block_on;
use futures::future::LocalBoxFuture;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::VecDeque;

/// A sandbox whose script is a list of events; answers are recorded.
#[derive(Default)]
struct Scripted {
    events: RefCell<VecDeque<SandboxEvent>>,
    answers: RefCell<Vec<(u32, bool, String)>>,
}

impl Scripted {
    fn new(events: Vec<SandboxEvent>) -> Self {
        Scripted { events: RefCell::new(events.into()), answers: RefCell::default() }
    }
}

impl SandboxRun for Scripted {
    fn next(&self) -> LocalBoxFuture<'_, SandboxEvent> {
        let e = self.events.borrow_mut().pop_front().unwrap_or(SandboxEvent::Done(Err("script ran out".into())));
        Box::pin(async move { e })
    }
    fn answer(&self, id: u32, is_error: bool, text: &str) {
        self.answers.borrow_mut().push((id, is_error, text.to_owned()));
    }
}

/// `read_file` answers with the path; `boom` fails; nothing else exists.
struct Files {
    called: RefCell<Vec<String>>,
}

impl InnerTools for Files {
    fn offers(&self, name: &str) -> bool {
        matches!(name, "read_file" | "boom")
    }
    fn call<'a>(&'a self, name: &'a str, args: &'a Value) -> LocalBoxFuture<'a, ToolOutcome> {
        self.called.borrow_mut().push(format!("{name} {args}"));
        Box::pin(async move {
            match name {
                "boom" => ToolOutcome::err("it broke"),
                _ => ToolOutcome::ok(format!("text of {}", args["path"].as_str().unwrap_or("?"))),
            }
        })
    }
}

fn call(id: u32, name: &str, args: &str) -> SandboxEvent {
    SandboxEvent::Call { id, name: name.into(), args: args.into() }
}

fn report(value: &str) -> SandboxEvent {
    SandboxEvent::Done(Ok(format!(
        r#"{{"value":{},"valueChars":{},"logs":["one","two"],"droppedLogs":0,"error":null,"stopped":"","steps":7}}"#,
        serde_json::to_string(value).unwrap(),
        value.len()
    )))
}

fn program(code: &str) -> program::Program {
    build(
        code,
        &[InnerTool { name: "read_file".into(), params: vec!["path".into()], required: 1 }],
        &Default::default(),
    )
    .unwrap()
}

#[test]
fn calls_are_answered_through_the_sessions_tools_and_listed() {
    let run = Scripted::new(vec![
        call(1, "read_file", r#"{"path":"a.md"}"#),
        call(2, "boom", "{}"),
        call(3, "write_file", r#"{"path":"x"}"#),
        call(4, "read_file", "[1]"),
        report("[\"text of a.md\"]"),
    ]);
    let tools = Files { called: RefCell::default() };
    let record = block_on(drive(&run, &tools, 10));
    let answers = run.answers.borrow().clone();
    assert!(answers.contains(&(1, false, "text of a.md".into())), "{answers:?}");
    assert!(answers.contains(&(2, true, "it broke".into())));
    assert!(answers.contains(&(3, true, "no tool \"write_file\" here".into())), "a tool the session lacks");
    assert!(answers.iter().any(|(id, e, t)| *id == 4 && *e && t.contains("one object")));
    assert_eq!(tools.called.borrow().len(), 2, "refused calls reach no tool");
    assert_eq!(record.calls.len(), 2);
    let told = tell(&program("return 1"), &record, 12);
    assert!(!told.is_error);
    assert!(
        told.script.starts_with("Result (JSON): [\"text of a.md\"]\nConsole (2 lines):\none\ntwo"),
        "{}",
        told.script
    );
    assert!(told
        .summary
        .contains("Tool calls (2):\n1. read_file {\"path\":\"a.md\"} → ok, 12 chars\n2. boom {} → error"));
    assert!(told.summary.ends_with("Ran in 12 ms, 7 steps."), "{}", told.summary);
}

#[test]
fn no_more_calls_than_the_limit_reach_a_tool() {
    let mut events: Vec<SandboxEvent> = (1..=5).map(|i| call(i, "read_file", r#"{"path":"p"}"#)).collect();
    events.push(report("1"));
    let run = Scripted::new(events);
    let tools = Files { called: RefCell::default() };
    let record = block_on(drive(&run, &tools, 3));
    assert_eq!(tools.called.borrow().len(), 3);
    assert_eq!(record.calls.len(), 3);
    let refused: Vec<_> = run.answers.borrow().iter().filter(|a| a.1).map(|a| a.2.clone()).collect();
    assert_eq!(refused, vec!["a script may make at most 3 tool calls"; 2]);
}

#[test]
fn errors_name_their_line_and_show_it() {
    let p = program("const a = 1;\nconst b = null;\nreturn b.x;");
    let thrown = SandboxEvent::Done(Ok(r#"{"value":null,"valueChars":0,"logs":[],"droppedLogs":0,
        "error":{"name":"TypeError","message":"Cannot read properties of null (reading 'x')","line":3},"stopped":"","steps":0}"#
        .into()));
    let record = block_on(drive(&Scripted::new(vec![thrown]), &Files { called: RefCell::default() }, 5));
    let told = tell(&p, &record, 3);
    assert!(told.is_error);
    assert_eq!(told.script, "Error: TypeError: Cannot read properties of null (reading 'x') (line 3: return b.x;)");

    let syntax = SandboxEvent::Done(Err(
        "Failed to start Worker:\nUncaught SyntaxError: Unexpected token ';'\n  at user.js:2:50".into(),
    ));
    let p = program("let a = 1\nreturn a + ;");
    let told = tell(&p, &block_on(drive(&Scripted::new(vec![syntax]), &Files { called: RefCell::default() }, 5)), 1);
    assert_eq!(told.script, "Error: SyntaxError: Unexpected token ';' (line 2: return a + ;)");

    let stopped = SandboxEvent::Done(Ok(r#"{"value":null,"valueChars":0,"logs":[],"droppedLogs":0,
        "error":{"name":"Error","message":"stopped: x","line":2},"stopped":"the script ran more than 50000000 steps (an endless loop?)","steps":50000001}"#
        .into()));
    let p = program("let n = 0\nwhile (true) n++");
    let told = tell(&p, &block_on(drive(&Scripted::new(vec![stopped]), &Files { called: RefCell::default() }, 5)), 900);
    assert!(told.is_error);
    assert!(told.script.starts_with("Error: stopped: the script ran more than 50000000 steps (an endless loop?) (limits: 50000000 steps, 1000 ms of computing, 10000 ms in all) (line 2: while (true) n++)"), "{}", told.script);
}

#[test]
fn a_long_value_is_cut_with_a_note() {
    let long = format!("\"{}\"", "x".repeat(program::MAX_VALUE_CHARS - 2));
    let done = SandboxEvent::Done(Ok(format!(
        r#"{{"value":{},"valueChars":250002,"logs":[],"droppedLogs":3,"error":null,"stopped":"","steps":1}}"#,
        serde_json::to_string(&long).unwrap()
    )));
    let told = tell(
        &program("return 1"),
        &block_on(drive(&Scripted::new(vec![done]), &Files { called: RefCell::default() }, 5)),
        1,
    );
    assert!(!told.is_error);
    assert!(
        told.script.contains("[the result was 250002 characters of JSON; cut to the first 16000"),
        "{}",
        told.script
    );
    assert!(told.script.ends_with("[3 more console lines not kept]"));
    assert!(told.clone().into_outcome().text.chars().count() <= crate::toolkit::MAX_RESULT_CHARS);
}

#[test]
fn an_unreadable_report_is_an_error_not_a_crash() {
    for end in
        [Ok("{\"value\": [1]}".to_owned()), Ok("not json".into()), Err("the script did not finish within 10 ms".into())]
    {
        let told = tell(
            &program("return 1"),
            &block_on(drive(&Scripted::new(vec![SandboxEvent::Done(end)]), &Files { called: RefCell::default() }, 5)),
            1,
        );
        assert!(told.is_error && told.script.starts_with("Error: "), "{}", told.script);
    }
}

#[test]
fn the_description_lists_what_hearth_offers() {
    let tools = vec![
        InnerTool { name: "read_file".into(), params: vec!["path".into()], required: 1 },
        InnerTool { name: "memory_search".into(), params: vec!["query".into(), "k".into()], required: 1 },
    ];
    let s = spec(&tools, &Default::default());
    assert_eq!(s.name, TOOL);
    assert!(s.description.contains("hearth.read_file(path), hearth.memory_search(query, k?)"), "{}", s.description);
    assert!(s.description.contains("10000 ms, 50 tool calls"));
}
