//! The R2 bucket layout of Hearth, in one place.
//!
//! Everything that names an object in the bucket goes through this crate: the
//! Worker, the Durable Objects and the seeding scripts agree on keys because
//! they all call the same functions. The layout is the one of seed 003 (GSV's
//! bucket) plus the overlay catalogue of seed 001; `README.md` beside this file
//! documents it for people, `fixtures/bucket/` holds a tree whose paths are keys.
//!
//! Nothing here does I/O: it is grammar, tables and record shapes, so it is
//! tested natively and costs little in the WASM build.

pub mod archive;
pub mod keys;
pub mod message;
pub mod metadata;
pub mod mime;
pub mod tagged;
pub mod workspace;

pub use keys::{AgentId, KeyError};
pub use message::{AssistantBlock, Message, ResultBlock, Usage, UserBlock, UserContent};
pub use workspace::{Scope, Section, WorkspaceFile};
