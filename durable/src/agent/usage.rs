//! The Agent object's usage ledger and budget ([`crate::usage`]): what its
//! Sessions (and the Worker's `/usage` routes) ask, and what its own work
//! (dreaming) uses to keep to the budget.

use super::host::{AgentHost, AgentRuntime, Refusal};
use crate::inbound::SessionKey;
use crate::ports::{LogLevel, StorageError};
use crate::protocol::usage::{CallRecord, Decision, MeterReply, MeterRequest, Reserve, UsageKind, UsageReport};
use crate::scheduled::SessionQueue;
use crate::settings::usage::UsageSettings;
use crate::settings::{agent_ids, setting};
use crate::usage::book::UsageBook;
use crate::usage::period::Period;

impl<R: AgentRuntime + 'static> AgentHost<R> {
    /// Runs `f` on `agent`'s ledger, made on first use with the agent's
    /// settings (an object's vars are fixed for its life).
    fn with_book<T>(
        &self,
        agent: &str,
        f: impl FnOnce(&mut UsageBook) -> Result<T, StorageError>,
    ) -> Result<T, Refusal> {
        let vars = self.runtime().vars();
        if !agent_ids(vars).iter().any(|a| a == agent) {
            return Err(Refusal { status: 404, message: format!("unknown agent {agent:?}") });
        }
        let mut slot = self.usage.borrow_mut();
        if slot.as_ref().is_none_or(|(name, _)| name != agent) {
            let settings =
                UsageSettings::load(vars, agent).map_err(|e| Refusal { status: 500, message: e.to_string() })?;
            let tz = setting(vars, agent, "TIMEZONE").unwrap_or_else(|| "UTC".into());
            if !crate::clock::is_valid_zone(&tz) {
                return Err(Refusal {
                    status: 500,
                    message: format!("TIMEZONE is invalid: {tz:?} is not an IANA time zone"),
                });
            }
            *slot = Some((agent.to_owned(), UsageBook::new(agent, &tz, settings)));
        }
        let (_, book) = slot.as_mut().ok_or_else(|| Refusal { status: 500, message: "no ledger".into() })?;
        f(book).map_err(Refusal::from)
    }

    /// A Session's request: settle, release, reserve, summarise.
    pub fn meter(&self, req: &MeterRequest) -> Result<MeterReply, Refusal> {
        let sql = self.runtime().sql().clone();
        let now = self.runtime().now_ms();
        let log = |level: LogLevel, msg: &str| self.runtime().log(level, msg);
        self.with_book(&req.agent, |book| book.meter(&*sql, req, now, &log))
    }

    /// `GET /api/agents/{id}/usage?period=` (a bad period is a 400).
    pub fn usage_report(&self, agent: &str, period: &str, thread: Option<&str>) -> Result<UsageReport, Refusal> {
        let period = Period::parse(period).map_err(|e| Refusal { status: 400, message: e })?;
        let thread = match thread {
            Some(t) => Some(crate::usage::thread_key(agent, t).ok_or_else(|| Refusal {
                status: 400,
                message: format!(
                    "{t:?} is not a thread of agent {agent:?} (a session key, `main`, or an API thread id)"
                ),
            })?),
            None => None,
        };
        let sql = self.runtime().sql().clone();
        let now = self.runtime().now_ms();
        self.with_book(agent, |book| {
            let mut r = book.report(&*sql, period, thread.as_deref(), now)?;
            r.by_day = book.by_day(&*sql, r.from, r.until, thread.as_deref())?;
            Ok(r)
        })
    }

    /// Wakes the sessions a limit stopped, when they may go on now (the
    /// period turned, or a deploy raised the limit). Run on each cron tick.
    pub async fn wake_held_sessions(&self, agent: &str) {
        let sql = self.runtime().sql().clone();
        let now = self.runtime().now_ms();
        let threads = match self.with_book(agent, |book| book.wake_due(&*sql, now)) {
            Ok(t) => t,
            Err(r) => {
                self.runtime().log(LogLevel::Error, &format!("usage: held sessions not checked: {}", r.message));
                return;
            }
        };
        for thread in threads {
            let woken = match SessionKey::parse(&thread) {
                Some(key) => self.runtime().queue().wake(&key).await,
                None => Err(StorageError(format!("{thread} is not a session key"))),
            };
            match woken {
                Ok(()) => self.runtime().log(LogLevel::Info, &format!("usage: budget allows again; {thread} woken")),
                Err(e) => self.runtime().log(LogLevel::Error, &format!("usage: could not wake {thread}: {e}")),
            }
        }
    }

    /// For the object's own LLM work (dreaming): may a call of `kind` go?
    /// [`Decision::Go`] carries the reservation to give back to
    /// [`Self::settle_call`]; `Wait` and `Stop` mean: skip it this time.
    pub fn reserve_call(
        &self,
        agent: &str,
        kind: UsageKind,
        model: &str,
        prompt_tokens: u64,
        max_output_tokens: u64,
    ) -> Result<Decision, Refusal> {
        let reserve = Reserve {
            thread: format!("agent:{agent}:{}", kind.as_str().to_ascii_lowercase()),
            kind,
            model: model.to_owned(),
            prompt_tokens,
            max_output_tokens,
        };
        let req = MeterRequest { agent: agent.to_owned(), reserve: Some(reserve), ..Default::default() };
        Ok(self.meter(&req)?.decision.unwrap_or(Decision::Go { reservation: 0, tight: false }))
    }

    /// Records the object's own call (and releases its reservation). The
    /// owner's 80 % warning, if this call crossed it, is returned to send.
    pub fn settle_call(&self, agent: &str, call: CallRecord, reservation: u64) -> Result<Option<String>, Refusal> {
        let req = MeterRequest {
            agent: agent.to_owned(),
            settle: vec![call],
            release: vec![reservation],
            ..Default::default()
        };
        Ok(self.meter(&req)?.notice)
    }
}
