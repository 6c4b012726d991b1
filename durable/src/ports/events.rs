//! A live response events are written to.

/// A live response that events are written to as they happen (an HTTP
/// client following a turn, or the agent's notification feed).
pub trait EventSink {
    /// Writes `bytes`; `false` once the client is gone (nothing more is
    /// written to it, and nothing else changes: the work goes on).
    fn send(&self, bytes: &[u8]) -> bool;
    /// Ends the response.
    fn close(&self);
}
