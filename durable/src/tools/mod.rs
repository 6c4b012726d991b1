//! Tools the agent can call during a turn.
//!
//! The list is sorted by name and depends only on the session's scope, so it
//! is the same bytes on every request of a session (prompt caching).
//! Workspace paths are relative to the agent's own prefix and checked before
//! any R2 key is built: no `..`, no absolute paths, no backslashes, no control
//! characters, and the whole key (`agents/{id}/` + path) at most 1024 bytes.
//!
//! What `read_file` may read depends on the scope. The owner's main session
//! reads the whole prefix. A shared session (a group, someone else's DM)
//! reads only what its prompt already shows, the root files of
//! [`WorkspaceFile::is_shared_readable`] (SOUL, STYLE, IDENTITY, AGENTS, TOOLS,
//! HEARTBEAT, the guardrail files), and `skills/`; anything else the owner
//! had the agent write (notes, daily notes, cron.json, BOOTSTRAP.md, …) is
//! refused with a message saying so.
//!
//! Root workspace files the agent inherits through the overlay (template,
//! defaults, pinned guardrails) have no key under the agent's prefix:
//! `read_file` then returns the resolved text of this turn, and `edit_file`
//! writes the edited text as the agent's own override.

mod skill;
pub mod transcripts;
pub mod write;

use crate::ports::ObjectStore;
use crate::toolkit::{schema, ToolOutcome, ToolSpec};
use crate::workspace::Layer;
use crate::workspace::Workspace;
use r2_layout::{keys, AgentId, Scope, WorkspaceFile};
use serde_json::Value;

/// The workspace tools a session of `scope` has (the session adds the
/// memory tools and sorts the whole list).
pub fn specs(scope: Scope) -> Vec<ToolSpec> {
    let mut tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file of your workspace (e.g. SOUL.md, TOOLS.md, memory/2026-01-31.md). \
A path ending in '/' (or empty) lists that folder instead."
            .into(),
        input_schema: schema(
            r#"{"type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to your workspace"}},
                "required": ["path"]}"#,
        ),
        native: None,
    }];
    tools.push(skill::spec());
    if scope == Scope::Main {
        tools.extend(write::specs());
        tools.push(transcripts::spec());
    }
    tools
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path must be relative to your workspace (no leading '/')")]
    Absolute,
    #[error("path may not contain '..', '\\\\' or control characters")]
    Traversal,
    #[error("path is too long: with your workspace prefix an R2 key is at most 1024 bytes")]
    TooLong,
    #[error(
        "{0} cannot be read here: in a group or someone else's DM you can read only SOUL.md, STYLE.md, IDENTITY.md, \
AGENTS.md, TOOLS.md, HEARTBEAT.md, the guardrail files and skills/. The rest of your workspace belongs to your \
owner's private session; do not guess its content"
    )]
    NotShared(String),
}

/// Checks a workspace path given by the model and returns it normalised.
pub fn check_path(raw: &str, agent: &AgentId, scope: Scope) -> Result<String, PathError> {
    let path = raw.trim();
    if !keys::workspace_key_fits(agent, path) {
        return Err(PathError::TooLong);
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute);
    }
    if path.contains('\\') || path.chars().any(char::is_control) || path.split('/').any(|s| s == ".." || s == ".") {
        return Err(PathError::Traversal);
    }
    if scope == Scope::Shared && !shared_may_read(path) {
        return Err(PathError::NotShared(path.to_owned()));
    }
    Ok(path.to_owned())
}

/// What a shared session may read: the workspace root (as a filtered
/// listing), the root files its prompt shows, and `skills/`.
pub fn shared_may_read(path: &str) -> bool {
    path.is_empty()
        || WorkspaceFile::from_file_name(path).is_some_and(WorkspaceFile::is_shared_readable)
        || path == "skills"
        || path.starts_with("skills/")
}

pub struct ToolContext<'a, S: ObjectStore> {
    pub store: &'a S,
    pub agent: &'a AgentId,
    pub scope: Scope,
    /// This turn's workspace: its skills, and the inherited files.
    pub workspace: &'a Workspace,
    /// Names of every tool this session has (which skills it may load).
    pub tool_names: &'a [&'a str],
    /// The live session: its id and messages so far.
    pub session_id: &'a str,
    pub live: &'a [r2_layout::Message],
    /// Now (ms): when a write happens, for the workspace history.
    pub now_ms: i64,
    /// Changes kept per file in the history (`HISTORY_KEEP_VERSIONS`).
    pub history_keep: usize,
}

pub async fn run_tool<S: ObjectStore>(ctx: &ToolContext<'_, S>, name: &str, args: &Value) -> ToolOutcome {
    match name {
        "read_file" => read_file(ctx, args).await,
        "load_skill" => skill::load_skill(ctx, args).await,
        // Write tools exist only in main sessions; a shared session asking is refused.
        "write_file" | "edit_file" | "delete_file" if ctx.scope != Scope::Main => {
            ToolOutcome::err("writing the workspace is only allowed in your owner's private session")
        }
        "session_logs" if ctx.scope != Scope::Main => {
            ToolOutcome::err("transcripts are only available in your owner's private session")
        }
        "session_logs" => transcripts::session_logs(ctx, args).await,
        "write_file" => write::write_file(ctx, args).await,
        "edit_file" => write::edit_file(ctx, args).await,
        "delete_file" => write::delete_file(ctx, args).await,
        other => ToolOutcome::err(format!("unknown tool {other:?}")),
    }
}

/// The text of a root workspace file this turn inherited through the overlay
/// (template, defaults, pinned), when the agent has no copy of its own.
pub(crate) fn inherited<'w>(workspace: &'w Workspace, path: &str) -> Option<(&'w str, Layer)> {
    let file = WorkspaceFile::from_file_name(path)?;
    let layer = *workspace.layers.get(&file)?;
    (layer != Layer::Agent).then(|| Some((&**workspace.files.get(&file)?, layer))).flatten()
}

pub(crate) fn layer_name(layer: Layer) -> &'static str {
    match layer {
        Layer::Agent => "your own copy",
        Layer::Template => "the template",
        Layer::Defaults => "the defaults",
        Layer::Pinned => "the pinned template version",
    }
}

/// `read_file` (also Hearth's MCP server's `read_workspace_file`).
pub async fn read_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let Some(raw) = args.get("path").and_then(Value::as_str) else {
        return ToolOutcome::err("missing string argument 'path'");
    };
    let path = match check_path(raw, ctx.agent, ctx.scope) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::err(e.to_string()),
    };
    if path.is_empty() || path.ends_with('/') {
        return list_folder(ctx, &path).await;
    }
    match ctx.store.get(&keys::workspace_key(ctx.agent, &path)).await {
        Ok(Some(obj)) => ToolOutcome::ok(String::from_utf8_lossy(&obj.body).into_owned()),
        Ok(None) => match inherited(ctx.workspace, &path) {
            Some((text, _)) => ToolOutcome::ok(text.to_owned()),
            None => ToolOutcome::err(format!("{path} does not exist")),
        },
        Err(e) => ToolOutcome::err(format!("could not read {path}: {e}")),
    }
}

/// A folder listing; at the root also the files inherited through the
/// overlay. A shared session sees only what it may read.
async fn list_folder<S: ObjectStore>(ctx: &ToolContext<'_, S>, path: &str) -> ToolOutcome {
    let prefix = keys::workspace_key(ctx.agent, path);
    let page = match ctx.store.list(&prefix, Some("/"), None).await {
        Ok(page) => page,
        Err(e) => return ToolOutcome::err(format!("could not list {path:?}: {e}")),
    };
    let visible = |p: &str| ctx.scope == Scope::Main || shared_may_read(p);
    let mut lines: Vec<String> = page
        .prefixes
        .iter()
        .filter_map(|p| p.strip_prefix(&prefix))
        .filter(|p| visible(&format!("{path}{p}")))
        .map(str::to_owned)
        .collect();
    let own: Vec<&str> = page.objects.iter().filter_map(|o| o.key.strip_prefix(&prefix)).collect();
    lines.extend(
        page.objects
            .iter()
            .filter_map(|o| o.key.strip_prefix(&prefix).map(|n| (n, o.size)))
            .filter(|(n, _)| visible(&format!("{path}{n}")))
            .map(|(n, size)| format!("{n} ({size} bytes)")),
    );
    if path.is_empty() {
        let mut inherited_files: Vec<String> = WorkspaceFile::ALL
            .into_iter()
            .filter(|f| !own.contains(&f.file_name()) && visible(f.file_name()))
            .filter_map(|f| {
                inherited(ctx.workspace, f.file_name())
                    .map(|(_, layer)| format!("{} (inherited from {})", f.file_name(), layer_name(layer)))
            })
            .collect();
        lines.append(&mut inherited_files);
    }
    if lines.is_empty() {
        ToolOutcome::ok(format!("{path:?} is empty"))
    } else {
        ToolOutcome::ok(lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemStore;
    use crate::workspace::skills::Skill;
    use futures::executor::block_on;
    use serde_json::json;

    fn main_agent() -> AgentId {
        AgentId::parse("main").unwrap()
    }

    #[test]
    fn traversal_and_privacy() {
        let a = main_agent();
        assert!(check_path("SOUL.md", &a, Scope::Shared).is_ok());
        assert!(check_path("skills/x/SKILL.md", &a, Scope::Shared).is_ok());
        for bad in ["../x", "/etc/passwd", "a/../../b", "a\\b", "a\u{7}b", "./SOUL.md"] {
            assert!(check_path(bad, &a, Scope::Main).is_err(), "{bad:?}");
        }
        for private in [
            "MEMORY.md",
            "USER.md",
            "memory/2026-01-01.md",
            "memory/",
            "memory",
            "notes/x.md",
            "cron.json",
            "sessions/",
            "BOOTSTRAP.md",
        ] {
            assert!(matches!(check_path(private, &a, Scope::Shared), Err(PathError::NotShared(_))), "{private}");
            assert!(check_path(private, &a, Scope::Main).is_ok());
        }
    }

    #[test]
    fn the_length_limit_is_on_the_whole_key() {
        let a = main_agent();
        let room = 1024 - "agents/main/".len();
        assert!(check_path(&"a".repeat(room), &a, Scope::Main).is_ok());
        assert_eq!(check_path(&"a".repeat(room + 1), &a, Scope::Main), Err(PathError::TooLong));
        let long = AgentId::parse(&"x".repeat(64)).unwrap();
        assert_eq!(
            check_path(&"a".repeat(room), &long, Scope::Main),
            Err(PathError::TooLong),
            "a longer agent id leaves less room"
        );
    }

    fn skill(name: &str, tools: &[&str]) -> Skill {
        Skill {
            name: name.into(),
            description: "d".into(),
            allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
            key: format!("skills/{name}/SKILL.md"),
            ..Skill::default()
        }
    }

    fn run(store: &MemStore, ws: &Workspace, scope: Scope, tool: &str, args: Value) -> ToolOutcome {
        let agent = main_agent();
        let names = crate::session::toolbox::tool_names(scope);
        let ctx = ToolContext {
            store,
            agent: &agent,
            scope,
            workspace: ws,
            tool_names: &names,
            session_id: "s",
            live: &[],
            now_ms: 1_000,
            history_keep: 50,
        };
        block_on(run_tool(&ctx, tool, &args))
    }

    #[test]
    fn a_shared_session_reads_only_what_its_prompt_shows() {
        let s = MemStore::default();
        s.put_text("agents/main/SOUL.md", "soul");
        s.put_text("agents/main/notes/secret.md", "the owner's secret");
        s.put_text("agents/main/cron.json", "[]");
        s.put_text("agents/main/BOOTSTRAP.md", "ceremony");
        s.put_text("agents/main/skills/x/SKILL.md", "skill body");
        let ws = Workspace::default();
        let read = |scope, path: &str| run(&s, &ws, scope, "read_file", json!({ "path": path }));
        for path in ["notes/secret.md", "cron.json", "BOOTSTRAP.md", "notes/"] {
            let r = read(Scope::Shared, path);
            assert!(r.is_error && r.text.contains("cannot be read here"), "{path}: {r:?}");
            assert!(!r.text.contains("the owner's secret"), "no content leaks");
            assert!(!read(Scope::Main, path).is_error, "main reads {path}");
        }
        assert_eq!(read(Scope::Shared, "SOUL.md").text, "soul");
        assert_eq!(read(Scope::Shared, "skills/x/SKILL.md").text, "skill body");
        let root = read(Scope::Shared, "");
        assert_eq!(root.text, "skills/\nSOUL.md (4 bytes)", "the shared listing shows only what it may read");
        let root = read(Scope::Main, "");
        assert!(root.text.contains("notes/") && root.text.contains("cron.json"), "{}", root.text);
    }

    #[test]
    fn inherited_files_are_read_and_edited_as_overrides() {
        let s = MemStore::default();
        let mut ws = Workspace::default();
        ws.files.insert(WorkspaceFile::Soul, "Kind and brief.\nFrom the template.".into());
        ws.layers.insert(WorkspaceFile::Soul, Layer::Template);
        ws.files.insert(WorkspaceFile::Guardrails, "Never send money.".into());
        ws.layers.insert(WorkspaceFile::Guardrails, Layer::Pinned);
        let r = run(&s, &ws, Scope::Main, "read_file", json!({"path": "SOUL.md"}));
        assert_eq!(r.text, "Kind and brief.\nFrom the template.");
        assert_eq!(
            run(&s, &ws, Scope::Shared, "read_file", json!({"path": "GUARDRAILS.md"})).text,
            "Never send money."
        );
        let root = run(&s, &ws, Scope::Main, "read_file", json!({"path": ""})).text;
        assert!(root.contains("SOUL.md (inherited from the template)"), "{root}");

        let e = run(
            &s,
            &ws,
            Scope::Main,
            "edit_file",
            json!({"path": "SOUL.md", "old_text": "From the template.", "new_text": "Mine now."}),
        );
        assert!(!e.is_error, "{e:?}");
        let own = block_on(s.get("agents/main/SOUL.md")).unwrap().unwrap();
        assert_eq!(String::from_utf8(own.body).unwrap(), "Kind and brief.\nMine now.");
        // Pinned guardrails stay out of reach, inherited or not.
        let g = run(
            &s,
            &ws,
            Scope::Main,
            "edit_file",
            json!({"path": "GUARDRAILS.md", "old_text": "Never", "new_text": "Always"}),
        );
        assert!(g.is_error && g.text.contains("protected"), "{g:?}");
        assert!(block_on(s.get("agents/main/GUARDRAILS.md")).unwrap().is_none());
        // Nothing of the agent's own to delete.
        ws.layers.insert(WorkspaceFile::Soul, Layer::Defaults);
        block_on(s.delete(&["agents/main/SOUL.md".into()])).unwrap();
        let d = run(&s, &ws, Scope::Main, "delete_file", json!({"path": "SOUL.md"}));
        assert!(d.is_error && d.text.contains("inherited from the defaults"), "{d:?}");
    }

    #[test]
    fn load_skill_loads_every_listed_skill_and_says_which_named_tools_are_missing() {
        let s = MemStore::default();
        s.put_text("skills/notes/SKILL.md", "NOTES BODY");
        s.put_text("skills/journal/SKILL.md", "JOURNAL BODY");
        s.put_text("skills/planner/SKILL.md", "---\ndescription: d\nallowed-tools: Read, Bash\n---\nPLAN BODY");
        let ws = Workspace {
            skills: vec![
                skill("journal", &["write_file"]),
                skill("notes", &["read_file"]),
                skill("planner", &["Read", "Bash", "read_file"]),
            ],
            ..Default::default()
        };
        let load = |scope, name: &str| run(&s, &ws, scope, "load_skill", json!({ "name": name }));
        assert_eq!(load(Scope::Main, "journal").text, "JOURNAL BODY");
        let r = load(Scope::Shared, "journal");
        assert!(!r.is_error && r.text.ends_with("JOURNAL BODY"), "allowed-tools is a hint: {r:?}");
        assert!(
            r.text.starts_with("[This skill's allowed-tools names tools you do not have here: write_file."),
            "{}",
            r.text
        );
        assert_eq!(load(Scope::Shared, "notes").text, "NOTES BODY");
        let claude_code = load(Scope::Main, "planner");
        assert!(
            claude_code.text.contains("you do not have here: Read, Bash.") && claude_code.text.ends_with("PLAN BODY")
        );
        let r = load(Scope::Main, "nope");
        assert!(r.is_error && r.text.contains("available: journal, notes, planner"), "{}", r.text);
    }

    #[test]
    fn load_skill_reads_the_files_beside_a_skill_and_nothing_outside_its_folder() {
        let s = MemStore::default();
        s.put_text("skills/mcp-builder/SKILL.md", "---\ndescription: d\n---\nSee [guide](./reference/guide.md).");
        s.put_text("skills/mcp-builder/reference/guide.md", "# Guide\nGUIDE TEXT");
        s.put_text("skills/mcp-builder/scripts/check.py", "print('CHECK')\n");
        let png = vec![0x89, b'P', b'N', b'G', 0, 0, 0xff];
        block_on(s.put("skills/mcp-builder/logo.png", png, crate::ports::PutOptions::default())).unwrap();
        s.put_text("skills/other/SKILL.md", "OTHER SKILL");
        s.put_text("agents/main/MEMORY.md", "PRIVATE");
        s.put_text("agents/main/skills/mine/SKILL.md", "MINE");
        s.put_text("agents/main/skills/mine/notes.md", "MY NOTES");
        let local = Skill { local: true, key: "agents/main/skills/mine/SKILL.md".into(), ..skill("mine", &[]) };
        let ws = Workspace { skills: vec![skill("mcp-builder", &[]), local], ..Default::default() };
        let load = |scope, args: Value| run(&s, &ws, scope, "load_skill", args);

        // The instructions end with the other files and how to read one.
        let body = load(Scope::Main, json!({"name": "mcp-builder"}));
        assert!(
            body.text.ends_with(
                "[Files beside this SKILL.md: logo.png, reference/guide.md, scripts/check.py. Read one with load_skill {\"name\": \"mcp-builder\", \"file\": \"logo.png\"}.]"
            ),
            "{}",
            body.text
        );
        let file = |scope, f: &str| load(scope, json!({"name": "mcp-builder", "file": f}));
        assert_eq!(file(Scope::Main, "reference/guide.md").text, "# Guide\nGUIDE TEXT");
        assert_eq!(file(Scope::Shared, "./reference/guide.md").text, "# Guide\nGUIDE TEXT", "as the skill links it");
        assert_eq!(file(Scope::Shared, "scripts/check.py").text, "print('CHECK')\n", "a script, as text");
        let png = file(Scope::Main, "logo.png");
        assert!(png.is_error && png.text.contains("not a text file (7 bytes"), "{png:?}");
        let missing = file(Scope::Main, "reference/nope.md");
        assert!(missing.is_error && missing.text.contains("its files: logo.png, reference/guide.md"), "{missing:?}");
        for outside in
            ["../other/SKILL.md", "reference/../../other/SKILL.md", "/agents/main/MEMORY.md", "..\\x", "a//b", "."]
        {
            let r = file(Scope::Main, outside);
            assert!(r.is_error && r.text.contains("inside the skill's folder"), "{outside}: {r:?}");
            assert!(!r.text.contains("OTHER SKILL") && !r.text.contains("PRIVATE"), "{outside}");
        }
        assert!(file(Scope::Main, "  ").text.contains("'file' is empty"));
        assert!(load(Scope::Main, json!({"name": "mcp-builder", "file": 3})).is_error);
        // An agent's own skill: its own folder under agents/{id}/skills/.
        assert_eq!(load(Scope::Main, json!({"name": "mine", "file": "notes.md"})).text, "MY NOTES");
        assert!(load(Scope::Main, json!({"name": "mine", "file": "../../MEMORY.md"})).is_error);

        // A long file comes in parts, like a long skill.
        let long: String = (0..3_000).map(|i| format!("line {i} of the reference\n")).collect();
        s.put_text("skills/mcp-builder/reference/long.md", &long);
        let first = file(Scope::Main, "reference/long.md");
        assert!(first.text.starts_with(
            "[File reference/long.md of skill mcp-builder, part 1 of 3. Call load_skill with {\"name\": \"mcp-builder\", \"file\": \"reference/long.md\", \"part\": 2} for the next part.]"
        ), "{}", &first.text[..200]);
        let joined: String = (1..=3)
            .map(|p| {
                let r = load(Scope::Main, json!({"name": "mcp-builder", "file": "reference/long.md", "part": p}));
                r.text.split_once("\n\n").unwrap().1.to_owned()
            })
            .collect();
        assert_eq!(joined, long);
    }

    #[test]
    fn a_long_skill_loads_in_parts_without_its_front_matter() {
        let s = MemStore::default();
        let body: String = (0..2_000).map(|i| format!("Step {i}: do the thing carefully.\n")).collect();
        s.put_text("skills/big/SKILL.md", &format!("---\nname: big\ndescription: FRONT-MATTER\n---\n\n{body}"));
        let ws = Workspace { skills: vec![skill("big", &[])], ..Default::default() };
        let load = |args: Value| run(&s, &ws, Scope::Main, "load_skill", args);
        let mut joined = String::new();
        for part in 1..=3 {
            let r = load(json!({ "name": "big", "part": part }));
            assert!(!r.is_error && r.text.chars().count() <= crate::toolkit::MAX_RESULT_CHARS, "{part}");
            let (header, text) = r.text.split_once("\n\n").unwrap();
            let want = if part < 3 {
                format!("[Skill big, part {part} of 3. Call load_skill with {{\"name\": \"big\", \"part\": {}}} for the next part.]", part + 1)
            } else {
                "[Skill big, part 3 of 3: the last.]".to_owned()
            };
            assert_eq!(header, want);
            joined.push_str(text);
        }
        assert_eq!(joined, body.trim(), "the parts are the whole body, in order");
        assert!(!joined.contains("FRONT-MATTER"));
        assert_eq!(load(json!({ "name": "big" })).text, load(json!({ "name": "big", "part": 1 })).text);
        let r = load(json!({ "name": "big", "part": 4 }));
        assert_eq!((r.is_error, r.text.as_str()), (true, "skill big has 3 part(s); ask for part 1 to 3"));
        assert!(load(json!({ "name": "big", "part": 0 })).is_error);
        assert!(load(json!({ "name": "big", "part": "2" })).is_error);
    }
}
