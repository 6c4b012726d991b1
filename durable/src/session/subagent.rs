//! A background sub-agent's own session ([`SessionKey::Task`]): one message
//! (its handoff), answered on `SUBAGENT_MODEL` within its limits, and the
//! end of its run told to the Agent object, which posts the result into the
//! chat that asked.
//!
//! Its limits: `SUBAGENT_MAX_ROUNDS` model calls (the turn's tool rounds),
//! `SUBAGENT_TIMEOUT_MINUTES` (the message's reply deadline, checked
//! between calls), `SUBAGENT_MAX_COST_USD` (checked before each call), and
//! the agent's budget, under which it is background work (the first to stop).
//! Each stop is said as the run's answer, so the chat learns why.
//!
//! Its end is reported once (meta [`REPORTED`]); a report the Agent object
//! did not take is sent again by a later alarm. A run cut short by an
//! eviction resumes from its history like any turn, and reports when done.

use super::deps::SessionDeps;
use super::reply::send;
use super::store::SessionStore;
use crate::inbound::{Inbound, SessionKey};
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::protocol::api::ApiOutcome;
use crate::protocol::tasks::{TaskCall, TaskDone, TaskRequest};
use crate::protocol::usage::BudgetStop;
use crate::settings::{AgentConfig, ConfigError, Vars};
use crate::storage::col_i64;
use crate::usage::prices::{self, PriceBook};
use std::rc::Rc;

/// Meta key: the run's end reached the Agent object.
pub const REPORTED: &str = "task_reported";
/// Meta key: the run was stopped by a limit (its answer says which).
const LIMITED: &str = "task_limited";
/// A report the Agent object did not take is sent again this much later.
const REPORT_RETRY_MS: i64 = 10_000;

/// The settings a sub-agent's session runs with: the agent's, on its
/// sub-agent model and rounds. (Read for the object, not copied from the
/// isolate's shared settings: a copy of every setting costs the upload more
/// than reading them once per sub-agent.)
pub fn task_config(vars: &impl Vars, agent: &str) -> Result<Rc<AgentConfig>, ConfigError> {
    let mut c = AgentConfig::load(vars, agent)?;
    if let Some(model) = c.tasks.subagent_model.take() {
        c.llm.model = model;
    }
    c.llm.max_tool_rounds = c.tasks.subagent_rounds;
    Ok(Rc::new(c))
}

/// What the session's calls cost so far, and how many there were.
fn spent<S: Sql>(sql: &S, deps: &SessionDeps<'_>) -> Result<(Option<f64>, u32, u64), StorageError> {
    let store = SessionStore::new(sql);
    let usage = store.usage_totals_all()?;
    let calls = sql.exec("SELECT COUNT(*) FROM usage", &[])?.first().map_or(0, |r| col_i64(r, 0)) as u32;
    let price = PriceBook::new(&deps.config.usage.prices).price(&deps.config.llm.model);
    let tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    Ok((price.map(|p| prices::cost(&p, &usage)), calls, tokens))
}

/// Before a sub-agent's model call: the stop, when what it spent reached
/// `SUBAGENT_MAX_COST_USD`.
pub fn over_limit<P: Platform>(p: &P, deps: &SessionDeps<'_>) -> Result<Option<BudgetStop>, StorageError> {
    if !matches!(deps.key, SessionKey::Task { .. }) {
        return Ok(None);
    }
    let limit = deps.config.tasks.subagent_max_cost_usd;
    let (cost, _, _) = spent(p.sql(), deps)?;
    Ok(cost.filter(|c| *c >= limit).map(|c| BudgetStop {
        scope: "task".into(),
        resets_at: 0,
        background: true,
        message: format!(
            "⚠️ Stopped: this task spent ${c:.4} of its ${limit:.2} (SUBAGENT_MAX_COST_USD) before it was done."
        ),
    }))
}

/// A limit stopped the sub-agent's call: said as the run's answer.
pub async fn stopped<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    stop: &BudgetStop,
) -> Result<(), StorageError> {
    store.set_meta(LIMITED, &stop.scope)?;
    send(p, deps, &inbound.reply_target, &stop.message).await
}

/// The run's message is done and its end not yet reported: tells the Agent
/// object. `Some(at)`: it could not be told; try again then.
pub async fn report<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
) -> Result<Option<i64>, StorageError> {
    let SessionKey::Task { id, .. } = deps.key else { return Ok(None) };
    // Apart: only a sub-agent's session reports; the others need not compile it.
    crate::apart::apart(async move {
        if store.meta(REPORTED)?.is_some() {
            return Ok(None);
        }
        let request = format!("task:{id}");
        if store.inbox_state(&request)?.as_deref() != Some("done") {
            return Ok(None);
        }
        let outcome = deps.watch.stored(p.sql(), &request)?;
        let limited = store.meta(LIMITED)?.is_some();
        let (text, ok) = result_of(outcome, limited, deps.config);
        let (cost_usd, calls, tokens) = spent(p.sql(), deps)?;
        let done =
            TaskDone { id: id.to_owned(), text, ok, model: deps.config.llm.model.clone(), calls, tokens, cost_usd };
        let req = TaskRequest { agent: deps.config.agent.to_string(), call: TaskCall::Done(done) };
        match p.tasks(&req).await {
            Ok(reply) => {
                if !reply.ok {
                    p.log(LogLevel::Warn, &format!("task {id}: its end was not taken: {:?}", reply.error));
                }
                store.set_meta(REPORTED, "1")?;
                Ok(None)
            }
            Err(e) => {
                p.log(LogLevel::Warn, &format!("task {id}: its end not reported yet (again soon): {e}"));
                Ok(Some(p.now_ms() + REPORT_RETRY_MS))
            }
        }
    })
    .await
}

/// The result to post, and whether it is one (`false`: why there is none).
fn result_of(outcome: Option<ApiOutcome>, limited: bool, cfg: &AgentConfig) -> (String, bool) {
    match outcome {
        None => ("its answer was lost (the run ended more than a day before it could be reported)".into(), false),
        Some(ApiOutcome::Failed { message }) => (message, false),
        Some(ApiOutcome::Done { stopped: true, .. }) => ("it was stopped".into(), false),
        Some(ApiOutcome::Done { text, .. }) if text.trim() == super::answer::TURN_PAST_DEADLINE => (
            format!(
                "it reached its time limit ({} min, SUBAGENT_TIMEOUT_MINUTES) before it was done",
                cfg.tasks.subagent_timeout_ms / 60_000
            ),
            false,
        ),
        Some(ApiOutcome::Done { text, .. }) if text.trim().is_empty() => {
            ("it finished without an answer".into(), false)
        }
        Some(ApiOutcome::Done { text, .. }) => (text, !limited),
    }
}
