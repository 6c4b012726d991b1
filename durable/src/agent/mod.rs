//! The Agent object: one per agent id. [`host`] holds its logic; the
//! [`registry`] of the agent's sessions and the [`strangers`] told their
//! id are its own small tables; [`notifications`] is the feed of what its
//! heartbeats and jobs said; [`dreams`] is what it does for dreaming (the
//! nightly sweep, proposals, the view); [`conversations`] indexes archived
//! conversations the memory does not have yet; [`workspace`] is the
//! workspace it composes and hands each new Session object; [`tasks`] keeps
//! the agent's background sub-agents and posts their results; [`reminders`]
//! are the agent's reminders and the part of the alarm that fires them.

pub mod approvals;
pub mod conversations;
pub mod dreams;
pub mod host;
pub mod notifications;
pub mod people;
pub mod registry;
pub mod reminders;
pub mod serve;
pub mod strangers;
pub mod tasks;
pub mod threads;
pub mod usage;
pub mod workspace;
