//! Pinned guardrail files (seed 001): GUARDRAILS.md, PLATFORM.md and
//! CAPABILITIES.md of an agent's template are served by the hash recorded
//! for the agent, from the content-addressed version store
//! `_catalog/{template}/workspace-versions/{file}@sha256:{hex}`, until an
//! admin accepts the template's newer content.
//!
//! The pins live in the Agent object's SQLite (table `overlay_pins`, one row
//! per template and file, plus `overlay_pin_init` marking a template whose
//! pins were taken). Everything here goes through the [`Sql`] and
//! [`ObjectStore`] ports, so it is tested natively.

use crate::ports::{ObjectStore, PutOptions, Sql, SqlValue, StorageError};
use crate::protocol::pins::{AcceptOutcome, PinStatusFile, Pins};
use crate::text::sha256_hex;
use crate::workspace::history::{self, Actor, HistoryError};
use r2_layout::keys::{self, KeyError};
use r2_layout::{AgentId, WorkspaceFile};
use serde::Serialize;
use std::collections::BTreeMap;
use std::future::Future;

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("{0:?} is not a pinned guardrail file (GUARDRAILS.md, PLATFORM.md, CAPABILITIES.md)")]
    NotPinnable(String),
    #[error("template {template:?} has no {file}")]
    NoTemplateFile { template: String, file: String },
    #[error("the version store has no {0}")]
    VersionMissing(String),
}

/// The guardrail file named `file`, or [`PinError::NotPinnable`].
pub fn pinnable(file: &str) -> Result<WorkspaceFile, PinError> {
    WorkspaceFile::from_file_name(file)
        .filter(|f| f.is_guardrail())
        .ok_or_else(|| PinError::NotPinnable(file.to_owned()))
}

/// The guardrail files, in load order.
pub fn guardrail_files() -> impl Iterator<Item = WorkspaceFile> {
    WorkspaceFile::ALL.into_iter().filter(|f| f.is_guardrail())
}

const TABLES: crate::storage::Schema = crate::storage::Schema { name: "pins", statements: &SCHEMA };

const SCHEMA: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS overlay_pins (template TEXT NOT NULL, file TEXT NOT NULL,
        sha256 TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (template, file))",
    "CREATE TABLE IF NOT EXISTS overlay_pin_init (template TEXT PRIMARY KEY, initialized_at INTEGER NOT NULL)",
];

const UPSERT_PIN: &str = "INSERT INTO overlay_pins (template, file, sha256, updated_at) VALUES (?, ?, ?, ?)
    ON CONFLICT(template, file) DO UPDATE SET sha256 = excluded.sha256, updated_at = excluded.updated_at";
const MARK_INIT: &str = "INSERT OR IGNORE INTO overlay_pin_init (template, initialized_at) VALUES (?, ?)";

/// Pin rows in the Agent object's SQLite.
pub struct PinStore<'a, Q: Sql> {
    sql: &'a Q,
}

impl<'a, Q: Sql> PinStore<'a, Q> {
    pub fn new(sql: &'a Q) -> Self {
        PinStore { sql }
    }

    /// Creates the tables (once per object).
    pub fn init(&self) -> Result<(), StorageError> {
        crate::storage::ensure(self.sql, &TABLES)
    }

    /// The pins taken for `template`, or `None` if they never were.
    pub fn load(&self, template: &str) -> Result<Option<Pins>, StorageError> {
        let init = self.sql.exec("SELECT 1 FROM overlay_pin_init WHERE template = ?", &[template.into()])?;
        if init.is_empty() {
            return Ok(None);
        }
        let rows = self.sql.exec("SELECT file, sha256 FROM overlay_pins WHERE template = ?", &[template.into()])?;
        let files = crate::order::btree_map(rows.into_iter().filter_map(|r| {
            let mut it = r.into_iter();
            Some((it.next()?.into_string()?, it.next()?.into_string()?))
        }));
        Ok(Some(Pins { template: Some(template.to_owned()), files }))
    }

    /// Records the first pins of `template` and marks it initialised, atomically.
    pub fn record_initial(
        &self,
        template: &str,
        files: &BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let mut stmts: Vec<(String, Vec<SqlValue>)> = files
            .iter()
            .map(|(f, h)| {
                (UPSERT_PIN.to_owned(), vec![template.into(), f.as_str().into(), h.as_str().into(), now_ms.into()])
            })
            .collect();
        stmts.push((MARK_INIT.to_owned(), vec![template.into(), now_ms.into()]));
        self.sql.exec_atomic(stmts)
    }

    /// Advances (or adds) one pin.
    pub fn set(&self, template: &str, file: &str, sha256: &str, now_ms: i64) -> Result<(), StorageError> {
        self.sql.exec_atomic(vec![
            (UPSERT_PIN.to_owned(), vec![template.into(), file.into(), sha256.into(), now_ms.into()]),
            (MARK_INIT.to_owned(), vec![template.into(), now_ms.into()]),
        ])
    }
}

/// Writes `body` to the version store under its hash unless it is there
/// already (HEAD before PUT). Returns whether it wrote.
pub async fn ensure_version<S: ObjectStore>(
    store: &S,
    template: &str,
    file: &str,
    sha256: &str,
    body: &[u8],
) -> Result<bool, PinError> {
    let key = keys::catalog_version(template, file, sha256)?;
    if store.head(&key).await?.is_some() {
        return Ok(false);
    }
    let opts = PutOptions { content_type: Some("text/markdown; charset=utf-8".into()), custom_metadata: Vec::new() };
    store.put(&key, body.to_vec(), opts).await?;
    Ok(true)
}

/// At an agent's first use with `template`: pins the template's current
/// guardrail files (those it has), storing their bytes in the version store.
/// Idempotent: pins already taken for `template` are returned unchanged.
pub async fn initialize_pins<S: ObjectStore, Q: Sql>(
    store: &S,
    pins: &PinStore<'_, Q>,
    template: &str,
    now_ms: i64,
) -> Result<Pins, PinError> {
    if let Some(existing) = pins.load(template)? {
        return Ok(existing);
    }
    let mut files = BTreeMap::new();
    for f in guardrail_files() {
        let name = f.file_name();
        let Some(obj) = store.get(&keys::catalog_template(template, name)?).await? else { continue };
        let hash = sha256_hex(&obj.body);
        ensure_version(store, template, name, &hash, &obj.body).await?;
        files.insert(name.to_owned(), hash);
    }
    pins.record_initial(template, &files, now_ms)?;
    Ok(Pins { template: Some(template.to_owned()), files })
}

/// Per guardrail file (pinned, or present in the template): the pinned hash
/// and content against the template's current ones.
pub async fn pin_status<S: ObjectStore>(
    store: &S,
    pins: &Pins,
    template: &str,
) -> Result<Vec<PinStatusFile>, PinError> {
    let mut out = Vec::new();
    for f in guardrail_files() {
        let name = f.file_name();
        let current = store.get(&keys::catalog_template(template, name)?).await?;
        let current_sha256 = current.as_ref().map(|o| sha256_hex(&o.body));
        let current_content = current.map(|o| String::from_utf8_lossy(&o.body).into_owned());
        let pinned_sha256 = pins.hash_for(template, name).map(str::to_owned);
        let pinned_content = match &pinned_sha256 {
            None => None,
            Some(h) if current_sha256.as_ref() == Some(h) => current_content.clone(),
            Some(h) => {
                let key = keys::catalog_version(template, name, h)?;
                store.get(&key).await?.map(|o| String::from_utf8_lossy(&o.body).into_owned())
            }
        };
        if pinned_sha256.is_none() && current_sha256.is_none() {
            continue;
        }
        let update_available = current_sha256.is_some() && current_sha256 != pinned_sha256;
        out.push(PinStatusFile {
            file: name.to_owned(),
            pinned_sha256,
            current_sha256,
            pinned_content,
            current_content,
            update_available,
        });
    }
    Ok(out)
}

/// The template's current content of a pinned file, stored in the version
/// store: what an accept advances pins to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    pub file: String,
    pub sha256: String,
}

/// Reads the template's current `file` once and stores it in the version
/// store (idempotent). The first half of an accept, shared by a bulk accept.
pub async fn prepare_accept<S: ObjectStore>(store: &S, template: &str, file: &str) -> Result<Accepted, PinError> {
    pinnable(file)?;
    let obj = store
        .get(&keys::catalog_template(template, file)?)
        .await?
        .ok_or_else(|| PinError::NoTemplateFile { template: template.to_owned(), file: file.to_owned() })?;
    let sha256 = sha256_hex(&obj.body);
    ensure_version(store, template, file, &sha256, &obj.body).await?;
    Ok(Accepted { file: file.to_owned(), sha256 })
}

/// The agent's half of an accept: the pin advances to `accepted.sha256`
/// (which must be in the version store) and any agent-scoped override of the
/// file is deleted, so the agent serves exactly the accepted bytes. The
/// change is recorded in the workspace history (by `pins`): what the agent
/// served before (its override, else the previously pinned version, else
/// the defaults) and the accepted bytes; what it served is stored before the
/// override is deleted. Returns the previous pin.
#[allow(clippy::too_many_arguments)]
pub async fn apply_accept<S: ObjectStore, Q: Sql>(
    store: &S,
    pins: &PinStore<'_, Q>,
    agent: &AgentId,
    template: &str,
    accepted: &Accepted,
    now_ms: i64,
    keep: usize,
) -> Result<Option<String>, PinError> {
    pinnable(&accepted.file)?;
    let version = keys::catalog_version(template, &accepted.file, &accepted.sha256)?;
    let Some(after) = store.get(&version).await? else {
        return Err(PinError::VersionMissing(version));
    };
    let previous = pins.load(template)?.and_then(|p| p.files.get(&accepted.file).cloned());
    let own_key = keys::workspace_key(agent, &accepted.file);
    let before = match store.get(&own_key).await? {
        Some(own) => Some(own.body),
        None => {
            let served = match &previous {
                Some(sha) => keys::catalog_version(template, &accepted.file, sha)?,
                None => keys::catalog_default(&accepted.file),
            };
            store.get(&served).await?.map(|o| o.body)
        }
    };
    let why = format!(
        "accepted template {template}'s {} (sha256:{})",
        accepted.file,
        &accepted.sha256[..accepted.sha256.len().min(12)]
    );
    let history_err = |e: HistoryError| match e {
        HistoryError::Storage(s) => PinError::Storage(s),
        HistoryError::Key(k) => PinError::Key(k),
        other => PinError::Storage(StorageError(other.to_string())),
    };
    // The replaced content goes into the history's store before anything
    // changes: an override deleted is never an override lost.
    let change = history::prepare(
        store,
        agent,
        &accepted.file,
        before.as_deref(),
        Some(&after.body),
        Actor::Pins,
        &why,
        None,
        now_ms,
    )
    .await
    .map_err(history_err)?;
    pins.set(template, &accepted.file, &accepted.sha256, now_ms)?;
    store.delete(&[own_key]).await?;
    if let Some(change) = change {
        history::write_records(store, agent, &change, keep).await.map_err(history_err)?;
    }
    Ok(previous)
}

/// Accepts the template's current `file` for one agent.
pub async fn accept_update<S: ObjectStore, Q: Sql>(
    store: &S,
    pins: &PinStore<'_, Q>,
    agent: &AgentId,
    template: &str,
    file: &str,
    now_ms: i64,
    keep: usize,
) -> Result<AcceptOutcome, PinError> {
    let accepted = prepare_accept(store, template, file).await?;
    let previous_sha256 = apply_accept(store, pins, agent, template, &accepted, now_ms, keep).await?;
    Ok(AcceptOutcome { file: accepted.file, sha256: accepted.sha256, previous_sha256 })
}

/// One agent's result in a bulk accept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAcceptResult {
    pub agent: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkAcceptResult {
    pub template: String,
    pub file: String,
    pub sha256: String,
    pub results: Vec<AgentAcceptResult>,
    pub succeeded: usize,
    pub failed: usize,
}

/// Accepts the template's current `file` for every agent in `agents`: one
/// read of the template base, then `apply(agent, accepted)` per agent (in
/// the Worker: a call to that agent's Agent object, which owns its pins).
/// A failing agent does not stop the others; each result is reported.
pub async fn accept_bulk<S, F, Fut>(
    store: &S,
    template: &str,
    file: &str,
    agents: &[String],
    mut apply: F,
) -> Result<BulkAcceptResult, PinError>
where
    S: ObjectStore,
    F: FnMut(String, Accepted) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let accepted = prepare_accept(store, template, file).await?;
    let mut results = Vec::with_capacity(agents.len());
    for agent in agents {
        let r = apply(agent.clone(), accepted.clone()).await;
        results.push(AgentAcceptResult { agent: agent.clone(), ok: r.is_ok(), error: r.err() });
    }
    let succeeded = results.iter().filter(|r| r.ok).count();
    Ok(BulkAcceptResult {
        template: template.to_owned(),
        file: accepted.file,
        sha256: accepted.sha256,
        failed: results.len() - succeeded,
        succeeded,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Fault, MemSql, MemStore, StoreOp};
    use futures::executor::block_on;

    const T: &str = "concierge";

    fn agent(id: &str) -> AgentId {
        AgentId::parse(id).unwrap()
    }

    fn store_with_template() -> MemStore {
        let s = MemStore::default();
        s.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "Never share secrets.");
        s.put_text("_catalog/concierge/workspace/PLATFORM.md", "Platform v1");
        s.put_text("_catalog/concierge/workspace/SOUL.md", "not pinned");
        s
    }

    fn pin_store(sql: &MemSql) -> PinStore<'_, MemSql> {
        let p = PinStore::new(sql);
        p.init().unwrap();
        p
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(sha256_hex(b"").len(), 64);
    }

    #[test]
    fn initialize_pins_hashes_guardrails_and_fills_the_version_store_once() {
        let s = store_with_template();
        let sql = MemSql::default();
        let ps = pin_store(&sql);
        assert_eq!(ps.load(T).unwrap(), None);
        let pins = block_on(initialize_pins(&s, &ps, T, 1)).unwrap();
        let g = sha256_hex(b"Never share secrets.");
        assert_eq!(pins.files.len(), 2, "only the guardrail files the template has");
        assert_eq!(pins.hash_for(T, "GUARDRAILS.md"), Some(g.as_str()));
        assert_eq!(pins.hash_for("other", "GUARDRAILS.md"), None);
        let vkey = format!("_catalog/concierge/workspace-versions/GUARDRAILS.md@sha256:{g}");
        assert_eq!(s.objects.borrow()[&vkey].body, b"Never share secrets.");
        assert!(s.ops.borrow().iter().any(|o| o == &format!("head {vkey}")), "HEAD before PUT");
        assert_eq!(ps.load(T).unwrap(), Some(pins.clone()));

        // Idempotent: a second call neither reads R2 nor writes.
        let before = s.op_count();
        assert_eq!(block_on(initialize_pins(&s, &ps, T, 2)).unwrap(), pins);
        assert_eq!(s.op_count(), before);

        // Another agent on the same template finds the versions present: no PUT.
        let sql2 = MemSql::default();
        let ps2 = pin_store(&sql2);
        s.ops.borrow_mut().clear();
        block_on(initialize_pins(&s, &ps2, T, 3)).unwrap();
        assert!(!s.ops.borrow().iter().any(|o| o.starts_with("put ")), "{:?}", s.ops.borrow());
    }

    #[test]
    fn a_template_without_guardrails_initialises_to_no_pins() {
        let s = MemStore::default();
        let sql = MemSql::default();
        let ps = pin_store(&sql);
        let pins = block_on(initialize_pins(&s, &ps, T, 1)).unwrap();
        assert!(pins.files.is_empty());
        assert_eq!(ps.load(T).unwrap(), Some(pins), "initialised, even if empty");
    }

    #[test]
    fn status_shows_an_update_with_both_contents_and_accept_clears_it() {
        let s = store_with_template();
        let sql = MemSql::default();
        let ps = pin_store(&sql);
        let a = agent("main");
        let pins = block_on(initialize_pins(&s, &ps, T, 1)).unwrap();
        let st = block_on(pin_status(&s, &pins, T)).unwrap();
        assert_eq!(st.iter().map(|f| f.file.as_str()).collect::<Vec<_>>(), ["GUARDRAILS.md", "PLATFORM.md"]);
        assert!(st.iter().all(|f| !f.update_available));

        s.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "Share anything.");
        s.put_text("agents/main/GUARDRAILS.md", "agent override");
        let st = block_on(pin_status(&s, &pins, T)).unwrap();
        let g = &st[0];
        assert!(g.update_available);
        assert_eq!(g.pinned_content.as_deref(), Some("Never share secrets."));
        assert_eq!(g.current_content.as_deref(), Some("Share anything."));
        assert!(!st[1].update_available);

        let out = block_on(accept_update(&s, &ps, &a, T, "GUARDRAILS.md", 5, 50)).unwrap();
        assert_eq!(out.sha256, sha256_hex(b"Share anything."));
        assert_eq!(out.previous_sha256, Some(sha256_hex(b"Never share secrets.")));
        // The workspace history has the change: the override it replaced, by pins.
        let kept = block_on(history::view::versions(&s, &a, "GUARDRAILS.md", 5)).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].actor, Actor::Pins);
        assert_eq!(kept[0].previous, Some(sha256_hex(b"agent override")));
        assert_eq!(kept[0].sha256, Some(sha256_hex(b"Share anything.")));
        assert!(!s.objects.borrow().contains_key("agents/main/GUARDRAILS.md"), "override deleted");
        let vkey = format!("_catalog/concierge/workspace-versions/GUARDRAILS.md@sha256:{}", out.sha256);
        assert!(s.objects.borrow().contains_key(&vkey));
        let pins = ps.load(T).unwrap().unwrap();
        assert!(block_on(pin_status(&s, &pins, T)).unwrap().iter().all(|f| !f.update_available));
    }

    #[test]
    fn an_accept_whose_history_cannot_be_stored_keeps_the_agents_override() {
        let s = store_with_template();
        let sql = MemSql::default();
        let ps = pin_store(&sql);
        let a = agent("main");
        block_on(initialize_pins(&s, &ps, T, 1)).unwrap();
        s.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "Share anything.");
        s.put_text("agents/main/GUARDRAILS.md", "agent override");
        // R2 refuses the history's blobs: the override's content could not be kept.
        s.inject(Fault::always(StoreOp::Put, "history/main/blobs/"));
        assert!(block_on(accept_update(&s, &ps, &a, T, "GUARDRAILS.md", 5, 50)).is_err());
        let own = s.objects.borrow().get("agents/main/GUARDRAILS.md").map(|o| o.body.clone());
        assert_eq!(own.as_deref(), Some(&b"agent override"[..]), "the override is still there");
        assert_eq!(ps.load(T).unwrap().unwrap().files["GUARDRAILS.md"], sha256_hex(b"Never share secrets."));
        // Once R2 takes it, the accept goes through and the override is in the history.
        s.clear_faults();
        block_on(accept_update(&s, &ps, &a, T, "GUARDRAILS.md", 6, 50)).unwrap();
        let kept = block_on(history::view::versions(&s, &a, "GUARDRAILS.md", 5)).unwrap();
        assert_eq!(kept[0].previous, Some(sha256_hex(b"agent override")));
        let blob = format!("history/main/blobs/{}", sha256_hex(b"agent override"));
        assert!(s.objects.borrow().contains_key(&blob));
    }

    #[test]
    fn a_guardrail_added_to_the_template_later_waits_for_an_accept() {
        let s = store_with_template();
        let sql = MemSql::default();
        let ps = pin_store(&sql);
        let pins = block_on(initialize_pins(&s, &ps, T, 1)).unwrap();
        s.put_text("_catalog/concierge/workspace/CAPABILITIES.md", "may send email");
        assert_eq!(block_on(initialize_pins(&s, &ps, T, 2)).unwrap(), pins, "not pinned silently");
        let st = block_on(pin_status(&s, &pins, T)).unwrap();
        let c = st.iter().find(|f| f.file == "CAPABILITIES.md").unwrap();
        assert!(c.update_available);
        assert_eq!(c.pinned_sha256, None);
    }

    #[test]
    fn accept_refuses_what_cannot_be_pinned() {
        let s = store_with_template();
        let sql = MemSql::default();
        let ps = pin_store(&sql);
        let a = agent("main");
        assert!(matches!(block_on(accept_update(&s, &ps, &a, T, "SOUL.md", 1, 50)), Err(PinError::NotPinnable(_))));
        assert!(matches!(
            block_on(accept_update(&s, &ps, &a, T, "CAPABILITIES.md", 1, 50)),
            Err(PinError::NoTemplateFile { .. })
        ));
        assert!(matches!(block_on(accept_update(&s, &ps, &a, "../x", "GUARDRAILS.md", 1, 50)), Err(PinError::Key(_))));
        let bogus = Accepted { file: "GUARDRAILS.md".into(), sha256: "0".repeat(64) };
        assert!(matches!(block_on(apply_accept(&s, &ps, &a, T, &bogus, 1, 50)), Err(PinError::VersionMissing(_))));
        assert_eq!(ps.load(T).unwrap(), None, "nothing recorded");
    }

    #[test]
    fn bulk_accept_reads_the_template_once_and_reports_partial_failures() {
        let s = store_with_template();
        let sqls: Vec<MemSql> = (0..3).map(|_| MemSql::default()).collect();
        let ids = ["a1", "a2", "a3"];
        for sql in &sqls {
            block_on(initialize_pins(&s, &pin_store(sql), T, 1)).unwrap();
        }
        s.put_text("_catalog/concierge/workspace/GUARDRAILS.md", "v2");
        sqls[1].fail_writes.set(true);
        s.ops.borrow_mut().clear();
        let agents: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        let result = block_on(accept_bulk(&s, T, "GUARDRAILS.md", &agents, |agent, accepted| {
            let i = ids.iter().position(|x| *x == agent).unwrap();
            let sql = &sqls[i];
            let s = &s;
            async move {
                let ps = PinStore::new(sql);
                apply_accept(s, &ps, &AgentId::parse(&agent).unwrap(), T, &accepted, 9, 50)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }))
        .unwrap();
        let template_reads =
            s.ops.borrow().iter().filter(|o| *o == "get _catalog/concierge/workspace/GUARDRAILS.md").count();
        assert_eq!(template_reads, 1, "single template-base read");
        assert_eq!(result.succeeded, 2);
        assert_eq!(result.failed, 1);
        assert!(!result.results[1].ok && result.results[1].error.as_deref().unwrap_or("").contains("injected"));
        let v2 = sha256_hex(b"v2");
        for (i, sql) in sqls.iter().enumerate() {
            let pins = PinStore::new(sql).load(T).unwrap().unwrap();
            let expect = if i == 1 { sha256_hex(b"Never share secrets.") } else { v2.clone() };
            assert_eq!(pins.files["GUARDRAILS.md"], expect, "agent {i}");
        }
    }
}
