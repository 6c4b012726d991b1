//! A session: its persistent inbound queue, its history, and the turn loop.
//!
//! Why a queue: a Durable Object serialises storage, not I/O. While a turn
//! awaits the LLM another webhook for the same chat runs, so messages are
//! written to the `inbox` table first and one drain loop (the object's alarm)
//! takes them in order, one turn at a time. A row moves `pending → active →
//! done`; the user's message joins the history in the same step that marks it
//! active, so a turn cut short by eviction resumes from the history and
//! nothing is said twice or lost.

pub mod lifecycle;
pub mod store;
pub mod toolbox;
pub mod turn;

#[cfg(test)]
mod tests;

pub use store::{InboxItem, SessionStore};
pub use turn::{drain, prepare, DrainReport, Prepared, SessionDeps};
