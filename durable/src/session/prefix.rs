//! The stable prefix of every request of a session: the system prompt built
//! from the workspace, and the tool list. Byte-identical from turn to turn
//! while the workspace does not change, so the provider's prompt cache hits.

use super::deps::SessionDeps;
use super::toolbox;
use crate::clock;
use crate::llm::cache_ttl::{self, CacheTtl};
use crate::ports::{LogLevel, Platform};
use crate::prompt::{self, RuntimeInfo};
use crate::protocol::workspace::SessionStartRequest;
use crate::toolkit::ToolSpec;
use crate::workspace::{Workspace, WorkspaceCache};

/// The stable part of every request of a session: system prompt and tools.
pub struct Prepared {
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub workspace: Workspace,
    /// Bytes the tool definitions add to a request (for the context estimate).
    pub tools_len: usize,
}

/// What the drain already knows of the session when a turn prepares: its id,
/// and whether the conversation starts with this turn (the history holds at
/// most the user's message). Saves reading both again (a meta row and a
/// `COUNT(*)` of the history) on every turn.
#[derive(Clone, Copy, Debug)]
pub struct KnownSession<'a> {
    pub id: &'a str,
    pub starting: bool,
}

/// Loads the workspace and builds the system prompt and tool list.
/// `known`: the session as the turn's drain read it; `None` (a reset) reads it here.
pub async fn prepare<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    channel: &str,
    known: Option<KnownSession<'_>>,
) -> Prepared {
    let cfg = deps.config;
    let scope = deps.key.scope();
    let (today, yesterday) = clock::today_and_yesterday(p.now_ms(), &cfg.timezone);
    let workspace = {
        // The pins a workspace handed over this turn was resolved with, else the Agent object's now.
        let handed = deps.workspace_cache.borrow_mut().take_handed_pins();
        let pins = match handed {
            Some(pins) => pins,
            None => crate::workspace::pins_for_turn(p, &cfg.overlay).await,
        };
        let overlay = cfg.overlay.inputs(&pins);
        // Taken out for the load, not borrowed across its awaits, so nothing
        // the object serves meanwhile can find it borrowed; `/status` reads
        // the ops count beside it, unknown until the load is done.
        deps.workspace_load_ops.set(None);
        let mut cache = std::mem::take(&mut *deps.workspace_cache.borrow_mut());
        let loaded = crate::workspace::load_workspace(
            p.store(),
            &cfg.agent,
            scope,
            &today,
            &yesterday,
            p.now_ms(),
            &overlay,
            &toolbox::all_tool_names(),
            &mut cache,
        )
        .await;
        *deps.workspace_cache.borrow_mut() = cache;
        deps.workspace_load_ops.set(loaded.as_ref().ok().map(|ws| ws.r2_ops));
        match loaded {
            Ok(ws) => ws,
            Err(e) => {
                // Better to answer with the core prompt than not at all.
                p.log(LogLevel::Error, &format!("workspace load failed: {e}"));
                Workspace::default()
            }
        }
    };
    for w in &workspace.warnings {
        p.log(LogLevel::Warn, w);
    }
    let mcp = mcp_specs(p, deps, known).await;
    let tools = toolbox::session_tools(scope, &cfg.web, mcp);
    let tools = match deps.key {
        // Every call sends the tool definitions: background runs get fewer.
        crate::inbound::SessionKey::Heartbeat(_)
        | crate::inbound::SessionKey::Job { .. }
        | crate::inbound::SessionKey::Task { .. } => toolbox::background_tools(tools),
        _ => tools,
    };
    let tools = super::code::with_run_code(p, deps, tools);
    let tools = super::handoff::with_tools(deps, tools);
    let session_key = deps.key.render();
    let mut system = prompt::build_system_prompt(
        &workspace,
        &RuntimeInfo {
            agent: cfg.agent.as_str(),
            session_key: &session_key,
            channel,
            model: &cfg.llm.model,
            timezone: &cfg.timezone,
            scope,
        },
    );
    if let Some(group) = super::group::group_of(deps) {
        system.push_str("\n\n");
        system.push_str(&crate::routing::group::roster(group, cfg.agent.as_str()));
    }
    let tools_len = tools.iter().map(ToolSpec::wire_len).sum();
    Prepared { system, tools, workspace, tools_len }
}

/// Meta key: when a heartbeat's or job's prompt is sent again, ms after the
/// run queued last (set when it is queued, `crate::scheduled`).
pub const NEXT_RUN_META: &str = "next_run_in_ms";

/// How long the provider is asked to keep the prefix cached
/// ([`crate::llm::cache_ttl`]): heartbeat and job sessions by when their
/// prompt comes again, conversations by `LLM_CACHE_TTL` (5 minutes unless
/// set to `1h`).
pub fn cache_ttl<S: crate::ports::Sql>(
    store: &super::store::SessionStore<'_, S>,
    deps: &SessionDeps<'_>,
) -> Result<CacheTtl, crate::ports::StorageError> {
    use crate::inbound::SessionKey;
    let background = matches!(deps.key, SessionKey::Heartbeat(_) | SessionKey::Job { .. });
    let next_run = if background { store.meta(NEXT_RUN_META)?.and_then(|v| v.parse::<i64>().ok()) } else { None };
    Ok(cache_ttl::prefix_ttl(deps.config.llm.cache_policy, background, next_run))
}

/// A session's first turn in this object, or the start of a conversation:
/// the workspace, its pins and the MCP servers from the Agent object in one
/// call ([`crate::protocol::workspace`]), which [`prepare`] then uses. A
/// warm object in a conversation under way asks nothing. A call that fails
/// leaves it all to [`prepare`], which loads and asks as it always could.
/// `starting`: the conversation begins with this turn.
pub async fn prefetch<P: Platform>(p: &P, deps: &SessionDeps<'_>, session_id: &str, starting: bool) {
    let workspace = deps.workspace_cache.borrow().is_empty();
    let mcp = crate::mcp::toolset::needs_catalog(p.sql(), deps.mcp, session_id, starting).unwrap_or(false);
    if !workspace && !mcp {
        return;
    }
    let (today, yesterday) = clock::today_and_yesterday(p.now_ms(), &deps.config.timezone);
    let req = SessionStartRequest { session_key: deps.key.clone(), today, yesterday, workspace, mcp };
    let reply = match p.session_start(&req).await {
        Ok(r) => r,
        Err(e) => {
            p.log(LogLevel::Warn, &format!("session start from the Agent object failed, loading here: {e}"));
            return;
        }
    };
    if let Some(snapshot) = reply.workspace {
        let mut cache = deps.workspace_cache.borrow_mut();
        // Still empty: nothing loaded it while the call ran.
        if cache.is_empty() {
            *cache = WorkspaceCache::from_snapshot(snapshot, Some(reply.pins));
            cache.count_handed_ops(reply.r2_ops);
        }
    }
    if let Some(catalog) = reply.mcp {
        log_mcp_problems(p, &catalog);
        if let Err(e) = crate::mcp::toolset::freeze_handed(p.sql(), deps.mcp, session_id, catalog) {
            p.log(LogLevel::Warn, &format!("mcp: the session's tools not kept: {e}"));
        }
    }
}

fn log_mcp_problems<P: Platform>(p: &P, catalog: &crate::protocol::mcp::McpCatalog) {
    for e in catalog.servers.iter().filter_map(|s| s.error.as_ref()).chain(&catalog.config_error) {
        p.log(LogLevel::Warn, &format!("mcp: {e}"));
    }
}

/// The session's MCP tools: frozen when the session (or a heartbeat or job
/// run, which starts from an empty history) begins, the same list after.
async fn mcp_specs<P: Platform>(p: &P, deps: &SessionDeps<'_>, known: Option<KnownSession<'_>>) -> Vec<ToolSpec> {
    let store = super::store::SessionStore::new(p.sql());
    let read;
    let (session_id, starting) = match known {
        Some(k) => {
            // The drain counted before the user's message joined, as this would after.
            debug_assert_eq!(
                Some(k.starting),
                store.message_count(k.id).ok().map(|n| n <= 1),
                "the drain's `starting` must be what the history says"
            );
            (k.id, k.starting)
        }
        None => {
            let Ok(Some(id)) = store.meta("session_id") else { return Vec::new() };
            read = id;
            // The first turn of a conversation has only the user's message.
            let starting = store.message_count(&read).map_or(true, |n| n <= 1);
            (read.as_str(), starting)
        }
    };
    let fetched = deps.mcp.borrow().fetched;
    match crate::mcp::toolset::session_catalog(p, deps.mcp, session_id, starting).await {
        Ok(catalog) => {
            if starting && deps.mcp.borrow().fetched > fetched {
                log_mcp_problems(p, &catalog);
            }
            crate::mcp::toolset::specs(&catalog, crate::protocol::mcp::McpScope::of(deps.key))
        }
        Err(e) => {
            p.log(LogLevel::Error, &format!("mcp tools unavailable this turn: {e}"));
            Vec::new()
        }
    }
}
