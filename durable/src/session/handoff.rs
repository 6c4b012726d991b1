//! A session's side of handing work off ([`crate::tasks`]): the tools that
//! ask a peer (`delegate`), start a background sub-agent (`spawn_task`) and
//! list or cancel those (`tasks`, and `/tasks` in chat); offered beside the
//! session's own tools, run here.
//!
//! A `delegate` call queues the task in the peer's delegated Session object
//! and waits for that object's answer, which its own alarm works out, so
//! the asking turn holds one request open and no CPU while it waits. The
//! wait is bounded (`DELEGATE_TIMEOUT_SECONDS`); past it the peer's answer
//! is stopped and the model told.
//!
//! A `spawn_task` call hands the task to the Agent object, which starts it
//! in a Session object of its own (or queues it), and the turn ends at
//! once; the sub-agent's side is [`super::subagent`].

use super::deps::SessionDeps;
use super::reply::{send, send_answer};
use super::store::SessionStore;
use crate::inbound::Inbound;
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::protocol::api::StopRequest;
use crate::protocol::tasks::{TaskCall, TaskReply, TaskRequest};
use crate::tasks::{delegate, spawn};
use crate::toolkit::{ToolOutcome, ToolSpec};
use r2_layout::{AssistantBlock, Message};
use serde_json::Value;

/// `tools` with the handing-off tools this session is offered, sorted.
/// (Not among a `run_code` script's tools: a script looping over peers or
/// spawning is not a loop the model sees.)
pub fn with_tools(deps: &SessionDeps<'_>, mut tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let cfg = &deps.config.tasks;
    let before = tools.len();
    if delegate::offered(cfg, deps.key) {
        tools.push(delegate::spec(&cfg.delegates));
    }
    if spawn::offered(deps.key) && cfg.subagents_max > 0 {
        tools.push(spawn::spawn_spec());
        tools.push(spawn::tasks_spec());
    }
    if tools.len() > before {
        crate::order::sort_by(&mut tools, |a, b| a.name.cmp(&b.name));
    }
    tools
}

/// Runs a handing-off call of the turn answering `inbound` (`None`:
/// `name` is another tool). `live` is the history so far.
pub async fn run<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    inbound: &Inbound,
    live: &[Message],
    name: &str,
    args: &Value,
) -> Option<ToolOutcome> {
    match name {
        delegate::TOOL => Some(ask_peer(p, deps, inbound, live, args).await),
        spawn::SPAWN_TOOL => Some(start_task(p, deps, inbound, args).await),
        spawn::TASKS_TOOL => Some(task_list_tool(p, deps, args).await),
        _ => None,
    }
}

/// A call to the agent's task list, as the Agent object answers it (a
/// failure to reach it is a reply that says so).
async fn task_call<P: Platform>(p: &P, deps: &SessionDeps<'_>, call: TaskCall) -> TaskReply {
    let req = TaskRequest { agent: deps.config.agent.to_string(), call };
    p.tasks(&req).await.unwrap_or_else(|e| TaskReply { ok: false, error: Some(e.to_string()), ..Default::default() })
}

async fn start_task<P: Platform>(p: &P, deps: &SessionDeps<'_>, inbound: &Inbound, args: &Value) -> ToolOutcome {
    if !spawn::offered(deps.key) || deps.config.tasks.subagents_max == 0 {
        return ToolOutcome::err("spawn_task is not available here: a background run does not start others");
    }
    let target = deps.watch.answering().unwrap_or_else(|| inbound.reply_target.clone());
    let spawn = match spawn::spawn_request(deps.key, &target, args) {
        Ok(s) => s,
        Err(refused) => return refused,
    };
    spawn::spawned(&task_call(p, deps, TaskCall::Spawn(spawn)).await)
}

async fn task_list_tool<P: Platform>(p: &P, deps: &SessionDeps<'_>, args: &Value) -> ToolOutcome {
    let origin = Some(deps.key.clone());
    match args.get("action").and_then(Value::as_str) {
        Some("list") => {
            let reply = task_call(p, deps, TaskCall::List { origin }).await;
            let text = spawn::listing(&reply, p.now_ms());
            if reply.ok {
                ToolOutcome::ok(text)
            } else {
                ToolOutcome::err(text)
            }
        }
        Some("cancel") => {
            let Some(id) = args.get("id").and_then(Value::as_str) else {
                return ToolOutcome::err("cancel needs 'id' (like t3)");
            };
            let reply = task_call(p, deps, TaskCall::Cancel { id: id.to_owned(), origin }).await;
            let text = spawn::cancelled(&reply, id);
            if reply.ok {
                ToolOutcome::ok(text)
            } else {
                ToolOutcome::err(text)
            }
        }
        _ => ToolOutcome::err("action must be \"list\" or \"cancel\""),
    }
}

/// `/tasks` in chat (no LLM call): this chat's tasks, or one cancelled.
pub async fn answer_command<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    inbound: &Inbound,
    cmd: spawn::Command,
) -> Result<(), StorageError> {
    let origin = Some(deps.key.clone());
    let text = match cmd {
        spawn::Command::List => spawn::listing(&task_call(p, deps, TaskCall::List { origin }).await, p.now_ms()),
        spawn::Command::Cancel(id) => {
            spawn::cancelled(&task_call(p, deps, TaskCall::Cancel { id: id.clone(), origin }).await, &id)
        }
        spawn::Command::Help => spawn::HELP.to_owned(),
    };
    send(p, deps, &inbound.reply_target, &text).await
}

/// The tasks this round's calls started (their results, in order).
pub fn started(results: &[Message]) -> Vec<String> {
    results
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { tool_name, content, is_error: false, .. } if tool_name == spawn::SPAWN_TOOL => {
                content.iter().find_map(|r2_layout::ResultBlock::Text { text }| spawn::id_in_result(text))
            }
            _ => None,
        })
        .collect()
}

/// Ends the turn after a round that started background tasks: the model's
/// words of that round and a line naming them are the answer (no further
/// model call); the line joins the history as the agent's message.
#[allow(clippy::too_many_arguments)]
pub async fn end_after_spawn<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    inbound: &Inbound,
    seq: i64,
    said: &str,
    ids: &[String],
) -> Result<(), StorageError> {
    let line = spawn::started_line(ids);
    let answer = Message::Assistant {
        content: vec![AssistantBlock::Text { text: line.clone() }],
        timestamp: p.now_ms(),
        model: Some(deps.config.llm.model.clone()),
        stop_reason: Some("end_turn".to_owned()),
        usage: None,
    };
    store.append(session_id, &answer)?;
    let text = if said.trim().is_empty() { line } else { format!("{}\n\n{line}", said.trim_end()) };
    let text = super::meter::with_footer(deps, inbound, text);
    send_answer(p, deps, &inbound.reply_target, &text, seq).await
}

/// Peers asked since the message being answered (refusals count too: a
/// model that keeps asking is stopped either way).
fn asked_this_turn(live: &[Message]) -> u32 {
    let since = live.iter().rev().take_while(|m| !matches!(m, Message::User { .. }));
    since.filter(|m| matches!(m, Message::ToolResult { tool_name, .. } if tool_name == delegate::TOOL)).count() as u32
}

async fn ask_peer<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    inbound: &Inbound,
    live: &[Message],
    args: &Value,
) -> ToolOutcome {
    let cfg = &deps.config.tasks;
    if !delegate::offered(cfg, deps.key) {
        return ToolOutcome::err("delegate is not available in this conversation; no call was made");
    }
    let nth = asked_this_turn(live);
    let asking = match delegate::check(cfg, deps.key, args, nth) {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let id = delegate::request_id(deps.key, &inbound.dedupe_key, nth, &asking);
    let req = delegate::request(&asking, deps.key, id, p.now_ms());
    let answer = std::pin::pin!(p.ask_session(&req));
    let timer = std::pin::pin!(p.sleep(cfg.delegate_timeout_ms));
    match futures::future::select(answer, timer).await {
        futures::future::Either::Left((Ok(outcome), _)) => delegate::answered(&asking.peer, &outcome),
        futures::future::Either::Left((Err(e), _)) => {
            p.log(LogLevel::Warn, &format!("delegate to {}: {e}", asking.peer));
            delegate::unreachable(&asking.peer, &e.to_string())
        }
        futures::future::Either::Right(((), _)) => {
            let stop = StopRequest { request: Some(req.inbound.dedupe_key.clone()) };
            if let Err(e) = p.stop_session(&asking.session, &stop).await {
                p.log(LogLevel::Warn, &format!("delegate to {}: not stopped after its timeout: {e}", asking.peer));
            }
            delegate::timed_out(&asking.peer, cfg.delegate_timeout_ms)
        }
    }
}
