//! The Agent object's routes: a request (method, path, query, body) read
//! into its [`crate::protocol`] type and handed to the [`AgentHost`]'s
//! method; the answer written back. The Worker's `Agent` class only turns
//! its request into an [`Incoming`] and the [`Served`] into a response.
//!
//! Each route runs as a function of its own ([`apart`]): a request
//! compiles only its route's code. Refusals are `{"error"}` with a status
//! ([`Answer::error`]).

use super::approvals::ApprovalAnswer;
use super::host::{AgentHost, AgentRuntime, PinsAnswer, PinsCall, Refusal};
use super::notifications::parse_after;
use super::people::PeopleAnswer;
use crate::apart::apart;
use crate::ports::StorageError;
use crate::protocol::agent::*;
use crate::protocol::approvals::{ApprovalCall, APPROVALS_PATH};
use crate::protocol::call::Method::{Get, Post};
use crate::protocol::dreams::{Tap, DREAMS_STATUS_PATH, DREAMS_TAP_PATH};
use crate::protocol::mcp::{McpToolsRequest, MCP_STATUS_PATH, MCP_TOOLS_PATH};
use crate::protocol::memory::{self as mem, MemoryCall};
use crate::protocol::people::{PeopleCall, PEOPLE_PATH};
use crate::protocol::reminders::{ReminderCall, REMINDERS_PATH};
use crate::protocol::session::SessionTouch;
use crate::protocol::tasks::{TaskRequest, TASKS_PATH};
use crate::protocol::usage::{MeterRequest, ReportRequest, METER_PATH, REPORT_PATH};
use crate::protocol::workspace::{SessionStartRequest, SESSION_START_PATH};
use crate::serving::{stream_headers, Answer, Incoming, Keepalive, OpenStream, Served};
use serde::Serialize;
use serde_json::Value;

/// How often an idle notification stream gets a keep-alive comment.
pub const FEED_PING_MS: u64 = 25_000;

/// A route's answer: `Err` is a refusal, answered as it is.
type Reply = Result<Answer, Answer>;

impl From<Refusal> for Answer {
    fn from(r: Refusal) -> Self {
        Answer::error(r.status, &r.message)
    }
}

impl From<StorageError> for Answer {
    fn from(e: StorageError) -> Self {
        Answer::error(500, &e.to_string())
    }
}

/// `value` as a 200 JSON answer.
fn json<T: Serialize>(value: T) -> Reply {
    Ok(Answer::json(200, &value))
}

/// A memory call, with the memory settings of the agent named in `?agent=`
/// (an invalid one is a 500 naming it). A write that ends the emptiness
/// the main session was told of tells it before the answer goes.
async fn memory<R: AgentRuntime + 'static>(host: &AgentHost<R>, req: &Incoming, call: MemoryCall) -> Reply {
    let agent = req.query("agent");
    if let Some(agent) = agent {
        host.apply_memory_settings(agent).map_err(|e| Answer::error(500, e.message()))?;
    }
    let result = host.memory_call(call);
    host.tell_main_of_memory(agent.unwrap_or_default()).await;
    match result {
        Ok(reply) => json(reply),
        Err(e) => Err(Answer::error(e.status(), e.message())),
    }
}

fn pins_answer(answer: Result<PinsAnswer, Refusal>) -> Reply {
    match answer? {
        PinsAnswer::Pins(p) => json(p),
        PinsAnswer::Status(s) => json(s),
        PinsAnswer::Accepted(a) => json(a),
    }
}

/// The `?agent=` of a read.
fn agent_of(req: &Incoming) -> String {
    req.query("agent").unwrap_or_default().to_owned()
}

/// Answers one request to the Agent object. `streams` opens the sink of
/// the notification feed's event stream.
pub async fn serve<R: AgentRuntime + 'static>(host: &AgentHost<R>, req: &Incoming, streams: &dyn OpenStream) -> Served {
    if (req.method, req.path.as_str()) == (Get, NOTIFY_STREAM_PATH) {
        return feed_stream(host, req, streams);
    }
    Served::Answer(route(host, req).await.unwrap_or_else(|refused| refused))
}

async fn route<R: AgentRuntime + 'static>(host: &AgentHost<R>, req: &Incoming) -> Reply {
    let path = req.path.as_str();
    match (req.method, path) {
        (_, HEALTH_PATH) => Ok(Answer::ok()),
        (Post, mem::CALL_PATH) => {
            apart(async {
                let call: MemoryCall = req.json("memory call")?;
                memory(host, req, call).await
            })
            .await
        }
        (Post, mem::OP_PATH | mem::SEARCH_PATH | mem::GET_PATH) => apart(memory_named(host, req)).await,
        (Get, mem::STATS_PATH) => match req.query("store") {
            None => json(serde_json::json!({"loaded": host.loaded_stores()})),
            Some(store) => memory(host, req, MemoryCall::Stats { store: store.into() }).await,
        },
        (Post, TOUCH_PATH) => {
            apart(async {
                let touch: SessionTouch = req.json("touch")?;
                host.touch(&touch)?;
                Ok(Answer::ok())
            })
            .await
        }
        (Post, SESSION_START_PATH) => {
            apart(async {
                let body: SessionStartRequest = req.json("session start")?;
                json(host.session_start(&body).await?)
            })
            .await
        }
        (Post, PEOPLE_PATH) => {
            apart(async {
                let call: PeopleCall = req.json("people call")?;
                match host.people(&call).await? {
                    PeopleAnswer::Door(reply) => json(reply),
                    PeopleAnswer::Reply(reply) => json(reply),
                }
            })
            .await
        }
        (Post, APPROVALS_PATH) => {
            apart(async {
                let call: ApprovalCall = req.json("approvals call")?;
                match host.approvals(&call).await? {
                    ApprovalAnswer::State(s) => json(s),
                    ApprovalAnswer::List(rows) => json(rows),
                }
            })
            .await
        }
        (Get, SESSIONS_PATH) => json(host.sessions()?),
        (Get, PINS_GET_PATH | PINS_STATUS_PATH) => {
            apart(async {
                let call = if path == PINS_GET_PATH { PinsCall::Get } else { PinsCall::Status };
                let pins = PinsRequest { agent: agent_of(req), ..Default::default() };
                pins_answer(host.pins(call, &pins).await)
            })
            .await
        }
        (Post, PINS_INIT_PATH | PINS_ACCEPT_PATH) => {
            apart(async {
                let call = if path == PINS_INIT_PATH { PinsCall::Init } else { PinsCall::Accept };
                let pins: PinsRequest = req.json("pins call")?;
                pins_answer(host.pins(call, &pins).await)
            })
            .await
        }
        (Post, TICK_PATH) => {
            apart(async {
                let tick: TickRequest = req.json("tick")?;
                json(host.tick(&tick).await?)
            })
            .await
        }
        (Post, MCP_TOOLS_PATH) => {
            apart(async {
                let body: McpToolsRequest = req.json("MCP tools call")?;
                json(host.mcp_catalog(&body, false).await?)
            })
            .await
        }
        (Get, MCP_STATUS_PATH) => {
            apart(async {
                let body = McpToolsRequest { agent: agent_of(req) };
                json(host.mcp_catalog(&body, true).await?)
            })
            .await
        }
        (Post, DREAMS_TAP_PATH) => {
            apart(async {
                let tap: Tap = req.json("tap")?;
                json(host.tap(&tap).await?)
            })
            .await
        }
        (Get, DREAMS_STATUS_PATH) => json(host.dream_status(&agent_of(req))?),
        (Post, METER_PATH) => {
            apart(async {
                let body: MeterRequest = req.json("meter call")?;
                json(host.meter(&body)?)
            })
            .await
        }
        (Post, REPORT_PATH) => {
            apart(async {
                let body: ReportRequest = req.json("report call")?;
                json(host.usage_report(&body.agent, &body.period, body.thread.as_deref())?)
            })
            .await
        }
        (Post, NOTIFY_PUBLISH_PATH) => {
            apart(async {
                let body: PublishRequest = req.json("publish call")?;
                json(Published { added: host.publish(&body)? })
            })
            .await
        }
        (Post, TASKS_PATH) => {
            apart(async {
                let body: TaskRequest = req.json("tasks call")?;
                json(host.tasks(&body).await?)
            })
            .await
        }
        (Post, THREADS_CREATE_PATH) => {
            apart(async {
                let body: ThreadCreate = req.json("thread")?;
                match host.create_thread(&body)? {
                    Some(row) => Ok(Answer::json(201, &row)),
                    None => Err(Answer::error(409, "the thread exists")),
                }
            })
            .await
        }
        (Get, THREADS_LIST_PATH) => json(host.threads()?),
        (Post, REMINDERS_PATH) => {
            apart(async {
                let call: ReminderCall = req.json("reminders call")?;
                json(host.reminders(&call).await?)
            })
            .await
        }
        (Get, SCHEDULE_STATUS_PATH) => match host.schedule_status().await? {
            Some(status) => json(status),
            None => json(serde_json::json!({"ticks": 0, "note": "no cron trigger reached this agent yet"})),
        },
        _ => Err(Answer::error(404, "not found")),
    }
}

/// `/memory/op|search|get`: the call's fields without `call` (a search
/// without `k` gets 10).
async fn memory_named<R: AgentRuntime + 'static>(host: &AgentHost<R>, req: &Incoming) -> Reply {
    let mut v: Value = req.json("memory call")?;
    let name = req.path.trim_start_matches("/memory/");
    if let Some(o) = v.as_object_mut() {
        o.insert("call".into(), Value::String(name.to_owned()));
        if name == "search" && !o.contains_key("k") {
            o.insert("k".into(), 10.into());
        }
    }
    // Read from bytes again, not with `from_value`: the only other reader of a
    // type from a `Value` is the judge's, and each type read that way links
    // a second copy of its reader (serde_json's `Value` deserializer).
    let bytes = serde_json::to_vec(&v).map_err(|e| Answer::error(400, &format!("bad memory call: {e}")))?;
    let call: MemoryCall = hearth_json::from_slice(&bytes)
        .map_err(|e| Answer::error(400, &format!("bad memory call: {}", hearth_json::unplaced(&e))))?;
    memory(host, req, call).await
}

/// `GET /notifications/stream?after=`: the feed as server-sent events, kept
/// alive while anyone listens.
fn feed_stream<R: AgentRuntime + 'static>(host: &AgentHost<R>, req: &Incoming, streams: &dyn OpenStream) -> Served {
    let sink = match streams.open() {
        Ok(s) => s,
        Err(e) => return Answer::error(500, &format!("no event stream: {e}")).into(),
    };
    if let Err(e) = host.attach_feed(sink, parse_after(req.query("after"))) {
        return Answer::from(e).into();
    }
    let feed = host.feed();
    let keepalive = feed.claim_pinger().then(|| {
        let feed = feed.clone();
        Keepalive { every_ms: FEED_PING_MS, ping: Box::new(move || feed.ping()) }
    });
    Served::Stream { headers: stream_headers(), keepalive }
}

#[cfg(test)]
mod tests;
