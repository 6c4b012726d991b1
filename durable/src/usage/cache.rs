//! Cache health: whether a session's requests find the provider's prompt
//! cache, and when they do not, the likely cause.
//!
//! Both providers cache a request's prefix for about 5 minutes (Anthropic
//! keeps a heartbeat's or job's for an hour when it runs again within it:
//! `crate::llm::cache_ttl`); Hearth keeps the prefix (tools, system prompt,
//! history) byte-stable so the next call reads all of the previous one from
//! the cache (seed 004 §18). In steady state (a session's third call on,
//! within the cache's lifetime, same model, long enough to be cached at all)
//! a hit rate below [`STEADY_MIN_HIT_RATE`] means something in the prefix
//! changed; comparing the call with the previous one names what.

use r2_layout::Usage;

/// Seed 004 §18: below this, a steady-state session has a structural issue.
pub const STEADY_MIN_HIT_RATE: f64 = 0.7;
/// The prompt cache's lifetime at the providers (Anthropic's default 5 minutes).
pub const CACHE_TTL_MS: i64 = 5 * 60_000;
/// The shortest prompt either provider caches.
pub const MIN_CACHEABLE_TOKENS: u64 = 1_024;

/// What one call sent, as far as the cache cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    pub session_id: String,
    /// Calls of this session id before this one.
    pub index: u32,
    pub at: i64,
    pub model: String,
    pub system: String,
    /// Tool definitions: how many, and their size.
    pub tools: (usize, usize),
    /// Every input token of the call (fresh, read, written).
    pub prompt: u64,
    /// How long the call's prompt stays cached, near enough whole: 5
    /// minutes, or a heartbeat's or job's 1-hour prefix (its message is
    /// small). A call later than this after it is not steady state.
    pub cached_for_ms: i64,
}

/// `cache_read / prompt`, or `None` without input.
pub fn hit_rate(u: &Usage) -> Option<f64> {
    let prompt = u.input + u.cache_read + u.cache_write;
    (prompt > 0).then(|| u.cache_read as f64 / prompt as f64)
}

/// Why a call read little from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    SystemChanged,
    ToolsChanged,
    /// The cache held the whole previous request; this one added much.
    Grown {
        new_tokens: u64,
    },
    /// The history before the new messages changed (compaction, trimming, a
    /// message rewritten or an attachment sent differently).
    HistoryChanged,
}

impl Cause {
    pub fn words(&self) -> String {
        match self {
            Cause::SystemChanged => "the system prompt changed (a workspace file, skills or settings)".into(),
            Cause::ToolsChanged => "the tool definitions changed".into(),
            Cause::Grown { new_tokens } => {
                format!("the cache held the previous request, but this one added {new_tokens} new tokens")
            }
            Cause::HistoryChanged => {
                "the history changed before its end (compaction, trimming, a rewritten message or attachment)".into()
            }
        }
    }
}

/// When `now` is a steady-state call whose hit rate is below
/// [`STEADY_MIN_HIT_RATE`]: its rate and the likely cause.
pub fn diagnose(prev: Option<&Shape>, now: &Shape, usage: &Usage) -> Option<(f64, Cause)> {
    let prev = prev?;
    let steady = prev.session_id == now.session_id
        && now.index >= 2
        && now.at - prev.at <= prev.cached_for_ms
        && prev.model == now.model
        && prev.prompt >= MIN_CACHEABLE_TOKENS;
    let rate = hit_rate(usage)?;
    if !steady || rate >= STEADY_MIN_HIT_RATE {
        return None;
    }
    let cause = if prev.system != now.system {
        Cause::SystemChanged
    } else if prev.tools != now.tools {
        Cause::ToolsChanged
    } else if usage.cache_read as f64 >= 0.9 * prev.prompt as f64 {
        Cause::Grown { new_tokens: now.prompt.saturating_sub(usage.cache_read) }
    } else {
        Cause::HistoryChanged
    };
    Some((rate, cause))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(index: u32, at: i64, system: &str, prompt: u64) -> Shape {
        Shape {
            session_id: "s".into(),
            index,
            at,
            model: "m".into(),
            system: system.into(),
            tools: (3, 900),
            prompt,
            cached_for_ms: CACHE_TTL_MS,
        }
    }

    #[test]
    fn a_good_hit_rate_or_a_call_out_of_steady_state_says_nothing() {
        let prev = shape(2, 0, "sys", 10_000);
        assert_eq!(diagnose(Some(&prev), &shape(3, 1_000, "sys", 10_500), &Usage::new(100, 10, 10_000, 400)), None);
        // Low, but the cache had expired: expected.
        let miss = Usage::new(10_500, 10, 0, 0);
        assert_eq!(diagnose(Some(&prev), &shape(3, CACHE_TTL_MS + 1, "sys", 10_500), &miss), None);
        // The second call of a conversation is not steady state yet.
        assert_eq!(diagnose(Some(&shape(0, 0, "sys", 10_000)), &shape(1, 1_000, "sys", 10_500), &miss), None);
    }

    #[test]
    fn the_cause_is_named() {
        let prev = shape(4, 0, "sys", 10_000);
        let miss = Usage::new(500, 10, 2_000, 8_000);
        let (rate, cause) = diagnose(Some(&prev), &shape(5, 60_000, "sys v2", 10_500), &miss).unwrap();
        assert!((rate - 2_000.0 / 10_500.0).abs() < 1e-9);
        assert_eq!(cause, Cause::SystemChanged);
        let mut tools = shape(5, 60_000, "sys", 10_500);
        tools.tools = (4, 1_200);
        assert_eq!(diagnose(Some(&prev), &tools, &miss).unwrap().1, Cause::ToolsChanged);
        assert_eq!(diagnose(Some(&prev), &shape(5, 60_000, "sys", 10_500), &miss).unwrap().1, Cause::HistoryChanged);
        // A big tool result after a full read: the cache worked.
        let grown = Usage::new(100, 10, 10_000, 20_000);
        let (_, cause) = diagnose(Some(&prev), &shape(5, 60_000, "sys", 30_100), &grown).unwrap();
        assert_eq!(cause, Cause::Grown { new_tokens: 20_100 });
        assert!(cause.words().contains("20100 new tokens"));
    }

    #[test]
    fn a_heartbeat_cached_for_an_hour_is_steady_half_an_hour_later() {
        let prev = Shape { cached_for_ms: 60 * 60_000, ..shape(4, 0, "sys", 10_000) };
        let now = shape(5, 30 * 60_000, "sys + a new daily note", 10_100);
        let (_, cause) = diagnose(Some(&prev), &now, &Usage::new(100, 10, 0, 10_000)).unwrap();
        assert_eq!(cause, Cause::SystemChanged, "the workspace changed between runs: said, not silent");
        assert_eq!(diagnose(Some(&prev), &shape(5, 61 * 60_000, "sys", 10_100), &Usage::new(100, 10, 0, 10_000)), None);
    }
}
