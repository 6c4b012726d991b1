//! One file of an agent's workspace, resolved by reading its keys rather
//! than listing every layer (`GET /api/agents/{id}/workspace/{path}`): the
//! agent's own key first, then, for a root file, the template's (or the
//! accepted pin of a guardrail) and the defaults'. The answer says where the
//! file comes from exactly as [`super::admin::agent_tree`] would, and the
//! Agent object is asked for pins only when the file is a guardrail of an
//! agent with a template (the only files pins decide).
//!
//! Storage calls: an override is one `get` (plus two concurrent `head`s
//! for a root file, to say whether deleting it re-inherits); an inherited
//! file one `get` per layer looked at. Listing the three layers took a
//! `list` each plus the `get`, and the pins call for every file.

use super::admin::{AdminError, TreeFile};
use super::resolve::Layer;
use crate::ports::{ObjectStore, StoredObject};
use crate::protocol::agent::PinStatusReply;
use r2_layout::{keys, AgentId, WorkspaceFile};
use std::future::Future;

fn key_error(template: &str) -> impl Fn(r2_layout::KeyError) -> AdminError + '_ {
    move |e| AdminError::BadTemplate(template.to_owned(), e.to_string())
}

/// The file `path` (checked with [`super::admin::check_path`]) as the
/// agent's overlay serves it, with its content. `pins` asks the Agent
/// object for the pin status; it is called at most once, for a guardrail
/// file when the agent has a template. `NotFound` when no layer has it.
pub async fn open_agent_file<S, P, F>(
    store: &S,
    agent: &AgentId,
    template: Option<&str>,
    path: &str,
    pins: P,
) -> Result<(TreeFile, StoredObject), AdminError>
where
    S: ObjectStore,
    P: FnOnce() -> F,
    F: Future<Output = Result<Option<PinStatusReply>, AdminError>>,
{
    let root = !path.contains('/');
    let known = if root { WorkspaceFile::from_file_name(path) } else { None };
    let guardrail = known.is_some_and(WorkspaceFile::is_guardrail);
    let template_key = match template {
        Some(t) => Some(keys::catalog_template(t, path).map_err(key_error(t))?),
        None => None,
    };
    // The pin status, only where it decides something; asked while the agent's key is read.
    let wants_pins = guardrail && template.is_some();
    let agent_key = keys::workspace_key(agent, path);
    let (own, pins) = futures::future::join(store.get(&agent_key), async {
        if wants_pins {
            pins().await
        } else {
            Ok(None)
        }
    })
    .await;
    let (own, pins) = (own?, pins?);
    let pin = pins.as_ref().and_then(|p| p.files.iter().find(|f| f.file == path));
    let update_available = pin.is_some_and(|p| p.update_available);
    let file = |source, key: String, obj: &StoredObject, inherits_on_delete| TreeFile {
        path: path.to_owned(),
        source,
        key,
        size: obj.info.size,
        pinned: guardrail,
        update_available,
        inherits_on_delete,
    };
    if let Some(obj) = own {
        // An override: does deleting it bring a shared layer's file back?
        let inherits = root && {
            let defaults_key = keys::catalog_default(path);
            let (t, d) = futures::future::join(
                async {
                    match &template_key {
                        Some(k) => store.head(k).await.map(|h| h.is_some()),
                        None => Ok(false),
                    }
                },
                store.head(&defaults_key),
            )
            .await;
            t? || d?.is_some()
        };
        let mut f = file(Layer::Agent, agent_key, &obj, inherits);
        f.pinned = super::is_write_protected(path);
        return Ok((f, obj));
    }
    // Shared layers give root files only, and never an agent-only one (BOOTSTRAP.md).
    if !root || known.is_some_and(WorkspaceFile::is_agent_only) {
        return Err(AdminError::NotFound(path.to_owned()));
    }
    if let (Some(t), Some(tkey)) = (template, template_key) {
        let found = if guardrail {
            match pin.and_then(|p| p.pinned_sha256.as_deref()) {
                Some(hash) => {
                    let key = keys::catalog_version(t, path, hash).map_err(key_error(t))?;
                    store.get(&key).await?.map(|o| (Layer::Pinned, key, o))
                }
                None => None,
            }
        } else {
            store.get(&tkey).await?.map(|o| (Layer::Template, tkey, o))
        };
        if let Some((source, key, obj)) = found {
            return Ok((file(source, key, &obj, false), obj));
        }
    }
    let key = keys::catalog_default(path);
    match store.get(&key).await? {
        Some(obj) => Ok((file(Layer::Defaults, key, &obj, false), obj)),
        None => Err(AdminError::NotFound(path.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::super::admin::{agent_tree, list_layer, LayerRef};
    use super::*;
    use crate::protocol::pins::PinStatusFile;
    use crate::testing::MemStore;
    use futures::executor::block_on;
    use std::cell::Cell;

    fn pins(update: bool) -> PinStatusReply {
        PinStatusReply {
            agent: "main".into(),
            template: Some("concierge".into()),
            files: vec![PinStatusFile {
                file: "GUARDRAILS.md".into(),
                pinned_sha256: Some("a".repeat(64)),
                current_sha256: Some("b".repeat(64)),
                pinned_content: Some("pinned v1".into()),
                current_content: Some("live v2".into()),
                update_available: update,
            }],
        }
    }

    fn bucket() -> MemStore {
        let store = MemStore::default();
        store.put_text("agents/main/SOUL.md", "mine");
        store.put_text("agents/main/notes/a.md", "a note");
        store.put_text("agents/main/MEMORY.md", "remember");
        store.put_text("_catalog/concierge/workspace/SOUL.md", "template soul");
        store.put_text("_catalog/concierge/workspace/IDENTITY.md", "template id");
        store.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "live v2");
        store.put_text(
            &format!("_catalog/concierge/workspace-versions/GUARDRAILS.md@sha256:{}", "a".repeat(64)),
            "pinned v1",
        );
        store.put_text("_catalog/concierge/workspace/BOOTSTRAP.md", "never inherited");
        store.put_text("_catalog/concierge/workspace/deep/x.md", "not a root file");
        store.put_text("_catalog/defaults/workspace/USER.md", "default user");
        store.put_text("_catalog/defaults/workspace/IDENTITY.md", "default id");
        store.put_text("_catalog/defaults/workspace/AGENTS.md", "default agents");
        store
    }

    #[test]
    fn one_file_resolves_as_the_tree_says_without_listing_and_asks_pins_only_for_guardrails() {
        let store = bucket();
        let agent = AgentId::parse("main").unwrap();
        for template in [Some("concierge"), None] {
            let status = template.map(|_| pins(true));
            let listed = |l: &LayerRef| block_on(list_layer(&store, l)).unwrap();
            let own = listed(&LayerRef::Agent(agent.clone()));
            let defaults = listed(&LayerRef::Defaults);
            let tfiles = template.map(|t| listed(&LayerRef::template(t).unwrap()));
            let tree = agent_tree(&agent, &own, template.zip(tfiles.as_deref()), &defaults, status.as_ref());
            assert!(tree.len() >= 6, "{tree:?}");
            for want in &tree {
                store.ops.borrow_mut().clear();
                let asked = Cell::new(0);
                let (got, obj) = block_on(open_agent_file(&store, &agent, template, &want.path, || {
                    asked.set(asked.get() + 1);
                    let s = status.clone();
                    async move { Ok(s) }
                }))
                .unwrap();
                assert_eq!(&got, want, "{template:?} {}", want.path);
                assert_eq!(obj.info.key, want.key);
                let ops = store.ops.borrow().clone();
                assert!(ops.iter().all(|o| !o.starts_with("list")), "{ops:?}");
                assert!(ops.len() <= 3, "{}: {ops:?}", want.path);
                let guardrail_with_template = want.path == "GUARDRAILS.md" && template.is_some();
                assert_eq!(asked.get(), u32::from(guardrail_with_template), "{}", want.path);
            }
            // What the tree does not show is not found, and costs no pins call.
            for missing in ["BOOTSTRAP.md", "deep/x.md", "nothing.md", "notes/none.md"] {
                let e = block_on(open_agent_file(&store, &agent, template, missing, || async {
                    panic!("pins asked for {missing}")
                }))
                .unwrap_err();
                assert_eq!(e.status(), 404, "{missing}");
            }
        }
    }

    #[test]
    fn an_override_says_whether_deleting_it_re_inherits_and_a_pin_failure_is_an_error() {
        let store = bucket();
        let agent = AgentId::parse("main").unwrap();
        let none = || async { Ok(None) };
        let (soul, obj) = block_on(open_agent_file(&store, &agent, Some("concierge"), "SOUL.md", none)).unwrap();
        assert_eq!((soul.source, soul.inherits_on_delete, obj.body.as_slice()), (Layer::Agent, true, &b"mine"[..]));
        let (memory, _) = block_on(open_agent_file(&store, &agent, Some("concierge"), "MEMORY.md", none)).unwrap();
        assert!(!memory.inherits_on_delete, "no shared layer has MEMORY.md");
        let (note, _) = block_on(open_agent_file(&store, &agent, None, "notes/a.md", none)).unwrap();
        assert!(!note.inherits_on_delete);
        // The pinned file with an update waiting; the Agent object down is a 503, not a wrong answer.
        let (g, obj) = block_on(open_agent_file(&store, &agent, Some("concierge"), "GUARDRAILS.md", || async {
            Ok(Some(pins(true)))
        }))
        .unwrap();
        assert_eq!((g.source, g.update_available, obj.body.as_slice()), (Layer::Pinned, true, &b"pinned v1"[..]));
        let down = || async { Err(AdminError::Storage("agent object unreachable".into())) };
        let e = block_on(open_agent_file(&store, &agent, Some("concierge"), "GUARDRAILS.md", down)).unwrap_err();
        assert_eq!(e.status(), 503);
        let e = block_on(open_agent_file(&store, &agent, Some("../x"), "SOUL.md", none)).unwrap_err();
        assert_eq!(e.status(), 400);
    }
}
