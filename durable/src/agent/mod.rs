//! The Agent object: one per agent id. [`host`] holds its logic; the
//! [`registry`] of the agent's sessions is its own small table; [`dreams`]
//! is what it does for dreaming (the nightly sweep, proposals, the view).

pub mod dreams;
pub mod host;
#[cfg(test)]
mod host_tests;
pub mod registry;
