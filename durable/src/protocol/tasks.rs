//! Calls to an Agent object about its background sub-agents (`spawn_task`,
//! `crate::tasks`): the Agent keeps the list, starts at most
//! `SUBAGENTS_MAX` at once (the rest wait their turn), and hands each
//! result to the chat that asked for it.

use crate::inbound::{ReplyTarget, SessionKey};
use serde::{Deserialize, Serialize};

/// `POST` [`TaskRequest`] → [`TaskReply`] (a refusal: 4xx with `{"ok": false, "error"}`).
pub const TASKS_PATH: &str = "/tasks/call";

/// A call for the sub-agents of `agent` (an object does not know its name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRequest {
    pub agent: String,
    pub call: TaskCall,
}

/// What is asked. (Serde's default enum form: `{"spawn": {...}}`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskCall {
    /// A chat's turn hands a task over.
    Spawn(TaskSpawn),
    /// A sub-agent's session reports how its run ended.
    Done(TaskDone),
    /// The tasks of one chat (`origin`), or of every chat (`None`: the console).
    List {
        #[serde(default)]
        origin: Option<SessionKey>,
    },
    /// Cancels a task that waits or runs (only one of `origin`'s, when named).
    Cancel {
        id: String,
        #[serde(default)]
        origin: Option<SessionKey>,
    },
}

/// A task handed over by a chat's turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
