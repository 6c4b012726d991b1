use super::*;
use hearth_schedule::Checklist;
use WorkspaceFile as F;

fn real(path: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/workspaces");
    std::fs::read_to_string(dir.join(path)).unwrap()
}

fn shown(file: F, text: &str) -> String {
    shown_text(file, text).text.into_owned()
}

#[test]
fn template_hints_are_stripped_from_any_file() {
    let user = "# About your human\n\n_(Edit this file: who you are.)_\n\n- **Name:** _(your name)_\n- **Time zone:** Europe/Paris\n* *(e.g. metric)*";
    assert_eq!(strip_fill_ins(user, false), "# About your human\n\n- **Time zone:** Europe/Paris");
    // Parentheses a person wrote stay, and text without hints is borrowed.
    let prose = "I like tea (green).\n- Note: (see below)\n(an aside)\n- **Plan:** tea (green), then bed";
    assert!(matches!(strip_fill_ins(prose, false), Cow::Borrowed(_)));
    assert!(matches!(strip_fill_ins("## Hobbies\n\n(mostly chess)\n\nand tennis", false), Cow::Borrowed(_)));
}

#[test]
fn fill_in_forms_of_other_agents_are_hints() {
    for (hint, why) in [
        ("- **Name**: (your name)", "speaks to the reader"),
        ("- **Timezone**: (your timezone, e.g., UTC+8)", "example"),
        ("- **Tools You Use**: (IDEs, languages, frameworks)", "a bold key's field"),
        ("- Communication style: (casual/formal)", "alternatives"),
        ("- Name: (optional)", "optional"),
        ("- **Pronouns:** _(optional)_", "emphasis"),
        ("_(pick something you like)_", "emphasis alone"),
        ("- **Name:**", "an empty field"),
        ("- ", "an empty bullet"),
        ("- Avatar: <path>", "angle placeholder"),
        ("(Add your notes here)", "instruction"),
    ] {
        assert_eq!(strip_fill_ins(&format!("Kept text.\n{hint}"), false), "Kept text.", "{hint}: {why}");
    }
    for kept in [
        "- Note: (see below)",
        "**Note:** (see below)",
        "- Avatar: <https://example.com/a.png>",
        "- **Name:** Kate (Katie to friends)",
        "- [ ] Casual",
        "(an aside)",
        "- Pets: two cats",
        "Call me at 9 (not earlier).",
    ] {
        assert_eq!(strip_fill_ins(&format!("Kept text.\n{kept}"), false), format!("Kept text.\n{kept}"), "{kept}");
    }
}

#[test]
fn an_empty_field_with_a_filled_value_under_it_stays() {
    let filled = "- **Name:**\n  Kate\n- **Vibe:**\n  _(how do you come across?)_\n- **Emoji:** 🐙";
    assert_eq!(strip_fill_ins(filled, false), "- **Name:**\n  Kate\n- **Emoji:** 🐙");
    let nested = "- **Pets:**\n  - Miso, a cat\n- **Notes:**\n  - \n";
    assert_eq!(strip_fill_ins(nested, false), "- **Pets:**\n  - Miso, a cat");
}

#[test]
fn code_and_comments_are_never_judged() {
    let text = "Example:\n```bash\nopenclaw agents set-identity --name \"<name>\"\n- Name: (optional)\n```\n<!--\n- **Name:**\n-->";
    assert!(matches!(strip_fill_ins(text, false), Cow::Borrowed(_)));
}

#[test]
fn checkboxes_are_a_form_in_user_md_and_tasks_in_heartbeat_md() {
    let form = "## Style\n\n- [ ] Casual\n- [ ] Professional\n\n## Length\n\n- [x] Brief\n- [ ] Detailed\n";
    assert_eq!(
        shown(F::User, form),
        "## Length\n\n- [x] Brief\n- [ ] Detailed",
        "an answered form stays, an emptied section goes"
    );
    let tasks = "# Tasks\n\n- [ ] Check the mail\n- [ ] Water the plants\n";
    assert_eq!(shown(F::Heartbeat, tasks), tasks);
    assert_eq!(Checklist::of(&shown(F::Heartbeat, tasks)).open_items, 2);
    assert_eq!(shown(F::Agents, tasks), tasks, "only USER.md is a form");
}

#[test]
fn front_matter_is_never_shown_and_guardrails_keep_their_hints() {
    let s = shown_text(F::Soul, "---\nsummary: \"x\"\nread_when:\n  - always\n---\n\n# Soul\nKind.");
    assert_eq!((s.text.as_ref(), s.trimmed), ("\n# Soul\nKind.", true));
    let g = shown_text(F::Guardrails, "---\ntitle: G\n---\nNever (e.g. ever) send money.\n- Name: (optional)");
    assert_eq!(g.text, "Never (e.g. ever) send money.\n- Name: (optional)");
    assert!(!shown_text(F::Soul, "# Soul\nKind.").trimmed);
}

/// Every file of the OpenClaw, nanobot and PicoClaw templates
/// (`tests/fixtures/real-world/workspaces/`, SOURCES.md there).
#[test]
fn real_templates_show_no_front_matter_and_no_fill_ins() {
    let files: &[(&str, F)] = &[
        ("openclaw-2026.3.11/AGENTS.md", F::Agents),
        ("openclaw-2026.3.11/BOOTSTRAP.md", F::Bootstrap),
        ("openclaw-2026.3.11/HEARTBEAT.md", F::Heartbeat),
        ("openclaw-2026.3.11/IDENTITY.md", F::Identity),
        ("openclaw-2026.3.11/SOUL.md", F::Soul),
        ("openclaw-2026.3.11/TOOLS.md", F::Tools),
        ("openclaw-2026.3.11/USER.md", F::User),
        ("openclaw-2026.9.6/AGENTS.md", F::Agents),
        ("openclaw-2026.9.6/BOOTSTRAP.md", F::Bootstrap),
        ("openclaw-2026.9.6/HEARTBEAT.md", F::Heartbeat),
        ("openclaw-2026.9.6/IDENTITY.md", F::Identity),
        ("openclaw-2026.9.6/SOUL.md", F::Soul),
        ("openclaw-2026.9.6/TOOLS.md", F::Tools),
        ("openclaw-2026.9.6/USER.md", F::User),
        ("nanobot/AGENTS.md", F::Agents),
        ("nanobot/HEARTBEAT.md", F::Heartbeat),
        ("nanobot/SOUL.md", F::Soul),
        ("nanobot/USER.md", F::User),
        ("nanobot/memory/MEMORY.md", F::Memory),
        ("picoclaw/AGENT.md", F::Agents),
        ("picoclaw/SOUL.md", F::Soul),
        ("picoclaw/USER.md", F::User),
        ("picoclaw/memory/MEMORY.md", F::Memory),
    ];
    let fill_ins = [
        "read_when:",
        "summary:",
        "title:",
        "(your name)",
        "(your timezone",
        "(preferred language)",
        "(your role",
        "(what you're working on)",
        "(IDEs, languages, frameworks)",
        "(Any specific instructions",
        "(Important facts about",
        "(User preferences learned over time)",
        "(Things to remember)",
        "(Information about ongoing projects)",
        "(casual/formal)",
        "(optional)",
        "_(pick something you like)_",
        "_(What do they care about?",
        "- **Name:**\n",
        "- **Timezone:**\n",
        "- [ ] Casual",
        "- [ ] Beginner",
        "\n- \n",
    ];
    for (path, file) in files {
        let text = shown(*file, &real(path));
        for f in fill_ins {
            assert!(!text.contains(f), "{path} shows {f:?}:\n{text}");
        }
        assert!(!text.starts_with("---"), "{path}");
    }
    // What a person needs stays.
    let kept = [
        ("openclaw-2026.3.11/IDENTITY.md", "This isn't just metadata."),
        ("openclaw-2026.3.11/USER.md", "_Learn about the person you're helping."),
        ("openclaw-2026.9.6/SOUL.md", "**Be genuinely helpful, not performatively helpful.**"),
        ("nanobot/USER.md", "Information about the user to help personalize interactions."),
        ("picoclaw/AGENT.md", "You are Pico, the default assistant for this workspace."),
        ("picoclaw/USER.md", "- What the user wants to learn from AI"),
        ("openclaw-2026.9.6/BOOTSTRAP.md", "--name \"<name>\""),
    ];
    for (path, want) in kept {
        let file = files.iter().find(|(p, _)| *p == path).unwrap().1;
        assert!(shown(file, &real(path)).contains(want), "{path} lost {want:?}");
    }
}

#[test]
fn real_heartbeat_templates_with_no_task_are_not_meaningful() {
    for path in ["openclaw-2026.3.11/HEARTBEAT.md", "nanobot/HEARTBEAT.md"] {
        let c = Checklist::of(&shown(F::Heartbeat, &real(path)));
        assert!(!c.meaningful, "{path}: {c:?}");
        assert!(Checklist::of(&real(path)).meaningful || path.starts_with("nanobot"), "the raw file looked meaningful");
    }
    // 2026.9's retirement notice is prose: meaningful, but no open item.
    let retired = Checklist::of(&shown(F::Heartbeat, &real("openclaw-2026.9.6/HEARTBEAT.md")));
    assert_eq!((retired.meaningful, retired.open_items), (true, 0));
}
