//! The route × credential matrix: every route, for the admin token, an
//! owner key, a key scoped to one agent and a key scoped to another.

use super::*;
use crate::protocol::call::Method::Put;
use crate::settings::api::ApiKey;

fn key(name: &str, agents: Option<&[&str]>, owner: bool) -> Caller {
    Caller::Key(ApiKey {
        name: name.into(),
        token: format!("{name}-token"),
        agents: agents.map(|a| a.iter().map(|s| s.to_string()).collect()),
        owner,
    })
}

/// What `caller` gets for `method path`: the route's name, or the refusal's status.
fn outcome(method: Method, path: &str, caller: &Caller) -> Result<String, u16> {
    let agents = ["main".to_owned(), "work".to_owned()];
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    route(method, &segments, caller, &agents)
        .map(|r| format!("{r:?}").split([' ', '{']).next().unwrap_or_default().to_owned())
        .map_err(|e| e.status)
}

/// (method, path, the route, what an owner key gets, a key scoped to `main`, a key scoped to `work`)
type Row = (Method, &'static str, &'static str, Result<(), u16>, Result<(), u16>, Result<(), u16>);

const OK: Result<(), u16> = Ok(());

#[rustfmt::skip]
const MATRIX: &[Row] = &[
    // The conversation routes: any key of the agent.
    (Post, "agents/main/generate", "Turn", OK, OK, Err(404)),
    (Post, "agents/main/stream", "Turn", OK, OK, Err(404)),
    (Post, "agents/main/threads/t1/stop", "Stop", OK, OK, Err(404)),
    (Get, "agents/main/memory/threads", "Threads", OK, OK, Err(404)),
    (Post, "agents/main/memory/threads", "CreateThread", OK, OK, Err(404)),
    // The notifications route is the owner's: the handler refuses a plain key (403).
    (Get, "agents/main/notifications/stream", "Notifications", OK, OK, Err(404)),
    (Get, "agents", "Agents", OK, OK, OK),
    // The owner's, with ADMIN_TOKEN only.
    (Get, "agents/main/sessions", "Sessions", Err(403), Err(403), Err(404)),
    (Get, "agents/main/sessions/agent:main:main", "Session", Err(403), Err(403), Err(404)),
    (Post, "agents/main/sessions/agent:main:main/reset", "ResetSession", Err(403), Err(403), Err(404)),
    (Get, "agents/main/archives/abc", "Archive", Err(403), Err(403), Err(404)),
    (Get, "agents/main/schedule", "Schedule", Err(403), Err(403), Err(404)),
    (Get, "agents/main/tasks", "Tasks", Err(403), Err(403), Err(404)),
    (Delete, "agents/main/tasks/t1", "CancelTask", Err(403), Err(403), Err(404)),
    (Get, "agents/main/reminders", "Reminders", Err(403), Err(403), Err(404)),
    (Get, "agents/main/reminders/r1", "Reminders", Err(403), Err(403), Err(404)),
    (Delete, "agents/main/reminders", "CancelReminders", Err(403), Err(403), Err(404)),
    (Delete, "agents/main/reminders/r1", "CancelReminders", Err(403), Err(403), Err(404)),
    (Get, "agents/main/usage", "Usage", Err(403), Err(403), Err(404)),
    (Get, "agents/main/usage/threads/main", "Usage", Err(403), Err(403), Err(404)),
    (Get, "agents/main/mcp", "Mcp", Err(403), Err(403), Err(404)),
    (Get, "agents/main/people", "People", Err(403), Err(403), Err(404)),
    (Post, "agents/main/people", "ActOnPeople", Err(403), Err(403), Err(404)),
    (Get, "agents/main/approvals", "Approvals", Err(403), Err(403), Err(404)),
    (Post, "agents/main/approvals/3", "Decide", Err(403), Err(403), Err(404)),
    (Get, "agents/main/gateway", "Gateway", Err(403), Err(403), Err(404)),
    (Post, "agents/main/gateway/connect", "ConnectGateway", Err(403), Err(403), Err(404)),
    (Get, "agents/main/pins", "Pins", Err(403), Err(403), Err(404)),
    (Post, "agents/main/pins/SOUL.md/accept", "AcceptPin", Err(403), Err(403), Err(404)),
    (Post, "templates/base/pins/SOUL.md/accept", "AcceptTemplatePin", Err(403), Err(403), Err(403)),
    (Get, "pins/pending", "PendingPins", Err(403), Err(403), Err(403)),
    (Get, "agents/main/workspace/files/SOUL.md", "AgentWorkspace", Err(403), Err(403), Err(404)),
    (Put, "templates/base/workspace/files/SOUL.md", "TemplateWorkspace", Err(403), Err(403), Err(403)),
    (Get, "defaults/workspace", "DefaultsWorkspace", Err(403), Err(403), Err(403)),
    (Get, "agents/main/memory/stores", "MemoryStores", Err(403), Err(403), Err(404)),
    (Post, "agents/main/memory/call", "MemoryCall", Err(403), Err(403), Err(404)),
    (Get, "agents/main/memory/notes", "MemoryNotes", Err(403), Err(403), Err(404)),
    (Get, "agents/main/history", "History", Err(403), Err(403), Err(404)),
    (Put, "agents/main/files/notes.md", "History", Err(403), Err(403), Err(404)),
    (Get, "agents/main/dreams", "History", Err(403), Err(403), Err(404)),
    (Get, "agents/main/memory/evidence", "History", Err(403), Err(403), Err(404)),
];

#[test]
fn every_route_for_every_credential() {
    let admin = Caller::Admin;
    let owner = key("owner", None, true);
    let main_only = key("app", Some(&["main"]), false);
    let work_only = key("bot", Some(&["work"]), false);
    let mut wrong = Vec::new();
    for (method, path, name, for_owner, for_main, for_work) in MATRIX {
        let expected = |r: &Result<(), u16>| r.map(|()| name.to_string());
        for (who, caller, want) in [
            ("admin", &admin, Ok(name.to_string())),
            ("owner key", &owner, expected(for_owner)),
            ("key of main", &main_only, expected(for_main)),
            ("key of work", &work_only, expected(for_work)),
        ] {
            let got = outcome(*method, path, caller);
            if got != want {
                wrong.push(format!("{who}: {} /api/{path}: {got:?}, not {want:?}", method.as_str()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_wrong_method_unknown_agent_or_path_is_refused_with_its_reason() {
    let admin = Caller::Admin;
    let agents = ["main".to_owned()];
    let refusal = |method, path: &str| {
        let segments: Vec<&str> = path.split('/').collect();
        route(method, &segments, &admin, &agents).unwrap_err()
    };
    let e = refusal(Get, "agents/main/generate");
    assert_eq!(e.status, 405);
    assert!(e.message.starts_with("method not allowed"));
    assert_eq!(refusal(Get, "agents/nobody/sessions"), ApiError::new(404, "unknown agent \"nobody\""));
    assert_eq!(refusal(Get, "agents/main/nowhere"), ApiError::new(404, "not found"));
    assert_eq!(refusal(Delete, "agents/main/sessions"), ApiError::new(404, "not found"));
    let scoped = key("app", Some(&["main"]), false);
    let segments = ["agents", "main", "sessions"];
    let e = route(Get, &segments, &scoped, &agents).unwrap_err();
    assert_eq!(e.status, 403);
    assert!(e.message.contains("needs ADMIN_TOKEN"));
    assert_eq!(e.body(), br#"{"error":"this key may use generate, stream, threads/{id}/stop, memory/threads and notifications; the rest needs ADMIN_TOKEN"}"#.to_vec());
}
