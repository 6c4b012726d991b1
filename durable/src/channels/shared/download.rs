//! Downloading an attachment from a platform's file host, the same way for
//! every platform: transient failures retried, a body over the caller's
//! limit refused.

use crate::ports::{ChannelError, Http, HttpRequest, Io, LogLevel};
use crate::retry::Backoff;

/// Downloads an attachment with `req` (its URL and whatever authorisation
/// the platform wants): 429 and 5xx are retried with `backoff`, a body over
/// `max_bytes` is refused. `what` names it in logs and errors.
pub async fn download<I: Io>(
    io: &I,
    backoff: &Backoff,
    what: &str,
    req: HttpRequest,
    max_bytes: u64,
) -> Result<Vec<u8>, ChannelError> {
    let mut made = 0;
    loop {
        made += 1;
        let why = match io.http().send(req.clone()).await {
            Ok(resp) if resp.status == 200 => {
                if resp.body.len() as u64 > max_bytes {
                    return Err(ChannelError::TooLarge(resp.body.len() as u64));
                }
                return Ok(resp.body);
            }
            Ok(resp) if resp.status == 429 || resp.status >= 500 => format!("HTTP {}", resp.status),
            Ok(resp) => return Err(ChannelError::Failed(format!("{what} download: HTTP {}", resp.status))),
            Err(e) => e.to_string(),
        };
        match backoff.delay(made, None) {
            Some(ms) => {
                io.log(LogLevel::Warn, &format!("{what} download failed ({why}); retry in {ms} ms"));
                io.sleep(ms).await;
            }
            None => return Err(ChannelError::Failed(format!("{what} download: {why}"))),
        }
    }
}
