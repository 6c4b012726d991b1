//! The Agent object: one per agent id. [`host`] holds its logic; the
//! [`registry`] of the agent's sessions is its own small table, and
//! [`notifications`] the feed of what its heartbeats and jobs said.

pub mod host;
#[cfg(test)]
mod host_tests;
pub mod notifications;
pub mod registry;
pub mod threads;
