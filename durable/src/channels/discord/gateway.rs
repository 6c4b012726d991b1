//! The Discord Gateway's protocol as a state machine: what to send and what
//! to do next for each frame, timer and closed connection. The Worker's
//! `Gateway` Durable Object owns the WebSocket and the alarm and only carries
//! out the [`Action`]s; every decision is here and tested natively.
//!
//! The protocol (Discord's "Gateway" docs, API v10):
//! - the server opens with HELLO (op 10, `heartbeat_interval`); the client
//!   heartbeats (op 1, the last sequence number) every interval, the first
//!   after `interval × jitter`, and IDENTIFYs (op 2: token, intents), or
//!   RESUMEs (op 6: token, session id, sequence) a session it had;
//! - READY carries the `session_id`, the `resume_gateway_url` to resume at,
//!   and the bot's own user; every dispatch (op 0) carries `s`, the sequence;
//! - each heartbeat is acknowledged (op 11). No ACK before the next heartbeat
//!   is due means the connection is a zombie: close it (not with 1000/1001,
//!   which would end the session) and resume;
//! - RECONNECT (op 7): reconnect and resume. INVALID_SESSION (op 9): `d`
//!   true, resume may work; false, identify anew, after 1–5 s;
//! - close codes 4004 (bad token), 4010–4014 (shards, version, intents; 4014
//!   is a privileged intent not enabled in the developer portal) cannot be
//!   fixed by reconnecting: the bot stops and says why. 4007 and 4009 end the
//!   session (identify anew); other closes resume.
//!
//! Reconnects back off exponentially with jitter, so a gateway or network
//! in trouble is not hammered, and identifies (1,000 a day) are not spent.

use super::message::GatewayMessage;
use crate::protocol::gateway::GatewayStatus;
use serde::{Deserialize, Serialize};

/// Where a bot connects when no session is resumed (`DISCORD_GATEWAY_URL`
/// overrides it, for stand-ins).
pub const DEFAULT_GATEWAY_URL: &str = "wss://gateway.discord.gg/?v=10&encoding=json";
/// The query every gateway URL needs (resume URLs come without it).
pub const GATEWAY_QUERY: &str = "v=10&encoding=json";

/// `GUILD_MESSAGES` (1 << 9): messages in servers.
pub const INTENT_GUILD_MESSAGES: u64 = 1 << 9;
/// `DIRECT_MESSAGES` (1 << 12): DMs to the bot.
pub const INTENT_DIRECT_MESSAGES: u64 = 1 << 12;
/// `MESSAGE_CONTENT` (1 << 15), privileged: without it (enabled in the
/// developer portal) message content is empty except where the bot is
/// mentioned or in DMs; asking for it when it is not enabled closes 4014.
pub const INTENT_MESSAGE_CONTENT: u64 = 1 << 15;
/// What Hearth asks for.
pub const INTENTS: u64 = INTENT_GUILD_MESSAGES | INTENT_DIRECT_MESSAGES | INTENT_MESSAGE_CONTENT;

/// Close code Hearth uses for its own reconnects: anything but 1000/1001
/// keeps the session resumable.
pub const CLOSE_TO_RESUME: u16 = 4000;

/// Backoff bounds: the first retry waits about a second, later ones double
/// up to a minute (each scaled by a jitter of 0.5–1).
pub const BACKOFF_BASE_MS: u64 = 1_000;
pub const BACKOFF_MAX_MS: u64 = 60_000;

/// How long a new connection may take to say HELLO and answer IDENTIFY or
/// RESUME with READY or RESUMED (a socket that opens and stays silent, or an
/// upgrade request that hangs, would otherwise wait forever: nothing else
/// wakes a connecting bot). Past it the attempt is closed and retried with
/// the backoff.
pub const HANDSHAKE_TIMEOUT_MS: u64 = 30_000;

/// Where the connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Not connected and nothing planned (never started, or the object restarted).
    #[default]
    Idle,
    /// A connection is being opened, or open and waiting for HELLO.
    Connecting,
    /// IDENTIFY or RESUME sent, waiting for READY or RESUMED.
    Handshake,
    /// Receiving events.
    Ready,
    /// Waiting to reconnect (see `reconnect_at`).
    Backoff,
    /// Stopped on an error reconnecting cannot fix (see `fatal`).
    Failed,
}

/// A session that can be resumed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resumable {
    pub session_id: String,
    pub resume_url: String,
}

/// What the object must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this frame on the open connection.
    Send(String),
    /// Open a connection to this URL (`ws(s)://`); the old one is closed first.
    Connect(String),
    /// Close the open connection with this code (no reconnect implied).
    Close(u16),
    /// A message to route.
    Message(Box<GatewayMessage>),
    /// Worth a log line (warnings: what went wrong and what happens next).
    Log(String),
}

/// The gateway state of one bot, kept in the object's storage between
/// events (all of it but the timers is worth keeping across a restart).
#[derive(Debug, Clone, Default, PartialEq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayState {
    pub phase: Phase,
    #[serde(default)]
    pub session: Option<Resumable>,
    /// The last sequence number received.
    #[serde(default)]
    pub seq: Option<u64>,
    /// The bot's own user id (from READY): mentions of it address the agent.
    #[serde(default)]
    pub bot_user_id: Option<String>,
    #[serde(default)]
    pub heartbeat_interval_ms: u64,
    /// A heartbeat was sent and not acknowledged yet.
    #[serde(default)]
    pub awaiting_ack: bool,
    #[serde(default)]
    pub next_heartbeat_at: Option<i64>,
    #[serde(default)]
    pub reconnect_at: Option<i64>,
    /// When the connection being opened must have reached READY/RESUMED
    /// (see [`HANDSHAKE_TIMEOUT_MS`]).
    #[serde(default)]
    pub handshake_deadline: Option<i64>,
    /// Connection attempts since a connection last proved itself (the
    /// backoff's exponent): reset at the first heartbeat ACK after READY or
    /// RESUMED, not at READY itself, so a session closed right after READY
    /// (4009, 4007) is retried with the backoff, not in a tight loop.
    #[serde(default)]
    pub failures: u32,
    /// Why the bot stopped (a bad token, a missing intent).
    #[serde(default)]
    pub fatal: Option<String>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_close_code: Option<u16>,
    #[serde(default)]
    pub last_ack_at: Option<i64>,
    #[serde(default)]
    pub connected_since: Option<i64>,
    #[serde(default)]
    pub identifies: u64,
    #[serde(default)]
    pub resumes: u64,
    #[serde(default)]
    pub heartbeats: u64,
    #[serde(default)]
    pub messages: u64,
    /// A RESUME was sent on the current connection (so an INVALID_SESSION
    /// answers it).
    #[serde(default)]
    pub resuming: bool,
}

#[derive(hearth_json::Deserialize)]
struct Header {
    op: u8,
    #[serde(default)]
    s: Option<u64>,
    #[serde(default)]
    t: Option<String>,
}

#[derive(Deserialize)]
struct Envelope<T> {
    d: T,
}

#[derive(hearth_json::Deserialize)]
struct Hello {
    heartbeat_interval: u64,
}

#[derive(hearth_json::Deserialize)]
struct Ready {
    session_id: String,
    resume_gateway_url: String,
    user: ReadyUser,
}

#[derive(hearth_json::Deserialize)]
struct ReadyUser {
    id: String,
}

/// What a close code means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseKind {
    /// Reconnecting cannot help: the bot stops.
    Fatal(&'static str),
    /// The session is gone: identify anew.
    NewSession,
    /// Reconnect and resume.
    Resume,
}

/// Discord's close codes, as its docs table them.
pub fn close_kind(code: u16) -> CloseKind {
    match code {
        4004 => CloseKind::Fatal(
            "Discord refused the bot token (close 4004, authentication failed): check DISCORD_BOT_TOKEN",
        ),
        4010 => CloseKind::Fatal("Discord closed the connection: invalid shard (4010)"),
        4011 => CloseKind::Fatal("Discord closed the connection: sharding required (4011); Hearth does not shard"),
        4012 => CloseKind::Fatal("Discord closed the connection: invalid API version (4012)"),
        4013 => CloseKind::Fatal("Discord closed the connection: invalid intents (4013)"),
        4014 => CloseKind::Fatal(
            "Discord refused the intents (close 4014, disallowed intents): enable MESSAGE CONTENT INTENT under Bot → \
             Privileged Gateway Intents in the developer portal, then POST /api/agents/{id}/gateway/connect",
        ),
        4007 | 4009 => CloseKind::NewSession,
        _ => CloseKind::Resume,
    }
}

impl GatewayState {
    /// The URL to connect to: the session's resume URL when there is one.
    fn url(&self, default_url: &str) -> String {
        match &self.session {
            Some(s) => with_query(&s.resume_url),
            None => default_url.to_owned(),
        }
    }

    /// The earliest time the object's alarm must run.
    pub fn next_wake(&self) -> Option<i64> {
        [self.next_heartbeat_at, self.reconnect_at, self.handshake_deadline].into_iter().flatten().min()
    }

    /// Start (or make sure of) a connection: from idle, connect now; a
    /// failed bot stays stopped unless `force` (the owner fixed the cause).
    pub fn ensure(&mut self, default_url: &str, force: bool, now: i64) -> Vec<Action> {
        match self.phase {
            Phase::Failed if !force => vec![],
            Phase::Idle | Phase::Failed => {
                self.fatal = None;
                self.failures = 0;
                self.connect(default_url, now)
            }
            // Connected, connecting, or a reconnect is planned.
            _ => vec![],
        }
    }

    fn connect(&mut self, default_url: &str, now: i64) -> Vec<Action> {
        self.phase = Phase::Connecting;
        self.reconnect_at = None;
        self.handshake_deadline = Some(now + HANDSHAKE_TIMEOUT_MS as i64);
        self.next_heartbeat_at = None;
        self.awaiting_ack = false;
        self.resuming = false;
        vec![Action::Connect(self.url(default_url))]
    }

    /// The object's alarm: a planned reconnect, or a heartbeat (or, with
    /// the last one unacknowledged, a zombie connection to replace).
    pub fn on_alarm(&mut self, now: i64, default_url: &str, jitter: f64) -> Vec<Action> {
        if self.reconnect_at.is_some_and(|at| at <= now) || (self.phase == Phase::Idle && self.fatal.is_none()) {
            return self.connect(default_url, now);
        }
        if self.handshake_deadline.is_some_and(|at| at <= now)
            && matches!(self.phase, Phase::Connecting | Phase::Handshake)
        {
            let what = if self.phase == Phase::Connecting { "HELLO" } else { "READY" };
            let secs = HANDSHAKE_TIMEOUT_MS / 1000;
            self.last_error = Some(format!("no {what} within {secs} s of connecting"));
            let mut out = vec![
                Action::Log(format!("discord gateway: no {what} within {secs} s; closing and retrying")),
                Action::Close(CLOSE_TO_RESUME),
            ];
            out.extend(self.plan_reconnect(now, 0, jitter));
            return out;
        }
        match self.next_heartbeat_at {
            Some(at) if at <= now && matches!(self.phase, Phase::Handshake | Phase::Ready) => {
                if self.awaiting_ack {
                    self.last_error = Some("no heartbeat ACK before the next heartbeat (zombie connection)".into());
                    let mut out = vec![
                        Action::Log("discord gateway: heartbeat not acknowledged; reconnecting to resume".into()),
                        Action::Close(CLOSE_TO_RESUME),
                    ];
                    out.extend(self.plan_reconnect(now, 0, jitter));
                    return out;
                }
                self.heartbeat(now)
            }
            _ => vec![],
        }
    }

    fn heartbeat(&mut self, now: i64) -> Vec<Action> {
        self.awaiting_ack = true;
        self.heartbeats += 1;
        self.next_heartbeat_at = Some(now + self.heartbeat_interval_ms as i64);
        vec![Action::Send(heartbeat_frame(self.seq))]
    }

    /// After a connection is gone: reconnect after `min_ms`, or the backoff
    /// if that is longer (the first retry after a working connection is at once).
    fn plan_reconnect(&mut self, now: i64, min_ms: u64, jitter: f64) -> Vec<Action> {
        let backoff = backoff_ms(self.failures, jitter);
        self.failures = self.failures.saturating_add(1);
        let wait = min_ms.max(backoff);
        self.phase = Phase::Backoff;
        self.handshake_deadline = None;
        self.next_heartbeat_at = None;
        self.awaiting_ack = false;
        self.connected_since = None;
        self.reconnect_at = Some(now + wait as i64);
        vec![]
    }

    /// The connection could not be opened.
    pub fn on_connect_failed(&mut self, why: &str, now: i64, jitter: f64) -> Vec<Action> {
        self.last_error = Some(format!("could not connect: {why}"));
        let mut out = self.plan_reconnect(now, 0, jitter);
        out.insert(0, Action::Log(format!("discord gateway: could not connect ({why}); retrying")));
        out
    }

    /// The server closed the connection (or it dropped).
    pub fn on_close(&mut self, code: u16, reason: &str, now: i64, jitter: f64) -> Vec<Action> {
        self.last_close_code = Some(code);
        let said = if reason.is_empty() { String::new() } else { format!(": {reason}") };
        match close_kind(code) {
            CloseKind::Fatal(why) => {
                self.phase = Phase::Failed;
                self.fatal = Some(why.to_owned());
                self.last_error = Some(format!("closed {code}{said}"));
                self.next_heartbeat_at = None;
                self.reconnect_at = None;
                self.handshake_deadline = None;
                self.connected_since = None;
                vec![Action::Log(format!("discord gateway stopped: {why}"))]
            }
            kind => {
                if kind == CloseKind::NewSession {
                    self.session = None;
                    self.seq = None;
                }
                self.last_error = Some(format!("closed {code}{said}"));
                let mut out = self.plan_reconnect(now, 0, jitter);
                out.insert(0, Action::Log(format!("discord gateway closed {code}{said}; reconnecting")));
                out
            }
        }
    }

    /// One text frame from the server.
    pub fn on_frame(&mut self, text: &str, token: &str, now: i64, jitter: f64) -> Vec<Action> {
        let header: Header = match hearth_json::from_slice(text.as_bytes()) {
            Ok(h) => h,
            Err(e) => return vec![Action::Log(format!("discord gateway: unreadable frame ({e})"))],
        };
        if let Some(s) = header.s {
            self.seq = Some(s);
        }
        match header.op {
            10 => {
                let Ok(Envelope { d: Hello { heartbeat_interval } }) = hearth_json::from_slice(text.as_bytes()) else {
                    return vec![Action::Log("discord gateway: HELLO without heartbeat_interval".into())];
                };
                self.heartbeat_interval_ms = heartbeat_interval.max(100);
                self.awaiting_ack = false;
                // The first heartbeat after interval × jitter, so a fleet
                // reconnecting at once does not heartbeat in step.
                self.next_heartbeat_at = Some(now + (heartbeat_interval as f64 * jitter.clamp(0.0, 1.0)) as i64);
                self.phase = Phase::Handshake;
                match (&self.session, self.seq) {
                    (Some(s), Some(seq)) => {
                        self.resuming = true;
                        vec![Action::Send(resume_frame(token, &s.session_id, seq))]
                    }
                    _ => {
                        self.resuming = false;
                        self.identifies += 1;
                        vec![Action::Send(identify_frame(token))]
                    }
                }
            }
            11 => {
                self.awaiting_ack = false;
                self.last_ack_at = Some(now);
                if self.phase == Phase::Ready {
                    // The connection works: the next drop reconnects at once.
                    self.failures = 0;
                }
                vec![]
            }
            // The server asks for a heartbeat now; the schedule stays.
            1 => {
                self.heartbeats += 1;
                self.awaiting_ack = true;
                vec![Action::Send(heartbeat_frame(self.seq))]
            }
            7 => {
                let mut out = vec![Action::Log("discord gateway: RECONNECT asked; resuming".into())];
                out.push(Action::Close(CLOSE_TO_RESUME));
                self.failures = 0;
                out.extend(self.plan_reconnect(now, 0, jitter));
                out
            }
            9 => {
                let resumable =
                    matches!(hearth_json::from_slice::<Envelope<bool>>(text.as_bytes()), Ok(Envelope { d: true }));
                let what = if self.resuming { "RESUME refused" } else { "session invalidated" };
                if !resumable {
                    self.session = None;
                    self.seq = None;
                }
                self.last_error = Some(format!("INVALID_SESSION ({what}, resumable: {resumable})"));
                let next = if resumable { "resuming" } else { "identifying anew" };
                let mut out = vec![
                    Action::Log(format!("discord gateway: INVALID_SESSION ({what}); {next}")),
                    Action::Close(CLOSE_TO_RESUME),
                ];
                // The docs: wait a random 1–5 s before identifying again.
                out.extend(self.plan_reconnect(now, 1_000 + (4_000.0 * jitter.clamp(0.0, 1.0)) as u64, jitter));
                out
            }
            0 => self.on_dispatch(header.t.as_deref().unwrap_or(""), text, now),
            _ => vec![],
        }
    }

    fn on_dispatch(&mut self, t: &str, text: &str, now: i64) -> Vec<Action> {
        match t {
            "READY" => match hearth_json::from_slice::<Envelope<Ready>>(text.as_bytes()) {
                Ok(Envelope { d }) => {
                    self.session = Some(Resumable { session_id: d.session_id, resume_url: d.resume_gateway_url });
                    self.bot_user_id = Some(d.user.id);
                    self.connected(now);
                    vec![]
                }
                Err(e) => vec![Action::Log(format!("discord gateway: unreadable READY ({e})"))],
            },
            "RESUMED" => {
                self.resumes += 1;
                self.connected(now);
                vec![]
            }
            "MESSAGE_CREATE" => match hearth_json::from_slice::<Envelope<GatewayMessage>>(text.as_bytes()) {
                Ok(Envelope { d }) => {
                    self.messages += 1;
                    vec![Action::Message(Box::new(d))]
                }
                Err(e) => vec![Action::Log(format!("discord gateway: unreadable MESSAGE_CREATE ({e})"))],
            },
            _ => vec![],
        }
    }

    /// The state as the admin API shows it.
    pub fn status(&self, agent: Option<String>, enabled: bool, open: bool) -> GatewayStatus {
        let phase = serde_json::to_value(self.phase).ok().and_then(|v| v.as_str().map(str::to_owned));
        GatewayStatus {
            agent,
            enabled,
            open,
            phase: phase.unwrap_or_default(),
            fatal: self.fatal.clone(),
            last_error: self.last_error.clone(),
            last_close_code: self.last_close_code,
            resumable: self.session.is_some(),
            seq: self.seq,
            bot_user_id: self.bot_user_id.clone(),
            heartbeat_interval_ms: self.heartbeat_interval_ms,
            last_ack_at: self.last_ack_at,
            connected_since: self.connected_since,
            reconnect_at: self.reconnect_at,
            failures: self.failures,
            identifies: self.identifies,
            resumes: self.resumes,
            heartbeats: self.heartbeats,
            messages: self.messages,
        }
    }

    fn connected(&mut self, now: i64) {
        self.phase = Phase::Ready;
        self.handshake_deadline = None;
        self.resuming = false;
        self.fatal = None;
        self.connected_since = Some(now);
    }
}

/// `url` with the gateway's query (a resume URL comes bare).
fn with_query(url: &str) -> String {
    if url.contains('?') {
        url.to_owned()
    } else {
        format!("{}/?{GATEWAY_QUERY}", url.trim_end_matches('/'))
    }
}

/// The wait before reconnect attempt `failures + 1`: none for the first
/// (a connection that worked and dropped), then from the base doubling up to
/// the maximum, scaled by a jitter of 0.5–1.
pub fn backoff_ms(failures: u32, jitter: f64) -> u64 {
    if failures == 0 {
        return 0;
    }
    let raw = BACKOFF_BASE_MS.saturating_mul(1u64 << (failures - 1).min(16)).min(BACKOFF_MAX_MS);
    (raw as f64 * (0.5 + jitter.clamp(0.0, 1.0) / 2.0)) as u64
}

fn heartbeat_frame(seq: Option<u64>) -> String {
    match seq {
        Some(s) => format!(r#"{{"op":1,"d":{s}}}"#),
        None => r#"{"op":1,"d":null}"#.to_owned(),
    }
}

fn identify_frame(token: &str) -> String {
    serde_json::json!({"op": 2, "d": {
        "token": token,
        "intents": INTENTS,
        "properties": {"os": "cloudflare-workers", "browser": "hearth", "device": "hearth"},
    }})
    .to_string()
}

fn resume_frame(token: &str, session_id: &str, seq: u64) -> String {
    serde_json::json!({"op": 6, "d": {"token": token, "session_id": session_id, "seq": seq}}).to_string()
}
