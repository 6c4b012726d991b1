//! The Agent object's side of background sub-agents ([`crate::tasks`]): it
//! keeps the agent's list ([`Board`]), starts at most `SUBAGENTS_MAX` at once
//! from its alarm (each in a Session object of its own, given its handoff as
//! its only message; a spawn only adds the row and sets the alarm, so the
//! chat's turn ends at once), and posts each result into the chat that asked
//! (`SessionQueue::post`, once per task: the post's id is the task's), also
//! to the agent's notification feed. A post that fails is tried again from
//! the alarm until it is taken; a sub-agent's session that never reported is
//! woken again, and given up after its time limit and a grace.

use super::host::{AgentHost, AgentRuntime, Refusal};
use crate::ports::{LogLevel, StorageError};
use crate::protocol::api::StopRequest;
use crate::protocol::session::{PostMode, PostRequest};
use crate::protocol::tasks::{TaskCall, TaskDone, TaskReply, TaskRequest};
use crate::scheduled::{EnqueueOptions, SessionQueue};
use crate::settings::tasks::TasksConfig;
use crate::tasks::board::{self, Board, Task};
use crate::tasks::spawn;

/// A post that failed waits this long before the next try (doubling, at most an hour).
const RETRY_MS: i64 = 10_000;
/// A running sub-agent that has not reported this long after its time limit is woken.
const NUDGE_AFTER_MS: i64 = 60_000;
/// ... and given up this long after its time limit.
const GIVE_UP_AFTER_MS: i64 = 30 * 60_000;

impl<R: AgentRuntime + 'static> AgentHost<R> {
    fn tasks_config(&self, agent: &str) -> Result<TasksConfig, Refusal> {
        self.runtime()
            .agent_config(agent)
            .map(|c| c.tasks.clone())
            .map_err(|e| Refusal { status: 404, message: e.to_string() })
    }

    /// A call from a session (or the admin API) about `req.agent`'s tasks.
    pub async fn tasks(&self, req: &TaskRequest) -> Result<TaskReply, Refusal> {
        let cfg = self.tasks_config(&req.agent)?;
        let sql = &**self.runtime().sql();
        let board = Board::open(sql)?;
        let now = self.runtime().now_ms();
        let mut reply = match &req.call {
            TaskCall::Spawn(spawn) => {
                if spawn.origin.agent().as_str() != req.agent {
                    return Err(Refusal { status: 400, message: "a task of another agent".into() });
                }
                let task = board.add(spawn, now)?;
                // Started by the alarm, right after this answer: the chat's
                // turn waits for nothing more than the row.
                if let Err(e) = self.runtime().wake().await {
                    self.runtime().log(LogLevel::Warn, &format!("task {}: starts at the next alarm: {e}", task.id()));
                }
                TaskReply { ok: true, ahead: board.ahead_of(task.n)?, task: Some(task.row()), ..Default::default() }
            }
            TaskCall::Done(done) => {
                if let Some(task) = board.finish(done, now)? {
                    self.deliver(&board, &task).await;
                }
                board.prune(now)?;
                self.start_ready(&board, &cfg).await;
                TaskReply { ok: true, ..Default::default() }
            }
            TaskCall::List { origin } => {
                let tasks = board.list(origin.as_ref(), spawn::LIST_ENDED)?;
                TaskReply { ok: true, tasks: tasks.iter().map(Task::row).collect(), ..Default::default() }
            }
            TaskCall::Cancel { id, origin } => self.cancel(&board, &cfg, id, origin.as_ref(), now).await?,
        };
        reply.running = board.count(board::RUNNING)?;
        reply.max = cfg.subagents_max;
        Ok(reply)
    }

    async fn cancel(
        &self,
        board: &Board<'_, R::Sql>,
        cfg: &TasksConfig,
        id: &str,
        origin: Option<&crate::inbound::SessionKey>,
        now: i64,
    ) -> Result<TaskReply, Refusal> {
        let not_found =
            || TaskReply { ok: false, error: Some(format!("no task {id} in this chat")), ..Default::default() };
        let Some(n) = board::number_of(id) else { return Ok(not_found()) };
        let Some(task) = board.get(n)?.filter(|t| origin.is_none_or(|o| *o == t.origin)) else {
            return Ok(not_found());
        };
        board.cancel(n, now)?;
        if task.state == board::RUNNING {
            let stop = StopRequest { request: Some(format!("task:{}", task.id())) };
            if let Err(e) = self.runtime().queue().stop(&task.session(), &stop).await {
                self.runtime().log(LogLevel::Warn, &format!("task {}: not stopped: {e}", task.id()));
            }
            // Its place is free.
            self.start_ready(board, cfg).await;
        }
        Ok(TaskReply { ok: true, task: Some(task.row()), ..Default::default() })
    }

    /// Starts the oldest waiting tasks while places are free. A session
    /// that cannot be reached leaves its task waiting (the alarm tries again).
    async fn start_ready(&self, board: &Board<'_, R::Sql>, cfg: &TasksConfig) {
        let rt = self.runtime();
        let Ok(ready) = board.startable(cfg.subagents_max) else { return };
        for task in ready {
            let now = rt.now_ms();
            if !board.start(task.n, now).unwrap_or(false) {
                continue;
            }
            let message = spawn::run_message(&task, now, cfg.subagent_timeout_ms);
            match rt.queue().enqueue(&task.session(), &message, EnqueueOptions::default()).await {
                Ok(_) => {
                    // Come back if it never reports.
                    let due = now + cfg.subagent_timeout_ms + NUDGE_AFTER_MS;
                    if let Err(e) = rt.wake_at(due).await {
                        rt.log(LogLevel::Warn, &format!("task {}: no alarm for its time limit: {e}", task.id()));
                    }
                }
                Err(e) => {
                    rt.log(LogLevel::Warn, &format!("task {} not started, tried again soon: {e}", task.id()));
                    let _ = board.requeue(task.n);
                    let _ = rt.wake_at(now + RETRY_MS).await;
                }
            }
        }
    }

    /// Posts an ended task's result into the chat that asked (and the
    /// notification feed); a failed post is tried again later.
    async fn deliver(&self, board: &Board<'_, R::Sql>, task: &Task) {
        let rt = self.runtime();
        let text = spawn::result_text(task);
        let req = PostRequest {
            session_key: task.origin.clone(),
            id: format!("task:{}", task.id()),
            mode: PostMode::Say,
            text: crate::text::truncate_chars(&text, PostRequest::MAX_TEXT_CHARS),
            target: Some(task.target.clone()),
            next_run_in_ms: None,
        };
        let now = rt.now_ms();
        match rt.queue().post(&req).await {
            Ok(_) => {
                if let Err(e) = board.delivered(task.n) {
                    rt.log(LogLevel::Warn, &format!("task {}: delivery not recorded: {e}", task.id()));
                }
                if let Err(e) = self.feed().publish(&**rt.sql(), &task.origin, &[text], now) {
                    rt.log(LogLevel::Warn, &format!("task {}: not in the notification feed: {e}", task.id()));
                }
            }
            Err(e) => {
                let wait = (RETRY_MS << task.tries.clamp(0, 8)).min(3_600_000);
                rt.log(LogLevel::Warn, &format!("task {}: result not posted yet (again in {wait} ms): {e}", task.id()));
                let _ = board.retry_at(task.n, now + wait);
                let _ = rt.wake_at(now + wait).await;
            }
        }
    }

    /// The alarm's part: results still to post, tasks still to start, and
    /// sub-agents past their time that never reported.
    pub(super) async fn tasks_alarm(&self) -> Result<(), StorageError> {
        let rt = self.runtime();
        let sql = &**rt.sql();
        let board = Board::open(sql)?;
        if !board.has_work()? {
            return Ok(());
        }
        let now = rt.now_ms();
        for task in board.undelivered(now)? {
            self.deliver(&board, &task).await;
        }
        let Some(agent) = board.list(None, 1)?.first().map(|t| t.origin.agent().to_string()) else { return Ok(()) };
        let Ok(cfg) = self.tasks_config(&agent) else { return Ok(()) };
        let late = board.running_since(now - cfg.subagent_timeout_ms - NUDGE_AFTER_MS)?;
        if !late.is_empty() {
            // Look again until each has reported or is given up.
            rt.wake_at(now + 5 * NUDGE_AFTER_MS).await?;
        }
        for task in late {
            let started = task.started_at.unwrap_or(task.created_at);
            if now - started > cfg.subagent_timeout_ms + GIVE_UP_AFTER_MS {
                let done = TaskDone {
                    id: task.id(),
                    text: "the sub-agent stopped answering and was given up".into(),
                    ok: false,
                    model: String::new(),
                    calls: 0,
                    tokens: 0,
                    cost_usd: None,
                };
                if let Some(ended) = board.finish(&done, now)? {
                    self.deliver(&board, &ended).await;
                }
            } else if let Err(e) = rt.queue().wake(&task.session()).await {
                rt.log(LogLevel::Warn, &format!("task {}: its session could not be woken: {e}", task.id()));
            }
        }
        self.start_ready(&board, &cfg).await;
        if let Some(at) = board.next_delivery()? {
            rt.wake_at(at.max(now)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
