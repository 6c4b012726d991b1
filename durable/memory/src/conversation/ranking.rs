//! The few numbers conversation ranking and per-turn recall depend on, in one value.
//!
//! Everything else in [`super::rank`] is either a standard constant (Lucene's BM25
//! `k1` 1.2 and `b` 0.75, reciprocal-rank fusion's 60) or a statistic of the store.
//! These four are the ones a benchmark could fit, so they are explicit: `npm run bench
//! -- conversations` picks them by leave-one-conversation-out (each fold's values
//! chosen on the six other LoCoMo conversations, `bench/memory/conversation_bench.rs`),
//! and runs the Worker with each fold's values through `MEMORY_CONVERSATION_RANKING`.
//! The defaults are the values every fold chose, or the most common choice.

/// How conversation memory ranks and recalls (see [`super::rank`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ranking {
    /// The weight of the exchange's ±1 window (its BM25 over the exchange and the
    /// ones before and after it, divided by the most the query could score there)
    /// beside the exchange's own share: an answer that shares no word with the
    /// question still shares its window.
    pub window: f32,
    /// The weight of the exchange's session (the session's BM25 as a share of the
    /// most the query could score): what the whole conversation was about.
    pub session: f32,
    /// A session's next result competes with its score times this, once per result
    /// of that session already taken (1: no preference for other sessions).
    pub next_in_session: f32,
    /// Per-turn recall brings the best exchange of a message that asks something only
    /// when its window matches at least this share of what the message's words could
    /// score (0–1).
    pub recall_floor: f32,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking { window: 0.5, session: 0.5, next_in_session: 0.9, recall_floor: 0.25 }
    }
}

/// Why a ranking setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RankingError(pub String);

impl Ranking {
    /// Parses `window=0.5,session=0.25,next_in_session=0.8,recall_floor=0.2` (any
    /// subset, in any order; the others keep their defaults). Weights are finite and
    /// ≥ 0; `next_in_session` and `recall_floor` are from 0 to 1.
    pub fn parse(text: &str) -> Result<Ranking, RankingError> {
        let mut r = Ranking::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = part.split_once('=') else {
                return Err(RankingError(format!("{part:?} is not name=value")));
            };
            let value = hearth_decimal::read_f64(value.trim())
                .ok_or_else(|| RankingError(format!("{:?} is not a number", value.trim())))?;
            let value = value as f32;
            let unit = (0.0..=1.0).contains(&value);
            let weight = value.is_finite() && value >= 0.0;
            match name.trim() {
                "window" if weight => r.window = value,
                "session" if weight => r.session = value,
                "next_in_session" if unit => r.next_in_session = value,
                "recall_floor" if unit => r.recall_floor = value,
                "window" | "session" => return Err(RankingError(format!("{name} must be a number ≥ 0"))),
                "next_in_session" | "recall_floor" => {
                    return Err(RankingError(format!("{name} must be a number from 0 to 1")))
                }
                other => {
                    return Err(RankingError(format!(
                        "unknown {other:?} (window, session, next_in_session, recall_floor)"
                    )))
                }
            }
        }
        Ok(r)
    }

    /// The same text [`Self::parse`] reads.
    pub fn render(&self) -> String {
        format!(
            "window={},session={},next_in_session={},recall_floor={}",
            self.window, self.session, self.next_in_session, self.recall_floor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_round_trips_and_bad_values_are_named() {
        let r = Ranking { window: 1.0, session: 0.5, next_in_session: 0.7, recall_floor: 0.3 };
        assert_eq!(Ranking::parse(&r.render()), Ok(r));
        assert_eq!(Ranking::parse(""), Ok(Ranking::default()));
        assert_eq!(Ranking::parse(" session = 0 "), Ok(Ranking { session: 0.0, ..Ranking::default() }));
        for (bad, says) in [
            ("window", "name=value"),
            ("window=fast", "not a number"),
            ("window=-1", "≥ 0"),
            ("next_in_session=2", "from 0 to 1"),
            ("depth=3", "unknown"),
            ("window=inf", "≥ 0"),
        ] {
            let e = Ranking::parse(bad).unwrap_err();
            assert!(e.0.contains(says), "{bad}: {e}");
        }
    }
}
