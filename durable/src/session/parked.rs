//! A turn parked on a tool call that waits for the owner (`APPROVE_TOOLS`,
//! an MCP server's `"approve"` list; see `crate::approvals`).
//!
//! The call is written down here (`parked_calls`) and the Agent object is
//! asked to ask the owner; then the turn stops. Its message stays open and
//! the object's alarm is set for the deadline: nothing waits in memory, no
//! request stays open, an eviction loses nothing. When the Agent object
//! wakes the session (a tap, the console, the API), or the deadline comes,
//! the drain asks how it went ([`still_waiting`]) and the turn resumes
//! from its history ([`resume`]): an approved call runs once, a denied or
//! unanswered one becomes a tool error the model reads; then the turn goes
//! on to its answer as any turn does.
//!
//! A call marked `ran` before it runs is never run again: an eviction in
//! the middle gives the model an error saying so instead.

use super::deps::SessionDeps;
use super::reply::send;
use super::store::SessionStore;
use crate::approvals as ap;
use crate::inbound::{ChatKind, Inbound};
use crate::memory::tools::MemoryToolContext;
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::protocol::approvals::{ApprovalAsk, ApprovalCall, Decision, Origin};
use crate::storage::{col_i64, col_string};
use crate::toolkit::{ToolOutcome, ToolSpec};
use crate::tools::ToolContext;
use crate::workspace::Workspace;
use r2_layout::{AssistantBlock, Message};
use serde_json::Value;

const TABLE: &str = "CREATE TABLE IF NOT EXISTS parked_calls (
    seq INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, approval INTEGER NOT NULL,
    deadline INTEGER NOT NULL, state TEXT NOT NULL, PRIMARY KEY (seq, call_id))";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "parked_calls", statements: &[TABLE] };

/// What a call may do now.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Run it (it needs no approval, or the owner approved it).
    Run,
    /// Do not: this is its result.
    Refuse(ToolOutcome),
    /// It waits for the owner: the turn stops here.
    Park,
}

/// What [`resume`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Nothing was left, or every call left is answered now: go on.
    Go,
    /// A call still waits.
    Parked,
}

/// Told when a call approved ran into an eviction.
pub const INTERRUPTED: &str =
    "Not run again: this approved call was interrupted (the agent restarted) and runs only once. Ask to try again.";

struct Row {
    approval: i64,
    deadline: i64,
    state: String,
}

fn row<S: Sql + ?Sized>(sql: &S, seq: i64, call_id: &str) -> Result<Option<Row>, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec(
        "SELECT approval, deadline, state FROM parked_calls WHERE seq = ? AND call_id = ?",
        &[seq.into(), call_id.into()],
    )?;
    Ok(rows.into_iter().next().map(|mut r| Row {
        approval: col_i64(&r, 0),
        deadline: col_i64(&r, 1),
        state: col_string(&mut r, 2),
    }))
}

fn set_state<S: Sql + ?Sized>(sql: &S, seq: i64, call_id: &str, state: &str) -> Result<(), StorageError> {
    sql.exec(
        "UPDATE parked_calls SET state = ? WHERE seq = ? AND call_id = ?",
        &[state.into(), seq.into(), call_id.into()],
    )?;
    Ok(())
}

fn refused(deps: &SessionDeps<'_>, tool: &str, d: Decision) -> Gate {
    Gate::Refuse(ToolOutcome::err(ap::refusal(tool, d, deps.config.approval.timeout_ms / 60_000)))
}

/// The gate of a decided call: run (once) or refuse.
fn decided<S: Sql + ?Sized>(
    sql: &S,
    deps: &SessionDeps<'_>,
    seq: i64,
    call_id: &str,
    tool: &str,
    d: Decision,
) -> Result<Gate, StorageError> {
    set_state(sql, seq, call_id, d.as_str())?;
    Ok(match d {
        Decision::Approved => {
            // Marked before it runs: an eviction in the middle never runs it twice.
            set_state(sql, seq, call_id, "ran")?;
            Gate::Run
        }
        Decision::Waiting => Gate::Park,
        other => refused(deps, tool, other),
    })
}

/// May the call `call_id` of message `seq` (tool `name`) run now? A call
/// that needs approval and was not asked about yet is asked about here.
#[allow(clippy::too_many_arguments)]
pub async fn gate<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    inbound: &Inbound,
    seq: i64,
    call_id: &str,
    name: &str,
    args: &Value,
) -> Result<Gate, StorageError> {
    if !super::toolbox::needs_approval(deps, name) {
        return Ok(Gate::Run);
    }
    let sql = p.sql();
    if let Some(r) = row(sql, seq, call_id)? {
        return match r.state.as_str() {
            "ran" => Ok(Gate::Refuse(ToolOutcome::err(INTERRUPTED))),
            "waiting" => {
                let d = status(p, deps, r.approval, r.deadline).await?;
                decided(sql, deps, seq, call_id, name, d)
            }
            other => {
                let d = Decision::parse(other).unwrap_or(Decision::Denied);
                decided(sql, deps, seq, call_id, name, d)
            }
        };
    }
    let origin = Origin {
        channel: inbound.channel,
        chat: inbound.chat_id.clone(),
        group: inbound.kind == ChatKind::Group,
        sender: inbound.sender_name.clone(),
    };
    let ask = ApprovalAsk {
        agent: deps.config.agent.to_string(),
        session_key: deps.key.clone(),
        seq,
        call_id: call_id.to_owned(),
        tool: name.to_owned(),
        args: ap::short_args(args),
        origin,
        timeout_ms: deps.config.approval.timeout_ms,
    };
    let state = match p.approvals(&ApprovalCall::Ask(ask)).await {
        Ok(s) => s,
        Err(e) => {
            p.log(LogLevel::Error, &format!("approvals: {name} could not be asked about: {e}"));
            return Ok(Gate::Refuse(ToolOutcome::err(format!(
                "Not run: {name} needs my owner's approval and I could not ask them just now ({e}). Tell the user to try again later."
            ))));
        }
    };
    sql.exec(
        "INSERT OR REPLACE INTO parked_calls (seq, call_id, tool, approval, deadline, state) VALUES (?, ?, ?, ?, ?, ?)",
        &[seq.into(), call_id.into(), name.into(), state.id.into(), state.expires_at.into(), "waiting".into()],
    )?;
    if state.decision != Decision::Waiting {
        return decided(sql, deps, seq, call_id, name, state.decision);
    }
    deps.watch.tool(name, "waiting for approval");
    p.log(LogLevel::Info, &format!("{}: {name} waits for the owner (request {})", deps.key, state.id));
    let asked_here = state.asked_in.as_ref().is_some_and(|a| a.channel == inbound.channel && a.chat == inbound.chat_id);
    if !asked_here {
        let minutes = deps.config.approval.timeout_ms / 60_000;
        send(p, deps, &inbound.reply_target, &ap::waiting_note(name, minutes)).await?;
    }
    Ok(Gate::Park)
}

/// How request `approval` stands, asked of the Agent object (expired once
/// its deadline passed). When the object cannot answer: still waiting.
async fn status<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    approval: i64,
    deadline: i64,
) -> Result<Decision, StorageError> {
    let call =
        ApprovalCall::Status { agent: deps.config.agent.to_string(), id: approval, expire: p.now_ms() >= deadline };
    match p.approvals(&call).await {
        Ok(s) => Ok(s.decision),
        Err(e) => {
            p.log(LogLevel::Warn, &format!("approvals: request {approval} not read ({e}); asked again later"));
            Ok(Decision::Waiting)
        }
    }
}

/// How long to wait before asking again when the Agent object could not answer.
const ASK_AGAIN_MS: i64 = 60_000;

/// For a message whose turn is parked: when to come back while its call
/// still waits (`None`: it was decided, the turn goes on). One call to the
/// Agent object, only when a call of `seq` is parked.
pub async fn still_waiting<P: Platform>(p: &P, deps: &SessionDeps<'_>, seq: i64) -> Result<Option<i64>, StorageError> {
    let sql = p.sql();
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec(
        "SELECT call_id, tool, approval, deadline FROM parked_calls WHERE seq = ? AND state = 'waiting'",
        &[seq.into()],
    )?;
    let mut next: Option<i64> = None;
    for mut r in rows {
        let (call_id, approval, deadline) = (col_string(&mut r, 0), col_i64(&r, 2), col_i64(&r, 3));
        match status(p, deps, approval, deadline).await? {
            Decision::Waiting => {
                let now = p.now_ms();
                let at = if now >= deadline { now + ASK_AGAIN_MS } else { deadline };
                next = Some(next.map_or(at, |n| n.min(at)));
            }
            d => set_state(sql, seq, &call_id, d.as_str())?,
        }
    }
    Ok(next)
}

/// After a turn: its deadline when it stopped on a call that waits.
pub fn waiting<S: Sql + ?Sized>(sql: &S, seq: i64) -> Result<Option<i64>, StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    let rows = sql.exec("SELECT MIN(deadline) FROM parked_calls WHERE seq = ? AND state = 'waiting'", &[seq.into()])?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| v.as_i64()))
}

/// What a resumed turn needs to run the calls left.
pub struct Resuming<'a> {
    pub memory: &'a MemoryToolContext<'a>,
    pub workspace: &'a Workspace,
    pub tools: &'a [ToolSpec],
}

/// At the start of a turn: the calls of the model's last message that have
/// no result yet (a turn that parked, or was evicted between its calls) are
/// answered now, each through [`gate`], before the model is called again.
#[allow(clippy::too_many_arguments)]
pub async fn resume<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    seq: i64,
    session_id: &str,
    with: Resuming<'_>,
) -> Result<Resume, StorageError> {
    // Only a message one of whose calls was parked (one small query per
    // turn): a turn cut short in its calls for another reason is repaired
    // by the replay as before, and the history is not read here.
    let sql = p.sql();
    crate::storage::ensure(sql, &TABLES)?;
    if sql.exec("SELECT 1 FROM parked_calls WHERE seq = ? LIMIT 1", &[seq.into()])?.is_empty() {
        return Ok(Resume::Go);
    }
    // Apart: a turn with nothing parked (nearly all) need not compile the rest.
    crate::apart::apart(async move {
        let rows: Vec<Message> =
            deps.history.borrow_mut().rows(store, session_id)?.iter().map(|(_, m)| m.clone()).collect();
        let Some(last_model) = rows.iter().rposition(|m| matches!(m, Message::Assistant { .. })) else {
            return Ok(Resume::Go);
        };
        let Message::Assistant { content, .. } = &rows[last_model] else { return Ok(Resume::Go) };
        let answered: Vec<&str> = rows[last_model + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let open: Vec<(String, String, Value)> = content
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::ToolCall { id, name, arguments } if !answered.contains(&id.as_str()) => {
                    Some((id.clone(), name.clone(), arguments.clone()))
                }
                _ => None,
            })
            .collect();
        if open.is_empty() {
            return Ok(Resume::Go);
        }
        let cfg = deps.config;
        let names: Vec<&str> = with.tools.iter().map(|t| &*t.name).collect();
        let tool_ctx = ToolContext {
            store: p.store(),
            agent: &cfg.agent,
            scope: deps.key.scope(),
            workspace: with.workspace,
            tool_names: &names,
            session_id,
            live: &rows,
            now_ms: p.now_ms(),
            history_keep: cfg.history_keep,
        };
        for (id, name, args) in open {
            let outcome = match gate(p, deps, inbound, seq, &id, &name, &args).await? {
                Gate::Park => return Ok(Resume::Parked),
                Gate::Refuse(outcome) => outcome,
                Gate::Run => {
                    deps.watch.tool(&name, "running");
                    let outcome = super::code::run(p, deps, with.memory, &tool_ctx, &name, &args).await;
                    deps.watch.tool(&name, if outcome.is_error { "error" } else { "done" });
                    outcome
                }
            };
            store.append(session_id, &super::toolbox::result_message(id, name, outcome, p.now_ms()))?;
        }
        Ok(Resume::Go)
    })
    .await
}
