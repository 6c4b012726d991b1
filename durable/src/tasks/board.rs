//! The Agent object's list of background sub-agents: one row per task,
//! `queued → running → done | failed`, or `cancelled` from either of the
//! first two. A result is kept until it reached the chat that asked
//! (`delivered`), and tried again until it does.
//!
//! Ids are `t1`, `t2`, ... per agent, in the order asked; the oldest task
//! waiting starts first when a place frees up (`SUBAGENTS_MAX`).

use crate::inbound::{ReplyTarget, SessionKey};
use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::tasks::{TaskDone, TaskRow, TaskSpawn};
use crate::storage::{col_i64, col_string};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS tasks (
    n INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT NOT NULL, target TEXT NOT NULL, handoff TEXT NOT NULL,
    title TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER, ended_at INTEGER,
    result TEXT, ok INTEGER, model TEXT, cost REAL, delivered INTEGER NOT NULL DEFAULT 0,
    next_try INTEGER NOT NULL DEFAULT 0, tries INTEGER NOT NULL DEFAULT 0)";
const INDEX: &str = "CREATE INDEX IF NOT EXISTS tasks_state ON tasks (state, n)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "tasks", statements: &[SCHEMA, INDEX] };

pub const QUEUED: &str = "queued";
pub const RUNNING: &str = "running";
pub const DONE: &str = "done";
pub const FAILED: &str = "failed";
pub const CANCELLED: &str = "cancelled";

/// Results kept this long once delivered (lists show the recent ones).
pub const KEEP_MS: i64 = 7 * 24 * 3600 * 1000;

/// A task as the board holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub n: i64,
    pub origin: SessionKey,
    pub target: ReplyTarget,
    pub handoff: String,
    pub title: String,
    pub state: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    pub result: Option<String>,
    pub ok: bool,
    pub model: Option<String>,
    pub cost: Option<f64>,
    pub delivered: bool,
    pub tries: i64,
}

impl Task {
    pub fn id(&self) -> String {
        format!("t{}", self.n)
    }

    /// The row lists show.
    pub fn row(&self) -> TaskRow {
        TaskRow {
            id: self.id(),
            state: self.state.clone(),
            title: self.title.clone(),
            origin: self.origin.render(),
            created_at: self.created_at,
            started_at: self.started_at,
            ended_at: self.ended_at,
            result: self.result.clone(),
            model: self.model.clone(),
            cost_usd: self.cost,
            delivered: self.delivered,
        }
    }

    /// The session its sub-agent runs in.
    pub fn session(&self) -> SessionKey {
        SessionKey::Task { agent: self.origin.agent().clone(), id: self.id(), scope: self.origin.scope() }
    }
}

/// `t12` → 12.
pub fn number_of(id: &str) -> Option<i64> {
    id.trim().strip_prefix('t').and_then(|n| n.parse().ok()).filter(|n| *n > 0)
}

const COLUMNS: &str =
    "n, origin, target, handoff, title, state, created_at, started_at, ended_at, result, ok, model, cost, delivered, tries";

fn opt_i64(v: &SqlValue) -> Option<i64> {
    v.as_i64()
}

fn read(mut r: Vec<SqlValue>) -> Option<Task> {
    let origin = SessionKey::parse(&col_string(&mut r, 1))?;
    let target = hearth_json::from_str(&col_string(&mut r, 2)).unwrap_or_default();
    let text = |r: &mut Vec<SqlValue>, i: usize| Some(col_string(r, i)).filter(|s| !s.is_empty());
    Some(Task {
        n: col_i64(&r, 0),
        origin,
        target,
        handoff: col_string(&mut r, 3),
        title: col_string(&mut r, 4),
        state: col_string(&mut r, 5),
        created_at: col_i64(&r, 6),
        started_at: r.get(7).and_then(opt_i64),
        ended_at: r.get(8).and_then(opt_i64),
        result: text(&mut r, 9),
        ok: col_i64(&r, 10) == 1,
        model: text(&mut r, 11),
        cost: match r.get(12) {
            Some(SqlValue::Real(f)) => Some(*f),
            Some(SqlValue::Int(i)) => Some(*i as f64),
            _ => None,
        },
        delivered: col_i64(&r, 13) == 1,
        tries: col_i64(&r, 14),
    })
}

/// The board over the Agent object's SQLite.
pub struct Board<'a, S: Sql + ?Sized> {
    sql: &'a S,
}

impl<'a, S: Sql + ?Sized> Board<'a, S> {
    pub fn open(sql: &'a S) -> Result<Self, StorageError> {
        crate::storage::ensure(sql, &TABLES)?;
        Ok(Board { sql })
    }

    fn select(&self, filter: &str, params: &[SqlValue]) -> Result<Vec<Task>, StorageError> {
        let rows = self.sql.exec(&format!("SELECT {COLUMNS} FROM tasks {filter}"), params)?;
        Ok(rows.into_iter().filter_map(read).collect())
    }

    /// A new task, waiting.
    pub fn add(&self, spawn: &TaskSpawn, now: i64) -> Result<Task, StorageError> {
        let target = serde_json::to_string(&spawn.target).map_err(|e| StorageError(e.to_string()))?;
        self.sql.exec(
            "INSERT INTO tasks (origin, target, handoff, title, state, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            &[
                spawn.origin.render().into(),
                target.into(),
                spawn.handoff.as_str().into(),
                spawn.title.as_str().into(),
                QUEUED.into(),
                now.into(),
            ],
        )?;
        let n = self.sql.exec("SELECT last_insert_rowid()", &[])?.first().map(|r| col_i64(r, 0)).unwrap_or(0);
        self.get(n)?.ok_or_else(|| StorageError("the task just added is not there".into()))
    }

    pub fn get(&self, n: i64) -> Result<Option<Task>, StorageError> {
        Ok(self.select("WHERE n = ?", &[n.into()])?.pop())
    }

    pub fn count(&self, state: &str) -> Result<u32, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM tasks WHERE state = ?", &[state.into()])?;
        Ok(rows.first().map_or(0, |r| col_i64(r, 0)) as u32)
    }

    /// The oldest waiting tasks that may start now, with `max` at once.
    pub fn startable(&self, max: u32) -> Result<Vec<Task>, StorageError> {
        let free = max.saturating_sub(self.count(RUNNING)?);
        if free == 0 {
            return Ok(Vec::new());
        }
        self.select("WHERE state = 'queued' ORDER BY n LIMIT ?", &[i64::from(free).into()])
    }

    /// Waiting tasks older than `n` (its place in the queue).
    pub fn ahead_of(&self, n: i64) -> Result<u32, StorageError> {
        let rows = self.sql.exec("SELECT COUNT(*) FROM tasks WHERE state = 'queued' AND n < ?", &[n.into()])?;
        Ok(rows.first().map_or(0, |r| col_i64(r, 0)) as u32)
    }

    /// The task runs (its session has its message). `false`: it no longer
    /// waits. (An object runs one request's code at a time between awaits,
    /// so the read and the write are one step.)
    pub fn start(&self, n: i64, now: i64) -> Result<bool, StorageError> {
        if self.get(n)?.is_none_or(|t| t.state != QUEUED) {
            return Ok(false);
        }
        self.sql.exec("UPDATE tasks SET state = 'running', started_at = ? WHERE n = ?", &[now.into(), n.into()])?;
        Ok(true)
    }

    /// The task's session could not be given its message: it waits again.
    pub fn requeue(&self, n: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE tasks SET state = 'queued', started_at = NULL WHERE n = ? AND state = 'running'",
            &[n.into()],
        )?;
        Ok(())
    }

    /// A run's end. `Some`: the task as it ended now (its result to
    /// deliver); `None`: it had ended before (a report repeated) or was
    /// cancelled (its result is kept, not delivered).
    pub fn finish(&self, done: &TaskDone, now: i64) -> Result<Option<Task>, StorageError> {
        let Some(n) = number_of(&done.id) else { return Ok(None) };
        let Some(task) = self.get(n)? else { return Ok(None) };
        let cost = done.cost_usd.map_or(SqlValue::Null, SqlValue::Real);
        match task.state.as_str() {
            QUEUED | RUNNING => {
                let state = if done.ok { DONE } else { FAILED };
                self.sql.exec(
                    "UPDATE tasks SET state = ?, ended_at = ?, result = ?, ok = ?, model = ?, cost = ? WHERE n = ?",
                    &[
                        state.into(),
                        now.into(),
                        done.text.as_str().into(),
                        i64::from(done.ok).into(),
                        done.model.as_str().into(),
                        cost,
                        n.into(),
                    ],
                )?;
                self.get(n)
            }
            CANCELLED if task.result.is_none() => {
                self.sql.exec(
                    "UPDATE tasks SET ended_at = ?, result = ?, model = ?, cost = ?, delivered = 1 WHERE n = ?",
                    &[now.into(), done.text.as_str().into(), done.model.as_str().into(), cost, n.into()],
                )?;
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// Cancels a task that waits or runs. The task as it was before.
    pub fn cancel(&self, n: i64, now: i64) -> Result<Option<Task>, StorageError> {
        let Some(task) = self.get(n)? else { return Ok(None) };
        if matches!(task.state.as_str(), QUEUED | RUNNING) {
            self.sql.exec(
                "UPDATE tasks SET state = 'cancelled', ended_at = ?, delivered = 1 WHERE n = ?",
                &[now.into(), n.into()],
            )?;
        }
        Ok(Some(task))
    }

    /// Ended tasks whose result has not reached its chat, due for a try.
    pub fn undelivered(&self, now: i64) -> Result<Vec<Task>, StorageError> {
        self.select("WHERE state IN ('done', 'failed') AND delivered = 0 AND next_try <= ? ORDER BY n", &[now.into()])
    }

    pub fn delivered(&self, n: i64) -> Result<(), StorageError> {
        self.sql.exec("UPDATE tasks SET delivered = 1 WHERE n = ?", &[n.into()])?;
        Ok(())
    }

    /// A delivery failed: tried again at `next_try`.
    pub fn retry_at(&self, n: i64, next_try: i64) -> Result<(), StorageError> {
        self.sql.exec("UPDATE tasks SET tries = tries + 1, next_try = ? WHERE n = ?", &[next_try.into(), n.into()])?;
        Ok(())
    }

    /// Whether anything waits, runs or has a result to post (one read, so
    /// an agent without tasks pays its alarm nothing more).
    pub fn has_work(&self) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "SELECT 1 FROM tasks WHERE state IN ('queued', 'running') OR (state IN ('done', 'failed') AND delivered = 0) LIMIT 1",
            &[],
        )?;
        Ok(!rows.is_empty())
    }

    /// When the next delivery is due (`None`: none waits).
    pub fn next_delivery(&self) -> Result<Option<i64>, StorageError> {
        let rows = self
            .sql
            .exec("SELECT MIN(next_try) FROM tasks WHERE state IN ('done', 'failed') AND delivered = 0", &[])?;
        Ok(rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64))
    }

    /// Running tasks that started before `before` (a sub-agent that never
    /// reported: its session is asked again).
    pub fn running_since(&self, before: i64) -> Result<Vec<Task>, StorageError> {
        self.select("WHERE state = 'running' AND started_at < ? ORDER BY n", &[before.into()])
    }

    /// The newest tasks first: waiting and running ones, then up to `limit`
    /// ended ones; only `origin`'s when named.
    pub fn list(&self, origin: Option<&SessionKey>, limit: u32) -> Result<Vec<Task>, StorageError> {
        let (filter, params): (&str, Vec<SqlValue>) = match origin {
            Some(o) => ("AND origin = ?", vec![o.render().into()]),
            None => ("", vec![]),
        };
        let mut open =
            self.select(&format!("WHERE state IN ('queued', 'running') {filter} ORDER BY n DESC"), &params)?;
        let mut params = params;
        params.push(i64::from(limit).into());
        let ended = self
            .select(&format!("WHERE state NOT IN ('queued', 'running') {filter} ORDER BY n DESC LIMIT ?"), &params)?;
        open.extend(ended);
        Ok(open)
    }

    /// Forgets delivered tasks that ended more than [`KEEP_MS`] ago.
    pub fn prune(&self, now: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "DELETE FROM tasks WHERE delivered = 1 AND ended_at IS NOT NULL AND ended_at < ?",
            &[(now - KEEP_MS).into()],
        )?;
        Ok(())
    }
}
