//! Background sub-agents: `spawn_task` hands a task to a sub-agent of the
//! same agent, which runs in a Session object of its own while the chat's
//! turn ends at once; `tasks` (and `/tasks` in chat) lists and cancels them.
//!
//! A sub-agent starts from the handoff alone (its history is that one
//! message), in the scope of the chat that asked (the owner's main session
//! gives it the owner's files; any other chat only what is shared), with
//! the agent's background tools less these two: it never spawns again. Its
//! answer is posted in the chat that asked, and joins that chat's history.

use super::board::{self, Task};
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::protocol::tasks::{TaskReply, TaskRow, TaskSpawn};
use crate::toolkit::{ToolOutcome, ToolSpec};
use serde_json::Value;

pub const SPAWN_TOOL: &str = "spawn_task";
pub const TASKS_TOOL: &str = "tasks";

/// Longest handoff, in characters.
pub const MAX_HANDOFF_CHARS: usize = 20_000;
/// Longest label.
const TITLE_CHARS: usize = 80;
/// Ended tasks a list shows.
pub const LIST_ENDED: u32 = 10;

/// Whether a session of `key` may start sub-agents: a chat or an API
/// thread, not a sub-agent, a peer's delegated session or a scheduled run.
pub fn offered(key: &SessionKey) -> bool {
    matches!(key, SessionKey::Main(_) | SessionKey::Direct { .. } | SessionKey::Group { .. } | SessionKey::Api { .. })
}

pub fn spawn_spec() -> ToolSpec {
    ToolSpec {
        name: SPAWN_TOOL.into(),
        description: "Start a background sub-agent on a task that takes a while (research, several steps, a long \
read), so this reply can go out now. It starts from `task` alone, with your tools and files for this chat, and \
its result is posted here when done. Put in `task` everything it needs. Your turn ends with this call: say in the \
same reply that you started it."
            .into(),
        input_schema: crate::toolkit::schema(
            r#"{"type": "object",
                "properties": {
                    "task": {"type": "string", "description": "The whole task, with the context the sub-agent needs"},
                    "title": {"type": "string", "description": "A short label for task lists"}
                },
                "required": ["task"]}"#,
        ),
        native: None,
    }
}

pub fn tasks_spec() -> ToolSpec {
    ToolSpec {
        name: TASKS_TOOL.into(),
        description: "List this chat's background tasks (running, waiting, recent), or cancel one by its id (t3)."
            .into(),
        input_schema: crate::toolkit::schema(
            r#"{"type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "cancel"]},
                    "id": {"type": "string", "description": "For cancel: the task's id, like t3"}
                },
                "required": ["action"]}"#,
        ),
        native: None,
    }
}

/// A `spawn_task` call of the session `origin` answering a message with
/// `target`. `Err`: the tool's error, nothing started.
pub fn spawn_request(origin: &SessionKey, target: &ReplyTarget, args: &Value) -> Result<TaskSpawn, ToolOutcome> {
    let handoff = args.get("task").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
    if handoff.is_empty() {
        return Err(ToolOutcome::err("missing string argument 'task' (everything the sub-agent needs)"));
    }
    if handoff.chars().count() > MAX_HANDOFF_CHARS {
        return Err(ToolOutcome::err(format!(
            "the task is longer than {MAX_HANDOFF_CHARS} characters: hand over what it needs, not everything"
        )));
    }
    let title = args.get("title").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
    let title =
        crate::text::truncate_chars(title.unwrap_or_else(|| handoff.lines().next().unwrap_or_default()), TITLE_CHARS);
    // The answer comes later: no deadline for a model call applies to it.
    let target = ReplyTarget { deadline_ms: None, ..target.clone() };
    Ok(TaskSpawn { origin: origin.clone(), target, handoff, title })
}

/// The tool's result for a spawn the Agent object answered.
pub fn spawned(reply: &TaskReply) -> ToolOutcome {
    let Some(task) = reply.task.as_ref().filter(|_| reply.ok) else {
        return ToolOutcome::err(format!(
            "the task was not started: {}",
            reply.error.as_deref().unwrap_or("the agent's task list gave no answer")
        ));
    };
    let starts_now = task.state == board::RUNNING || reply.running + reply.ahead < reply.max;
    let state = if starts_now {
        "starting now".to_owned()
    } else {
        format!(
            "waiting: {} of {} sub-agents run now, {} task(s) wait before it",
            reply.running, reply.max, reply.ahead
        )
    };
    ToolOutcome::ok(format!("Task {} started ({state}). Its result will be posted in this chat.", task.id))
}

/// What the chat is told as the turn ends after a spawn: the model's own
/// words (`said`) and a line naming the task.
pub fn started_line(ids: &[String]) -> String {
    match ids {
        [one] => format!("⏳ Task {one} runs in the background; its result will be posted here."),
        many => format!("⏳ Tasks {} run in the background; their results will be posted here.", many.join(", ")),
    }
}

/// The task id of a successful `spawn_task` result (see [`spawned`]).
pub fn id_in_result(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Task ")?;
    let id = rest.split_whitespace().next()?;
    board::number_of(id).map(|_| id.to_owned())
}

/// The message a sub-agent starts from: in its own session, answered into
/// the session's own record (`Api`, filed under the task's id) and reported
/// by the session when the turn ends; `deadline_ms` ends it after its time.
pub fn run_message(task: &Task, now: i64, timeout_ms: i64) -> Inbound {
    let id = task.id();
    let agent = task.origin.agent().as_str();
    let dedupe_key = format!("task:{id}");
    let text = format!(
        "[Background task {id}. Work on it alone with your tools: nobody will answer questions while you do. \
Your final reply is the result, posted in the chat that asked.]\n\n{}",
        task.handoff
    );
    Inbound {
        dedupe_key: dedupe_key.clone(),
        channel: ChannelKind::System,
        kind: ChatKind::Direct,
        chat_id: id.clone(),
        sender_id: format!("agent:{agent}"),
        sender_name: agent.to_owned(),
        text,
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Api,
            chat_id: id,
            extra: Some(dedupe_key),
            deadline_ms: Some(now.saturating_add(timeout_ms)),
            ..Default::default()
        },
        received_at: now,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    }
}

/// What the chat that asked is told when the task ended.
pub fn result_text(task: &Task) -> String {
    let result = task.result.as_deref().unwrap_or("(no result)");
    if task.ok {
        format!("✅ Task {} done ({}):\n\n{result}", task.id(), task.title)
    } else {
        format!("⚠️ Task {} ended without a result ({}): {result}", task.id(), task.title)
    }
}

/// `/tasks` in a chat (no LLM call): `None` is not the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    List,
    Cancel(String),
    /// `/tasks` followed by something it does not know.
    Help,
}

pub fn parse_command(text: &str) -> Option<Command> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    if !first.split('@').next().unwrap_or("").eq_ignore_ascii_case("/tasks") {
        return None;
    }
    Some(match (words.next(), words.next(), words.next()) {
        (None, _, _) => Command::List,
        (Some(w), Some(id), None) if w.eq_ignore_ascii_case("cancel") && board::number_of(id).is_some() => {
            Command::Cancel(id.to_owned())
        }
        _ => Command::Help,
    })
}

pub const HELP: &str = "/tasks lists this chat's background tasks; /tasks cancel t3 cancels one.";

fn age(ms: i64) -> String {
    let s = (ms / 1000).max(0);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

fn line(t: &TaskRow, now: i64) -> String {
    let when = match t.state.as_str() {
        board::QUEUED => format!("waiting {}", age(now - t.created_at)),
        board::RUNNING => format!("running {}", age(now - t.started_at.unwrap_or(t.created_at))),
        state => format!("{state} {} ago", age(now - t.ended_at.unwrap_or(t.created_at))),
    };
    let cost = t.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default();
    format!("• {} {} ({when}{cost})", t.id, t.title)
}

/// A list as the chat (and the `tasks` tool) shows it.
pub fn listing(reply: &TaskReply, now: i64) -> String {
    if let Some(e) = reply.error.as_ref().filter(|_| !reply.ok) {
        return format!("⚠️ I could not read the task list: {e}");
    }
    if reply.tasks.is_empty() {
        return "No background tasks in this chat.".to_owned();
    }
    let mut out = format!("Background tasks ({} of {} running for this agent):", reply.running, reply.max);
    for t in &reply.tasks {
        out.push('\n');
        out.push_str(&line(t, now));
    }
    out
}

/// What a cancel did.
pub fn cancelled(reply: &TaskReply, id: &str) -> String {
    match (&reply.task, reply.ok) {
        (Some(t), true) if t.state == board::QUEUED || t.state == board::RUNNING => {
            format!("🛑 Task {id} cancelled ({}).", t.title)
        }
        (Some(t), true) => format!("Task {id} had already ended ({}).", t.state),
        _ => format!("⚠️ {}", reply.error.as_deref().unwrap_or("no such task in this chat")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> SessionKey {
        SessionKey::parse(k).unwrap()
    }

    #[test]
    fn chats_may_spawn_and_background_runs_may_not() {
        for k in ["agent:main:main", "agent:main:telegram:group:-1", "agent:main:telegram:dm:7", "agent:main:api:w"] {
            assert!(offered(&key(k)), "{k}");
        }
        for k in ["agent:main:heartbeat", "agent:main:job:j", "agent:main:task:main:t1", "agent:r:from:main:1:ab"] {
            assert!(!offered(&key(k)), "{k}");
        }
    }

    #[test]
    fn a_spawn_keeps_the_chat_and_drops_the_reply_deadline() {
        let target = ReplyTarget {
            channel: ChannelKind::Telegram,
            chat_id: "42".into(),
            deadline_ms: Some(9),
            ..Default::default()
        };
        let s = spawn_request(&key("agent:main:main"), &target, &json!({"task": "Read the paper\nand more"})).unwrap();
        assert_eq!((s.title.as_str(), s.target.chat_id.as_str(), s.target.deadline_ms), ("Read the paper", "42", None));
        assert!(spawn_request(&key("agent:main:main"), &target, &json!({"task": " "})).is_err());
    }

    #[test]
    fn the_command_and_its_forms() {
        assert_eq!(parse_command("/tasks"), Some(Command::List));
        assert_eq!(parse_command("/tasks@hearth_bot"), Some(Command::List));
        assert_eq!(parse_command("/tasks cancel t3"), Some(Command::Cancel("t3".into())));
        assert_eq!(parse_command("/tasks cancel 3"), Some(Command::Help));
        assert_eq!(parse_command("/taskss"), None);
        assert_eq!(parse_command("what are my tasks"), None);
    }

    #[test]
    fn the_started_result_names_the_task() {
        let row = TaskRow {
            id: "t7".into(),
            state: board::RUNNING.into(),
            title: "x".into(),
            origin: "agent:main:main".into(),
            created_at: 0,
            started_at: Some(0),
            ended_at: None,
            result: None,
            model: None,
            cost_usd: None,
            delivered: false,
        };
        let reply = TaskReply { ok: true, task: Some(row), running: 1, max: 3, ..Default::default() };
        let out = spawned(&reply);
        assert_eq!(id_in_result(&out.text).as_deref(), Some("t7"));
        assert!(started_line(&["t7".into()]).contains("t7"));
    }
}
