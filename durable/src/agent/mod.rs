//! The Agent object: one per agent id. [`host`] holds its logic; the
//! [`registry`] of the agent's sessions and the [`strangers`] told their
//! id are its own small tables.

pub mod host;
#[cfg(test)]
mod host_tests;
pub mod registry;
pub mod strangers;
pub mod usage;
