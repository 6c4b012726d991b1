//! The Agent object: one per agent id. [`host`] holds its logic; the
//! [`registry`] of the agent's sessions is its own small table.

pub mod host;
#[cfg(test)]
mod host_tests;
pub mod registry;
pub mod usage;
