//! A turn parked on a tool call waiting for the owner (`session::parked`):
//! it stops with its message open and its alarm at the deadline, spends no
//! LLM call while it waits, and resumes from its history: an approved call
//! runs once, a denied or unanswered one is a tool error the model reads.

use super::*;
use crate::protocol::approvals::{ApprovalCall, Decision};

fn gated() -> Fixture {
    let mut f = Fixture::new();
    f.cfg.approval.patterns = vec!["read_file".into()];
    f.p.store.put_text("agents/main/SOUL.md", "I am warm.");
    f
}

fn park(f: &Fixture) -> DrainReport {
    f.p.http.push_json(200, tool_call("t1"));
    f.enqueue(&inbound(1, "read your soul"));
    f.drain()
}

#[test]
fn a_call_that_needs_approval_parks_the_turn_until_the_owner_approves_then_runs_once() {
    let f = gated();
    let now = f.p.now.get();
    let report = park(&f);
    assert_eq!(report.wake_at, Some(now + 30 * 60_000), "the alarm comes back at the deadline");
    assert_eq!(f.requests(), 1);
    let asks: Vec<_> = f.p.approvals.borrow().calls.clone();
    assert!(
        matches!(&asks[..], [ApprovalCall::Ask(a)] if a.tool == "read_file" && a.args.contains("SOUL.md") && a.seq == 1)
    );
    assert_eq!(SessionStore::new(&f.p.sql).open_count().unwrap(), 1, "its message stays open");
    assert!(f.sent()[0].contains("asked my owner"), "the chat is told it waits: {:?}", f.sent());
    // Woken meanwhile (another message, an outbox retry): no LLM call, still parked.
    let report = f.drain();
    assert_eq!((f.requests(), report.wake_at.is_some()), (1, true));
    // Approved: the call runs, the model reads its result and answers.
    f.p.approvals.borrow_mut().decision = Decision::Approved;
    f.p.http.push_json(200, anthropic_text("My soul says I am warm."));
    f.drain();
    let results = tool_results(&f.p.http.request_json(1));
    assert_eq!(results.len(), 1);
    assert_ne!(results[0]["is_error"].as_bool(), Some(true));
    assert!(results[0]["content"].to_string().contains("I am warm."));
    assert_eq!(f.sent().last().unwrap(), "My soul says I am warm.");
    assert_eq!(SessionStore::new(&f.p.sql).open_count().unwrap(), 0);
    // Asked once only.
    let asks = f.p.approvals.borrow().calls.iter().filter(|c| matches!(c, ApprovalCall::Ask(_))).count();
    assert_eq!(asks, 1);
}

#[test]
fn no_answer_by_the_deadline_is_a_no_the_model_reads_and_answers() {
    let f = gated();
    park(&f);
    f.p.now.set(f.p.now.get() + 30 * 60_000);
    f.p.http.push_json(200, anthropic_text("My owner did not answer, so I did not read it."));
    f.drain();
    let results = tool_results(&f.p.http.request_json(1));
    assert_eq!(results[0]["is_error"].as_bool(), Some(true));
    assert!(results[0]["content"].to_string().contains("did not answer within 30 minutes"), "{results:?}");
    assert!(f.p.approvals.borrow().calls.iter().any(|c| matches!(c, ApprovalCall::Status { expire: true, .. })));
    assert_eq!(f.sent().last().unwrap(), "My owner did not answer, so I did not read it.");
}

#[test]
fn an_mcp_servers_approve_list_makes_its_tools_wait_and_only_those() {
    use crate::protocol::mcp::{McpCatalog, McpScope, McpServer, McpServerConfig, McpTool};
    let f = Fixture::new();
    let tool =
        |name: &str| McpTool { name: name.into(), description: String::new(), input_schema: json!({"type": "object"}) };
    let server = McpServer {
        config: McpServerConfig {
            name: "github".into(),
            url: "https://g.test/mcp".into(),
            headers: vec![],
            scopes: vec![McpScope::Main],
            timeout_ms: 1000,
            approve: vec!["create_*".into()],
        },
        tools: vec![tool("create_issue"), tool("list_issues")],
        listed_at: Some(0),
        checked_at: Some(0),
        error: None,
    };
    f.mcp.borrow_mut().catalog = std::rc::Rc::new(McpCatalog { servers: vec![server], ..Default::default() });
    let deps = f.deps();
    use crate::session::toolbox::needs_approval;
    assert!(needs_approval(&deps, "mcp__github__create_issue"));
    assert!(!needs_approval(&deps, "mcp__github__list_issues"));
    assert!(!needs_approval(&deps, "mcp__other__create_issue"));
    assert!(!needs_approval(&deps, "read_file"), "APPROVE_TOOLS is empty");
}

#[test]
fn a_denied_call_never_runs_and_a_script_cannot_bypass_the_question() {
    let f = gated();
    park(&f);
    f.p.approvals.borrow_mut().decision = Decision::Denied;
    f.p.http.push_json(200, anthropic_text("Not allowed, sorry."));
    f.drain();
    let results = tool_results(&f.p.http.request_json(1));
    assert_eq!(results[0]["is_error"].as_bool(), Some(true));
    assert!(results[0]["content"].to_string().contains("denied"));
    assert_eq!(f.sent().last().unwrap(), "Not allowed, sorry.");
    // A tool that needs no approval is not asked about.
    let mut free = Fixture::new();
    free.cfg.approval.patterns = vec!["web_*".into()];
    free.p.http.push_json(200, tool_call("t2"));
    free.p.http.push_json(200, anthropic_text("read"));
    free.enqueue(&inbound(1, "read"));
    free.drain();
    assert!(free.p.approvals.borrow().calls.is_empty());
    assert_eq!(free.sent(), ["read"]);
}
