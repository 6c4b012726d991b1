//! Hard budgets: what is spent per local day and month, the room held by
//! calls in flight, and whether the next call may go.
//!
//! The rule, checked atomically in the Agent object (one request at a time):
//! a call may start while what is spent plus what calls in flight hold stays
//! below the limit (background work: below `BUDGET_BACKGROUND_PERCENT` of
//! it). Each call that starts holds an estimate (its prompt at the full
//! input price, its whole output limit) until its Session releases it with
//! the call's real usage. So many sessions at once can overshoot a limit by
//! no more than the calls already in flight (by less, as estimates are
//! generous). When what is spent already reaches the limit the answer is
//! [`Decision::Stop`]; when only the holds do, [`Decision::Wait`]: calls in
//! flight usually cost less than they hold, and their settlement decides.

use super::period::Span;
use crate::protocol::usage::{BudgetStatus, BudgetStop, Decision, LimitStatus, UsageKind};
use crate::settings::usage::{Budget, ModelPrice};
use std::collections::BTreeMap;

/// A hold older than this is dropped: its Session was evicted mid-call and
/// will settle the call (if it was made) when it runs again.
pub const HOLD_TTL_MS: i64 = 15 * 60_000;
/// How long a Session waits before asking again after [`Decision::Wait`].
pub const WAIT_RETRY_MS: u64 = 500;

/// Spent in the current day or month: USD of priced calls, tokens of all.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub usd: f64,
    pub tokens: u64,
}

/// Room held by one call in flight.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hold {
    usd: f64,
    tokens: u64,
    at: i64,
}

/// The holds of calls in flight (in the object's memory: an evicted
/// object forgets them, and its Sessions settle what they made).
#[derive(Debug, Default)]
pub struct Holds {
    holds: BTreeMap<u64, Hold>,
    next: u64,
}

impl Holds {
    pub fn release(&mut self, id: u64) {
        self.holds.remove(&id);
    }

    fn total(&mut self, now: i64) -> Spent {
        self.holds.retain(|_, h| now - h.at < HOLD_TTL_MS);
        self.holds.values().fold(Spent::default(), |s, h| Spent { usd: s.usd + h.usd, tokens: s.tokens + h.tokens })
    }

    fn hold(&mut self, usd: f64, tokens: u64, now: i64) -> u64 {
        // Ids start from the clock so a restarted object does not reuse one.
        self.next = self.next.max(now.max(0) as u64).saturating_add(1);
        self.holds.insert(self.next, Hold { usd, tokens, at: now });
        self.next
    }

    pub fn len(&self) -> usize {
        self.holds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.holds.is_empty()
    }
}

/// A limit of one span: USD and/or tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub span: Span,
    pub usd: Option<f64>,
    pub tokens: Option<u64>,
}

impl Limit {
    /// The spans `budget` limits.
    pub fn of(budget: &Budget) -> Vec<Limit> {
        let day = Limit { span: Span::Day, usd: budget.daily_usd, tokens: budget.daily_tokens };
        let month = Limit { span: Span::Month, usd: budget.monthly_usd, tokens: budget.monthly_tokens };
        [day, month].into_iter().filter(|l| l.usd.is_some() || l.tokens.is_some()).collect()
    }

    /// The larger share of the limit that `spent` uses, in percent.
    pub fn percent(&self, spent: Spent) -> f64 {
        let usd = self.usd.map(|l| if l > 0.0 { spent.usd / l * 100.0 } else { f64::INFINITY });
        let tok = self.tokens.map(|l| if l > 0 { spent.tokens as f64 / l as f64 * 100.0 } else { f64::INFINITY });
        usd.unwrap_or(0.0).max(tok.unwrap_or(0.0))
    }

    /// Whether `spent` reaches `share` (0–1) of the limit.
    fn reached(&self, spent: Spent, share: f64) -> bool {
        self.usd.is_some_and(|l| spent.usd >= l * share)
            || self.tokens.is_some_and(|l| spent.tokens as f64 >= l as f64 * share)
    }
}

/// What one call is estimated to cost at most.
pub fn estimate(price: Option<&ModelPrice>, prompt_tokens: u64, max_output: u64) -> Spent {
    let usd = price.map_or(0.0, |p| (prompt_tokens as f64 * p.input + max_output as f64 * p.output) / 1e6);
    Spent { usd, tokens: prompt_tokens.saturating_add(max_output) }
}

/// The share of a limit `kind` may use: all of it, or the background share.
fn share(kind: UsageKind, budget: &Budget) -> f64 {
    if kind.is_background() {
        f64::from(budget.background_percent.min(100)) / 100.0
    } else {
        1.0
    }
}

/// Where a limit stands, for reports and `/usage`.
pub fn status(limit: &Limit, spent: Spent, budget: &Budget, resets_at: i64) -> LimitStatus {
    LimitStatus {
        limit_usd: limit.usd,
        spent_usd: spent.usd,
        left_usd: limit.usd.map(|l| (l - spent.usd).max(0.0)),
        limit_tokens: limit.tokens,
        spent_tokens: spent.tokens,
        left_tokens: limit.tokens.map(|l| l.saturating_sub(spent.tokens)),
        percent: limit.percent(spent),
        reached: limit.reached(spent, 1.0),
        background_stopped: limit.reached(spent, share(UsageKind::Heartbeat, budget)),
        resets_at,
    }
}

/// The budget section of a report.
pub fn budget_status(budget: &Budget, limits: &[(Limit, Spent, i64)]) -> BudgetStatus {
    let mut out = BudgetStatus { background_percent: budget.background_percent, ..Default::default() };
    for (limit, spent, resets_at) in limits {
        let s = Some(status(limit, *spent, budget, *resets_at));
        match limit.span {
            Span::Day => out.daily = s,
            Span::Month => out.monthly = s,
        }
    }
    out
}

/// One call asks for room. `limits` are the budget's spans with what each
/// has spent and when it resets; `stop_message` words a stop.
pub fn decide(
    budget: &Budget,
    limits: &[(Limit, Spent, i64)],
    holds: &mut Holds,
    kind: UsageKind,
    estimate: Spent,
    now: i64,
    stop_message: impl Fn(&Limit, Spent, i64, bool) -> String,
) -> Decision {
    let share = share(kind, budget);
    // The stop that lasts longest decides what the user is told.
    let stop = limits
        .iter()
        .filter(|(limit, spent, _)| limit.reached(*spent, share))
        .max_by_key(|(_, _, resets_at)| *resets_at);
    if let Some((limit, spent, resets_at)) = stop {
        let background = kind.is_background() && !limit.reached(*spent, 1.0);
        return Decision::Stop(BudgetStop {
            scope: limit.span.word().into(),
            resets_at: *resets_at,
            background,
            message: stop_message(limit, *spent, *resets_at, background),
        });
    }
    let held = holds.total(now);
    let with_held = |spent: &Spent| Spent { usd: spent.usd + held.usd, tokens: spent.tokens + held.tokens };
    if limits.iter().any(|(limit, spent, _)| limit.reached(with_held(spent), share)) {
        return Decision::Wait { retry_ms: WAIT_RETRY_MS };
    }
    let warn = f64::from(crate::settings::usage::WARN_PERCENT) / 100.0;
    let after = |spent: &Spent| {
        let s = with_held(spent);
        Spent { usd: s.usd + estimate.usd, tokens: s.tokens + estimate.tokens }
    };
    let tight = limits.iter().any(|(limit, spent, _)| limit.reached(after(spent), warn * share));
    Decision::Go { reservation: holds.hold(estimate.usd, estimate.tokens, now), tight }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(daily: f64) -> Budget {
        Budget { daily_usd: Some(daily), background_percent: 90, ..Default::default() }
    }

    fn go(d: &Decision) -> Option<u64> {
        match d {
            Decision::Go { reservation, .. } => Some(*reservation),
            _ => None,
        }
    }

    fn ask(b: &Budget, spent: f64, holds: &mut Holds, kind: UsageKind, est: f64) -> Decision {
        let limits: Vec<_> = Limit::of(b).into_iter().map(|l| (l, Spent { usd: spent, tokens: 0 }, 1_000)).collect();
        decide(b, &limits, holds, kind, Spent { usd: est, tokens: 10 }, 0, |l, s, _, bg| {
            format!("{} {:.2} {bg}", l.span.word(), s.usd)
        })
    }

    #[test]
    fn calls_go_below_the_limit_and_stop_at_it() {
        let b = budget(1.0);
        let mut holds = Holds::default();
        assert!(go(&ask(&b, 0.5, &mut holds, UsageKind::Conversation, 0.1)).is_some());
        let Decision::Stop(stop) = ask(&b, 1.0, &mut Holds::default(), UsageKind::Conversation, 0.1) else { panic!() };
        assert_eq!((stop.scope.as_str(), stop.resets_at, stop.background), ("daily", 1_000, false));
        assert_eq!(stop.message, "daily 1.00 false");
    }

    #[test]
    fn background_work_stops_first() {
        let b = budget(1.0);
        let mut holds = Holds::default();
        let Decision::Stop(stop) = ask(&b, 0.92, &mut holds, UsageKind::Heartbeat, 0.01) else { panic!() };
        assert!(stop.background);
        assert!(go(&ask(&b, 0.92, &mut holds, UsageKind::Conversation, 0.01)).is_some(), "people are still answered");
        assert!(go(&ask(&b, 0.89, &mut Holds::default(), UsageKind::Job, 0.01)).is_some());
    }

    #[test]
    fn calls_in_flight_hold_room_until_released() {
        let b = budget(1.0);
        let mut holds = Holds::default();
        let first = go(&ask(&b, 0.9, &mut holds, UsageKind::Conversation, 0.2)).unwrap();
        // The first call may use what is left: the next waits for it.
        assert_eq!(ask(&b, 0.9, &mut holds, UsageKind::Conversation, 0.2), Decision::Wait { retry_ms: WAIT_RETRY_MS });
        holds.release(first);
        assert!(go(&ask(&b, 0.95, &mut holds, UsageKind::Conversation, 0.2)).is_some());
        // A hold its Session never released expires.
        let mut stale = Holds::default();
        stale.hold(5.0, 0, -HOLD_TTL_MS);
        assert!(go(&ask(&b, 0.1, &mut stale, UsageKind::Conversation, 0.0)).is_some());
        assert_eq!(stale.len(), 1, "the stale hold went, the new one stays");
    }

    #[test]
    fn tokens_limit_models_without_prices_and_the_longer_stop_is_told() {
        let b =
            Budget { daily_tokens: Some(1_000), monthly_usd: Some(10.0), background_percent: 90, ..Default::default() };
        let limits = [
            (Limit::of(&b)[0], Spent { usd: 0.0, tokens: 1_000 }, 100),
            (Limit::of(&b)[1], Spent { usd: 10.0, tokens: 1_000 }, 9_000),
        ];
        let d =
            decide(&b, &limits, &mut Holds::default(), UsageKind::Conversation, Spent::default(), 0, |l, _, _, _| {
                l.span.word().into()
            });
        let Decision::Stop(stop) = d else { panic!("{d:?}") };
        assert_eq!((stop.scope.as_str(), stop.resets_at), ("monthly", 9_000), "the daily reset would not help");
        assert_eq!(Limit::of(&b)[0].percent(Spent { usd: 0.0, tokens: 800 }), 80.0);
    }

    #[test]
    fn an_estimate_is_the_whole_prompt_at_the_input_price_and_the_whole_output_limit() {
        let price = ModelPrice { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6.0 };
        let e = estimate(Some(&price), 10_000, 1_000);
        assert!((e.usd - 0.045).abs() < 1e-12 && e.tokens == 11_000);
        assert_eq!(estimate(None, 10, 5), Spent { usd: 0.0, tokens: 15 });
    }
}
