//! The agent's scheduling settings: the heartbeat (`HEARTBEAT_*`, its
//! interval against the cron trigger's period) and the time zone jobs
//! default to. Read by the Agent object's tick (`crate::scheduled`) and its
//! admin view.

use super::overlay::OverlayConfig;
use super::read::{agent_ids, on_off, setting, ConfigError, Vars};
use hearth_schedule::heartbeat::ProseRule;
use hearth_schedule::timing::{HeartbeatConfig, DEFAULT_INTERVAL_MINUTES};
use r2_layout::AgentId;

/// The cron trigger's period (`crons` in wrangler.toml): no heartbeat can
/// run more often than this.
pub const CRON_TICK_MINUTES: u32 = 5;

/// The agent's scheduling settings, from vars (`{NAME}__{AGENT}` or `{NAME}`).
#[derive(Debug, Clone)]
pub struct ScheduleConfig {
    pub agent: AgentId,
    /// `HEARTBEAT_ENABLED` (default true).
    pub heartbeat_enabled: bool,
    /// `HEARTBEAT_INTERVAL_MINUTES` (30; or seed 004's `HEARTBEAT_INTERVAL`
    /// in seconds), `HEARTBEAT_ACTIVE_HOURS` (`HH:MM-HH:MM`, none = always),
    /// `TIMEZONE` (UTC). An invalid value disables the heartbeat with this
    /// error (jobs still run).
    pub heartbeat: Result<HeartbeatConfig, String>,
    /// `HEARTBEAT_RUN_PROSE=true`: a HEARTBEAT.md of prose without any
    /// checkbox runs every interval (default: skipped, no tokens).
    pub prose: ProseRule,
    /// `TIMEZONE`: the default zone of jobs without one.
    pub timezone: String,
    /// `TEMPLATE` and placeholder values: HEARTBEAT.md resolves like the prompt's.
    pub overlay: OverlayConfig,
    /// Settings that work, but not as written (logged and shown by the admin route).
    pub warnings: Vec<String>,
}

/// The heartbeat interval in minutes from `HEARTBEAT_INTERVAL_MINUTES`, or
/// else seed 004's `HEARTBEAT_INTERVAL` (seconds, rounded up to minutes).
/// Anything that does not run as written is added to `warnings`.
fn heartbeat_interval(get: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> Result<u32, String> {
    let minutes = match (get("HEARTBEAT_INTERVAL_MINUTES"), get("HEARTBEAT_INTERVAL")) {
        (Some(m), seconds) => {
            if seconds.is_some() {
                warnings.push("HEARTBEAT_INTERVAL is ignored: HEARTBEAT_INTERVAL_MINUTES is set".into());
            }
            m.trim()
                .parse::<u32>()
                .map_err(|_| format!("HEARTBEAT_INTERVAL_MINUTES is invalid: {m:?} is not a number"))?
        }
        (None, Some(s)) => {
            let secs = s
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("HEARTBEAT_INTERVAL is invalid: {s:?} is not a number of seconds"))?;
            let minutes = u32::try_from(secs.div_ceil(60)).unwrap_or(u32::MAX);
            if secs % 60 != 0 {
                warnings.push(format!(
                    "HEARTBEAT_INTERVAL={secs} seconds is not a whole number of minutes: rounded up to {minutes} minutes"
                ));
            }
            minutes
        }
        (None, None) => DEFAULT_INTERVAL_MINUTES,
    };
    if minutes > 0 && minutes < CRON_TICK_MINUTES {
        warnings.push(format!(
            "the heartbeat interval ({minutes} min) is shorter than the cron trigger ({CRON_TICK_MINUTES} min): \
             heartbeats run at most once per trigger, every {CRON_TICK_MINUTES} minutes"
        ));
    }
    Ok(minutes)
}

impl ScheduleConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let ids = agent_ids(vars);
        if !ids.iter().any(|a| a == agent) {
            return Err(ConfigError::UnknownAgent(agent.to_owned(), ids.join(",")));
        }
        let agent_id =
            AgentId::parse(agent).map_err(|e| ConfigError::Invalid { name: "AGENTS".into(), why: e.to_string() })?;
        let get = |name: &str| setting(vars, agent, name);
        let mut warnings = Vec::new();
        // Anything but an off word leaves the heartbeat on.
        let heartbeat_enabled = get("HEARTBEAT_ENABLED").is_none_or(|v| on_off(&v) != Some(false));
        let prose = match get("HEARTBEAT_RUN_PROSE") {
            None => ProseRule::Skip,
            Some(v) => match on_off(&v) {
                Some(true) => ProseRule::Run,
                Some(false) => ProseRule::Skip,
                None => {
                    warnings.push(format!(
                        "HEARTBEAT_RUN_PROSE={v:?} is not on or off: prose-only HEARTBEAT.md is skipped"
                    ));
                    ProseRule::Skip
                }
            },
        };
        let timezone = get("TIMEZONE").unwrap_or_else(|| "UTC".into());
        let heartbeat = heartbeat_interval(&get, &mut warnings).and_then(|interval| {
            let hours = get("HEARTBEAT_ACTIVE_HOURS");
            HeartbeatConfig::new(interval, hours.as_deref(), Some(&timezone))
                .map_err(|e| format!("heartbeat settings are invalid: {e}"))
        });
        let overlay = OverlayConfig::load(vars, agent)?;
        Ok(ScheduleConfig { agent: agent_id, heartbeat_enabled, heartbeat, prose, timezone, overlay, warnings })
    }
}
