//! The usage ledger and budget calls to an Agent object, and the reports
//! they answer with (the `GET /api/agents/{id}/usage` body is
//! [`UsageReport`]).
//!
//! A Session sends one [`MeterRequest`] before each LLM call when the agent
//! has a budget (it reserves room for the call and carries the settlements
//! of the calls made since the last request), and one at the end of a
//! drain with what is left to settle. Without a budget only the latter:
//! recording usage then costs one object call per drain, not per LLM call.

use super::call::impl_call;
use serde::Serialize;
use std::collections::BTreeMap;

/// `POST` [`MeterRequest`] → [`MeterReply`].
pub const METER_PATH: &str = "/usage/meter";
/// `POST` [`ReportRequest`] → [`UsageReport`]; a bad period or thread is a
/// 400 `{"ok": false, "error"}`, an unknown agent a 404.
pub const REPORT_PATH: &str = "/usage/report";

/// Which report: the agent's, or one thread's, over a period.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportRequest {
    pub agent: String,
    /// `today`, `month`, `all`, `YYYY-MM-DD` or `YYYY-MM`.
    pub period: String,
    /// A session key, `main`, or an API thread id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// What an LLM call was for. Background kinds stop first when a budget runs low.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UsageKind {
    /// The first call of a turn answering a person.
    Conversation,
    /// A call after tool results, in the same turn.
    ToolRound,
    Compaction,
    /// The memory extraction before a reset.
    ResetExtraction,
    Heartbeat,
    Job,
    /// The nightly memory sweep (issue 17).
    Dreaming,
    /// A voice reply: text to speech. `input` counts the characters spoken
    /// (what speech models are priced by), `output` nothing.
    Tts,
    /// A peer answering what another agent of the Worker delegated to it
    /// (its `delegate` tool): in the peer's own ledger. Someone is waiting.
    Delegated,
    /// A background sub-agent's run (`spawn_task`): nobody waits for it, so
    /// it is the first work a budget stops.
    Subagent,
}

impl UsageKind {
    pub const ALL: [UsageKind; 10] = [
        UsageKind::Conversation,
        UsageKind::ToolRound,
        UsageKind::Compaction,
        UsageKind::ResetExtraction,
        UsageKind::Heartbeat,
        UsageKind::Job,
        UsageKind::Dreaming,
        UsageKind::Tts,
        UsageKind::Delegated,
        UsageKind::Subagent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UsageKind::Conversation => "conversation",
            UsageKind::ToolRound => "toolRound",
            UsageKind::Compaction => "compaction",
            UsageKind::ResetExtraction => "resetExtraction",
            UsageKind::Heartbeat => "heartbeat",
            UsageKind::Job => "job",
            UsageKind::Dreaming => "dreaming",
            UsageKind::Tts => "tts",
            UsageKind::Delegated => "delegated",
            UsageKind::Subagent => "subagent",
        }
    }

    pub fn parse(s: &str) -> Option<UsageKind> {
        UsageKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Work nobody is waiting for: it stops at `BUDGET_BACKGROUND_PERCENT`.
    pub fn is_background(self) -> bool {
        matches!(self, UsageKind::Heartbeat | UsageKind::Job | UsageKind::Dreaming | UsageKind::Subagent)
    }
}

/// One finished LLM call, as its Session recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The session key (an API thread's too).
    pub thread: String,
    /// The conversation within the thread (a reset starts a new one).
    pub session_id: String,
    /// The Session's own row number: `(thread, seq)` is recorded once.
    pub seq: i64,
    pub at: i64,
    pub kind: UsageKind,
    pub model: String,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The part of `cache_write` written for an hour (priced apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CallRecord {
    pub fn usage(&self) -> r2_layout::Usage {
        r2_layout::Usage::new(self.input, self.output, self.cache_read, self.cache_write)
            .with_1h_writes(self.cache_write_1h)
    }
}

/// Room asked for one call about to be made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reserve {
    pub thread: String,
    pub kind: UsageKind,
    pub model: String,
    /// The caller's estimate of the request's size.
    pub prompt_tokens: u64,
    /// The call's output limit (`LLM_MAX_TOKENS`).
    pub max_output_tokens: u64,
}

/// A Session's (or the Worker's) call to the ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeterRequest {
    pub agent: String,
    /// Calls finished since the last request (recorded once each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settle: Vec<CallRecord>,
    /// Reservations whose call is over (made, failed or never sent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<Reserve>,
    /// Answer with today's and this month's figures (`/usage`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary: bool,
}

/// Whether a call may be made. (Read tag-first through [`DecisionDe`],
/// without serde's content buffer: see `r2_layout::tagged`.)
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "decision")]
pub enum Decision {
    /// Go ahead; release `reservation` when the call is over. `tight`: a
    /// limit is near (80 % with what is held), so release it promptly
    /// rather than with the next batch: other calls may be waiting for it.
    Go {
        reservation: u64,
        #[serde(default)]
        tight: bool,
    },
    /// What is spent leaves room, but calls in flight may take it: ask again
    /// after `retry_ms`.
    #[serde(rename_all = "camelCase")]
    Wait { retry_ms: u64 },
    /// A limit is reached: no call.
    Stop(BudgetStop),
}

/// [`Decision`]'s externally tagged twin (`r2_layout::read_tagged`).
#[derive(hearth_json::Deserialize)]
// A description for reading only: the real type is built, never this one.
#[allow(dead_code)]
#[serde(remote = "Decision", rename_all = "camelCase")]
enum DecisionDe {
    Go {
        reservation: u64,
        #[serde(default)]
        tight: bool,
    },
    #[serde(rename_all = "camelCase")]
    Wait {
        retry_ms: u64,
    },
    Stop(BudgetStop),
}
r2_layout::read_tagged!(Decision, DecisionDe, "decision", "a budget decision (an object with a decision)");

/// Which limit stopped a call, and what to tell the user.
#[derive(Debug, Clone, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStop {
    /// `daily` or `monthly`.
    pub scope: String,
    /// When the period turns (ms since the epoch).
    pub resets_at: i64,
    /// The background threshold stopped it, not the limit itself.
    pub background: bool,
    /// For the person waiting: the budget is reached, when it resets.
    pub message: String,
}

/// What the ledger answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeterReply {
    /// Calls newly recorded (a repeat of a settled call counts 0).
    pub settled: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// For the owner, once per period: a limit is 80 % spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<UsageSummary>,
}

/// Token and cost figures of a set of calls. `promptTokens` counts every
/// input token (fresh, cache read and cache write); `cacheHitRate` is
/// `cacheReadTokens / promptTokens` (null without calls); `cost` is null
/// when no call had a price.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub calls: u64,
    pub tokens: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// The part of `cacheWriteTokens` written for an hour (Anthropic,
    /// heartbeats and jobs: priced at 2× input, the rest at 1.25×).
    #[serde(default)]
    pub cache_write_1h_tokens: u64,
    pub cache_hit_rate: Option<f64>,
    pub cost: Option<f64>,
}

/// One limit and how much of it is used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitStatus {
    pub limit_usd: Option<f64>,
    pub spent_usd: f64,
    pub left_usd: Option<f64>,
    pub limit_tokens: Option<u64>,
    pub spent_tokens: u64,
    pub left_tokens: Option<u64>,
    /// The larger share used, of the USD and the token limit (0–100+).
    pub percent: f64,
    /// Conversations stop (100 %).
    pub reached: bool,
    /// Heartbeats, jobs and dreaming stop (`backgroundPercent`).
    pub background_stopped: bool,
    pub resets_at: i64,
}

/// The agent's budgets now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStatus {
    pub daily: Option<LimitStatus>,
    pub monthly: Option<LimitStatus>,
    pub background_percent: u8,
}

/// The usage of an agent (or one thread) over a period: seed 004 §10's
/// format with §18's cache fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// `today`, `month`, `all-time`, or the day/month asked for.
    pub period: String,
    /// First and (excluded) last instant of the period, ms; null: open.
    pub from: Option<i64>,
    pub until: Option<i64>,
    pub timezone: String,
    pub calls: u64,
    pub total_tokens: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// The part of `cacheWriteTokens` written for an hour.
    #[serde(default)]
    pub cache_write_1h_tokens: u64,
    pub cache_hit_rate: Option<f64>,
    /// The cost of the calls with a price (models without one: see `unpricedModels`).
    pub total_cost: f64,
    pub currency: String,
    pub by_model: BTreeMap<String, Figures>,
    pub by_kind: BTreeMap<String, Figures>,
    /// Models whose calls have no price (their `cost` is null).
    pub unpriced_models: Vec<String>,
    /// The period's local days with calls, oldest first (the API report
    /// only, which the Worker passes on as it is: nothing reads it back, so
    /// no deserializer is compiled for it; `/usage` leaves it empty).
    #[serde(skip_deserializing)]
    pub by_day: Vec<DayFigures>,
    /// One thread: the hit rate of its steady-state calls (from each
    /// conversation's third call on, within 5 minutes of the previous one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<Figures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetStatus>,
}

/// The calls of one local day (`date`, `YYYY-MM-DD` in the agent's time
/// zone). `costUsd` sums the priced calls, like `totalCost`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DayFigures {
    pub date: String,
    pub calls: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// `/usage`: today and this month.
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageSummary {
    pub today: UsageReport,
    pub month: UsageReport,
}

impl_call!(MeterRequest => Agent Post METER_PATH, MeterReply, |r| r.agent.clone());
impl_call!(ReportRequest => Agent Post REPORT_PATH, UsageReport, |r| r.agent.clone());
