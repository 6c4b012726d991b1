//! How long the provider keeps a request's cached prefix, and when the
//! longer lifetime pays.
//!
//! Anthropic keeps a cached prefix 5 minutes by default, or an hour when the
//! breakpoint says `"ttl": "1h"`; a hit refreshes the entry for its own
//! lifetime again, at no cost. Relative to the model's base input price
//! (<https://platform.claude.com/docs/en/build-with-claude/prompt-caching>,
//! "Pricing"): a 5-minute write costs 1.25×, a 1-hour write 2×, a read 0.1×.
//! OpenAI's cache has no lifetime to ask for: the choice changes nothing there.
//!
//! A conversation's calls come seconds apart, so the 5-minute entry is read
//! and refreshed while the person talks. A heartbeat or a job runs again only
//! after its interval (30 minutes by default): a 5-minute entry is gone by
//! then, and every run writes its whole prompt again at 1.25×. With an hour,
//! the first run writes at 2× and every later run reads at 0.1×: from the
//! second run on it is cheaper. Beyond the hour the entry is gone too, and
//! each run would write at 2× instead of 1.25×: there 5 minutes stay.
//!
//! [`for_next_run`] makes that choice from the time until the same prompt is
//! sent again, by comparing what the prefix costs a run in the steady state
//! with each lifetime ([`steady_cost`]). A scheduled run lands a little after
//! its slot (the cron trigger, the objects, the workspace load): a next run
//! one lifetime after this one finds the entry about half the time.

/// Price multipliers of the base input price (Anthropic's pricing page).
pub const WRITE_5M: f64 = 1.25;
pub const WRITE_1H: f64 = 2.0;
pub const READ: f64 = 0.1;

pub const FIVE_MINUTES_MS: i64 = 5 * 60_000;
pub const ONE_HOUR_MS: i64 = 60 * 60_000;

/// How far a scheduled run's call may land from its slot: a next run closer
/// than this to the end of an entry's lifetime is a coin flip.
pub const JITTER_MS: i64 = 60_000;

/// The lifetime a cache breakpoint asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheTtl {
    /// Anthropic's default (the breakpoint carries no `ttl`).
    #[default]
    FiveMinutes,
    /// `"ttl": "1h"`.
    OneHour,
}

impl CacheTtl {
    pub fn ms(self) -> i64 {
        match self {
            CacheTtl::FiveMinutes => FIVE_MINUTES_MS,
            CacheTtl::OneHour => ONE_HOUR_MS,
        }
    }

    /// What a write costs, relative to the base input price.
    pub fn write_multiplier(self) -> f64 {
        match self {
            CacheTtl::FiveMinutes => WRITE_5M,
            CacheTtl::OneHour => WRITE_1H,
        }
    }

    /// The `cache_control` object of a breakpoint. The 5-minute one is
    /// written as it always was (no `ttl`), so conversations' requests keep
    /// their bytes.
    pub fn cache_control(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "{\"type\":\"ephemeral\"}",
            CacheTtl::OneHour => "{\"type\":\"ephemeral\",\"ttl\":\"1h\"}",
        }
    }
}

/// The chance that a prompt sent again `gap_ms` later finds an entry of `ttl`.
pub fn hit_chance(ttl: CacheTtl, gap_ms: i64) -> f64 {
    if gap_ms.saturating_add(JITTER_MS) <= ttl.ms() {
        1.0
    } else if gap_ms >= ttl.ms().saturating_add(JITTER_MS) {
        0.0
    } else {
        0.5
    }
}

/// What the cached prefix costs one run in the steady state (relative to
/// its tokens at the base input price) when each run asks for `ttl` and the
/// next one comes `gap_ms` later: a read when the entry is still there, a
/// write of that lifetime when it is not.
pub fn steady_cost(ttl: CacheTtl, gap_ms: i64) -> f64 {
    let hit = hit_chance(ttl, gap_ms);
    hit * READ + (1.0 - hit) * ttl.write_multiplier()
}

/// The lifetime for a prompt sent again `gap_ms` later: an hour when that
/// makes the steady state cheaper, else 5 minutes (also on a tie: the first
/// write is cheaper). 5–60 minutes: an hour; shorter, or longer: 5 minutes.
pub fn for_next_run(gap_ms: i64) -> CacheTtl {
    if steady_cost(CacheTtl::OneHour, gap_ms) < steady_cost(CacheTtl::FiveMinutes, gap_ms) {
        CacheTtl::OneHour
    } else {
        CacheTtl::FiveMinutes
    }
}

/// The deployment's choice (`LLM_CACHE_TTL`).
pub use crate::settings::CachePolicy;

/// The lifetime of the stable prefix (tools and system prompt) of a call.
/// `background`: a heartbeat's or a job's session, whose runs say when the
/// same prompt comes again (`next_run_in_ms`; `None`: not within reach).
/// Conversations keep 5 minutes unless the deployment asks for an hour.
pub fn prefix_ttl(policy: CachePolicy, background: bool, next_run_in_ms: Option<i64>) -> CacheTtl {
    match (policy, background) {
        (CachePolicy::FiveMinutes, _) => CacheTtl::FiveMinutes,
        (_, true) => next_run_in_ms.map_or(CacheTtl::FiveMinutes, for_next_run),
        (CachePolicy::OneHour, false) => CacheTtl::OneHour,
        (CachePolicy::Auto, false) => CacheTtl::FiveMinutes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn an_hour_for_runs_5_to_60_minutes_apart_and_5_minutes_otherwise() {
        for minutes in [5, 6, 10, 15, 30, 45, 59, 60] {
            assert_eq!(for_next_run(minutes * MIN), CacheTtl::OneHour, "{minutes} min");
        }
        for minutes in [0, 1, 3, 61, 90, 120, 24 * 60] {
            assert_eq!(for_next_run(minutes * MIN), CacheTtl::FiveMinutes, "{minutes} min");
        }
    }

    #[test]
    fn what_the_choice_saves_per_run() {
        // Every 30 minutes: 0.1 per run instead of 1.25, after one write at 2.
        assert_eq!(steady_cost(CacheTtl::OneHour, 30 * MIN), READ);
        assert_eq!(steady_cost(CacheTtl::FiveMinutes, 30 * MIN), WRITE_5M);
        // A day of runs every 30 minutes: 2 + 47 × 0.1 = 6.7 against 48 × 1.25 = 60.
        let one_hour = WRITE_1H + 47.0 * steady_cost(CacheTtl::OneHour, 30 * MIN);
        let five = 48.0 * steady_cost(CacheTtl::FiveMinutes, 30 * MIN);
        assert!((one_hour - 6.7).abs() < 1e-9 && (five - 60.0).abs() < 1e-9);
        // Exactly an hour apart: a coin flip, still cheaper than 1.25.
        assert!((steady_cost(CacheTtl::OneHour, 60 * MIN) - 1.05).abs() < 1e-9);
        // 90 minutes: an hour's entry is gone, and its write costs more.
        assert!(steady_cost(CacheTtl::OneHour, 90 * MIN) > steady_cost(CacheTtl::FiveMinutes, 90 * MIN));
    }

    #[test]
    fn conversations_keep_5_minutes_unless_asked_and_5m_means_never_an_hour() {
        let half_hour = Some(30 * MIN);
        assert_eq!(prefix_ttl(CachePolicy::Auto, true, half_hour), CacheTtl::OneHour);
        assert_eq!(prefix_ttl(CachePolicy::Auto, true, Some(90 * MIN)), CacheTtl::FiveMinutes);
        assert_eq!(prefix_ttl(CachePolicy::Auto, true, None), CacheTtl::FiveMinutes);
        assert_eq!(prefix_ttl(CachePolicy::Auto, false, None), CacheTtl::FiveMinutes);
        assert_eq!(prefix_ttl(CachePolicy::OneHour, false, None), CacheTtl::OneHour);
        assert_eq!(prefix_ttl(CachePolicy::OneHour, true, Some(24 * 60 * MIN)), CacheTtl::FiveMinutes);
        assert_eq!(prefix_ttl(CachePolicy::FiveMinutes, true, half_hour), CacheTtl::FiveMinutes);
    }
}
