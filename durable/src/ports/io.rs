//! What a channel's client needs around its requests, and logs.

use super::http::Http;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

/// What a channel's client needs around its requests: the network, the
/// clock, a way to wait between retries, logs, and the runtime's outgoing
/// mail. The Worker implements it once (over `fetch`, `Date`, timers and the
/// `send_email` binding), for the webhooks and for the Session objects
/// alike; tests use [`crate::testing::FakeFront`], which records requests.
#[allow(async_fn_in_trait)]
pub trait Io {
    type Http: Http;
    fn http(&self) -> &Self::Http;
    fn now_ms(&self) -> i64;
    async fn sleep(&self, ms: u64);
    fn log(&self, level: LogLevel, msg: &str);
    /// Sends a whole RFC 5322 message from `from` to `to` through the
    /// runtime's `send_email` binding. Default: there is none.
    async fn send_email(&self, from: &str, to: &str, raw: &[u8]) -> Result<(), MailError> {
        let _ = (from, to, raw);
        Err(MailError::NoBinding)
    }
    /// An attachment a webhook kept in the bucket ([`Front::stash`]), by key.
    async fn stashed(&self, key: &str) -> Result<Vec<u8>, String> {
        Err(format!("no stashed attachment {key}"))
    }
}

/// Why the runtime did not take an outgoing email.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// No `send_email` binding is configured.
    #[error("no send_email binding (SEND_EMAIL in wrangler.toml)")]
    NoBinding,
    /// The binding refused this message (an address it may not send to or
    /// from, a malformed message): sending it again fails the same way.
    #[error("send_email refused the message: {0}")]
    Refused(String),
}
