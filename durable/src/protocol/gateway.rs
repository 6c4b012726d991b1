//! The Discord Gateway object's calls (`GATEWAY`, one object per agent: one
//! connection per bot token). The cron tick and the admin API ask it to be
//! connected; the admin API reads its status.

use super::call::impl_call;
use serde::Serialize;

/// `POST`: connect unless connected (or stopped on an error, unless `force`).
pub const ENSURE_PATH: &str = "/ensure";
/// `GET`: the connection's state.
pub const STATUS_PATH: &str = "/status";

/// The body of [`ENSURE_PATH`].
#[derive(Debug, Clone, Serialize, hearth_json::Deserialize)]
pub struct EnsureRequest {
    pub agent: String,
    /// Retry a bot stopped on a fatal close (the owner fixed the token or
    /// enabled the intent).
    #[serde(default)]
    pub force: bool,
}

/// What the object says about its connection (`GET /api/agents/{id}/gateway`).
#[derive(Debug, Clone, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    pub agent: Option<String>,
    /// `DISCORD_GATEWAY` is on for the agent.
    pub enabled: bool,
    /// A socket is open right now (in this instance of the object).
    pub open: bool,
    /// `idle`, `connecting`, `handshake`, `ready`, `backoff` or `failed`.
    pub phase: String,
    /// Why the bot stopped (a bad token: close 4004; a privileged intent not
    /// enabled: 4014). Set only in phase `failed`.
    pub fatal: Option<String>,
    pub last_error: Option<String>,
    pub last_close_code: Option<u16>,
    /// A session is held (a reconnect resumes it).
    pub resumable: bool,
    pub seq: Option<u64>,
    pub bot_user_id: Option<String>,
    pub heartbeat_interval_ms: u64,
    pub last_ack_at: Option<i64>,
    pub connected_since: Option<i64>,
    pub reconnect_at: Option<i64>,
    pub failures: u32,
    pub identifies: u64,
    pub resumes: u64,
    pub heartbeats: u64,
    pub messages: u64,
}

impl_call!(EnsureRequest => Gateway Post ENSURE_PATH, GatewayStatus, |r| r.agent.clone());

/// `GET` the connection's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayStatusRequest {
    pub agent: String,
}
impl_call!(GatewayStatusRequest => Gateway Get STATUS_PATH, GatewayStatus, |r| r.agent.clone());
