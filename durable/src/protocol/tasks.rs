//! Calls to an Agent object about its background sub-agents (`spawn_task`,
//! `crate::tasks`): the Agent keeps the list, starts at most
//! `SUBAGENTS_MAX` at once (the rest wait their turn), and hands each
//! result to the chat that asked for it.

use super::call::impl_call;
use crate::inbound::{ReplyTarget, SessionKey};
use serde::{Deserialize, Serialize};

/// `POST` [`TaskRequest`] → [`TaskReply`] (a refusal: 4xx with `{"ok": false, "error"}`).
pub const TASKS_PATH: &str = "/tasks/call";

/// A call for the sub-agents of `agent` (an object does not know its name).
/// It travels flat ([`TaskWire`]: `{"agent", "op", ...}`), so one reader
/// serves every call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TaskWire", into = "TaskWire")]
pub struct TaskRequest {
    pub agent: String,
    pub call: TaskCall,
}

/// What is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCall {
    /// A chat's turn hands a task over.
    Spawn(TaskSpawn),
    /// A sub-agent's session reports how its run ended.
    Done(TaskDone),
    /// The tasks of one chat (`origin`), or of every chat (`None`: the console).
    List { origin: Option<SessionKey> },
    /// Cancels a task that waits or runs (only one of `origin`'s, when named).
    Cancel { id: String, origin: Option<SessionKey> },
}

/// A [`TaskRequest`] on the wire: `op` is `spawn`, `done`, `list` or
/// `cancel`, with the fields that call has.
#[derive(Debug, Clone, Default, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskWire {
    agent: String,
    op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spawn: Option<TaskSpawn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    done: Option<TaskDone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<SessionKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
}

impl From<TaskRequest> for TaskWire {
    fn from(r: TaskRequest) -> Self {
        let (op, wire) = match r.call {
            TaskCall::Spawn(s) => ("spawn", TaskWire { spawn: Some(s), ..Default::default() }),
            TaskCall::Done(d) => ("done", TaskWire { done: Some(d), ..Default::default() }),
            TaskCall::List { origin } => ("list", TaskWire { origin, ..Default::default() }),
            TaskCall::Cancel { id, origin } => ("cancel", TaskWire { id: Some(id), origin, ..Default::default() }),
        };
        TaskWire { agent: r.agent, op: op.to_owned(), ..wire }
    }
}

impl TryFrom<TaskWire> for TaskRequest {
    type Error = String;
    fn try_from(w: TaskWire) -> Result<Self, String> {
        let call = match (w.op.as_str(), w.spawn, w.done, w.id) {
            ("spawn", Some(s), _, _) => TaskCall::Spawn(s),
            ("done", _, Some(d), _) => TaskCall::Done(d),
            ("list", ..) => TaskCall::List { origin: w.origin },
            ("cancel", _, _, Some(id)) => TaskCall::Cancel { id, origin: w.origin },
            (op, ..) => return Err(format!("{op:?} is not a task call with its fields (spawn, done, list, cancel)")),
        };
        Ok(TaskRequest { agent: w.agent, call })
    }
}

/// A task handed over by a chat's turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpawn {
    /// The session that asked: the result is posted in its chat and history.
    pub origin: SessionKey,
    /// Where that chat's answers go (the asking message's reply target).
    pub target: ReplyTarget,
    /// Everything the sub-agent is given: its whole history starts with it.
    pub handoff: String,
    /// A short label for lists.
    pub title: String,
}

/// How a sub-agent's run ended.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskDone {
    pub id: String,
    /// Its answer, or why there is none (`ok: false`).
    pub text: String,
    pub ok: bool,
    /// The model it ran on.
    #[serde(default)]
    pub model: String,
    /// LLM calls, tokens and what they cost (`None`: no price for the model).
    #[serde(default)]
    pub calls: u32,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// One task, as lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRow {
    pub id: String,
    /// `queued`, `running`, `done`, `failed` or `cancelled`.
    pub state: String,
    pub title: String,
    pub origin: String,
    pub created_at: i64,
    #[serde(default)]
    pub started_at: Option<i64>,
    #[serde(default)]
    pub ended_at: Option<i64>,
    /// The result (or why there is none), once ended.
    #[serde(default)]
    pub result: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// The result reached the chat that asked.
    #[serde(default)]
    pub delivered: bool,
}

/// Every answer has this one shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReply {
    pub ok: bool,
    /// The task a spawn made, a cancel touched.
    #[serde(default)]
    pub task: Option<TaskRow>,
    /// A list's tasks, newest first.
    #[serde(default)]
    pub tasks: Vec<TaskRow>,
    /// Tasks of the agent running now, and the most that may.
    #[serde(default)]
    pub running: u32,
    #[serde(default)]
    pub max: u32,
    /// Tasks started before it still waiting, for a queued spawn.
    #[serde(default)]
    pub ahead: u32,
    /// Why not (`ok: false`).
    #[serde(default)]
    pub error: Option<String>,
}

impl_call!(TaskRequest => Agent Post TASKS_PATH, TaskReply, |r| r.agent.clone());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_travel_flat_and_come_back_the_same() {
        let origin = Some(SessionKey::parse("agent:main:main").unwrap());
        for call in [TaskCall::List { origin: None }, TaskCall::Cancel { id: "t3".into(), origin: origin.clone() }] {
            let req = TaskRequest { agent: "main".into(), call };
            let json = serde_json::to_string(&req).unwrap();
            assert!(json.starts_with(r#"{"agent":"main","op":""#), "{json}");
            assert_eq!(hearth_json::from_str::<TaskRequest>(&json).unwrap(), req);
        }
        assert!(hearth_json::from_str::<TaskRequest>(r#"{"agent":"main","op":"cancel"}"#).is_err(), "no id");
        assert!(hearth_json::from_str::<TaskRequest>(r#"{"agent":"main","op":"explode"}"#).is_err());
    }
}
