//! What the agent's LLM calls cost, and the limits on it.
//!
//! Every call (a conversation, its tool rounds, a compaction, the memory
//! extraction before a reset, a heartbeat, a job, dreaming) is recorded with
//! its model, kind, thread and the four token counts, and priced ([`prices`]:
//! a built-in table, `LLM_PRICES` per deployment). The ledger ([`book`])
//! lives in the Agent object, one per agent: the one place that sees every
//! session, so it can aggregate ([`report`], in the agent's time zone:
//! [`period`]) and enforce hard daily and monthly budgets atomically
//! ([`budget`]). [`cache`] watches whether sessions find the provider's
//! prompt cache.
//!
//! How a call is metered (the protocol is [`crate::protocol::usage`]):
//! 1. With a budget set, before the call its maker asks the Agent object for
//!    room (`reserve`): [`Decision::Go`] with a reservation id,
//!    [`Decision::Wait`], or [`Decision::Stop`] with the words for the user.
//! 2. The call's usage is written down where it was made (a Session's
//!    `usage` table), then sent to the ledger with the next request
//!    (`settle`, with `release` of the reservation): the reservation of the
//!    next call carries it, and a drain ends with one request for what is
//!    left. Without a budget only that last request is made.
//!
//! **For work in the Agent object itself (dreaming, issue 17).** Call
//! [`crate::agent::host::AgentHost::reserve_call`] with
//! [`UsageKind::Dreaming`] before the LLM call: on [`Decision::Stop`] (the
//! background share of a budget is used: `BUDGET_BACKGROUND_PERCENT`, 90 %
//! by default) skip the sweep; on [`Decision::Wait`] skip it too (calls in
//! flight may use the rest); on [`Decision::Go`] make the call, then
//! [`crate::agent::host::AgentHost::settle_call`] with a [`CallRecord`] of
//! kind `Dreaming`, thread `agent:{id}:dreaming`, a `seq` unique to the run
//! (its slot time) and the reservation to release. It is then in
//! `GET /api/agents/{id}/usage` under `byKind.dreaming`.
//!
//! [`Decision::Go`]: crate::protocol::usage::Decision::Go
//! [`Decision::Wait`]: crate::protocol::usage::Decision::Wait
//! [`Decision::Stop`]: crate::protocol::usage::Decision::Stop
//! [`UsageKind::Dreaming`]: crate::protocol::usage::UsageKind::Dreaming
//! [`CallRecord`]: crate::protocol::usage::CallRecord

pub mod book;
pub mod budget;
pub mod cache;
pub mod period;
pub mod prices;
pub mod report;

#[cfg(test)]
mod tests;

/// The thread a session key or an API thread id names: a session key of
/// `agent` as it is, `main` the owner's main session, anything else an API
/// thread (`agent:{id}:api:{threadId}`, issue 13). `None`: not a valid id.
pub fn thread_key(agent: &str, thread: &str) -> Option<String> {
    if let Some(key) = crate::inbound::SessionKey::parse(thread) {
        return (key.agent().as_str() == agent).then(|| key.render());
    }
    let ok =
        |id: &str| !id.is_empty() && id.len() <= 128 && !id.chars().any(|c| c.is_control() || c == '/' || c == ':');
    if let Some(id) = thread.strip_prefix(&format!("agent:{agent}:api:")) {
        return ok(id).then(|| thread.to_owned());
    }
    if thread == "main" {
        return Some(format!("agent:{agent}:main"));
    }
    ok(thread).then(|| format!("agent:{agent}:api:{thread}"))
}
