//! Handing work off (`docs/delegation.md`): asking a peer agent of the same
//! Worker ([`delegate`]), and background sub-agents ([`spawn`]) whose list
//! the Agent object keeps ([`board`]). The session's glue is
//! `crate::session::handoff`; the Agent's is `crate::agent::tasks`.

pub mod board;
pub mod delegate;
pub mod spawn;
