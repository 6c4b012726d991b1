//! Usage as people read it: the API report built from ledger rows, the
//! `/usage` answer, the reply footer, and the budget messages. `/usage` and
//! the API are written from the same [`UsageReport`], so they show the same
//! figures.

use super::budget::{Limit, Spent};
use crate::clock;
use crate::protocol::usage::{Figures, LimitStatus, UsageReport, UsageSummary};
use r2_layout::Usage;

/// Calls of one kind and model, summed (a ledger `GROUP BY` row).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub kind: String,
    pub model: String,
    pub calls: u64,
    pub usage: Usage,
    /// Sum of the priced calls' cost; `None` when none had a price.
    pub cost: Option<f64>,
    /// Calls without a price.
    pub unpriced: u64,
}

fn add(f: &mut Figures, calls: u64, u: &Usage, cost: Option<f64>) {
    f.calls += calls;
    f.prompt_tokens += u.input + u.cache_read + u.cache_write;
    f.completion_tokens += u.output;
    f.cache_read_tokens += u.cache_read;
    f.cache_write_tokens += u.cache_write;
    f.cache_write_1h_tokens += u.cache_write_1h;
    f.tokens = f.prompt_tokens + f.completion_tokens;
    f.cache_hit_rate = (f.prompt_tokens > 0).then(|| round4(f.cache_read_tokens as f64 / f.prompt_tokens as f64));
    if let Some(c) = cost {
        f.cost = Some(f.cost.unwrap_or(0.0) + c);
    }
}

/// Figures of calls given one by one (a thread's steady state).
pub fn figures_of(calls: impl IntoIterator<Item = (Usage, Option<f64>)>) -> Figures {
    let mut f = Figures::default();
    for (u, c) in calls {
        add(&mut f, 1, &u, c);
    }
    f
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Costs are kept to a millionth of a dollar in reports.
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The report of `groups` (totals, by model, by kind).
pub fn build(mut r: UsageReport, groups: &[Group]) -> UsageReport {
    let mut total = Figures::default();
    for g in groups {
        add(&mut total, g.calls, &g.usage, g.cost);
        add(r.by_model.entry(g.model.clone()).or_default(), g.calls, &g.usage, g.cost);
        add(r.by_kind.entry(g.kind.clone()).or_default(), g.calls, &g.usage, g.cost);
        if g.unpriced > 0 && !r.unpriced_models.contains(&g.model) {
            r.unpriced_models.push(g.model.clone());
        }
    }
    for f in r.by_model.values_mut().chain(r.by_kind.values_mut()) {
        f.cost = f.cost.map(round6);
    }
    crate::order::sort(&mut r.unpriced_models);
    r.calls = total.calls;
    r.total_tokens = total.tokens;
    r.prompt_tokens = total.prompt_tokens;
    r.completion_tokens = total.completion_tokens;
    r.cache_read_tokens = total.cache_read_tokens;
    r.cache_write_tokens = total.cache_write_tokens;
    r.cache_write_1h_tokens = total.cache_write_1h_tokens;
    r.cache_hit_rate = total.cache_hit_rate;
    r.total_cost = round6(total.cost.unwrap_or(0.0));
    r.currency = "USD".into();
    r
}

/// `$0.0008`, `$0.0412`, `$1.23`: four decimals under a dollar.
pub fn usd(x: f64) -> String {
    if x >= 1.0 {
        format!("${x:.2}")
    } else {
        format!("${x:.4}")
    }
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "n/a".to_owned(), |r| format!("{}%", (r * 100.0).round() as i64))
}

/// When a period turns, as the owner reads it.
pub fn when(ms: i64, tz: &str) -> String {
    clock::datetime_string(ms, tz)
}

fn limit_words(limit: &Limit) -> String {
    match (limit.usd, limit.tokens) {
        (Some(u), Some(t)) => format!("{} / {} tokens", usd(u), thousands(t)),
        (Some(u), None) => usd(u),
        (None, Some(t)) => format!("{} tokens", thousands(t)),
        (None, None) => "none".into(),
    }
}

fn spent_words(limit: &Limit, spent: Spent) -> String {
    match (limit.usd, limit.tokens) {
        (Some(_), Some(_)) => format!("{} / {} tokens", usd(spent.usd), thousands(spent.tokens)),
        (Some(_), None) => usd(spent.usd),
        _ => format!("{} tokens", thousands(spent.tokens)),
    }
}

fn setting_of(limit: &Limit) -> String {
    let span = match limit.span {
        super::period::Span::Day => "DAILY",
        super::period::Span::Month => "MONTHLY",
    };
    match (limit.usd, limit.tokens) {
        (Some(_), Some(_)) => format!("BUDGET_{span}_USD or BUDGET_{span}_TOKENS"),
        (Some(_), None) => format!("BUDGET_{span}_USD"),
        _ => format!("BUDGET_{span}_TOKENS"),
    }
}

/// What a person waiting for an answer is told when a limit stops the call.
pub fn stop_text(limit: &Limit, spent: Spent, resets_at: i64, tz: &str) -> String {
    format!(
        "⚠️ My {} budget is used up ({} of {}), so I'm not calling my model now. Your message is saved: \
I'll answer it when the budget resets ({}) or as soon as my owner raises {}.",
        limit.span.word(),
        spent_words(limit, spent),
        limit_words(limit),
        when(resets_at, tz),
        setting_of(limit),
    )
}

/// Why background work stopped (logged; nobody is waiting for it).
pub fn background_stop_text(limit: &Limit, spent: Spent, percent: u8) -> String {
    format!(
        "{} budget {}% used ({} of {}): background work (heartbeats, jobs, dreaming) stops at {percent}% \
and resumes when the period turns",
        limit.span.word(),
        limit.percent(spent).round(),
        spent_words(limit, spent),
        limit_words(limit),
    )
}

/// The owner's warning, once per period.
pub fn notice_text(limit: &Limit, spent: Spent, resets_at: i64, tz: &str, background_percent: u8) -> String {
    if limit.percent(spent) >= 100.0 {
        return format!(
            "💸 My {} budget is used up ({} of {}): I answer nobody until it resets ({}) or you raise {}.",
            limit.span.word(),
            spent_words(limit, spent),
            limit_words(limit),
            when(resets_at, tz),
            setting_of(limit),
        );
    }
    format!(
        "💸 Heads-up: {}% of my {} budget is spent ({} of {}). Background work stops at {background_percent}%, \
conversations at 100%. The budget resets {}.",
        limit.percent(spent).round(),
        limit.span.word(),
        spent_words(limit, spent),
        limit_words(limit),
        when(resets_at, tz),
    )
}

fn period_line(name: &str, r: &UsageReport) -> String {
    let cost = if r.unpriced_models.is_empty() {
        usd(r.total_cost)
    } else {
        format!("{} (+ unpriced: {})", usd(r.total_cost), r.unpriced_models.join(", "))
    };
    format!(
        "{name}: {cost} · {} tokens ({} prompt + {} completion) · {} calls · cache hit rate {}",
        thousands(r.total_tokens),
        thousands(r.prompt_tokens),
        thousands(r.completion_tokens),
        r.calls,
        percent(r.cache_hit_rate),
    )
}

fn limit_line(name: &str, l: &LimitStatus, tz: &str) -> String {
    let mut left = Vec::new();
    if let (Some(limit), Some(rest)) = (l.limit_usd, l.left_usd) {
        left.push(format!("{} of {} left", usd(rest), usd(limit)));
    }
    if let (Some(limit), Some(rest)) = (l.limit_tokens, l.left_tokens) {
        left.push(format!("{} of {} tokens left", thousands(rest), thousands(limit)));
    }
    let state = if l.reached {
        " — reached: I only answer again after the reset".to_owned()
    } else if l.background_stopped {
        " — background work paused".to_owned()
    } else {
        String::new()
    };
    format!(
        "{name} budget: {} ({}% used){state}; resets {}",
        left.join(", "),
        l.percent.round() as i64,
        when(l.resets_at, tz)
    )
}

/// The `/usage` answer: today, this month, by kind of work, budgets.
pub fn summary_text(s: &UsageSummary) -> String {
    let tz = &s.month.timezone;
    let mut lines = vec!["📊 Usage".to_owned(), period_line("Today", &s.today), period_line("This month", &s.month)];
    if !s.month.by_kind.is_empty() {
        let kinds: Vec<String> = s
            .month
            .by_kind
            .iter()
            .map(|(k, f)| format!("{k} {}", f.cost.map_or_else(|| format!("{} tokens", thousands(f.tokens)), usd)))
            .collect();
        lines.push(format!("This month by kind: {}", kinds.join(", ")));
    }
    match &s.month.budget {
        Some(b) if b.daily.is_some() || b.monthly.is_some() => {
            if let Some(d) = &b.daily {
                lines.push(limit_line("Daily", d, tz));
            }
            if let Some(m) = &b.monthly {
                lines.push(limit_line("Monthly", m, tz));
            }
        }
        _ => lines.push("No budget set (BUDGET_DAILY_USD, BUDGET_MONTHLY_USD).".into()),
    }
    lines.join("\n")
}

/// Seed 004's footer: `[tokens: 342 prompt + 128 completion | cost: $0.0008 | model: …]`.
pub fn footer(u: &Usage, cost: Option<f64>, model: &str) -> String {
    format!(
        "[tokens: {} prompt + {} completion | cost: {} | model: {model}]",
        u.input + u.cache_read + u.cache_write,
        u.output,
        cost.map_or_else(|| "n/a".to_owned(), usd),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::usage::BudgetStatus;

    fn group(kind: &str, model: &str, u: Usage, cost: Option<f64>) -> Group {
        Group { kind: kind.into(), model: model.into(), calls: 1, usage: u, unpriced: u64::from(cost.is_none()), cost }
    }

    #[test]
    fn a_report_sums_by_model_and_kind_and_keeps_unpriced_cost_null() {
        let r = build(
            UsageReport { agent: "main".into(), period: "today".into(), ..Default::default() },
            &[
                group("conversation", "claude-sonnet-4-5", Usage::new(100, 50, 900, 0), Some(0.01)),
                group("toolRound", "claude-sonnet-4-5", Usage::new(10, 5, 985, 5), Some(0.002)),
                group("heartbeat", "mystery", Usage::new(1_000, 10, 0, 0), None),
            ],
        );
        assert_eq!((r.calls, r.prompt_tokens, r.completion_tokens, r.total_tokens), (3, 3_000, 65, 3_065));
        assert_eq!(r.cache_hit_rate, Some(round4(1_885.0 / 3_000.0)));
        assert_eq!(r.total_cost, 0.012);
        assert_eq!(r.by_model["mystery"].cost, None);
        assert_eq!(r.by_model["claude-sonnet-4-5"].cost, Some(0.012));
        assert_eq!(r.by_kind["heartbeat"].tokens, 1_010);
        assert_eq!(r.unpriced_models, ["mystery"]);
        assert_eq!(r.currency, "USD");
    }

    #[test]
    fn texts() {
        assert_eq!(usd(0.00081), "$0.0008");
        assert_eq!(usd(12.5), "$12.50");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(
            footer(&Usage::new(42, 128, 300, 0), Some(0.0008), "claude-sonnet-4-6"),
            "[tokens: 342 prompt + 128 completion | cost: $0.0008 | model: claude-sonnet-4-6]"
        );
        let limit = Limit { span: super::super::period::Span::Day, usd: Some(1.0), tokens: None };
        let stop = stop_text(&limit, Spent { usd: 1.02, tokens: 0 }, 0, "UTC");
        assert!(
            stop.contains("daily budget is used up ($1.02 of $1.00)") && stop.contains("BUDGET_DAILY_USD"),
            "{stop}"
        );
        assert!(stop.contains("1970-01-01 00:00"), "{stop}");
        let mut s = UsageSummary::default();
        s.month.budget = Some(BudgetStatus::default());
        assert!(summary_text(&s).contains("No budget set"));
    }
}
