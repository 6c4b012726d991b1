//! In-memory doubles of the ports, for native tests. Each records what it was
//! asked (a "sink") so tests read like specs, and can be told to fail. One
//! file per port or area; everything is re-exported here, so tests name
//! `crate::testing::X`.

mod channel;
mod front;
mod http;
mod inbound;
mod objects;
mod platform;
mod sandbox;
mod sql;
mod store;
mod streams;
mod wait;

pub use channel::*;
pub use front::*;
pub use http::*;
pub use inbound::*;
pub use objects::*;
pub use platform::*;
pub use sandbox::ScriptedSandbox;
pub use sql::*;
pub use store::*;
pub use streams::*;
pub use wait::*;
