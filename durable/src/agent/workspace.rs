//! A session's start ([`crate::protocol::workspace`]): the Agent object
//! composes the agent's workspace (overlay layers agent → template →
//! defaults, pins, skills, daily notes) with a cache of its own, and hands a
//! new Session object what its scope may see, with the agent's MCP servers,
//! in one call.
//!
//! The cache follows the loader's TTLs ([`crate::workspace::listing`]): the
//! agent's root is listed on every call, its folders every minute, shared
//! layers every five, and a file is read again only when its etag changed.
//! It is kept in the object's SQLite too, so an evicted object woken by a
//! session's first turn lists what is due and reads nothing unchanged.

use super::host::{AgentHost, AgentRuntime, Refusal};
use crate::ports::{LogLevel, Sql, StorageError};
use crate::protocol::pins::Pins;
use crate::protocol::workspace::{SessionStartReply, SessionStartRequest, WorkspaceSnapshot};
use crate::settings::agent_ids;
use crate::settings::overlay::OverlayConfig;
use crate::storage::Schema;
use crate::workspace::pins::{self as pin_ops, PinStore};
use crate::workspace::{load_workspace, WorkspaceCache};
use r2_layout::{keys, AgentId, Scope};

const TABLES: Schema = Schema {
    name: "workspace_cache",
    statements: &["CREATE TABLE IF NOT EXISTS workspace_cache (agent TEXT PRIMARY KEY, snapshot TEXT NOT NULL)"],
};

/// A kept snapshot larger than this is not stored (a row holds at most
/// 2 MB): the object then reads the files again after an eviction.
pub const MAX_KEPT_BYTES: usize = 1_500_000;

/// The cache kept in SQLite for `agent`, if any (one that no longer reads is
/// dropped: the files are read again).
fn kept<S: Sql + ?Sized>(sql: &S, agent: &AgentId) -> Result<WorkspaceCache, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec("SELECT snapshot FROM workspace_cache WHERE agent = ?", &[agent.as_str().into()])?;
    let snapshot = rows
        .into_iter()
        .next()
        .and_then(|mut r| crate::storage::col_string(&mut r, 0).into())
        .and_then(|raw: String| hearth_json::from_slice::<WorkspaceSnapshot>(raw.as_bytes()).ok());
    Ok(snapshot.map(|s| WorkspaceCache::from_snapshot(s, None)).unwrap_or_default())
}

fn keep<S: Sql + ?Sized>(sql: &S, agent: &AgentId, cache: &WorkspaceCache) -> Result<bool, StorageError> {
    let raw = serde_json::to_string(&cache.snapshot(agent, true)).map_err(|e| StorageError(e.to_string()))?;
    if raw.len() > MAX_KEPT_BYTES {
        return Ok(false);
    }
    crate::storage::ensure(sql, &TABLES)?;
    sql.exec(
        "INSERT INTO workspace_cache (agent, snapshot) VALUES (?, ?)
         ON CONFLICT(agent) DO UPDATE SET snapshot = excluded.snapshot",
        &[agent.as_str().into(), raw.into()],
    )?;
    Ok(true)
}

impl<R: AgentRuntime> AgentHost<R>
where
    R: 'static,
{
    /// What a Session object needs on its first turn (see the module docs).
    pub async fn session_start(&self, req: &SessionStartRequest) -> Result<SessionStartReply, Refusal> {
        let agent = req.session_key.agent();
        let vars = self.runtime().vars();
        if !agent_ids(vars).iter().any(|a| a == agent.as_str()) {
            return Err(Refusal { status: 404, message: format!("unknown agent {:?}", agent.as_str()) });
        }
        let config =
            self.runtime().agent_config(agent.as_str()).map_err(|e| Refusal { status: 500, message: e.to_string() })?;
        let overlay = &config.overlay;
        // The store itself, not a counting wrapper: the loader and the
        // catalog are the same code (one compiled copy) as a session's.
        let store = self.runtime().store()?;
        let mut reply = SessionStartReply { pins: self.start_pins(&store, overlay).await?, ..Default::default() };
        let mut mcp_absent = false;
        if req.workspace {
            let scope = req.session_key.scope();
            let mut cache = self.take_workspace(agent)?;
            let loaded = load_workspace(
                &store,
                agent,
                scope,
                &req.today,
                &req.yesterday,
                self.runtime().now_ms(),
                &overlay.inputs(&reply.pins),
                &crate::session::toolbox::all_tool_names(),
                &mut cache,
            )
            .await;
            match loaded {
                Ok(ws) => {
                    for w in &ws.warnings {
                        self.runtime().log(LogLevel::Warn, w);
                    }
                    // More than the agent's root listing: something new to keep.
                    if ws.r2_ops > 1 {
                        match keep(&**self.runtime().sql(), agent, &cache) {
                            Ok(true) => {}
                            Ok(false) => {
                                self.runtime().log(LogLevel::Warn, "workspace too large to keep between wakes")
                            }
                            Err(e) => self.runtime().log(LogLevel::Warn, &format!("workspace not kept: {e}")),
                        }
                    }
                    // The agent's root was listed just now: it says whether there is an mcp.json.
                    let mcp_key = keys::workspace_key(agent, crate::mcp::catalog::FILE);
                    mcp_absent = cache
                        .listing(&keys::agent_prefix(agent), true)
                        .is_some_and(|root| !root.iter().any(|o| o.key == mcp_key));
                    reply.r2_ops = ws.r2_ops;
                    reply.workspace = Some(cache.snapshot(agent, scope == Scope::Main));
                    self.put_workspace(agent, cache);
                }
                Err(e) => {
                    self.put_workspace(agent, cache);
                    return Err(e.into());
                }
            }
        }
        if req.mcp {
            reply.mcp = Some(self.catalog_for(agent.as_str(), false, mcp_absent, &store).await?);
            // The catalog's one read: mcp.json, unless the listing showed there is none.
            reply.r2_ops += u32::from(!mcp_absent);
        }
        Ok(reply)
    }

    /// The pins the workspace is resolved with: none without a template.
    async fn start_pins<S: crate::ports::ObjectStore>(
        &self,
        store: &S,
        overlay: &OverlayConfig,
    ) -> Result<Pins, Refusal> {
        let Some(template) = overlay.template.as_deref() else { return Ok(Pins::default()) };
        let sql = &**self.runtime().sql();
        let pins = PinStore::new(sql);
        pins.init()?;
        let now = self.runtime().now_ms();
        match pin_ops::initialize_pins(store, &pins, template, now).await {
            Ok(p) => Ok(p),
            Err(e) => {
                // As a Session asking for pins would: the default guardrails, never the live template.
                self.runtime()
                    .log(LogLevel::Error, &format!("pinned versions unavailable, serving default guardrails: {e}"));
                Ok(Pins::default())
            }
        }
    }

    /// The cache for `agent`: in memory, else as kept in SQLite, else empty.
    fn take_workspace(&self, agent: &AgentId) -> Result<WorkspaceCache, StorageError> {
        let mut slot = self.workspace.borrow_mut();
        match slot.take() {
            Some((a, cache)) if a == *agent => Ok(cache),
            _ => {
                drop(slot);
                kept(&**self.runtime().sql(), agent)
            }
        }
    }

    fn put_workspace(&self, agent: &AgentId, cache: WorkspaceCache) {
        *self.workspace.borrow_mut() = Some((agent.clone(), cache));
    }
}
