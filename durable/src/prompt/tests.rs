//! The workspace loader and the prompt over the fixture bucket of
//! `r2-layout/fixtures/bucket/` (its paths are R2 keys), loaded into the
//! in-memory store: order per scope and mode, the HEARTBEAT rule, daily
//! notes by time zone, skills, overlay layers, budgets and R2 operations.

use super::*;
use crate::ports::{ListPage, PutOptions, StoredObject};
use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use crate::protocol::pins::Pins;
use crate::settings::overlay::PlaceholderValues;
use crate::testing::MemStore;
use crate::text::sha256_hex;
use crate::workspace::listing::{AGENT_FOLDER_TTL_MS, SHARED_LAYER_TTL_MS};
use crate::workspace::{load_workspace, Layer, OverlayInputs, WorkspaceCache};
use futures::executor::block_on;
use r2_layout::AgentId;
use std::cell::Cell;
use std::path::Path;
use WorkspaceFile as F;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../r2-layout/fixtures/bucket");
const TEMPLATE: &str = "concierge";
/// 2026-03-15 03:00 UTC: still 2026-03-14 in New York.
const NOW: i64 = 1_773_543_600_000;

fn fixture_bucket() -> MemStore {
    fn walk(dir: &Path, root: &Path, store: &MemStore) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, store);
            } else {
                let key = path.strip_prefix(root).unwrap().to_str().unwrap().replace('\\', "/");
                store.put_text(&key, &std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let store = MemStore::default();
    walk(Path::new(FIXTURE), Path::new(FIXTURE), &store);
    store
}

fn pinned_v1() -> Pins {
    let hash = "49b6ec64bf1c81a6b2913293e5ef9499d7f43785908ff3db3badf47cdd0636dd";
    Pins { template: Some(TEMPLATE.into()), files: [("GUARDRAILS.md".to_owned(), hash.to_owned())].into() }
}

struct Load<'a> {
    agent: &'a str,
    scope: Scope,
    template: Option<&'a str>,
    timezone: &'a str,
    now: i64,
}

impl Load<'_> {
    fn ada(scope: Scope) -> Load<'static> {
        Load { agent: "ada", scope, template: None, timezone: "UTC", now: NOW }
    }

    fn run<S: ObjectStore>(&self, store: &S, cache: &mut WorkspaceCache) -> Workspace {
        let agent = AgentId::parse(self.agent).unwrap();
        let (today, yesterday) = crate::clock::today_and_yesterday(self.now, self.timezone);
        let pins = if self.template.is_some() { pinned_v1() } else { Pins::default() };
        let values = PlaceholderValues { human_name: Some("Ines".into()), ..Default::default() };
        let overlay = OverlayInputs { template: self.template, pins: &pins, values: &values };
        let tools = crate::session::toolbox::all_tool_names();
        block_on(load_workspace(store, &agent, self.scope, &today, &yesterday, self.now, &overlay, &tools, cache))
            .unwrap()
    }

    fn prompt(&self, ws: &Workspace) -> String {
        let key = format!("agent:{}:main", self.agent);
        build_system_prompt(
            ws,
            &RuntimeInfo {
                agent: self.agent,
                session_key: &key,
                channel: "telegram",
                model: "m",
                timezone: self.timezone,
                scope: self.scope,
            },
        )
    }
}

fn titles(prompt: &str) -> Vec<&str> {
    prompt.lines().filter_map(|l| l.strip_prefix("## ")).collect()
}

/// The body of the section titled `title`.
fn section<'a>(prompt: &'a str, title: &str) -> &'a str {
    let start = prompt
        .find(&format!("## {title}\n\n"))
        .map(|i| i + title.len() + 5)
        .unwrap_or_else(|| panic!("no section {title}"));
    let rest = &prompt[start..];
    rest.find("\n\n## ").map_or(rest, |end| &rest[..end])
}

#[test]
fn the_fixture_pins_are_content_addressed() {
    let store = fixture_bucket();
    let objects = store.objects.borrow();
    let versions: Vec<_> = objects.keys().filter(|k| k.contains("/workspace-versions/")).collect();
    assert!(!versions.is_empty());
    for key in versions {
        let hash = key.rsplit_once("@sha256:").unwrap().1;
        assert_eq!(sha256_hex(&objects[key].body), hash, "{key}");
    }
    let pinned = pinned_v1();
    assert!(objects.contains_key(&format!(
        "_catalog/concierge/workspace-versions/GUARDRAILS.md@sha256:{}",
        pinned.files["GUARDRAILS.md"]
    )));
}

#[test]
fn identity_loses_its_template_hints_and_keeps_what_a_person_wrote() {
    let mut ws = Workspace::default();
    let identity = "# Identity\n- **Name:** Kate\n- **Avatar:** _(pick one)_\nNote: (aside)\n_(Edit this file.)_";
    ws.files.insert(F::Identity, identity.into());
    assert_eq!(file_body(&ws, F::Identity).unwrap(), "name=Kate\n\n# Identity\n- **Name:** Kate\nNote: (aside)");
}

#[test]
fn a_main_session_gets_every_section_in_order() {
    let store = fixture_bucket();
    let load = Load::ada(Scope::Main);
    let ws = load.run(&store, &mut WorkspaceCache::default());
    let prompt = load.prompt(&ws);
    assert_eq!(
        titles(&prompt),
        [
            "Core",
            "Guardrails",
            "Platform Rules",
            "Your Soul",
            "Communication Style",
            "Your Identity",
            "About Your Human",
            "Operating Instructions",
            "Long-Term Memory",
            "Recent Context > Yesterday",
            "Recent Context > Today",
            "Tool Notes",
            "Heartbeats",
            "Skills (Mandatory Scan)",
            "Runtime",
        ]
    );
    assert!(section(&prompt, "Your Identity")
        .starts_with("name=Ada, creature=owl, vibe=patient, precise, emoji=🦉\n\n# Identity"));
    assert_eq!(
        section(&prompt, "Communication Style"),
        "# Style\n\nAda writes in short sentences, British spelling, no emoji."
    );
    assert_eq!(ws.layers[&F::Style], Layer::Agent);
    assert!(!prompt.contains("a URL to a picture"), "IDENTITY placeholders are skipped");
    let user = section(&prompt, "About Your Human");
    assert!(user.contains("PRIVATE-USER") && user.contains("- **Name:** Grace"));
    assert!(!user.contains("she/her"), "an unfilled hint never reaches the prompt: {user}");
    assert_eq!(section(&prompt, "Guardrails"), "Never move money. (default guardrails)", "no template: the defaults");
    assert_eq!(section(&prompt, "Heartbeats"), "# Heartbeat\n\n- [ ] Remind Grace to water the tomatoes at 19:00");
    assert!(section(&prompt, "Runtime").contains("agent=ada"));
    assert!(prompt.ends_with(section(&prompt, "Runtime")), "runtime last");
    assert_eq!(ws.layers[&F::Soul], Layer::Agent);
    assert_eq!(ws.layers[&F::Guardrails], Layer::Defaults);
    assert!(!ws.bootstrap(), "the defaults' BOOTSTRAP.md is never inherited");
}

#[test]
fn daily_notes_are_today_and_yesterday_in_the_agents_time_zone() {
    let store = fixture_bucket();
    let mut load = Load::ada(Scope::Main);
    let utc = load.prompt(&load.run(&store, &mut WorkspaceCache::default()));
    assert_eq!(section(&utc, "Recent Context > Today"), "PRIVATE-NOTE-15: first leaves.");
    assert_eq!(section(&utc, "Recent Context > Yesterday"), "PRIVATE-NOTE-14: tomatoes sprouted.");
    load.timezone = "America/New_York";
    let ny = load.prompt(&load.run(&store, &mut WorkspaceCache::default()));
    assert_eq!(
        section(&ny, "Recent Context > Today"),
        "PRIVATE-NOTE-14: tomatoes sprouted.",
        "23:00 on the 14th in New York"
    );
    assert_eq!(section(&ny, "Recent Context > Yesterday"), "PRIVATE-NOTE-13: planted basil.");
    assert!(!ny.contains("PRIVATE-NOTE-15"));
}

#[test]
fn a_shared_session_gets_no_private_file_and_only_its_skills() {
    let store = fixture_bucket();
    let load = Load::ada(Scope::Shared);
    let prompt = load.prompt(&load.run(&store, &mut WorkspaceCache::default()));
    assert_eq!(
        titles(&prompt),
        [
            "Core",
            "Guardrails",
            "Platform Rules",
            "Your Soul",
            "Communication Style",
            "Your Identity",
            "Operating Instructions",
            "Tool Notes",
            "Heartbeats",
            "Skills (Mandatory Scan)",
            "Runtime"
        ]
    );
    assert!(section(&prompt, "Communication Style").contains("British spelling"), "a group hears the same voice");
    for private in ["PRIVATE-USER", "PRIVATE-MEMORY", "PRIVATE-NOTE", "PRIVATE-GARDEN"] {
        assert!(!prompt.contains(private), "{private} leaked");
    }
    let names: Vec<&str> =
        prompt.match_indices("<name>").map(|(i, _)| &prompt[i + 6..][..prompt[i + 6..].find('<').unwrap()]).collect();
    assert_eq!(
        names,
        ["journal", "notes", "summarize"],
        "allowed-tools is a hint: journal names write_file, which a shared session lacks, and is listed anyway"
    );
}

#[test]
fn skills_local_shadow_global_and_unrunnable_ones_are_left_out_once() {
    let store = fixture_bucket();
    let load = Load::ada(Scope::Main);
    let mut cache = WorkspaceCache::default();
    let ws = load.run(&store, &mut cache);
    let listed: Vec<(&str, bool)> = ws.skills.iter().map(|s| (s.name.as_str(), s.local)).collect();
    assert_eq!(listed, [("journal", true), ("notes", true), ("summarize", false)]);
    let prompt = load.prompt(&ws);
    let skills = section(&prompt, "Skills (Mandatory Scan)");
    assert!(skills.contains("Ada's own way of keeping notes") && !skills.contains("The global way"));
    assert!(skills.find("<name>journal</name>").unwrap() < skills.find("<name>notes</name>").unwrap(), "alphabetical");
    assert_eq!(ws.warnings.len(), 2, "{:?}", ws.warnings);
    assert!(ws.warnings.iter().any(|w| w.contains("skills/broken/SKILL.md")));
    assert!(ws.warnings.iter().any(|w| w.contains("skills/web-research/SKILL.md") && w.contains("web search")));
    // Parsed once per version: the next turn does not warn again.
    let again = Load { now: NOW + 10 * 60_000, ..Load::ada(Scope::Main) }.run(&store, &mut cache);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.skills.len(), 3);
}

#[test]
fn a_commissioning_agent_on_a_template_gets_the_bootstrap_order() {
    let store = fixture_bucket();
    let load = Load { agent: "bea", scope: Scope::Main, template: Some(TEMPLATE), timezone: "UTC", now: NOW };
    let ws = load.run(&store, &mut WorkspaceCache::default());
    assert!(ws.bootstrap());
    let prompt = load.prompt(&ws);
    assert_eq!(
        titles(&prompt),
        [
            "Core",
            "Guardrails",
            "Platform Rules",
            "Commissioning (BOOTSTRAP.md)",
            "Your Soul",
            "Communication Style",
            "Your Identity",
            "About Your Human",
            "Runtime"
        ]
    );
    assert!(
        section(&prompt, "Commissioning (BOOTSTRAP.md)").starts_with("# Commissioning"),
        "the agent's own, not the template's"
    );
    assert!(!prompt.contains("CEREMONY"));
    // Overlay: SOUL and IDENTITY from the template with placeholders, the
    // guardrails pinned (not the live v2), PLATFORM from the defaults.
    assert_eq!(section(&prompt, "Your Soul"), "# Soul\n\nConci is a concierge: warm, brief, discreet.");
    assert_eq!(
        section(&prompt, "Communication Style"),
        "# Style\n\nConci speaks formally and calls Ines by name.",
        "the template's, placeholders filled, its unfilled hint left out"
    );
    assert!(section(&prompt, "Your Identity").contains("- **Serves:** Ines"));
    assert_eq!(section(&prompt, "Guardrails"), "Never share the owner's secrets. (pinned v1)");
    assert!(!prompt.contains("live v2"));
    let layers: Vec<(F, Layer)> = [F::Bootstrap, F::Soul, F::Style, F::Identity, F::User, F::Guardrails, F::Platform]
        .iter()
        .map(|f| (*f, ws.layers[f]))
        .collect();
    assert_eq!(
        layers,
        [
            (F::Bootstrap, Layer::Agent),
            (F::Soul, Layer::Template),
            (F::Style, Layer::Template),
            (F::Identity, Layer::Template),
            (F::User, Layer::Agent),
            (F::Guardrails, Layer::Pinned),
            (F::Platform, Layer::Defaults),
        ]
    );
}

#[test]
fn an_empty_heartbeat_and_an_inherited_bootstrap_are_left_out() {
    let store = fixture_bucket();
    let load = Load { agent: "cal", scope: Scope::Main, template: Some(TEMPLATE), timezone: "UTC", now: NOW };
    let ws = load.run(&store, &mut WorkspaceCache::default());
    assert!(!ws.bootstrap(), "template and defaults ship a BOOTSTRAP.md; cal has none of its own");
    assert!(ws.files.contains_key(&F::Heartbeat));
    let prompt = load.prompt(&ws);
    assert_eq!(
        titles(&prompt),
        [
            "Core",
            "Guardrails",
            "Platform Rules",
            "Your Soul",
            "Communication Style",
            "Your Identity",
            "Tool Notes",
            "Skills (Mandatory Scan)",
            "Runtime"
        ]
    );
    assert!(!prompt.contains("Heartbeats"), "headers, comments and rules only: not meaningful");
}

#[test]
fn the_60k_budget_counts_workspace_files_and_always_keeps_skills_and_runtime() {
    let big = |tag: &str| format!("{tag} {}", "lorem ipsum dolor sit amet. ".repeat(500)); // 14,000+ chars
    let mut ws = Workspace::default();
    for f in [F::Guardrails, F::Soul, F::Style, F::Identity, F::User, F::Agents, F::Memory, F::Tools, F::Heartbeat] {
        ws.files.insert(f, big(f.file_name()).into());
    }
    ws.today = Some(big("TODAY").into());
    ws.yesterday = Some(big("YESTERDAY").into());
    ws.skills = vec![
        crate::workspace::skills::parse_skill(
            "notes",
            "skills/notes/SKILL.md",
            false,
            "---\ndescription: Keep notes.\n---\n",
        )
        .unwrap()
        .0,
    ];
    let prompt = Load::ada(Scope::Main).prompt(&ws);
    // Five files of 12,000 characters spend the 60,000 (STYLE.md counts
    // like the others): AGENTS.md, MEMORY.md, the notes, TOOLS.md and
    // HEARTBEAT.md are left out.
    let budgeted = ["Guardrails", "Your Soul", "Communication Style", "Your Identity", "About Your Human"];
    assert_eq!(
        titles(&prompt),
        [&["Core"][..], &budgeted, &["Skills (Mandatory Scan)", "Runtime"]].concat(),
        "files past the budget are left out whole"
    );
    let total: usize = budgeted.iter().map(|t| section(&prompt, t).chars().count()).sum();
    assert_eq!(total, MAX_TOTAL_CHARS);
    for t in &budgeted {
        assert_eq!(section(&prompt, t).chars().count(), MAX_FILE_CHARS, "{t}");
        assert!(section(&prompt, t).ends_with("[truncated]"));
    }
    assert!(section(&prompt, "Skills (Mandatory Scan)").ends_with("</available_skills>"), "whole, not a stub");
    assert!(section(&prompt, "Skills (Mandatory Scan)").contains("<name>notes</name>"));
    assert!(section(&prompt, "Runtime").starts_with("agent=ada | session=agent:ada:main"));
    assert!(!section(&prompt, "Runtime").contains("[truncated]"));
}

#[test]
fn truncation_respects_utf8_and_marks() {
    let s = "é".repeat(20);
    let t = truncate_chars(&s, 15);
    assert_eq!(t.chars().count(), 15);
    assert!(t.ends_with("[truncated]"));
    assert_eq!(truncate_chars("short", 15), "short");
}

/// A store that records how many listings and reads are in flight at once:
/// every call yields once before it completes, so calls made together
/// overlap and calls made one after another do not.
#[derive(Default)]
struct InFlight {
    inner: MemStore,
    lists_now: Cell<u32>,
    max_lists: Cell<u32>,
}

impl ObjectStore for InFlight {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        crate::testing::YieldOnce::default().await;
        self.inner.get(key).await
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        self.inner.head(key).await
    }
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        self.inner.put(key, body, opts).await
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        self.inner.delete(keys).await
    }
    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        self.lists_now.set(self.lists_now.get() + 1);
        self.max_lists.set(self.max_lists.get().max(self.lists_now.get()));
        crate::testing::YieldOnce::default().await;
        self.lists_now.set(self.lists_now.get() - 1);
        self.inner.list(prefix, delimiter, cursor).await
    }
}

#[test]
fn r2_operations_per_turn_by_listing_age() {
    let store = InFlight { inner: fixture_bucket(), ..Default::default() };
    let mut cache = WorkspaceCache::default();
    let turn = |cache: &mut WorkspaceCache, now: i64| {
        store.inner.ops.borrow_mut().clear();
        store.max_lists.set(0);
        let ws = Load { now, ..Load::ada(Scope::Main) }.run(&store, cache);
        let lists: Vec<String> = store.inner.ops.borrow().iter().filter(|o| o.starts_with("list ")).cloned().collect();
        (ws.r2_ops, lists, store.max_lists.get())
    };
    let (first, lists, together) = turn(&mut cache, NOW);
    assert_eq!(lists.len(), 5, "agent root, defaults, own skills, global skills, daily notes: {lists:?}");
    assert_eq!(together, 5, "all five listings in one round trip");
    assert!(first > 5, "and the files: {first}");

    let (ops, lists, _) = turn(&mut cache, NOW + 30_000);
    assert_eq!((ops, lists), (1, vec!["list agents/ada/".to_owned()]), "steady state: one listing, nothing downloaded");

    // Past the agent-folder TTL: the notes and own skills are listed again,
    // together with the root; shared layers are still fresh.
    let (ops, lists, together) = turn(&mut cache, NOW + AGENT_FOLDER_TTL_MS + 1);
    assert_eq!(ops, 3, "{lists:?}");
    assert_eq!(together, 3);
    // Past the shared-layer TTL: all five, still one round trip, no downloads.
    let (ops, _, together) = turn(&mut cache, NOW + SHARED_LAYER_TTL_MS + 2);
    assert_eq!((ops, together), (5, 5));

    // An outside edit of a root file is seen on the next turn (one read more).
    store.inner.put_text("agents/ada/SOUL.md", "A new soul.");
    let (ops, ..) = turn(&mut cache, NOW + SHARED_LAYER_TTL_MS + 3);
    assert_eq!(ops, 2);
    let ws = Load { now: NOW + SHARED_LAYER_TTL_MS + 4, ..Load::ada(Scope::Main) }.run(&store, &mut cache);
    assert_eq!(&*ws.files[&F::Soul], "A new soul.");
}

#[test]
fn the_commissioning_style_stays_out_until_the_ceremony_fills_it() {
    let store = MemStore::default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../r2-layout/commissioning");
    for name in ["BOOTSTRAP.md", "STYLE.md"] {
        store.put_text(&format!("agents/main/{name}"), &std::fs::read_to_string(dir.join(name)).unwrap());
    }
    let load = Load { agent: "main", ..Load::ada(Scope::Main) };
    let ws = load.run(&store, &mut WorkspaceCache::default());
    assert!(ws.bootstrap() && ws.files.contains_key(&F::Style));
    let prompt = load.prompt(&ws);
    assert!(!titles(&prompt).contains(&"Communication Style"), "only hints so far:\n{prompt}");
    assert!(section(&prompt, "Commissioning (BOOTSTRAP.md)").contains("STYLE.md"), "the ceremony fills it in");
    store
        .put_text("agents/main/STYLE.md", "# Style\n\n- **Tone:** crisp and formal\n- **Words:** _(e.g. no jargon)_\n");
    let prompt = load.prompt(&load.run(&store, &mut WorkspaceCache::default()));
    assert_eq!(section(&prompt, "Communication Style"), "# Style\n\n- **Tone:** crisp and formal");
    assert_eq!(titles(&prompt), ["Core", "Commissioning (BOOTSTRAP.md)", "Communication Style", "Runtime"]);
}

#[test]
fn the_starter_workspace_renders_without_its_fill_in_hints() {
    let store = MemStore::default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../r2-layout/starter");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        store.put_text(&format!("agents/main/{name}"), &std::fs::read_to_string(&path).unwrap());
    }
    let load = Load { agent: "main", ..Load::ada(Scope::Main) };
    let prompt = load.prompt(&load.run(&store, &mut WorkspaceCache::default()));
    assert!(!prompt.contains("_("), "a hint reached the prompt:\n{prompt}");
    assert!(
        !prompt.contains("## About Your Human") && !prompt.contains("## Long-Term Memory"),
        "unfilled files are left out"
    );
    assert!(!prompt.contains("## Heartbeats"), "the starter HEARTBEAT.md is only a comment");
    assert!(section(&prompt, "Your Identity").starts_with("name=Hearth"));
    assert!(titles(&prompt).contains(&"Your Soul") && titles(&prompt).contains(&"Tool Notes"));
    assert!(section(&prompt, "Communication Style").contains("Lead with the answer"), "the starter has a voice");
    assert!(!load.run(&store, &mut WorkspaceCache::default()).bootstrap(), "the starter is not in commissioning mode");
}

mod real_world;
