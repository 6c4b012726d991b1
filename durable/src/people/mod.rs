//! Who may talk to the agent, decided from the chat: the owner lets people
//! and groups in with a pairing code, claims a fresh agent with a one-time
//! code, and joins their other accounts with `/link`.
//!
//! - [`codes`]: the codes (eight unambiguous characters).
//! - [`roster`]: the roster in the Agent object's SQLite (the one place that
//!   decides, in order), with its generation and audit lines.
//! - [`memo`]: each Worker isolate's copy of the roster, so people already
//!   known cost no call.
//! - [`commands`]: the commands, read from a message's text.
//! - [`texts`]: what people are told.
//!
//! The settings still count: `OWNER_IDS` and `ALLOW_FROM` are read first
//! and add to the roster; `OWNER_IDS`, when set, wins over a claim.

pub mod codes;
pub mod commands;
pub mod memo;
pub mod roster;
pub mod texts;
