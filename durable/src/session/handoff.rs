//! A session's side of handing work off ([`crate::tasks`]): the tools that
//! ask a peer (`delegate`) and, offered beside the session's own, the
//! calls that run them.
//!
//! A `delegate` call queues the task in the peer's delegated Session object
//! and waits for that object's answer, which its own alarm works out, so
//! the asking turn holds one request open and no CPU while it waits. The
//! wait is bounded (`DELEGATE_TIMEOUT_SECONDS`); past it the peer's answer
//! is stopped and the model told.

use super::deps::SessionDeps;
use crate::inbound::Inbound;
use crate::ports::{LogLevel, Platform};
use crate::protocol::api::StopRequest;
use crate::tasks::delegate;
use crate::toolkit::{ToolOutcome, ToolSpec};
use r2_layout::Message;
use serde_json::Value;

/// `tools` with the handing-off tools this session is offered, sorted.
/// (Not among a `run_code` script's tools: a script looping over peers is
/// not a loop the model sees.)
pub fn with_tools(deps: &SessionDeps<'_>, mut tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let cfg = &deps.config.tasks;
    if !delegate::offered(cfg, deps.key) {
        return tools;
    }
    tools.push(delegate::spec(&cfg.delegates));
    crate::order::sort_by(&mut tools, |a, b| a.name.cmp(&b.name));
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
        _ => None,
    }
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
