//! Ports: the small traits through which the runtime touches the world.
//!
//! Each has one production adapter in the Worker (`src/adapters/`) and an
//! in-memory double in [`crate::testing`] that records calls and can inject
//! failures, so the state machines are tested without workerd.
//!
//! One trait family per file, each re-exported here, so a port is named
//! `crate::ports::X` wherever it lives. They go one way: the platform
//! bundles the others, the front stands on the client's `Io`, which stands
//! on `Http`.

mod channel;
mod events;
mod front;
mod http;
mod io;
mod memory;
mod object_store;
mod platform;
mod sandbox;
mod sql;

pub use channel::*;
pub use events::*;
pub use front::*;
pub use http::*;
pub use io::*;
pub use memory::*;
pub use object_store::*;
pub use platform::*;
pub use sandbox::*;
pub use sql::*;
