//! Code kept apart from the hot path's functions, so it is compiled only
//! when it runs.
//!
//! V8 compiles a WASM function the first time it is called (Liftoff, then
//! optimised in the background). An `async fn` awaited inline is usually
//! merged into its caller's state machine by LLVM, so a request's entry
//! point becomes one large function holding every branch it could take:
//! the first request compiles all of them, taken or not. Measured on the
//! first turn after a fresh boot, compiling is about half of the turn's CPU.
//! [`apart`] runs a future through a pointer the optimiser cannot see
//! through: its code stays a function of its own, compiled on first use.

use std::future::Future;
use std::pin::Pin;

/// `fut` as a function of its own, to be awaited (see the module docs). For
/// branches a plain turn does not take (commands, resets, failures) and for
/// each route of a request dispatcher. It costs one allocation. A plain
/// function, not an `async fn`: the caller awaits the box itself, so a use
/// adds no state machine of its own (only the future's vtable).
pub fn apart<'a, T>(fut: impl Future<Output = T> + 'a) -> Pin<Box<dyn Future<Output = T> + 'a>> {
    std::hint::black_box(Box::pin(fut))
}
