//! A workspace loader's cache as data ([`WorkspaceSnapshot`]): what the
//! Agent object hands a Session object on its first turn, and keeps in its
//! own SQLite between wakes.
//!
//! The Agent object composes the workspace (one per agent, shared by all
//! its sessions, its listings and files cached with the same TTLs as a
//! Session's): a new Session object then starts from that cache instead of
//! listing and reading every layer itself, and goes on with the usual rules
//! from there (the agent's root listed on each of its turns, its folders
//! every minute, shared layers every five). A session sees only what its
//! scope may: USER.md, MEMORY.md and the daily notes leave the Agent object
//! for the owner's main session only.

use super::load::WorkspaceCache;
use super::skills::{Needs, Skill};
use super::yaml::Yaml;
use crate::ports::ObjectInfo;
use crate::protocol::pins::Pins;
use crate::protocol::workspace::{ListedObject, ListingEntry, SkillEntry, SkillFields, TextEntry, WorkspaceSnapshot};
use r2_layout::{keys, AgentId, WorkspaceFile};

/// Whether `key` holds a file only the owner's main session sees (USER.md,
/// MEMORY.md, from whichever layer).
fn private_key(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    let name = name.split('@').next().unwrap_or(name);
    WorkspaceFile::from_file_name(name).is_some_and(WorkspaceFile::is_private)
}

fn skill_fields(s: &Skill) -> SkillFields {
    SkillFields {
        name: s.name.clone(),
        description: s.description.clone(),
        compatibility: s.compatibility.clone(),
        allowed_tools: s.allowed_tools.clone(),
        command_tool: s.command_tool.clone(),
        model_may_not_invoke: s.model_may_not_invoke,
        local: s.local,
    }
}

/// A skill as a session uses it (its `metadata` and requirements were
/// weighed where it was read).
fn skill_of(key: &str, f: SkillFields) -> Skill {
    Skill {
        name: f.name,
        description: f.description,
        compatibility: f.compatibility,
        allowed_tools: f.allowed_tools,
        command_tool: f.command_tool,
        metadata: Yaml::Null,
        needs: Needs::default(),
        model_may_not_invoke: f.model_may_not_invoke,
        key: key.to_owned(),
        local: f.local,
    }
}

impl WorkspaceCache {
    /// The cache as data. `private`: all of it (for the owner's main
    /// session, and for the Agent object's own keeping); otherwise without
    /// the private files and the daily notes.
    pub fn snapshot(&self, agent: &AgentId, private: bool) -> WorkspaceSnapshot {
        let notes_prefix = keys::daily_notes_prefix(agent);
        let text = |(key, etag, text): (&str, &str, &std::rc::Rc<str>)| {
            TextEntry(key.to_owned(), etag.to_owned(), text.to_string())
        };
        let mut snap = WorkspaceSnapshot {
            listings: self
                .listings
                .iter()
                .filter(|(prefix, ..)| private || !prefix.starts_with(&notes_prefix))
                .map(|(prefix, delimited, at, objects)| {
                    let objects = objects
                        .iter()
                        .map(|o| ListedObject(o.key.clone(), o.etag.clone(), o.size, o.uploaded_ms))
                        .collect();
                    ListingEntry(prefix.to_owned(), delimited, at, objects)
                })
                .collect(),
            texts: self.texts.iter().filter(|(key, ..)| private || !private_key(key)).map(text).collect(),
            notes: if private { self.notes.iter().map(text).collect() } else { Vec::new() },
            skills: self
                .skills
                .iter()
                .map(|(key, (etag, skill))| SkillEntry(key.clone(), etag.clone(), skill.as_ref().map(skill_fields)))
                .collect(),
        };
        // The same cache, the same bytes (a stored snapshot is compared as text).
        use crate::order::sort_by;
        sort_by(&mut snap.listings, |a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        sort_by(&mut snap.texts, |a, b| a.0.cmp(&b.0));
        sort_by(&mut snap.notes, |a, b| a.0.cmp(&b.0));
        sort_by(&mut snap.skills, |a, b| a.0.cmp(&b.0));
        snap
    }

    /// A cache from a snapshot. `handed_over`: the Agent object made it for
    /// this turn, resolved with these pins: the next load takes its listings
    /// as they are (none is made again), and the turn uses those pins.
    pub fn from_snapshot(snap: WorkspaceSnapshot, handed_over: Option<Pins>) -> WorkspaceCache {
        let mut cache = WorkspaceCache::default();
        for ListingEntry(prefix, delimited, at, objects) in snap.listings {
            let objects = objects
                .into_iter()
                .map(|ListedObject(key, etag, size, uploaded_ms)| ObjectInfo { key, etag, size, uploaded_ms })
                .collect();
            cache.listings.insert(prefix, delimited, at, objects);
        }
        for TextEntry(key, etag, text) in snap.texts {
            cache.texts.insert(key, etag, text.into());
        }
        for TextEntry(key, etag, text) in snap.notes {
            cache.notes.insert(key, etag, text.into());
        }
        for SkillEntry(key, etag, skill) in snap.skills {
            let skill = skill.map(|f| skill_of(&key, f));
            cache.skills.insert(key, (etag, skill));
        }
        if handed_over.is_some() {
            cache.listings.set_handed_over();
        }
        cache.handed_pins = handed_over;
        cache
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemStore;
    use crate::workspace::{load_workspace, OverlayInputs};
    use futures::executor::block_on;
    use r2_layout::Scope;

    fn load(store: &MemStore, scope: Scope, now: i64, cache: &mut WorkspaceCache) -> crate::workspace::Workspace {
        let values = Default::default();
        let pins = Pins::default();
        let overlay = OverlayInputs { template: None, pins: &pins, values: &values };
        let agent = AgentId::parse("main").unwrap();
        let tools = crate::session::toolbox::all_tool_names();
        block_on(load_workspace(store, &agent, scope, "2026-11-27", "2026-11-26", now, &overlay, &tools, cache))
            .unwrap()
    }

    fn store() -> MemStore {
        let s = MemStore::default();
        s.put_text("agents/main/SOUL.md", "# Soul\nKind.");
        s.put_text("agents/main/USER.md", "# User\nLikes tea.");
        s.put_text("agents/main/MEMORY.md", "# Memory\nA secret.");
        s.put_text("agents/main/memory/2026-11-27.md", "- today's note");
        s.put_text("_catalog/defaults/workspace/AGENTS.md", "# Agents\nRules.");
        s.put_text("skills/summarize/SKILL.md", "---\nname: summarize\ndescription: Sums up a text.\n---\nDo it.");
        s.put_text("agents/main/skills/mine/SKILL.md", "---\nname: mine\ndescription: Mine.\n---\nBody.");
        s
    }

    #[test]
    fn a_handed_over_cache_loads_the_same_workspace_with_no_r2_operation() {
        let s = store();
        for scope in [Scope::Main, Scope::Shared] {
            let mut agent_cache = WorkspaceCache::default();
            let composed = load(&s, scope, 1_000, &mut agent_cache);
            assert!(composed.r2_ops > 5, "the Agent object read the layers: {}", composed.r2_ops);
            let agent = AgentId::parse("main").unwrap();
            let snap = agent_cache.snapshot(&agent, scope == Scope::Main);
            // Through the wire, as the Session object gets it.
            let snap: WorkspaceSnapshot = hearth_json::from_str(&serde_json::to_string(&snap).unwrap()).unwrap();
            let mut session_cache = WorkspaceCache::from_snapshot(snap, Some(Pins::default()));
            assert_eq!(session_cache.take_handed_pins(), Some(Pins::default()));
            let ops_before = s.op_count();
            let ws = load(&s, scope, 1_050, &mut session_cache);
            assert_eq!((ws.r2_ops, s.op_count() - ops_before), (0, 0), "{scope:?}");
            assert_eq!(ws.files, composed.files);
            assert_eq!(ws.layers, composed.layers);
            assert_eq!((&ws.today, &ws.yesterday), (&composed.today, &composed.yesterday));
            let names = |w: &crate::workspace::Workspace| w.skills.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
            assert_eq!(names(&ws), ["mine", "summarize"]);
            assert_eq!(names(&ws), names(&composed));
            // The next turn keeps the usual rules: the agent's root is listed again.
            let next = load(&s, scope, 1_100, &mut session_cache);
            assert_eq!(next.r2_ops, 1, "{scope:?}");
            assert_eq!(next.files, composed.files);
        }
    }

    #[test]
    fn private_files_and_notes_leave_only_for_the_main_session() {
        let s = store();
        let mut agent_cache = WorkspaceCache::default();
        // The Agent object served the owner first: its cache holds everything.
        load(&s, Scope::Main, 1_000, &mut agent_cache);
        load(&s, Scope::Shared, 1_010, &mut agent_cache);
        let agent = AgentId::parse("main").unwrap();
        let shared = serde_json::to_string(&agent_cache.snapshot(&agent, false)).unwrap();
        for secret in ["A secret", "Likes tea", "today's note"] {
            assert!(!shared.contains(secret), "{secret} left for a shared session");
        }
        assert!(!shared.contains("agents/main/memory/"), "not even the notes' listing");
        assert!(shared.contains("Kind."));
        let main = serde_json::to_string(&agent_cache.snapshot(&agent, true)).unwrap();
        for secret in ["A secret", "Likes tea", "today's note"] {
            assert!(main.contains(secret), "{secret}");
        }
        // A shared session given a shared snapshot never sees them, even as it goes on loading.
        let snap = hearth_json::from_str(&shared).unwrap();
        let mut session = WorkspaceCache::from_snapshot(snap, Some(Pins::default()));
        for now in [1_050, 200_000] {
            let ws = load(&s, Scope::Shared, now, &mut session);
            assert!(!ws.files.contains_key(&WorkspaceFile::Memory) && !ws.files.contains_key(&WorkspaceFile::User));
            assert!(ws.today.is_none());
        }
    }

    #[test]
    fn a_kept_snapshot_goes_on_with_its_listings_ttls() {
        let s = store();
        let mut cache = WorkspaceCache::default();
        load(&s, Scope::Main, 1_000, &mut cache);
        let agent = AgentId::parse("main").unwrap();
        let kept = cache.snapshot(&agent, true);
        assert_eq!(kept, WorkspaceCache::from_snapshot(kept.clone(), None).snapshot(&agent, true), "round trip");
        // Woken within the TTLs: the root listing only, no read.
        let mut woken = WorkspaceCache::from_snapshot(kept.clone(), None);
        assert_eq!(load(&s, Scope::Main, 30_000, &mut woken).r2_ops, 1);
        // Past them: the listings again, still no read.
        let mut woken = WorkspaceCache::from_snapshot(kept, None);
        let ops = load(&s, Scope::Main, 1_000 + super::super::listing::SHARED_LAYER_TTL_MS, &mut woken).r2_ops;
        assert_eq!(ops, 5, "root, defaults, both skill folders, notes");
    }
}
