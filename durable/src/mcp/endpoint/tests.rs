//! `/mcp/{agentId}` as HTTP natively: the preflight, the methods refused,
//! the body refused, and a session id given and brought back.

use super::*;
use crate::mcp::server::tests::Fake;
use futures::executor::block_on;
use std::collections::HashMap;

fn config() -> AgentConfig {
    AgentConfig::load(&HashMap::<String, String>::new(), "main").unwrap()
}

fn vars() -> HashMap<String, String> {
    [("ADMIN_TOKEN".to_owned(), "the-admin-token".to_owned())].into()
}

fn ask(req: &WebRequest) -> Answer {
    block_on(answer(&Fake::default(), &config(), &Caller::Admin, &vars(), req, "0123456789abcdef", 1_000))
}

fn initialize() -> WebRequest {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    WebRequest::post(body.to_string())
}

#[test]
fn a_preflight_is_an_empty_204_naming_the_methods_and_headers() {
    let a = preflight();
    assert_eq!((a.status, a.body.len()), (204, 0));
    assert!(a.header("access-control-allow-methods").unwrap().contains("POST"));
    assert!(a.header("access-control-allow-headers").unwrap().contains("mcp-session-id"));
}

#[test]
fn only_post_is_taken_and_a_body_past_the_limit_is_a_json_rpc_error() {
    for method in ["GET", "DELETE"] {
        let a = ask(&WebRequest { method: method.into(), ..Default::default() });
        assert_eq!((a.status, a.header("allow")), (405, Some("POST, OPTIONS")), "{method}");
        assert_eq!(a.text(), "this MCP server takes POST only");
    }
    let big = too_large();
    assert_eq!(big.status, 413);
    let error: serde_json::Value = hearth_json::from_slice(&big.body).unwrap();
    assert_eq!(error["error"]["code"], server::INVALID_REQUEST);
}

#[test]
fn initialize_gives_a_session_id_the_client_brings_back() {
    let init = ask(&initialize());
    assert_eq!(init.status, 200, "{}", init.text());
    let id = init.header(SESSION_HEADER).expect("a session id").to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let again = ask(&WebRequest::post(list.clone()).with_header(SESSION_HEADER, &id));
    assert_eq!(again.status, 200, "{}", again.text());
    assert!(again.text().contains("\"tools\""), "{}", again.text());
    let made_up = ask(&WebRequest::post(list).with_header(SESSION_HEADER, "hs1.1.00.00"));
    assert_eq!(made_up.status, 404, "an id not issued to these credentials: {}", made_up.text());
    let old = ask(&initialize().with_header("mcp-protocol-version", "1999-01-01"));
    assert_eq!(old.status, 400, "{}", old.text());
}
