//! What Durable Objects say to each other, as typed structs: every call from
//! the Worker or one object to another has its request and reply here, so
//! both sides share one definition and no side reads `v["field"]`.

pub mod agent;
pub mod api;
pub mod approvals;
pub mod call;
pub mod dreams;
pub mod gateway;
pub mod mcp;
pub mod memory;
pub mod people;
pub mod pins;
pub mod reminders;
pub mod session;
pub mod tasks;
pub mod usage;
pub mod workspace;

/// The R2 bucket binding.
pub const BUCKET_BINDING: &str = "BUCKET";
/// The Session objects, one per session key.
pub const SESSION_BINDING: &str = "SESSION";
/// The Agent objects, one per agent id.
pub const AGENT_BINDING: &str = "AGENT";
/// The Discord Gateway objects, one per agent whose `DISCORD_GATEWAY` is on.
pub const GATEWAY_BINDING: &str = "GATEWAY";
/// The `send_email` binding replies to emails go out through (optional).
pub const SEND_EMAIL_BINDING: &str = "SEND_EMAIL";
