//! The workspace by layer natively: the shared layers written and listed,
//! the agent's tree resolved over them, the agent's own edits through the
//! history, and the refusals a client reads.

use crate::http_api::tests::{answers, ask, body, sent};
use serde_json::{json, Value};

fn paths_and_sources(tree: &Value) -> Vec<(String, String)> {
    let files = tree["files"].as_array().expect("a files list");
    files.iter().map(|f| (f["path"].as_str().unwrap().to_owned(), f["source"].as_str().unwrap().to_owned())).collect()
}

#[test]
fn the_tree_resolves_the_agent_over_its_template_and_the_defaults() {
    answers(&[]);
    assert_eq!(ask("PUT", "defaults/workspace/SOUL.md", &[], "be kind").status, 200);
    assert_eq!(ask("PUT", "defaults/workspace/USER.md", &[], "the owner").status, 200);
    let put = ask("PUT", "templates/base/workspace/SOUL.md", &[], "be brief");
    let template_soul = crate::workspace::admin::LayerRef::template("base").unwrap().key("SOUL.md");
    assert_eq!(body(&put), json!({"ok": true, "path": "SOUL.md", "key": template_soul}));
    let defaults = ask("GET", "defaults/workspace", &[], "");
    let listed: Vec<String> = paths_and_sources(&body(&defaults)).into_iter().map(|(p, _)| p).collect();
    assert_eq!(listed, ["SOUL.md", "USER.md"]);

    // The agent's tree asks the pins of its template, and shows each file's source.
    answers(&[(200, json!({"agent": "main", "template": "base", "files": []}))]);
    let tree = ask("GET", "agents/main/workspace", &[], "");
    assert_eq!(tree.status, 200, "{}", tree.text());
    let tree = body(&tree);
    assert_eq!((tree["agent"].clone(), tree["template"].clone()), (json!("main"), json!("base")));
    let files = paths_and_sources(&tree);
    assert!(files.contains(&("SOUL.md".into(), "template".into())), "{files:?}");
    assert!(files.contains(&("USER.md".into(), "defaults".into())), "{files:?}");
    let asked = format!("{}?agent=main", crate::protocol::agent::PINS_STATUS_PATH);
    assert_eq!(sent()[0].0, asked, "the pins asked of the Agent object");

    // One file as the overlay serves it, with where it comes from.
    answers(&[]);
    let soul = body(&ask("GET", "agents/main/workspace/SOUL.md", &[], ""));
    assert_eq!((soul["content"].clone(), soul["source"].clone()), (json!("be brief"), json!("template")));
    let shared = body(&ask("GET", "templates/base/workspace/SOUL.md", &[], ""));
    assert_eq!((shared["content"].clone(), shared["key"].clone()), (json!("be brief"), json!(template_soul)));
}

#[test]
fn the_agents_override_goes_through_the_history_and_deleting_it_re_inherits() {
    answers(&[]);
    ask("PUT", "defaults/workspace/USER.md", &[], "the owner");
    let put = ask("PUT", "agents/main/workspace/USER.md", &[("why", "mine")], "me, really");
    assert_eq!((put.status, body(&put)["changed"].clone()), (200, json!(true)), "{}", put.text());
    let own = body(&ask("GET", "agents/main/workspace/USER.md", &[], ""));
    assert_eq!((own["content"].clone(), own["source"].clone()), (json!("me, really"), json!("agent")));
    let history = body(&ask("GET", "agents/main/history/USER.md", &[], ""));
    assert_eq!(history["versions"].as_array().map(Vec::len), Some(1), "the edit kept a version: {history}");
    assert_eq!(ask("DELETE", "agents/main/workspace/USER.md", &[], "").status, 200);
    let back = body(&ask("GET", "agents/main/workspace/USER.md", &[], ""));
    assert_eq!((back["content"].clone(), back["source"].clone()), (json!("the owner"), json!("defaults")));
    let again = ask("DELETE", "agents/main/workspace/USER.md", &[], "");
    assert_eq!(
        (again.status, body(&again)),
        (404, json!({"error": "USER.md is not in this layer"})),
        "{}",
        again.text()
    );
}

#[test]
fn bad_input_is_refused_naming_the_problem() {
    answers(&[]);
    for (method, path, query, sent_body, status, why) in [
        ("GET", "agents/main/workspace/a%2F..%2Fb", vec![], "", 400, "'..'"),
        ("PUT", "agents/main/workspace/sessions/x.jsonl.gz", vec![], "x", 400, "session archives"),
        ("GET", "templates/a%2Fb/workspace", vec![], "", 400, "template"),
        ("GET", "agents/main/workspace/NOPE.md", vec![], "", 404, "NOPE.md"),
        ("PUT", "defaults/workspace/x.md", vec![], "\u{0}", 200, ""),
        ("PUT", "agents/main/workspace/GUARDRAILS.md", vec![], "x", 403, "GUARDRAILS.md"),
        ("POST", "defaults/workspace/x.md", vec![], "x", 405, "use GET, PUT or DELETE"),
        ("DELETE", "defaults/workspace/none.md", vec![], "", 404, "none.md"),
    ] {
        let r = ask(method, path, &query, sent_body);
        assert_eq!(r.status, status, "{method} {path}: {}", r.text());
        if status != 200 {
            assert!(body(&r)["error"].as_str().unwrap().contains(why), "{method} {path}: {}", r.text());
        }
    }
    // Bytes the console cannot show as text, and a file past the limit.
    let put = |bytes: Vec<u8>| {
        let front = crate::testing::FakeFront::with(&[("AGENTS", "main")]);
        let (method, admin) = (crate::protocol::call::Method::Put, crate::settings::api::Caller::Admin);
        let route = crate::api::routes::route(method, &["defaults", "workspace", "x.md"], &admin, &["main".to_owned()]);
        let req = crate::channels::webhook::WebRequest { method: "PUT".into(), body: bytes, ..Default::default() };
        futures::executor::block_on(crate::http_api::serve(&front, &admin, &route.unwrap(), &req))
            .expect("a workspace route")
    };
    let binary = put(vec![0xff, 0xfe, 0x00]);
    assert_eq!(binary.status, 400);
    assert!(body(&binary)["error"].as_str().unwrap().contains("UTF-8"), "{}", binary.text());
    let big = put(vec![b'x'; super::MAX_FILE_BYTES + 1]);
    assert_eq!((big.status, big.text().as_ref()), (413, "body too large: the limit is 1024 KiB"));
    assert!(sent().is_empty(), "no object is asked for a shared layer or a refusal");
}
