//! The chat platforms' wire formats, read into [`crate::inbound`] messages.
//!
//! Why here and not in the Worker: deciding what an update means (its text,
//! what it carries, what it replies to, whether it is a message at all) is
//! logic, and it is tested natively against every real payload in
//! `tests/fixtures/real-world/`. The Worker only receives the request,
//! checks its secret and hands the bytes over.
//!
//! A feature: it uses only the ground floor ([`crate::inbound`]).

pub mod discord;
pub mod telegram;
