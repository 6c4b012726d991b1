//! The shared floor under the platforms' folders: what every platform's
//! webhook, reader, client and formatter use, naming none of them. A
//! platform's folder takes from here and from itself only; the table above
//! the platforms (`crate::channels`) is where they meet.
//!
//! - [`web`]: a webhook's request and reply, the work left for after the
//!   reply, queueing reliably, secrets compared in constant time.
//! - [`access`]: who a message is let in for (settings, roster, the door).
//! - [`groups`]: a message in a group of agents, routed once for all.
//! - [`download`], [`multipart`]: files in and out.
//! - [`markdown`]: the model's Markdown read into spans, for formatters.
//! - [`button`]: a button and where a message with buttons is.

pub mod access;
pub mod button;
pub mod download;
pub mod groups;
pub mod markdown;
pub mod multipart;
pub mod web;
