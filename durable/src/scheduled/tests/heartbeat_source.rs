//! Which HEARTBEAT.md the heartbeat reads, and what reading it costs.

use super::*;

const MIN: i64 = 60_000;

#[test]
fn prose_without_a_checkbox_makes_no_call_unless_opted_in() {
    let prose = "# Heartbeat\n\nCheck my inbox and tell me about anything urgent.\n";
    let t = utc(2026, 1, 5, 10, 0);
    let f = Fx::new(&[]);
    f.store.put_text(HB, prose);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("no_open_item".into()));
    assert_eq!(f.tick(t + 5 * MIN).heartbeat, HeartbeatOutcome::Skipped("no_open_item".into()));
    assert!(f.queue.queued.borrow().is_empty(), "no heartbeat run, no LLM call");
    let f = Fx::new(&[("HEARTBEAT_RUN_PROSE", "true")]);
    f.store.put_text(HB, prose);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Queued);
}

/// Whether the prompt shows `text` as its Heartbeats section.
fn prompt_shows(text: &str) -> bool {
    use crate::prompt::{build_system_prompt, RuntimeInfo};
    use crate::workspace::Workspace;
    let ws = Workspace { files: [(r2_layout::WorkspaceFile::Heartbeat, text.into())].into(), ..Default::default() };
    let runtime = RuntimeInfo {
        agent: "main",
        session_key: "agent:main:heartbeat",
        channel: "system",
        model: "m",
        timezone: "UTC",
        scope: r2_layout::Scope::Main,
    };
    build_system_prompt(&ws, &runtime).contains("## Heartbeats")
}

#[test]
fn a_heartbeat_md_of_template_hints_only_costs_no_run_even_with_prose_on() {
    let hints = "# Heartbeat\n\n_(add your checks)_\n- **Check:** _(what to look at)_\n";
    assert!(!prompt_shows(hints), "the prompt leaves a hint-only file out");
    let t = utc(2026, 1, 5, 10, 0);
    let f = Fx::new(&[("HEARTBEAT_RUN_PROSE", "true"), ("TEMPLATE", "concierge")]);
    // Inherited from the template, then copied into the agent's own prefix.
    f.store.put_text("_catalog/concierge/workspace/HEARTBEAT.md", hints);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    f.store.put_text(HB, hints);
    assert_eq!(f.tick(t + 5 * MIN).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    assert!(f.queue.queued.borrow().is_empty(), "no heartbeat run, no LLM call");
    // Filled in with a standing instruction: the prompt shows it, and it runs.
    let filled = "# Heartbeat\n\n_(add your checks)_\nTell me if it will rain today.\n";
    assert!(prompt_shows(filled));
    f.store.put_text(HB, filled);
    assert_eq!(f.tick(t + 10 * MIN).heartbeat, HeartbeatOutcome::Queued);
}

#[test]
fn a_hint_only_file_judged_before_the_fix_is_judged_again() {
    // The previous release kept the checklist of the raw file under
    // `heartbeat_file`: a hint-only file counted as prose to run.
    let f = Fx::new(&[("HEARTBEAT_RUN_PROSE", "true")]);
    f.store.put_text(HB, "_(add your checks)_\n");
    let etag = block_on(f.store.head(HB)).unwrap().unwrap().etag;
    let old = format!(
        r#"{{"fromAgent":true,"etag":"{etag}","template":null,"resolvedAt":0,"checklist":{{"meaningful":true,"openItems":0,"doneItems":0}}}}"#
    );
    f.state().init().unwrap();
    f.state().set("heartbeat_file", &old).unwrap();
    assert_eq!(f.tick(utc(2026, 1, 5, 10, 0)).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    assert_eq!(f.state().get("heartbeat_file").unwrap(), None, "the old judgement is gone");
}

/// OpenClaw's HEARTBEAT.md template (front matter, then `#` lines only)
/// and nanobot's (headers and `<!-- -->` comments only), verbatim.
fn real_heartbeat(path: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/workspaces");
    std::fs::read_to_string(dir.join(path)).unwrap()
}

#[test]
fn real_heartbeat_templates_without_a_task_cost_no_run_even_with_prose_on() {
    let t = utc(2026, 1, 5, 10, 0);
    for path in ["openclaw-2026.3.11/HEARTBEAT.md", "nanobot/HEARTBEAT.md"] {
        let text = real_heartbeat(path);
        assert!(!prompt_shows(&text), "{path}: the prompt leaves it out");
        let f = Fx::new(&[("HEARTBEAT_RUN_PROSE", "true")]);
        f.store.put_text(HB, &text);
        assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("empty".into()), "{path}");
        assert!(f.queue.queued.borrow().is_empty(), "{path}: no heartbeat run, no LLM call");
    }
}

#[test]
fn a_front_matter_file_judged_before_the_fix_is_judged_again() {
    // The previous release kept, under `heartbeat_file_v2`, the checklist of
    // the file with its front matter: OpenClaw's template counted as prose.
    let f = Fx::new(&[("HEARTBEAT_RUN_PROSE", "true")]);
    f.store.put_text(HB, &real_heartbeat("openclaw-2026.3.11/HEARTBEAT.md"));
    let etag = block_on(f.store.head(HB)).unwrap().unwrap().etag;
    let old = format!(
        r#"{{"fromAgent":true,"etag":"{etag}","template":null,"resolvedAt":0,"checklist":{{"meaningful":true,"openItems":0,"doneItems":0}}}}"#
    );
    f.state().init().unwrap();
    f.state().set("heartbeat_file_v2", &old).unwrap();
    assert_eq!(f.tick(utc(2026, 1, 5, 10, 0)).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    assert_eq!(f.state().get("heartbeat_file_v2").unwrap(), None, "the old judgement is gone");
}

#[test]
fn heartbeat_md_resolves_through_the_overlay_like_the_prompt() {
    let t = utc(2026, 1, 5, 10, 0);
    // The template's file serves an agent without its own.
    let f = Fx::new(&[("TEMPLATE", "concierge")]);
    f.store.put_text("_catalog/concierge/workspace/HEARTBEAT.md", "- [ ] Ask {{HUMAN_NAME}} how the week went");
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "# Heartbeat\n");
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Queued);
    f.queue.run_turns("agent:main:heartbeat", Usage::default());
    // The agent's own file wins over the template: an empty one stops the heartbeat.
    f.store.put_text(HB, "# Heartbeat\n<!-- nothing for now -->\n");
    assert_eq!(f.tick(t + 30 * MIN).heartbeat, HeartbeatOutcome::Skipped("empty".into()));

    // No template: the defaults layer.
    let f = Fx::new(&[]);
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "- [ ] the default check");
    f.store.put_text("_catalog/concierge/workspace/HEARTBEAT.md", "# not this agent's template\n");
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Queued);
    // A template without the file falls through to the defaults too.
    let f = Fx::new(&[("TEMPLATE", "bare")]);
    f.store.put_text("_catalog/bare/workspace/SOUL.md", "# Soul");
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "- [x] all done");
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("all_done".into()));
}

/// The R2 operations of one tick.
fn ops_of(f: &Fx, t: i64) -> (TickReport, Vec<String>) {
    let before = f.store.op_count();
    let r = f.tick(t);
    let ops = f.store.ops.borrow()[before..].to_vec();
    assert_eq!(r.r2_ops as usize, ops.len());
    (r, ops)
}

#[test]
fn an_unchanged_heartbeat_md_costs_one_head_per_tick() {
    let f = Fx::new(&[]);
    f.store.put_text(HB, "# Heartbeat\n<!-- Add unchecked items here. -->\n");
    let t = utc(2026, 1, 5, 10, 0);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    // Every later tick of the skipped slot: one head for HEARTBEAT.md (plus cron.json).
    for i in 1..4 {
        let (r, ops) = ops_of(&f, t + i * 5 * MIN);
        assert_eq!(r.heartbeat, HeartbeatOutcome::Skipped("empty".into()));
        assert_eq!(ops, ["head agents/main/HEARTBEAT.md", "get agents/main/cron.json"]);
    }
    assert_eq!(f.state().get("last_tick_r2_ops").unwrap().as_deref(), Some("2"));
    // An edit is seen at the next tick.
    f.store.put_text(HB, "- [ ] water the plants");
    let (r, ops) = ops_of(&f, t + 20 * MIN);
    assert_eq!(r.heartbeat, HeartbeatOutcome::Queued);
    assert_eq!(
        ops,
        ["head agents/main/HEARTBEAT.md", "get agents/main/HEARTBEAT.md", "get agents/main/cron.json"],
        "the agent's file wins: nothing to list"
    );
    // The slot ran: the rest of it reads nothing but cron.json.
    let (r, ops) = ops_of(&f, t + 25 * MIN);
    assert_eq!(r.heartbeat, HeartbeatOutcome::NotDue);
    assert_eq!(ops, ["get agents/main/cron.json"]);
}

#[test]
fn a_heartbeat_md_from_a_lower_layer_is_trusted_for_an_hour() {
    let f = Fx::new(&[]);
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "# Heartbeat\n");
    let t = utc(2026, 1, 5, 10, 0);
    assert_eq!(f.tick(t).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    let (_, ops) = ops_of(&f, t + 5 * MIN);
    assert_eq!(ops, ["head agents/main/HEARTBEAT.md", "get agents/main/cron.json"]);
    // A defaults edit waits for the hour to pass...
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "- [ ] the default check");
    assert_eq!(f.tick(t + 10 * MIN).heartbeat, HeartbeatOutcome::Skipped("empty".into()));
    assert_eq!(f.tick(t + 60 * MIN).heartbeat, HeartbeatOutcome::Queued);
    f.queue.run_turns("agent:main:heartbeat", Usage::default());
    // ...the agent's own file is seen at once.
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "# Heartbeat\n");
    f.store.put_text(HB, "- [ ] the agent's own check");
    assert_eq!(f.tick(t + 90 * MIN).heartbeat, HeartbeatOutcome::Queued);
    f.queue.run_turns("agent:main:heartbeat", Usage::default());
    // Its deletion hands HEARTBEAT.md back to the defaults at once.
    block_on(f.store.delete(&[HB.into()])).unwrap();
    f.store.put_text("_catalog/defaults/workspace/HEARTBEAT.md", "- [x] the default check, done");
    assert_eq!(f.tick(t + 120 * MIN).heartbeat, HeartbeatOutcome::Skipped("all_done".into()));
}
