//! The prompt over material nobody on the project wrote: the published
//! workspace templates of OpenClaw, nanobot and PicoClaw, and real skills
//! (`tests/fixtures/real-world/`, SOURCES.md there).

use super::*;

fn real(path: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world");
    std::fs::read_to_string(dir.join(path)).unwrap()
}

/// A store with `files` ((fixture path, workspace file name)) as agent `main`'s own.
fn seeded(files: &[(&str, &str)]) -> MemStore {
    let store = MemStore::default();
    for (path, name) in files {
        store.put_text(&format!("agents/main/{name}"), &real(&format!("workspaces/{path}")));
    }
    store
}

fn main_prompt(store: &MemStore) -> (Workspace, String) {
    let load = Load { agent: "main", ..Load::ada(Scope::Main) };
    let ws = load.run(store, &mut WorkspaceCache::default());
    let prompt = load.prompt(&ws);
    (ws, prompt)
}

const FRONT_MATTER: [&str; 4] = ["read_when:", "summary: \"", "title: \"", "Bootstrapping a workspace manually"];
const FILL_INS: [&str; 10] = [
    "(your name)",
    "(your timezone",
    "_(optional)_",
    "_(pick something you like)_",
    "(casual/formal)",
    "(optional)",
    "- **Timezone:**\n",
    "- [ ] Casual",
    "(Important facts about",
    "\n- \n",
];

fn assert_clean(prompt: &str, which: &str) {
    for f in FRONT_MATTER.iter().chain(&FILL_INS) {
        assert!(!prompt.contains(f), "{which}: {f:?} reached the prompt:\n{prompt}");
    }
}

#[test]
fn an_openclaw_workspace_reaches_the_prompt_without_front_matter_or_fill_ins() {
    let store = seeded(&[
        ("openclaw-2026.3.11/AGENTS.md", "AGENTS.md"),
        ("openclaw-2026.3.11/SOUL.md", "SOUL.md"),
        ("openclaw-2026.3.11/IDENTITY.md", "IDENTITY.md"),
        ("openclaw-2026.3.11/USER.md", "USER.md"),
        ("openclaw-2026.3.11/TOOLS.md", "TOOLS.md"),
        ("openclaw-2026.3.11/HEARTBEAT.md", "HEARTBEAT.md"),
    ]);
    let (_, prompt) = main_prompt(&store);
    assert_clean(&prompt, "openclaw 2026.3.11");
    assert!(!titles(&prompt).contains(&"Heartbeats"), "a header-only HEARTBEAT.md is left out");
    assert!(section(&prompt, "Your Soul").starts_with("# SOUL.md - Who You Are"), "{}", section(&prompt, "Your Soul"));
    assert!(section(&prompt, "Tool Notes").starts_with("# TOOLS.md - Local Notes"));
    assert!(section(&prompt, "Your Identity").starts_with("# IDENTITY.md - Who Am I?"), "no persona from hints");
    assert!(section(&prompt, "About Your Human").contains("Learn about the person you're helping"));
}

#[test]
fn the_later_openclaw_templates_and_a_filled_in_identity() {
    let store = seeded(&[
        ("openclaw-2026.9.6/AGENTS.md", "AGENTS.md"),
        ("openclaw-2026.9.6/SOUL.md", "SOUL.md"),
        ("openclaw-2026.9.6/USER.md", "USER.md"),
        ("openclaw-2026.9.6/TOOLS.md", "TOOLS.md"),
    ]);
    // The template as an agent fills it in during its first conversation.
    let identity = real("workspaces/openclaw-2026.9.6/IDENTITY.md")
        .replace("  _(pick something you like)_", "  Molty")
        .replace("  _(your signature — pick one that feels right)_", "  🦞");
    store.put_text("agents/main/IDENTITY.md", &identity);
    let (_, prompt) = main_prompt(&store);
    assert_clean(&prompt, "openclaw 2026.9.6");
    let id = section(&prompt, "Your Identity");
    assert!(id.starts_with("name=Molty, emoji=🦞\n\n# IDENTITY.md - Who Am I?"), "{id}");
    assert!(id.contains("- **Name:**\n  Molty") && !id.contains("**Vibe:**"), "{id}");
}

#[test]
fn nanobot_and_picoclaw_workspaces_reach_the_prompt_clean() {
    for (agent, files) in [
        (
            "nanobot",
            &[
                ("nanobot/AGENTS.md", "AGENTS.md"),
                ("nanobot/SOUL.md", "SOUL.md"),
                ("nanobot/USER.md", "USER.md"),
                ("nanobot/HEARTBEAT.md", "HEARTBEAT.md"),
                ("nanobot/memory/MEMORY.md", "MEMORY.md"),
            ][..],
        ),
        (
            "picoclaw",
            &[
                ("picoclaw/AGENT.md", "AGENTS.md"),
                ("picoclaw/SOUL.md", "SOUL.md"),
                ("picoclaw/USER.md", "USER.md"),
                ("picoclaw/memory/MEMORY.md", "MEMORY.md"),
            ][..],
        ),
    ] {
        let (_, prompt) = main_prompt(&seeded(files));
        assert_clean(&prompt, agent);
        assert!(!titles(&prompt).contains(&"Heartbeats"), "{agent}");
        assert!(!prompt.contains("name: pico"), "{agent}: PicoClaw's AGENT.md front matter");
    }
    let (_, prompt) = main_prompt(&seeded(&[("nanobot/USER.md", "USER.md")]));
    let user = section(&prompt, "About Your Human");
    assert_eq!(
        user,
        "# User Profile\n\nInformation about the user to help personalize interactions.\n\n---\n\n*Edit this file to customize nanobot's behavior for your needs.*"
    );
}

#[test]
fn real_skills_are_listed_or_left_out_and_the_big_one_is_loadable() {
    let store = MemStore::default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/skills");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let bytes = std::fs::read(dir.join(&name).join("SKILL.md")).unwrap();
        store.put_text(&format!("skills/{name}/SKILL.md"), &String::from_utf8(bytes).unwrap());
    }
    let (ws, prompt) = main_prompt(&store);
    let listed: Vec<&str> = ws.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        listed,
        [
            "better-auth",
            "brainstorming",
            "claude-api",
            "composition-patterns",
            "cron",
            "diagram-maker",
            "discord",
            "frontend-design",
            "gh-fix-ci",
            "healthcheck",
            "mcp-builder",
            "plan-executor",
            "planning-with-files",
            "react-best-practices",
            "read-github",
            "skill-creator",
            "test-driven-development",
            "webapp-testing",
        ]
    );
    let skills = section(&prompt, "Skills (Mandatory Scan)");
    assert!(skills.contains("<name>claude-api</name>") && !skills.contains("<name>1password</name>"));
    let left_out = |key: &str| ws.warnings.iter().find(|w| w.starts_with(&format!("leaving out skill skills/{key}/")));
    assert!(left_out("1password").unwrap().contains("needs the programs op"), "{:?}", ws.warnings);
    // Written for Claude Code: listed, its foreign tool names logged once.
    assert!(ws.warnings.iter().any(|w| w
        == "skill skills/planning-with-files/SKILL.md: allowed-tools names tools Hearth does not have: Read, Write, Edit, Bash, Glob, Grep, WebFetch, WebSearch (a hint for other agents, not a requirement: listed all the same)"));
    assert!(ws
        .warnings
        .iter()
        .any(|w| w.starts_with("skipping skill skills/novafon/SKILL.md: front matter is not valid YAML: line 7")));
}
