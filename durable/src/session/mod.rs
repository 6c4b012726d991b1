//! A session: its persistent inbound queue, its history, and the turn loop.
//!
//! Why a queue: a Durable Object serialises storage, not I/O. While a turn
//! awaits the LLM another webhook for the same chat runs, so messages are
//! written to the `inbox` table first and one drain loop (the object's alarm)
//! takes them in the order they were sent ([`sequence`]), one turn at a time. A row moves `pending → active →
//! done`; the user's message joins the history in the same step that marks it
//! active, so a turn cut short by eviction resumes from the history and
//! nothing is said twice or lost.
//!
//! Files, from the top: [`drain`] (the queue loop) runs [`turn`]s and
//! [`reset`]s; a turn uses [`compaction`] and [`context`] budgeting over what
//! [`replay`] rebuilds from the [`store`]; [`prefix`] is the stable system
//! prompt and [`toolbox`] the tool list; [`archive`] writes what leaves;
//! [`code`] runs `run_code` scripts;
//! [`reply`] is how anything is said (through the outbox of
//! [`crate::delivery`]); [`answers`] keeps the replies to messages asked
//! over HTTP.
//! [`group`] is a session's part in a group of agents (listening, relays).
//! [`meter`] records what each LLM call cost and keeps to the budget.
//! [`stop`] ends an answer a client stopped; [`notes`] keeps what the user
//! was told beside the conversation (failures, early stops). [`post`] is
//! what the runtime posts into the chat later (reminders, task results).

pub mod answer;
pub mod answers;
pub mod archive;
pub mod batch;
pub mod code;
pub mod compaction;
pub mod context;
pub mod deps;
pub mod drain;
pub mod group;
pub mod handoff;
pub mod history;
pub mod host;
pub mod label;
pub mod live;
pub mod meter;
pub mod meter_state;
pub mod notes;
pub mod parked;
pub mod people;
pub mod post;
pub mod prefix;
pub mod preview;
pub mod replay;
pub mod reply;
pub mod reset;
pub mod sequence;
pub mod serve;
pub mod stop;
pub mod store;
pub mod subagent;
pub mod toolbox;
pub mod turn;
pub mod voice;
pub mod watch;

#[cfg(test)]
mod tests;
