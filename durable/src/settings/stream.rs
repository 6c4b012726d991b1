//! How chats see an answer while the model writes it (`STREAM_REPLIES`,
//! `STREAM_REPLIES_GROUPS`, `STREAM_REPLIES_INTERVAL_MS`), and how often a
//! silent `/stream` answer of the HTTP API gets a keep-alive comment
//! (`STREAM_KEEPALIVE_MS`).
//!
//! Telegram private chats get a draft (`sendMessageDraft`, Bot API 9.5:
//! an animated preview that is no message, replaced by the answer), or one
//! message edited as it grows; groups one silent message edited as it grows
//! (removed once the answer is sent) or nothing; Discord's deferred answer
//! is edited as it grows. The answer itself is always sent as before.

use super::read::{setting, ConfigError, Vars};

/// How a chat sees the answer being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// Telegram `sendMessageDraft`.
    Draft,
    /// One message, edited as the answer grows.
    Edit,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamConfig {
    /// Private chats (and Discord): `STREAM_REPLIES`, default `draft`.
    pub private: StreamMode,
    /// Telegram groups: `STREAM_REPLIES_GROUPS`, default `edit`.
    pub groups: StreamMode,
    /// Least time between two updates of one preview
    /// (`STREAM_REPLIES_INTERVAL_MS`; default 500 for drafts, 1000 for edits).
    pub interval_ms: Option<u64>,
    /// `STREAM_KEEPALIVE_MS`: a `/stream` client sent nothing for this long
    /// gets an SSE comment (default [`DEFAULT_KEEPALIVE_MS`], at least 50).
    pub keepalive_ms: u64,
}

/// 15 s: well inside the idle limits of proxies (Cloudflare's is 100 s).
pub const DEFAULT_KEEPALIVE_MS: u64 = 15_000;

impl StreamConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let mode = |name: &str, default: StreamMode, allowed: &[StreamMode]| {
            let Some(raw) = setting(vars, agent, name) else { return Ok(default) };
            allowed.iter().copied().find(|m| m.name().eq_ignore_ascii_case(&raw)).ok_or_else(|| {
                let names: Vec<&str> = allowed.iter().map(|m| m.name()).collect();
                ConfigError::Invalid { name: name.into(), why: format!("{raw:?}: use {}", names.join(", ")) }
            })
        };
        let interval_ms = match setting(vars, agent, "STREAM_REPLIES_INTERVAL_MS") {
            None => None,
            Some(raw) => Some(raw.parse::<u64>().map_err(|_| ConfigError::Invalid {
                name: "STREAM_REPLIES_INTERVAL_MS".into(),
                why: format!("{raw:?} is not a number of milliseconds"),
            })?),
        };
        let keepalive_ms = match setting(vars, agent, "STREAM_KEEPALIVE_MS") {
            None => DEFAULT_KEEPALIVE_MS,
            Some(raw) => raw.parse::<u64>().ok().filter(|ms| *ms >= 50).ok_or_else(|| ConfigError::Invalid {
                name: "STREAM_KEEPALIVE_MS".into(),
                why: format!("{raw:?} is not a number of milliseconds from 50"),
            })?,
        };
        Ok(StreamConfig {
            keepalive_ms,
            private: mode(
                "STREAM_REPLIES",
                StreamMode::Draft,
                &[StreamMode::Draft, StreamMode::Edit, StreamMode::Off],
            )?,
            groups: mode("STREAM_REPLIES_GROUPS", StreamMode::Edit, &[StreamMode::Edit, StreamMode::Off])?,
            interval_ms,
        })
    }

    /// Least time between updates of a preview in `mode`.
    pub fn interval(&self, mode: StreamMode) -> u64 {
        self.interval_ms.unwrap_or(match mode {
            StreamMode::Draft => 500,
            _ => 1000,
        })
    }
}

impl StreamMode {
    pub fn name(self) -> &'static str {
        match self {
            StreamMode::Draft => "draft",
            StreamMode::Edit => "edit",
            StreamMode::Off => "off",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<StreamConfig, ConfigError> {
        let vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        StreamConfig::load(&vars, "main")
    }

    #[test]
    fn drafts_in_private_chats_edits_in_groups_unless_told() {
        let c = load(&[]).unwrap();
        assert_eq!((c.private, c.groups), (StreamMode::Draft, StreamMode::Edit));
        assert_eq!((c.interval(StreamMode::Draft), c.interval(StreamMode::Edit)), (500, 1000));
        let c =
            load(&[("STREAM_REPLIES", "Edit"), ("STREAM_REPLIES_GROUPS", "off"), ("STREAM_REPLIES_INTERVAL_MS", "50")])
                .unwrap();
        assert_eq!((c.private, c.groups, c.interval(StreamMode::Draft)), (StreamMode::Edit, StreamMode::Off, 50));
        assert_eq!(load(&[]).unwrap().keepalive_ms, 15_000);
        assert_eq!(load(&[("STREAM_KEEPALIVE_MS", "200")]).unwrap().keepalive_ms, 200);
        for (name, bad) in [
            ("STREAM_REPLIES", "yes"),
            ("STREAM_REPLIES_GROUPS", "draft"),
            ("STREAM_REPLIES_INTERVAL_MS", "1s"),
            ("STREAM_KEEPALIVE_MS", "10"),
            ("STREAM_KEEPALIVE_MS", "soon"),
        ] {
            let e = load(&[(name, bad)]).unwrap_err();
            assert!(matches!(&e, ConfigError::Invalid { name: n, .. } if n == name), "{name}={bad}: {e}");
        }
    }
}
