//! The agent's usage ledger, in its Agent object: every LLM call of every
//! session (and of the object's own work), priced once when recorded, and
//! the budget kept against it. One place to aggregate and to enforce.
//!
//! `usage_ledger` holds one row per call, keyed by `(thread, seq)`: a
//! Session that sends a call again (its reply was lost) records nothing
//! twice. Its cost is fixed when recorded, at the price of the day; `NULL`
//! for a model without a price (one warning per model). `usage_notes`
//! remembers the 80 % warnings given per period, `usage_blocked` the threads
//! a limit stopped, to wake when the period turns or the limit is raised.

use super::budget::{self, Holds, Limit, Spent};
use super::period::{self, Period, Span};
use super::prices::{self, PriceBook};
use super::report::{self, Group};
use crate::ports::{LogLevel, Sql, SqlValue, StorageError};
use crate::protocol::usage::{
    CallRecord, DayFigures, Decision, MeterReply, MeterRequest, UsageKind, UsageReport, UsageSummary,
};
use crate::settings::usage::{ModelPrice, UsageSettings, WARN_PERCENT};
use crate::storage::{col_i64, col_string};
use std::collections::{BTreeSet, HashMap};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS usage_ledger (
        thread TEXT NOT NULL,
        seq INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        kind TEXT NOT NULL,
        model TEXT NOT NULL,
        input INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cache_read INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        cost REAL,
        cache_write_1h INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (thread, seq))",
    "CREATE INDEX IF NOT EXISTS usage_ledger_at ON usage_ledger(at)",
    "CREATE TABLE IF NOT EXISTS usage_notes (key TEXT PRIMARY KEY, at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS usage_blocked (thread TEXT PRIMARY KEY, since INTEGER NOT NULL)",
    // Added after the ledger was first made (the part of `cache_write` written
    // for an hour, priced apart): run on older ledgers, skipped on new ones.
    "ALTER TABLE usage_ledger ADD COLUMN cache_write_1h INTEGER NOT NULL DEFAULT 0",
];
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "usage_ledger", statements: SCHEMA };

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE_MS: i64 = (1 << 53) - 1;

/// A quarter of an hour: every time zone's offset is a whole number of them,
/// so a quarter hour of UTC lies within one local day.
const QUARTER_MS: i64 = 15 * 60_000;

/// Calls more than this apart do not find the provider's cache (Anthropic's
/// and OpenAI's prompt caches live about 5 minutes): not steady state.
pub const CACHE_TTL_MS: i64 = 5 * 60_000;

/// Spent in the current period, kept in memory between calls.
#[derive(Debug, Clone)]
struct Current {
    span: Span,
    key: String,
    from: i64,
    until: i64,
    spent: Spent,
}

fn col_f64(row: &[SqlValue], i: usize) -> Option<f64> {
    match row.get(i) {
        Some(SqlValue::Real(f)) => Some(*f),
        Some(SqlValue::Int(n)) => Some(*n as f64),
        _ => None,
    }
}

fn u(row: &[SqlValue], i: usize) -> u64 {
    col_i64(row, i).max(0) as u64
}

/// The ledger and budget of one agent.
pub struct UsageBook {
    agent: String,
    timezone: String,
    settings: UsageSettings,
    prices: PriceBook,
    price_memo: HashMap<String, Option<ModelPrice>>,
    holds: Holds,
    current: Vec<Current>,
    /// Warnings already given (also in `usage_notes`).
    noted: BTreeSet<String>,
    /// Whether `usage_blocked` may have rows (None: not read yet).
    blocked: Option<bool>,
    schema_ready: bool,
}

impl UsageBook {
    pub fn new(agent: &str, timezone: &str, settings: UsageSettings) -> Self {
        UsageBook {
            agent: agent.to_owned(),
            timezone: timezone.to_owned(),
            prices: PriceBook::new(&settings.prices),
            settings,
            price_memo: HashMap::new(),
            holds: Holds::default(),
            current: Vec::new(),
            noted: BTreeSet::new(),
            blocked: None,
            schema_ready: false,
        }
    }

    pub fn settings(&self) -> &UsageSettings {
        &self.settings
    }

    fn init<S: Sql>(&mut self, sql: &S) -> Result<(), StorageError> {
        if !self.schema_ready {
            crate::storage::ensure(sql, &TABLES)?;
            self.schema_ready = true;
        }
        Ok(())
    }

    /// The price of `model`; a model without one is warned about once.
    fn price(&mut self, model: &str, log: &dyn Fn(LogLevel, &str)) -> Option<ModelPrice> {
        if let Some(p) = self.price_memo.get(model) {
            return *p;
        }
        let p = self.prices.price(model);
        if p.is_none() {
            log(
                LogLevel::Warn,
                &format!(
                    "usage: no price for model {model:?}: its tokens are recorded, its cost is null \
                     (add it to LLM_PRICES, USD per million tokens)"
                ),
            );
        }
        self.price_memo.insert(model.to_owned(), p);
        p
    }

    /// What the current `span` has spent (read from the ledger when the period turned).
    fn spent<S: Sql>(&mut self, sql: &S, span: Span, now: i64) -> Result<(Spent, i64), StorageError> {
        let key = span.key(now, &self.timezone);
        if let Some(c) = self.current.iter().find(|c| c.span == span && c.key == key) {
            return Ok((c.spent, c.until));
        }
        let (from, until) = span.bounds(now, &self.timezone);
        let rows = sql.exec(
            "SELECT COALESCE(SUM(cost), 0), COALESCE(SUM(input + output + cache_read + cache_write), 0) \
             FROM usage_ledger WHERE at >= ? AND at < ?",
            &[from.into(), until.into()],
        )?;
        let row = rows.first().cloned().unwrap_or_default();
        let spent = Spent { usd: col_f64(&row, 0).unwrap_or(0.0), tokens: u(&row, 1) };
        self.current.retain(|c| c.span != span);
        self.current.push(Current { span, key, from, until, spent });
        Ok((spent, until))
    }

    fn limits<S: Sql>(&mut self, sql: &S, now: i64) -> Result<Vec<(Limit, Spent, i64)>, StorageError> {
        let mut out = Vec::new();
        for limit in Limit::of(&self.settings.budget) {
            let (spent, until) = self.spent(sql, limit.span, now)?;
            out.push((limit, spent, until));
        }
        Ok(out)
    }

    /// Records one call; `false` when it was recorded before.
    fn settle<S: Sql>(&mut self, sql: &S, c: &CallRecord, log: &dyn Fn(LogLevel, &str)) -> Result<bool, StorageError> {
        let cost = self.price(&c.model, log).map(|p| prices::cost(&p, &c.usage()));
        let n = |v: u64| SqlValue::Int(i64::try_from(v).unwrap_or(i64::MAX));
        let inserted = sql.exec(
            "INSERT INTO usage_ledger (thread, seq, session_id, at, kind, model, input, output, cache_read, cache_write, cost, \
             cache_write_1h) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(thread, seq) DO NOTHING RETURNING seq",
            &[
                c.thread.as_str().into(),
                c.seq.into(),
                c.session_id.as_str().into(),
                c.at.into(),
                c.kind.as_str().into(),
                c.model.as_str().into(),
                n(c.input),
                n(c.output),
                n(c.cache_read),
                n(c.cache_write),
                cost.map_or(SqlValue::Null, SqlValue::Real),
                n(c.cache_write_1h.min(c.cache_write)),
            ],
        )?;
        if inserted.is_empty() {
            return Ok(false);
        }
        let tokens = c.usage().total_tokens;
        for cur in self.current.iter_mut().filter(|cur| c.at >= cur.from && c.at < cur.until) {
            cur.spent.usd += cost.unwrap_or(0.0);
            cur.spent.tokens = cur.spent.tokens.saturating_add(tokens);
        }
        Ok(true)
    }

    /// The 80 % warnings not given yet this period (remembered as given).
    fn notices<S: Sql>(&mut self, sql: &S, now: i64) -> Result<Option<String>, StorageError> {
        let mut out = Vec::new();
        for (limit, spent, until) in self.limits(sql, now)? {
            if limit.percent(spent) < f64::from(WARN_PERCENT) {
                continue;
            }
            let key = format!("warned:{}:{}", limit.span.word(), limit.span.key(now, &self.timezone));
            if self.noted.contains(&key) {
                continue;
            }
            let fresh = !sql
                .exec(
                    "INSERT INTO usage_notes (key, at) VALUES (?, ?) ON CONFLICT(key) DO NOTHING RETURNING key",
                    &[key.as_str().into(), now.into()],
                )?
                .is_empty();
            self.noted.insert(key);
            if fresh {
                let pct = self.settings.budget.background_percent;
                out.push(report::notice_text(&limit, spent, until, &self.timezone, pct));
            }
        }
        Ok((!out.is_empty()).then(|| out.join("\n")))
    }

    /// Settles, releases, reserves and reports, as `req` asks (see
    /// [`crate::protocol::usage`]). One request at a time: the object's
    /// requests do not interleave within this call, so the check and the
    /// hold are atomic.
    pub fn meter<S: Sql>(
        &mut self,
        sql: &S,
        req: &MeterRequest,
        now: i64,
        log: &dyn Fn(LogLevel, &str),
    ) -> Result<MeterReply, StorageError> {
        self.init(sql)?;
        let mut reply = MeterReply::default();
        for id in &req.release {
            self.holds.release(*id);
        }
        for c in &req.settle {
            if self.settle(sql, c, log)? {
                reply.settled += 1;
            }
        }
        if self.settings.budget.is_set() && reply.settled > 0 {
            reply.notice = self.notices(sql, now)?;
        }
        if let Some(r) = &req.reserve {
            reply.decision =
                Some(self.decide(sql, &r.thread, r.kind, &r.model, r.prompt_tokens, r.max_output_tokens, now, log)?);
        }
        if req.summary {
            reply.summary = Some(UsageSummary {
                today: self.report(sql, Period::Today, None, now)?,
                month: self.report(sql, Period::Month, None, now)?,
            });
        }
        Ok(reply)
    }

    /// Whether a call of `kind` may go now (see [`budget::decide`]). A
    /// conversation stopped by a limit is remembered, to be woken later.
    #[allow(clippy::too_many_arguments)]
    pub fn decide<S: Sql>(
        &mut self,
        sql: &S,
        thread: &str,
        kind: UsageKind,
        model: &str,
        prompt_tokens: u64,
        max_output: u64,
        now: i64,
        log: &dyn Fn(LogLevel, &str),
    ) -> Result<Decision, StorageError> {
        self.init(sql)?;
        if !self.settings.budget.is_set() {
            return Ok(Decision::Go { reservation: 0, tight: false });
        }
        let estimate = budget::estimate(self.price(model, log).as_ref(), prompt_tokens, max_output);
        let limits = self.limits(sql, now)?;
        let tz = self.timezone.clone();
        let pct = self.settings.budget.background_percent;
        let decision =
            budget::decide(&self.settings.budget, &limits, &mut self.holds, kind, estimate, now, |l, s, at, bg| {
                if bg {
                    report::background_stop_text(l, s, pct)
                } else {
                    report::stop_text(l, s, at, &tz)
                }
            });
        if let Decision::Stop(stop) = &decision {
            if stop.background {
                log(LogLevel::Info, &format!("usage: {kind:?} of {thread} not run: {}", stop.message));
            } else {
                log(LogLevel::Warn, &format!("usage: {} budget reached; {thread} waits", stop.scope));
                sql.exec(
                    "INSERT INTO usage_blocked (thread, since) VALUES (?, ?) ON CONFLICT(thread) DO NOTHING",
                    &[thread.into(), now.into()],
                )?;
                self.blocked = Some(true);
            }
        }
        Ok(decision)
    }

    /// The threads a limit stopped that may go on now (the period turned,
    /// or the limit was raised): forgotten here, for the caller to wake.
    pub fn wake_due<S: Sql>(&mut self, sql: &S, now: i64) -> Result<Vec<String>, StorageError> {
        self.init(sql)?;
        if self.blocked == Some(false) {
            return Ok(Vec::new());
        }
        let rows = sql.exec("SELECT thread FROM usage_blocked ORDER BY since", &[])?;
        if rows.is_empty() {
            self.blocked = Some(false);
            return Ok(Vec::new());
        }
        let still = self.limits(sql, now)?.iter().any(|(limit, spent, _)| limit.percent(*spent) >= 100.0);
        if still {
            return Ok(Vec::new());
        }
        sql.exec("DELETE FROM usage_blocked", &[])?;
        self.blocked = Some(false);
        Ok(rows.into_iter().map(|mut r| col_string(&mut r, 0)).collect())
    }

    /// The usage of the agent, or of one thread, over `period`.
    pub fn report<S: Sql>(
        &mut self,
        sql: &S,
        period: Period,
        thread: Option<&str>,
        now: i64,
    ) -> Result<UsageReport, StorageError> {
        self.init(sql)?;
        let (from, until) = period.bounds(now, &self.timezone);
        // Open ends as numbers JavaScript holds exactly (SQLite values cross into JS).
        let (lo, hi) = (from.unwrap_or(0), until.unwrap_or(MAX_SAFE_MS));
        let mut q = "SELECT kind, model, COUNT(*), SUM(input), SUM(output), SUM(cache_read), SUM(cache_write), \
                     SUM(cost), COUNT(cost), SUM(cache_write_1h) FROM usage_ledger WHERE at >= ? AND at < ?"
            .to_owned();
        let mut params: Vec<SqlValue> = vec![lo.into(), hi.into()];
        if let Some(t) = thread {
            q.push_str(" AND thread = ?");
            params.push(t.into());
        }
        q.push_str(" GROUP BY kind, model");
        let groups: Vec<Group> = sql
            .exec(&q, &params)?
            .into_iter()
            .map(|mut r| {
                let calls = u(&r, 2);
                let priced = u(&r, 8);
                Group {
                    kind: col_string(&mut r, 0),
                    model: col_string(&mut r, 1),
                    calls,
                    usage: r2_layout::Usage::new(u(&r, 3), u(&r, 4), u(&r, 5), u(&r, 6)).with_1h_writes(u(&r, 9)),
                    cost: (priced > 0).then(|| col_f64(&r, 7).unwrap_or(0.0)),
                    unpriced: calls - priced.min(calls),
                }
            })
            .collect();
        let base = UsageReport {
            agent: self.agent.clone(),
            thread: thread.map(str::to_owned),
            period: period.label(),
            from,
            until,
            timezone: self.timezone.clone(),
            ..Default::default()
        };
        let mut r = report::build(base, &groups);
        match thread {
            Some(t) => r.steady_state = Some(self.steady_state(sql, t, lo, hi)?),
            None if self.settings.budget.is_set() => {
                let limits = self.limits(sql, now)?;
                r.budget = Some(budget::budget_status(&self.settings.budget, &limits));
            }
            None => {}
        }
        Ok(r)
    }

    /// The calls of `[from, until)` (of one thread, or all) per local day,
    /// oldest first, days with calls only. SQLite knows no time zones, so
    /// the ledger sums them per quarter hour, in order, and each quarter is
    /// put on its local day here: one query, no sort, a zone lookup per day.
    pub fn by_day<S: Sql>(
        &mut self,
        sql: &S,
        from: Option<i64>,
        until: Option<i64>,
        thread: Option<&str>,
    ) -> Result<Vec<DayFigures>, StorageError> {
        self.init(sql)?;
        let mut q = format!(
            "SELECT at / {QUARTER_MS}, COUNT(*), SUM(input + output + cache_read + cache_write), SUM(cost) \
             FROM usage_ledger WHERE at >= ? AND at < ?"
        );
        let mut params: Vec<SqlValue> = vec![from.unwrap_or(0).into(), until.unwrap_or(MAX_SAFE_MS).into()];
        if let Some(t) = thread {
            q.push_str(" AND thread = ?");
            params.push(t.into());
        }
        q.push_str(" GROUP BY 1 ORDER BY 1");
        let mut days: Vec<DayFigures> = Vec::new();
        let mut next_day = i64::MIN;
        for r in sql.exec(&q, &params)? {
            let at = col_i64(&r, 0).saturating_mul(QUARTER_MS);
            if at >= next_day {
                let date = period::local_date(at, &self.timezone);
                next_day = date.tomorrow().map_or(i64::MAX, |d| period::start_of(d, &self.timezone));
                days.push(DayFigures { date: Period::Day(date).label(), ..Default::default() });
            }
            if let Some(d) = days.last_mut() {
                d.calls += u(&r, 1);
                d.tokens += u(&r, 2);
                d.cost_usd += col_f64(&r, 3).unwrap_or(0.0);
            }
        }
        for d in &mut days {
            d.cost_usd = report::round6(d.cost_usd);
        }
        Ok(days)
    }

    /// A thread's calls in steady state: from each conversation's third
    /// call on, when the previous call was recent enough to find the cache.
    fn steady_state<S: Sql>(
        &self,
        sql: &S,
        thread: &str,
        lo: i64,
        hi: i64,
    ) -> Result<crate::protocol::usage::Figures, StorageError> {
        let rows = sql.exec(
            "SELECT session_id, at, input, output, cache_read, cache_write, cost, cache_write_1h FROM usage_ledger \
             WHERE thread = ? AND at >= ? AND at < ? ORDER BY session_id, at, seq",
            &[thread.into(), lo.into(), hi.into()],
        )?;
        let mut steady = Vec::new();
        let (mut session, mut index, mut last_at) = (String::new(), 0, 0);
        for mut r in rows {
            let id = col_string(&mut r, 0);
            let at = col_i64(&r, 1);
            if id != session {
                (session, index) = (id, 0);
            } else {
                index += 1;
            }
            if index >= 2 && at - last_at <= CACHE_TTL_MS {
                let usage = r2_layout::Usage::new(u(&r, 2), u(&r, 3), u(&r, 4), u(&r, 5)).with_1h_writes(u(&r, 7));
                steady.push((usage, col_f64(&r, 6)));
            }
            last_at = at;
        }
        Ok(report::figures_of(steady))
    }
}
