//! The workspace as the owner edits it (the console's workspace page, seed
//! 001's operator view): each layer's files, the agent's tree with where each
//! file comes from, one file of a layer, and the write rules.
//!
//! Layers and their prefixes:
//! - agent: `agents/{id}/` (its own files; `sessions/` archives and dotted or
//!   `_` names are not workspace files and are left out);
//! - template: `_catalog/{template}/workspace/`;
//! - defaults: `_catalog/defaults/workspace/`.
//!
//! The agent's tree is every file of its own prefix plus each root file the
//! overlay would resolve from the template or the defaults ([`agent_tree`],
//! the same decision as [`super::resolve::resolve_file`]): a guardrail file is
//! `pinned` (served from the version store) unless the agent overrides it,
//! and carries `updateAvailable` when the template moved on. A write of a
//! guardrail file into the agent layer is refused unless the caller says it
//! means it ([`check_agent_write`]); the way to take a template's new
//! guardrails is to accept the pin.

use super::resolve::{Layer, DEFAULTS_PREFIX};
use super::skills;
use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use crate::protocol::agent::PinStatusReply;
use crate::storage::list_all;
use r2_layout::{keys, AgentId, WorkspaceFile};
use serde::Serialize;

/// Longest path the API takes (R2 keys are at most 1024 bytes).
pub const MAX_PATH: usize = 512;

/// Why a workspace request is refused; each names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("bad path {0:?}: {1}")]
    BadPath(String, &'static str),
    #[error("bad template name {0:?}: {1}")]
    BadTemplate(String, String),
    #[error(
        "{0} is a pinned guardrail file: its template version reaches the agent through Review and Accept \
         (POST /api/agents/{{id}}/pins/{0}/accept); to override it for this agent anyway, add ?accept=override"
    )]
    Pinned(String),
    /// A write the workspace history refused, with its reason.
    #[error("{0}")]
    Refused(String),
    #[error("{0} is not in this layer")]
    NotFound(String),
    #[error("storage: {0}")]
    Storage(String),
}

impl AdminError {
    /// The HTTP status a caller should see.
    pub fn status(&self) -> u16 {
        match self {
            AdminError::BadPath(..) | AdminError::BadTemplate(..) | AdminError::Refused(_) => 400,
            AdminError::Pinned(_) => 403,
            AdminError::NotFound(_) => 404,
            AdminError::Storage(_) => 503,
        }
    }
}

impl From<StorageError> for AdminError {
    fn from(e: StorageError) -> Self {
        AdminError::Storage(e.to_string())
    }
}

/// One of the three layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerRef {
    Agent(AgentId),
    Template(String),
    Defaults,
}

impl LayerRef {
    /// A template layer, its name checked.
    pub fn template(name: &str) -> Result<Self, AdminError> {
        keys::catalog_template(name, "").map_err(|e| AdminError::BadTemplate(name.to_owned(), e.to_string()))?;
        Ok(LayerRef::Template(name.to_owned()))
    }

    /// The layer's prefix in the bucket.
    pub fn prefix(&self) -> String {
        match self {
            LayerRef::Agent(a) => keys::agent_prefix(a),
            // Checked when made ([`LayerRef::template`]).
            LayerRef::Template(t) => format!("_catalog/{t}/workspace/"),
            LayerRef::Defaults => DEFAULTS_PREFIX.to_owned(),
        }
    }

    /// The key of `path` (checked with [`check_path`]) in this layer.
    pub fn key(&self, path: &str) -> String {
        format!("{}{path}", self.prefix())
    }
}

/// A path relative to a layer, checked: relative, no `.`/`..` segments, no
/// backslashes or control characters, not a folder, not a session archive
/// nor a hidden name.
pub fn check_path(raw: &str) -> Result<String, AdminError> {
    let bad = |why| Err(AdminError::BadPath(raw.to_owned(), why));
    let path = raw.trim();
    if path.is_empty() {
        return bad("name a file");
    }
    if path.len() > MAX_PATH {
        return bad("longer than 512 bytes");
    }
    if path.starts_with('/') {
        return bad("must be relative to the layer (no leading /)");
    }
    if path.ends_with('/') || path.split('/').any(str::is_empty) {
        return bad("empty segment or a folder");
    }
    if path.contains('\\') || path.chars().any(char::is_control) || path.split('/').any(|s| s == "." || s == "..") {
        return bad("no '.', '..', backslashes or control characters");
    }
    if !is_workspace_file(path) {
        return bad("session archives and names starting with '.' or '_' are not workspace files");
    }
    Ok(path.to_owned())
}

/// Whether a name under an agent's prefix is a workspace file the console
/// shows (not a session archive, not a hidden or internal name).
fn is_workspace_file(path: &str) -> bool {
    let archive = path == "sessions" || path.starts_with("sessions/");
    let hidden = path.split('/').any(|s| s.starts_with('.') || s.starts_with('_'));
    !archive && !hidden
}

/// Refuses an agent-layer write of a guardrail file without `accept`.
pub fn check_agent_write(path: &str, accept_override: bool) -> Result<(), AdminError> {
    if super::is_write_protected(path) && !accept_override {
        return Err(AdminError::Pinned(path.to_owned()));
    }
    Ok(())
}

/// One file of a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeFile {
    pub path: String,
    /// Where it comes from: `agent` (an override), `template`, `defaults`,
    /// `pinned` (the accepted template version).
    pub source: Layer,
    /// The bucket key the overlay reads.
    pub key: String,
    pub size: u64,
    /// A guardrail file (pinned by hash).
    pub pinned: bool,
    /// Pinned, and the template holds content the agent does not serve yet.
    pub update_available: bool,
    /// An agent override that hides a template or defaults file (deleting it re-inherits).
    pub inherits_on_delete: bool,
}

/// A layer's files (recursively), by path relative to its prefix.
pub async fn list_layer<S: ObjectStore>(store: &S, layer: &LayerRef) -> Result<Vec<ObjectInfo>, AdminError> {
    let prefix = layer.prefix();
    let (objects, _) = list_all(store, &prefix, None).await?;
    Ok(objects
        .into_iter()
        .filter_map(|mut o| {
            let rel = o.key.strip_prefix(&prefix)?.to_owned();
            is_workspace_file(&rel).then(|| {
                o.key = rel;
                o
            })
        })
        .collect())
}

/// A single layer's tree (template or defaults editing): its own files, in
/// the listing's order (R2 lists keys sorted).
pub fn layer_tree(layer: &LayerRef, files: &[ObjectInfo]) -> Vec<TreeFile> {
    let source = match layer {
        LayerRef::Agent(_) => Layer::Agent,
        LayerRef::Template(_) => Layer::Template,
        LayerRef::Defaults => Layer::Defaults,
    };
    files
        .iter()
        .map(|o| TreeFile {
            path: o.key.clone(),
            source,
            key: layer.key(&o.key),
            size: o.size,
            pinned: super::is_write_protected(&o.key),
            update_available: false,
            inherits_on_delete: false,
        })
        .collect()
}

/// The agent's tree: its own files (in listing order), then the root files
/// the overlay resolves from the template (`template`: its name and files)
/// or the defaults. `pins` is the Agent object's pin status (`None`: no
/// template). Not sorted here (a sort is kilobytes of WASM per element
/// type): the console sorts for display.
pub fn agent_tree(
    agent: &AgentId,
    own: &[ObjectInfo],
    template: Option<(&str, &[ObjectInfo])>,
    defaults: &[ObjectInfo],
    pins: Option<&PinStatusReply>,
) -> Vec<TreeFile> {
    let pin_of = |file: &str| pins.and_then(|p| p.files.iter().find(|f| f.file == file));
    let size_in = |list: &[ObjectInfo], name: &str| list.iter().find(|o| o.key == name).map(|o| o.size);
    let mut out: Vec<TreeFile> = Vec::with_capacity(own.len() + defaults.len());
    for o in own {
        let pin = pin_of(&o.key);
        let inherited = !o.key.contains('/')
            && (template.is_some_and(|(_, t)| size_in(t, &o.key).is_some()) || size_in(defaults, &o.key).is_some());
        out.push(TreeFile {
            path: o.key.clone(),
            source: Layer::Agent,
            key: keys::workspace_key(agent, &o.key),
            size: o.size,
            pinned: super::is_write_protected(&o.key),
            update_available: pin.is_some_and(|p| p.update_available),
            inherits_on_delete: inherited,
        });
    }
    // Root files of the shared layers, in the overlay's order.
    let mut names: Vec<&str> = defaults.iter().map(|o| o.key.as_str()).collect();
    if let Some((_, t)) = template {
        names.extend(t.iter().map(|o| o.key.as_str()));
    }
    names.extend(WorkspaceFile::ALL.iter().filter(|f| f.is_guardrail()).map(|f| f.file_name()));
    for name in names {
        if name.contains('/') || out.iter().any(|f| f.path == name) {
            continue;
        }
        let known = WorkspaceFile::from_file_name(name);
        if known.is_some_and(WorkspaceFile::is_agent_only) {
            continue;
        }
        let guardrail = known.is_some_and(WorkspaceFile::is_guardrail);
        let pin = pin_of(name);
        let mut file = None;
        if let Some((tname, t)) = template {
            if guardrail {
                let hash = pin.and_then(|p| p.pinned_sha256.as_deref());
                if let Some(key) = hash.and_then(|h| keys::catalog_version(tname, name, h).ok()) {
                    let size = pin.and_then(|p| p.pinned_content.as_ref()).map_or(0, |c| c.len() as u64);
                    file = Some((Layer::Pinned, key, size));
                }
            } else if let Some(size) = size_in(t, name) {
                if let Ok(key) = keys::catalog_template(tname, name) {
                    file = Some((Layer::Template, key, size));
                }
            }
        }
        if file.is_none() {
            if let Some(size) = size_in(defaults, name) {
                file = Some((Layer::Defaults, keys::catalog_default(name), size));
            }
        }
        let Some((source, key, size)) = file else { continue };
        out.push(TreeFile {
            path: name.to_owned(),
            source,
            key,
            size,
            pinned: guardrail,
            update_available: pin.is_some_and(|p| p.update_available),
            inherits_on_delete: false,
        });
    }
    out
}

/// `GET /api/agents/{id}/workspace`: the workspace page's data in one answer.
#[derive(Debug, Serialize)]
pub struct AgentWorkspace<'a> {
    pub agent: &'a str,
    pub template: Option<&'a str>,
    pub files: Vec<TreeFile>,
    pub pins: Option<PinStatusReply>,
    pub skills: Vec<SkillView>,
}

/// `GET …/workspace` of a template or the defaults: the layer's own files.
#[derive(Debug, Serialize)]
pub struct LayerFiles {
    pub files: Vec<TreeFile>,
}

/// One file of a layer with its content; read through the agent's tree,
/// also where it comes from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileView<'a> {
    pub path: &'a str,
    pub key: &'a str,
    pub content: &'a str,
    pub etag: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_available: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherits_on_delete: Option<bool>,
}

impl<'a> FileView<'a> {
    /// A file of a single layer.
    pub fn of(path: &'a str, key: &'a str, content: &'a str, etag: &'a str) -> Self {
        FileView {
            path,
            key,
            content,
            etag,
            source: None,
            pinned: None,
            update_available: None,
            inherits_on_delete: None,
        }
    }

    /// With where the agent's overlay takes it from.
    pub fn resolved(self, f: &TreeFile) -> Self {
        FileView {
            source: Some(f.source),
            pinned: Some(f.pinned),
            update_available: Some(f.update_available),
            inherits_on_delete: Some(f.inherits_on_delete),
            ..self
        }
    }
}

/// A skill as the console lists it: left out ones with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillView {
    pub name: String,
    pub key: String,
    /// The agent's own (`agents/{id}/skills/`), else global (`skills/`).
    pub local: bool,
    pub description: String,
    /// Shadowed by the agent's own skill of the same name.
    pub shadowed: bool,
    /// Why the agent does not get it (malformed, or needs what a Worker lacks).
    pub left_out: Option<String>,
    /// Listed, but its `allowed-tools` names tools Hearth does not have (a
    /// hint, e.g. Claude Code's `Bash`): which ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Every SKILL.md of the agent and the global skills, read and judged as a
/// turn would (`hearth_tools`: every tool name Hearth has): the agent's own
/// first, each group in listing order.
pub async fn skills_view<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    hearth_tools: &[&str],
) -> Result<Vec<SkillView>, AdminError> {
    let local_prefix = keys::agent_skills_prefix(agent);
    let (local, _) = list_all(store, &local_prefix, None).await?;
    let (global, _) = list_all(store, keys::GLOBAL_SKILLS_PREFIX, None).await?;
    let mut found: Vec<(String, String, bool)> = Vec::new();
    for (prefix, listing, is_local) in
        [(local_prefix.as_str(), &local, true), (keys::GLOBAL_SKILLS_PREFIX, &global, false)]
    {
        for info in listing.iter() {
            let dir = info.key.strip_prefix(prefix).and_then(|r| r.strip_suffix("/SKILL.md"));
            if let Some(dir) = dir.filter(|d| !d.is_empty() && !d.contains('/')) {
                found.push((info.key.clone(), dir.to_owned(), is_local));
            }
        }
    }
    let reads = futures::future::join_all(found.iter().map(|(key, ..)| store.get(key))).await;
    let mut out = Vec::new();
    for ((key, dir, local), got) in found.into_iter().zip(reads) {
        let Some(obj) = got? else { continue };
        let text = String::from_utf8_lossy(&obj.body);
        let (description, left_out, hint) = match skills::parse_skill(&dir, &key, local, &text) {
            Ok((skill, _)) => match skills::unavailable(&skill, hearth_tools) {
                None => (skill.description.clone(), None, skills::allowed_tools_hint(&skill, hearth_tools)),
                out => (skill.description.clone(), out, None),
            },
            Err(e) => (String::new(), Some(e.to_string()), None),
        };
        out.push(SkillView { name: dir, key, local, description, shadowed: false, left_out, hint });
    }
    let local_names: Vec<String> =
        out.iter().filter(|s| s.local && s.left_out.is_none()).map(|s| s.name.clone()).collect();
    for s in out.iter_mut().filter(|s| !s.local) {
        s.shadowed = local_names.contains(&s.name);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::pins::PinStatusFile;
    use crate::testing::MemStore;
    use futures::executor::block_on;
    use std::collections::BTreeMap;

    fn listed(store: &MemStore, layer: &LayerRef) -> Vec<ObjectInfo> {
        block_on(list_layer(store, layer)).unwrap()
    }

    fn status(update: bool) -> PinStatusReply {
        PinStatusReply {
            agent: "main".into(),
            template: Some("concierge".into()),
            files: vec![PinStatusFile {
                file: "GUARDRAILS.md".into(),
                pinned_sha256: Some("a".repeat(64)),
                current_sha256: Some(if update { "b" } else { "a" }.repeat(64)),
                pinned_content: Some("v1".into()),
                current_content: Some("v2".into()),
                update_available: update,
            }],
        }
    }

    #[test]
    fn paths_are_checked_and_name_the_problem() {
        assert_eq!(check_path(" notes/a.md "), Ok("notes/a.md".into()));
        for (bad, why) in [
            ("", "name a file"),
            ("/SOUL.md", "relative"),
            ("a/../b", "'..'"),
            ("dir/", "folder"),
            ("a//b", "empty segment"),
            ("sessions/x.jsonl.gz", "session archives"),
            (".history/x", "'.'"),
            ("a\\b", "backslashes"),
        ] {
            let e = check_path(bad).unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
        }
        assert_eq!(check_path(&"a".repeat(513)).unwrap_err().status(), 400);
    }

    #[test]
    fn template_names_are_checked() {
        assert!(LayerRef::template("concierge").is_ok());
        assert_eq!(LayerRef::template("../x").unwrap_err().status(), 400);
        assert_eq!(LayerRef::template("concierge").unwrap().prefix(), "_catalog/concierge/workspace/");
        assert_eq!(LayerRef::Defaults.key("SOUL.md"), "_catalog/defaults/workspace/SOUL.md");
    }

    #[test]
    fn guardrail_writes_need_the_override_flag() {
        let e = check_agent_write("GUARDRAILS.md", false).unwrap_err();
        assert_eq!(e.status(), 403);
        assert!(e.to_string().contains("accept"), "{e}");
        assert!(check_agent_write("GUARDRAILS.md", true).is_ok());
        assert!(check_agent_write("SOUL.md", false).is_ok());
    }

    #[test]
    fn the_agent_tree_says_where_each_file_comes_from() {
        let store = MemStore::default();
        store.put_text("agents/main/SOUL.md", "mine");
        store.put_text("agents/main/notes/a.md", "a note");
        store.put_text("agents/main/sessions/s1.jsonl.gz", "archive");
        store.put_text("_catalog/concierge/workspace/SOUL.md", "template soul");
        store.put_text("_catalog/concierge/workspace/IDENTITY.md", "template id");
        store.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "live v2");
        store.put_text("_catalog/concierge/workspace/BOOTSTRAP.md", "never inherited");
        store.put_text("_catalog/defaults/workspace/USER.md", "default user");
        store.put_text("_catalog/defaults/workspace/IDENTITY.md", "default id");
        let agent = AgentId::parse("main").unwrap();
        let own = listed(&store, &LayerRef::Agent(agent.clone()));
        let template = listed(&store, &LayerRef::template("concierge").unwrap());
        let defaults = listed(&store, &LayerRef::Defaults);
        let pins = status(true);
        let tree = agent_tree(&agent, &own, Some(("concierge", &template)), &defaults, Some(&pins));
        let by: BTreeMap<&str, &TreeFile> = tree.iter().map(|f| (f.path.as_str(), f)).collect();
        assert_eq!(by.len(), tree.len(), "each path once");
        assert_eq!(
            by.keys().copied().collect::<Vec<_>>(),
            ["GUARDRAILS.md", "IDENTITY.md", "SOUL.md", "USER.md", "notes/a.md"]
        );
        assert_eq!(by["SOUL.md"].source, Layer::Agent);
        assert!(by["SOUL.md"].inherits_on_delete, "deleting the override re-inherits the template's");
        assert!(!by["notes/a.md"].inherits_on_delete);
        assert_eq!(by["IDENTITY.md"].source, Layer::Template);
        assert_eq!(by["IDENTITY.md"].key, "_catalog/concierge/workspace/IDENTITY.md");
        assert_eq!(by["USER.md"].source, Layer::Defaults);
        let g = by["GUARDRAILS.md"];
        assert_eq!((g.source, g.pinned, g.update_available), (Layer::Pinned, true, true));
        assert_eq!(g.key, format!("_catalog/concierge/workspace-versions/GUARDRAILS.md@sha256:{}", "a".repeat(64)));

        // Without a template: agent → defaults, and no pins.
        let tree = agent_tree(&agent, &own, None, &defaults, None);
        let identity = tree.iter().find(|f| f.path == "IDENTITY.md").unwrap();
        assert_eq!(identity.source, Layer::Defaults);
        assert!(!tree.iter().any(|f| f.path == "GUARDRAILS.md"));
    }

    #[test]
    fn a_layer_tree_lists_its_own_files() {
        let store = MemStore::default();
        store.put_text("_catalog/defaults/workspace/SOUL.md", "s");
        store.put_text("_catalog/defaults/workspace/PLATFORM.md", "p");
        let tree = layer_tree(&LayerRef::Defaults, &listed(&store, &LayerRef::Defaults));
        assert_eq!(tree.len(), 2);
        assert!(tree.iter().all(|f| f.source == Layer::Defaults));
        assert!(tree.iter().find(|f| f.path == "PLATFORM.md").unwrap().pinned);
    }

    #[test]
    fn skills_are_listed_with_why_any_is_left_out() {
        let store = MemStore::default();
        store.put_text("skills/ok/SKILL.md", "---\nname: ok\ndescription: Does things.\n---\nbody");
        store.put_text(
            "skills/shell/SKILL.md",
            "---\nname: shell\ndescription: Runs bash.\ncompatibility: Needs a shell\n---\n",
        );
        store.put_text(
            "skills/claude/SKILL.md",
            "---\nname: claude\ndescription: For Claude Code.\nallowed-tools: Bash Read\n---\n",
        );
        store.put_text("skills/broken/SKILL.md", "no front matter");
        store.put_text("agents/main/skills/ok/SKILL.md", "---\nname: ok\ndescription: Mine.\n---\n");
        let agent = AgentId::parse("main").unwrap();
        let view = block_on(skills_view(&store, &agent, &["read_file"])).unwrap();
        let find = |name: &str, local: bool| view.iter().find(|s| s.name == name && s.local == local).unwrap();
        assert!(find("ok", true).left_out.is_none());
        assert!(find("ok", false).shadowed);
        assert!(find("shell", false).left_out.as_deref().unwrap().contains("shell"));
        let claude = find("claude", false);
        assert!(claude.left_out.is_none(), "allowed-tools is a hint");
        assert!(claude.hint.as_deref().unwrap().contains("Bash, Read"), "{claude:?}");
        assert!(find("broken", false).left_out.as_deref().unwrap().contains("front matter"));
    }
}
