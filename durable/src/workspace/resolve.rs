//! Three-layer resolution (seed 001): agent → template → defaults, first
//! hit wins, with the guardrail files pinned.
//!
//! ```text
//! agents/{id}/{file}                       ← agent override (wins, for every file)
//! _catalog/{template}/workspace/{file}     ← template (live files only)
//! _catalog/{template}/workspace-versions/{file}@sha256:{hex}  ← pinned guardrail files
//! _catalog/defaults/workspace/{file}       ← defaults
//! ```
//!
//! A guardrail-class file ([`WorkspaceFile::is_guardrail`]) is never read
//! from the live template: without an agent override it is the pinned
//! version, and without a pin (the template gained the file after the pins
//! were taken, or no template is set) the defaults. Placeholders are
//! substituted in live-class files only.
//!
//! BOOTSTRAP.md ([`WorkspaceFile::is_agent_only`]) comes from the agent's own
//! prefix only: a template's or the defaults' copy is ignored. The agent
//! leaves commissioning mode by deleting its BOOTSTRAP.md, which it could
//! never do to an inherited one. To commission agents from a template, copy
//! its BOOTSTRAP.md into each new agent's prefix (`npm run seed`).
//!
//! [`resolve_file`] is the pure decision; [`resolve_listed`] fetches the
//! texts for listings already made ([`OverlayPrefixes::wants`], listed with
//! [`super::listing::list_due`]). With the caches a Session keeps, steady
//! state costs one listing (the agent's own prefix): the template and
//! defaults listings are cached for [`SHARED_LAYER_TTL_MS`], texts are cached
//! by etag, and pinned versions (content-addressed, immutable) forever.

use super::listing::{Want, SHARED_LAYER_TTL_MS};
use super::placeholders::substitute;
use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use crate::protocol::pins::Pins;
use crate::settings::overlay::PlaceholderValues;
use r2_layout::keys::{self, KeyError};
use r2_layout::{AgentId, WorkspaceFile};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// `_catalog/defaults/workspace/`.
pub const DEFAULTS_PREFIX: &str = "_catalog/defaults/workspace/";

/// Where a resolved file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Agent,
    Template,
    Defaults,
    Pinned,
}

/// The files directly under one layer's prefix: name → etag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub files: BTreeMap<String, String>,
}

impl Listing {
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Listing { files: names.into_iter().map(|n| (n.to_owned(), String::new())).collect() }
    }
    /// The objects of a listing of `prefix`, by name relative to it.
    pub fn from_objects(prefix: &str, objects: &[ObjectInfo]) -> Self {
        Listing {
            files: crate::order::btree_map(
                objects.iter().filter_map(|o| Some((o.key.strip_prefix(prefix)?.to_owned(), o.etag.clone()))),
            ),
        }
    }
    pub fn contains(&self, name: &str) -> bool {
        self.files.contains_key(name)
    }
}

/// What exists in each layer.
#[derive(Debug, Clone, Copy)]
pub struct Layers<'a> {
    pub agent: &'a Listing,
    /// The agent's template and its listing, if it has one.
    pub template: Option<(&'a str, &'a Listing)>,
    pub defaults: &'a Listing,
}

/// The key to read for a file, and its layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub key: String,
    pub layer: Layer,
}

/// Decides which key serves `file` (a name at the workspace root, e.g.
/// `IDENTITY.md`). `None`: no layer has it. Errors only on a template name
/// or pin that cannot form a key.
pub fn resolve_file(
    agent: &AgentId,
    layers: &Layers<'_>,
    pins: &Pins,
    file: &str,
) -> Result<Option<Resolution>, KeyError> {
    if layers.agent.contains(file) {
        return Ok(Some(Resolution { key: keys::workspace_key(agent, file), layer: Layer::Agent }));
    }
    let known = WorkspaceFile::from_file_name(file);
    if known.is_some_and(WorkspaceFile::is_agent_only) {
        return Ok(None);
    }
    let guardrail = known.is_some_and(WorkspaceFile::is_guardrail);
    if let Some((template, listing)) = layers.template {
        if guardrail {
            if let Some(hash) = pins.hash_for(template, file) {
                return Ok(Some(Resolution {
                    key: keys::catalog_version(template, file, hash)?,
                    layer: Layer::Pinned,
                }));
            }
        } else if listing.contains(file) {
            return Ok(Some(Resolution { key: keys::catalog_template(template, file)?, layer: Layer::Template }));
        }
    }
    if layers.defaults.contains(file) {
        return Ok(Some(Resolution { key: keys::catalog_default(file), layer: Layer::Defaults }));
    }
    Ok(None)
}

/// Object texts by key, with the etag they had (empty for immutable ones).
#[derive(Debug, Default)]
pub struct TextCache {
    texts: HashMap<String, (String, Rc<str>)>,
}

impl TextCache {
    /// Every text: (key, etag, text).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &str, &Rc<str>)> {
        self.texts.iter().map(|(k, (etag, text))| (k.as_str(), etag.as_str(), text))
    }

    /// Takes a text read elsewhere.
    pub(super) fn insert(&mut self, key: String, etag: String, text: Rc<str>) {
        self.texts.insert(key, (etag, text));
    }

    /// Keeps only the given keys (e.g. today's and yesterday's notes).
    pub fn retain_keys<'a>(&mut self, keys: impl IntoIterator<Item = &'a str>) {
        let keep: std::collections::HashSet<&str> = keys.into_iter().collect();
        self.texts.retain(|k, _| keep.contains(k.as_str()));
    }

    fn hit(&self, key: &str, etag: Option<&str>) -> Option<Rc<str>> {
        let (cached, text) = self.texts.get(key)?;
        etag.is_none_or(|e| e == cached).then(|| text.clone())
    }
}

/// Reads each `(key, etag)` unless the cache holds it with the same etag
/// (`None` etag: immutable, any cached copy will do); the reads run
/// concurrently. `None` in the result: the object is gone. Returns the
/// texts in order and the number of R2 operations made.
pub async fn fetch_texts<S: ObjectStore>(
    store: &S,
    wanted: &[(String, Option<String>)],
    cache: &mut TextCache,
) -> Result<(Vec<Option<Rc<str>>>, u32), StorageError> {
    let hits: Vec<Option<Rc<str>>> = wanted.iter().map(|(k, e)| cache.hit(k, e.as_deref())).collect();
    let misses = wanted.iter().zip(&hits).filter(|(_, h)| h.is_none()).map(|((k, _), _)| store.get(k));
    let mut got = futures::future::join_all(misses).await.into_iter();
    let mut ops = 0;
    let mut out = Vec::with_capacity(wanted.len());
    for ((key, etag), hit) in wanted.iter().zip(hits) {
        if hit.is_some() {
            out.push(hit);
            continue;
        }
        ops += 1;
        match got.next().ok_or_else(|| StorageError("read missing".into()))?? {
            Some(obj) => {
                let text: Rc<str> = String::from_utf8_lossy(&obj.body).into();
                let etag = if etag.is_some() { obj.info.etag } else { String::new() };
                cache.texts.insert(key.clone(), (etag, text.clone()));
                out.push(Some(text));
            }
            None => {
                cache.texts.remove(key);
                out.push(None);
            }
        }
    }
    Ok((out, ops))
}

/// The resolved files with the layer of each.
#[derive(Debug, Default, Clone)]
pub struct ResolvedWorkspace {
    pub files: HashMap<WorkspaceFile, Rc<str>>,
    pub layers: HashMap<WorkspaceFile, Layer>,
}

/// The listings the overlay needs: the agent's root (every call), the
/// template's and the defaults' (cached for [`SHARED_LAYER_TTL_MS`]).
pub struct OverlayPrefixes {
    pub agent: String,
    pub template: Option<String>,
}

impl OverlayPrefixes {
    pub fn new(agent: &AgentId, template: Option<&str>) -> Result<Self, StorageError> {
        let template = match template {
            Some(t) => Some(keys::catalog_template(t, "").map_err(|e| StorageError(e.to_string()))?),
            None => None,
        };
        Ok(OverlayPrefixes { agent: keys::agent_prefix(agent), template })
    }

    /// Agent, defaults, then the template if any.
    pub fn wants(&self) -> Vec<Want<'_>> {
        let mut wants = vec![
            Want { prefix: &self.agent, delimiter: Some("/"), ttl_ms: 0 },
            Want { prefix: DEFAULTS_PREFIX, delimiter: Some("/"), ttl_ms: SHARED_LAYER_TTL_MS },
        ];
        if let Some(t) = &self.template {
            wants.push(Want { prefix: t, delimiter: Some("/"), ttl_ms: SHARED_LAYER_TTL_MS });
        }
        wants
    }
}

/// The three layers' listings, named.
pub struct ListedLayers {
    pub agent: Listing,
    pub defaults: Listing,
    pub template: Option<Listing>,
}

impl ListedLayers {
    /// From the listings of [`OverlayPrefixes::wants`], in that order.
    pub fn new(prefixes: &OverlayPrefixes, listed: &[Rc<Vec<ObjectInfo>>]) -> Self {
        let of = |i: usize, prefix: &str| listed.get(i).map(|l| Listing::from_objects(prefix, l)).unwrap_or_default();
        ListedLayers {
            agent: of(0, &prefixes.agent),
            defaults: of(1, DEFAULTS_PREFIX),
            template: prefixes.template.as_deref().map(|t| of(2, t)),
        }
    }
}

/// Resolves `wanted` files through listings already made and returns their
/// texts (placeholders substituted in live files) and layers, with the R2
/// reads it made (concurrent; texts cached by etag).
///
/// `values.agent_name` left `None` falls back to the name line of the
/// resolved IDENTITY.md, then the agent id.
#[allow(clippy::too_many_arguments)]
pub async fn resolve_listed<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    template: Option<&str>,
    listed: &ListedLayers,
    pins: &Pins,
    values: &PlaceholderValues,
    wanted: &[WorkspaceFile],
    texts: &mut TextCache,
) -> Result<(ResolvedWorkspace, u32), StorageError> {
    let layers =
        Layers { agent: &listed.agent, template: template.zip(listed.template.as_ref()), defaults: &listed.defaults };
    let etag_of = |r: &Resolution, file: &str| -> Option<String> {
        let listing = match r.layer {
            Layer::Agent => layers.agent,
            Layer::Template => layers.template.map(|(_, l)| l)?,
            Layer::Defaults => layers.defaults,
            Layer::Pinned => return None,
        };
        Some(listing.files.get(file).cloned().unwrap_or_default())
    };
    let mut plan: Vec<(WorkspaceFile, Resolution)> = Vec::with_capacity(wanted.len());
    for &file in wanted {
        if let Some(r) =
            resolve_file(agent, &layers, pins, file.file_name()).map_err(|e| StorageError(e.to_string()))?
        {
            plan.push((file, r));
        }
    }
    let reads: Vec<(String, Option<String>)> =
        plan.iter().map(|(f, r)| (r.key.clone(), etag_of(r, f.file_name()))).collect();
    let (mut got, mut ops) = fetch_texts(store, &reads, texts).await?;
    for (i, (file, r)) in plan.iter_mut().enumerate() {
        let name = file.file_name();
        if got[i].is_none() && r.layer == Layer::Pinned && layers.defaults.contains(name) {
            // A pinned version that vanished from the store: fall back to the
            // defaults, never to the live template.
            *r = Resolution { key: keys::catalog_default(name), layer: Layer::Defaults };
            let (again, n) = fetch_texts(store, &[(r.key.clone(), etag_of(r, name))], texts).await?;
            ops += n;
            got[i] = again.into_iter().next().flatten();
        }
    }
    let raw: Vec<(WorkspaceFile, Layer, Rc<str>)> =
        plan.into_iter().zip(got).filter_map(|((f, r), t)| Some((f, r.layer, t?))).collect();
    let identity = raw.iter().find(|(f, ..)| *f == WorkspaceFile::Identity).and_then(|(_, _, t)| identity_name(t));
    let values = values.clone().with_agent_name_fallback(identity.as_deref(), agent.as_str());
    let mut out = ResolvedWorkspace::default();
    for (file, layer, text) in raw {
        let text = if file.is_guardrail() {
            text
        } else {
            match substitute(&text, &values) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(s) => s.into(),
            }
        };
        out.files.insert(file, text);
        out.layers.insert(file, layer);
    }
    Ok((out, ops))
}

/// The agent's name from IDENTITY.md's name line (`- **Name:** Ada`,
/// `Name: Ada`); a template placeholder (`(pick a name)`, `{{AGENT_NAME}}`,
/// `_..._`) is not a name.
pub fn identity_name(text: &str) -> Option<String> {
    for line in text.lines() {
        let l = line.trim().trim_start_matches(['-', '*', '+']).trim_start();
        let l = l.trim_start_matches("**");
        let Some(rest) = l.get(..5).filter(|p| p.eq_ignore_ascii_case("name:")).map(|_| &l[5..]) else { continue };
        let v = rest.trim().trim_start_matches("**").trim().trim_end_matches("**").trim();
        let placeholder =
            v.is_empty() || v.starts_with('(') || v.contains("{{") || (v.starts_with('_') && v.ends_with('_'));
        if placeholder {
            return None;
        }
        return Some(v.to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{MemSql, MemStore};
    use crate::text::sha256_hex;
    use crate::workspace::listing::{list_due, ListingCache};
    use crate::workspace::pins::{initialize_pins, PinStore};
    use futures::executor::block_on;
    use WorkspaceFile as F;

    const T: &str = "concierge";

    fn main() -> AgentId {
        AgentId::parse("main").unwrap()
    }

    fn pins(pairs: &[(&str, &str)]) -> Pins {
        Pins { template: Some(T.into()), files: pairs.iter().map(|(f, h)| (f.to_string(), h.to_string())).collect() }
    }

    #[test]
    fn first_hit_wins_agent_then_template_then_defaults() {
        let agent = Listing::of(["SOUL.md"]);
        let tpl = Listing::of(["SOUL.md", "IDENTITY.md"]);
        let def = Listing::of(["SOUL.md", "IDENTITY.md", "USER.md"]);
        let layers = Layers { agent: &agent, template: Some((T, &tpl)), defaults: &def };
        let r = |f| resolve_file(&main(), &layers, &Pins::default(), f).unwrap();
        assert_eq!(r("SOUL.md"), Some(Resolution { key: "agents/main/SOUL.md".into(), layer: Layer::Agent }));
        assert_eq!(
            r("IDENTITY.md"),
            Some(Resolution { key: "_catalog/concierge/workspace/IDENTITY.md".into(), layer: Layer::Template })
        );
        assert_eq!(
            r("USER.md"),
            Some(Resolution { key: "_catalog/defaults/workspace/USER.md".into(), layer: Layer::Defaults })
        );
        assert_eq!(r("TOOLS.md"), None);
        // Without a template: agent → defaults.
        let layers = Layers { agent: &agent, template: None, defaults: &def };
        assert_eq!(
            resolve_file(&main(), &layers, &Pins::default(), "IDENTITY.md").unwrap().unwrap().layer,
            Layer::Defaults
        );
    }

    #[test]
    fn guardrails_come_from_the_pin_never_the_live_template() {
        let hex = "ab".repeat(32);
        let none = Listing::default();
        let tpl = Listing::of(["GUARDRAILS.md", "PLATFORM.md"]);
        let def = Listing::of(["GUARDRAILS.md", "PLATFORM.md"]);
        let layers = Layers { agent: &none, template: Some((T, &tpl)), defaults: &def };
        let p = pins(&[("GUARDRAILS.md", &hex)]);
        let g = resolve_file(&main(), &layers, &p, "GUARDRAILS.md").unwrap().unwrap();
        assert_eq!(g.layer, Layer::Pinned);
        assert_eq!(g.key, format!("_catalog/concierge/workspace-versions/GUARDRAILS.md@sha256:{hex}"));
        // Unpinned guardrail: defaults, not the template's live file.
        let pl = resolve_file(&main(), &layers, &p, "PLATFORM.md").unwrap().unwrap();
        assert_eq!(pl.layer, Layer::Defaults);
        // Pins taken for another template do not apply.
        let other = Pins { template: Some("other".into()), ..p.clone() };
        assert_eq!(resolve_file(&main(), &layers, &other, "GUARDRAILS.md").unwrap().unwrap().layer, Layer::Defaults);
        // An agent override still wins.
        let agent = Listing::of(["GUARDRAILS.md"]);
        let layers = Layers { agent: &agent, ..layers };
        assert_eq!(resolve_file(&main(), &layers, &p, "GUARDRAILS.md").unwrap().unwrap().layer, Layer::Agent);
    }

    fn fixture() -> MemStore {
        let s = MemStore::default();
        s.put_text("_catalog/defaults/workspace/SOUL.md", "Default soul of {{AGENT_NAME}}.");
        s.put_text("_catalog/defaults/workspace/IDENTITY.md", "- **Name:** Default");
        s.put_text("_catalog/defaults/workspace/GUARDRAILS.md", "default guardrails");
        s.put_text(
            "_catalog/concierge/workspace/IDENTITY.md",
            "- **Name:** Conci\nServing {{HUMAN_NAME}} at {{TENANT_NAME}}. {{KEEP}}",
        );
        s.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "v1 {{HUMAN_NAME}}");
        s.put_text("agents/main/TOOLS.md", "tools for {{HUMAN_NAME}}");
        s.put_text("agents/main/memory/2026-01-01.md", "not a root file");
        s
    }

    /// The prompt loader's two steps (the due listings, then the resolution)
    /// with the caches a Session keeps between turns.
    #[derive(Default)]
    struct Caches {
        listings: ListingCache,
        texts: TextCache,
        /// R2 operations of the last call.
        last_ops: u32,
    }

    fn resolve_all(
        s: &MemStore,
        template: Option<&str>,
        pins: &Pins,
        values: &PlaceholderValues,
        wanted: &[F],
        c: &mut Caches,
        now: i64,
    ) -> ResolvedWorkspace {
        let prefixes = OverlayPrefixes::new(&main(), template).unwrap();
        let (listed, lists) = block_on(list_due(s, &mut c.listings, &prefixes.wants(), now)).unwrap();
        let layers = ListedLayers::new(&prefixes, &listed);
        let (ws, reads) =
            block_on(resolve_listed(s, &main(), template, &layers, pins, values, wanted, &mut c.texts)).unwrap();
        c.last_ops = lists + reads;
        ws
    }

    fn values() -> PlaceholderValues {
        PlaceholderValues { human_name: Some("Eve\u{202E}<!-- x -->{{AGENT_NAME}}".into()), ..Default::default() }
    }

    #[test]
    fn each_layer_serves_its_files_and_live_files_get_placeholders() {
        let s = fixture();
        let sql = MemSql::default();
        let ps = PinStore::new(&sql);
        ps.init().unwrap();
        let p = block_on(initialize_pins(&s, &ps, T, 0)).unwrap();
        let mut cache = Caches::default();
        let ws = resolve_all(&s, Some(T), &p, &values(), &F::ALL, &mut cache, 1_000);
        assert_eq!(&*ws.files[&F::Soul], "Default soul of Conci.", "AGENT_NAME from IDENTITY's name line");
        assert_eq!(ws.layers[&F::Soul], Layer::Defaults);
        assert_eq!(&*ws.files[&F::Identity], "- **Name:** Conci\nServing Eve\\{\\{AGENT\\_NAME\\}\\} at —. {{KEEP}}");
        assert_eq!(ws.layers[&F::Identity], Layer::Template);
        assert_eq!(&*ws.files[&F::Guardrails], "v1 {{HUMAN_NAME}}", "pinned files are served verbatim");
        assert_eq!(ws.layers[&F::Guardrails], Layer::Pinned);
        assert_eq!(&*ws.files[&F::Tools], "tools for Eve\\{\\{AGENT\\_NAME\\}\\}");
        assert_eq!(ws.layers[&F::Tools], Layer::Agent);
        assert!(!ws.files.contains_key(&F::User));

        // The template edits GUARDRAILS.md: the agent keeps the pinned bytes.
        s.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "v2 wider");
        let ws = resolve_all(&s, Some(T), &p, &values(), &F::ALL, &mut cache, 120_000);
        assert_eq!(&*ws.files[&F::Guardrails], "v1 {{HUMAN_NAME}}");
        // Accepted: the new pin serves v2.
        let p2 = Pins { files: [("GUARDRAILS.md".to_owned(), sha256_hex(b"v2 wider"))].into(), ..p.clone() };
        block_on(crate::workspace::pins::ensure_version(&s, T, "GUARDRAILS.md", &sha256_hex(b"v2 wider"), b"v2 wider"))
            .unwrap();
        let ws = resolve_all(&s, Some(T), &p2, &values(), &F::ALL, &mut cache, 120_001);
        assert_eq!(&*ws.files[&F::Guardrails], "v2 wider");
    }

    #[test]
    fn steady_state_is_one_listing_and_edits_are_seen() {
        let s = fixture();
        let p = Pins { template: Some(T.into()), files: BTreeMap::new() };
        let mut cache = Caches::default();
        let v = values();
        resolve_all(&s, Some(T), &p, &v, &F::ALL, &mut cache, 0);
        assert!(cache.last_ops >= 3 + 4, "three listings and the texts: {}", cache.last_ops);
        s.ops.borrow_mut().clear();
        resolve_all(&s, Some(T), &p, &v, &F::ALL, &mut cache, 30_000);
        assert_eq!(*s.ops.borrow(), ["list agents/main/"], "only the agent's own listing");
        assert_eq!(cache.last_ops, 1);

        // An agent file edited in R2 is seen on the next call.
        s.put_text("agents/main/TOOLS.md", "new tools");
        let ws = resolve_all(&s, Some(T), &p, &v, &F::ALL, &mut cache, 31_000);
        assert_eq!(&*ws.files[&F::Tools], "new tools");
        assert_eq!(cache.last_ops, 2);

        // A template edit is seen once the listing's TTL ran out.
        s.put_text("_catalog/concierge/workspace/IDENTITY.md", "- **Name:** Renamed");
        let ttl = SHARED_LAYER_TTL_MS;
        let ws = resolve_all(&s, Some(T), &p, &v, &F::ALL, &mut cache, ttl - 1);
        assert!(ws.files[&F::Identity].contains("Conci"), "cached listing within the TTL");
        let ws = resolve_all(&s, Some(T), &p, &v, &F::ALL, &mut cache, ttl);
        assert_eq!(&*ws.files[&F::Identity], "- **Name:** Renamed");
        assert_eq!(&*ws.files[&F::Soul], "Default soul of Renamed.");

        // An agent override created from outside wins at once.
        s.put_text("agents/main/IDENTITY.md", "- **Name:** Mine");
        let ws = resolve_all(&s, Some(T), &p, &v, &F::ALL, &mut cache, ttl + 1);
        assert_eq!(ws.layers[&F::Identity], Layer::Agent);
    }

    #[test]
    fn bootstrap_comes_from_the_agent_prefix_only() {
        let tpl = Listing::of(["BOOTSTRAP.md"]);
        let def = Listing::of(["BOOTSTRAP.md"]);
        let none = Listing::default();
        let layers = Layers { agent: &none, template: Some((T, &tpl)), defaults: &def };
        assert_eq!(
            resolve_file(&main(), &layers, &Pins::default(), "BOOTSTRAP.md").unwrap(),
            None,
            "inherited copies are ignored"
        );
        let own = Listing::of(["BOOTSTRAP.md"]);
        let layers = Layers { agent: &own, ..layers };
        assert_eq!(
            resolve_file(&main(), &layers, &Pins::default(), "BOOTSTRAP.md").unwrap().unwrap().layer,
            Layer::Agent
        );

        // Through the store: the agent deletes its own copy and is out of
        // commissioning mode, although template and defaults still ship one.
        let s = fixture();
        s.put_text("_catalog/defaults/workspace/BOOTSTRAP.md", "default ceremony");
        s.put_text("_catalog/concierge/workspace/BOOTSTRAP.md", "template ceremony");
        s.put_text("agents/main/BOOTSTRAP.md", "my ceremony");
        let mut cache = Caches::default();
        let load = |cache: &mut Caches, now| resolve_all(&s, Some(T), &Pins::default(), &values(), &F::ALL, cache, now);
        assert_eq!(load(&mut cache, 0).files.get(&F::Bootstrap).map(|t| &**t), Some("my ceremony"));
        block_on(s.delete(&["agents/main/BOOTSTRAP.md".into()])).unwrap();
        assert!(!load(&mut cache, 1).files.contains_key(&F::Bootstrap));
    }

    #[test]
    fn without_a_template_files_come_from_agent_then_defaults() {
        let s = fixture();
        let mut cache = Caches::default();
        let v = PlaceholderValues { agent_name: Some("Zed".into()), ..Default::default() };
        let ws = resolve_all(&s, None, &Pins::default(), &v, &[F::Soul, F::Identity, F::Guardrails], &mut cache, 0);
        assert_eq!(&*ws.files[&F::Soul], "Default soul of Zed.", "AGENT_NAME var beats IDENTITY");
        assert_eq!(ws.layers[&F::Identity], Layer::Defaults);
        assert_eq!(&*ws.files[&F::Guardrails], "default guardrails");
        assert!(!s.ops.borrow().iter().any(|o| o.contains("concierge")));
    }

    #[test]
    fn a_missing_pinned_version_falls_back_to_defaults() {
        let s = fixture();
        let p = pins(&[("GUARDRAILS.md", &"cd".repeat(32))]);
        let mut cache = Caches::default();
        let ws = resolve_all(&s, Some(T), &p, &values(), &[F::Guardrails], &mut cache, 0);
        assert_eq!(&*ws.files[&F::Guardrails], "default guardrails");
        assert_eq!(ws.layers[&F::Guardrails], Layer::Defaults);
    }

    #[test]
    fn identity_name_lines() {
        assert_eq!(identity_name("# IDENTITY\n- **Name:** Ada\n- **Vibe:** calm").as_deref(), Some("Ada"));
        assert_eq!(identity_name("Name: Bob").as_deref(), Some("Bob"));
        assert_eq!(identity_name("- **Name:** (pick something)"), None);
        assert_eq!(identity_name("- **Name:** {{AGENT_NAME}}"), None);
        assert_eq!(identity_name("- Vibe: calm"), None);
    }
}
