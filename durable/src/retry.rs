//! Backoff for anything that is worth trying again (LLM calls, channel sends).
//!
//! Exponential from a base, capped, with a server's `retry-after` honoured
//! when it is longer, up to [`MAX_HONOURED_RETRY_AFTER_MS`]: past that we give
//! up and tell the user rather than hold the session for minutes.

use crate::ports::{Http, HttpError, HttpRequest, HttpResponse};

/// Longest server-requested wait we sit through.
pub const MAX_HONOURED_RETRY_AFTER_MS: u64 = 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub attempts: u32,
    pub base_ms: u64,
    pub max_ms: u64,
}

impl Backoff {
    /// Delay before attempt `next` (1-based count of attempts already made),
    /// or `None` when no attempt is left or the server asks for too long.
    pub fn delay(&self, made: u32, retry_after_ms: Option<u64>) -> Option<u64> {
        if made >= self.attempts {
            return None;
        }
        let exp = self.base_ms.saturating_mul(1u64 << (made.saturating_sub(1)).min(20));
        let ours = exp.min(self.max_ms);
        match retry_after_ms {
            Some(ra) if ra > MAX_HONOURED_RETRY_AFTER_MS => None,
            Some(ra) => Some(ra.max(ours)),
            None => Some(ours),
        }
    }
}

/// Parses a `retry-after` header: delta seconds (possibly fractional). HTTP
/// dates are rare from APIs and are treated as absent.
pub fn parse_retry_after(value: Option<&str>) -> Option<u64> {
    let v = value?.trim();
    let secs: f64 = v.parse().ok()?;
    if secs.is_finite() && secs >= 0.0 {
        Some((secs * 1000.0).ceil() as u64)
    } else {
        None
    }
}

/// What one HTTP answer means to the caller.
pub enum Verdict<T, E> {
    /// Success: stop.
    Done(T),
    /// A final error (e.g. a 4xx): stop.
    Fail(E),
    /// Worth another try, after at least `after_ms` if the server said so.
    Retry { why: String, after_ms: Option<u64> },
}

/// Sends `req` until `classify` says done or fail, or the backoff gives up
/// (then `give_up(attempts, last_reason)`). Time-outs and network errors are
/// retried. The one retry loop of Hearth: LLM calls, Telegram and Discord.
pub async fn send_retrying<H: Http, T, E>(
    http: &H,
    req: &HttpRequest,
    backoff: &Backoff,
    sleep: impl AsyncFn(u64),
    log: impl Fn(&str),
    classify: impl Fn(HttpResponse) -> Verdict<T, E>,
    give_up: impl FnOnce(u32, String) -> E,
) -> Result<T, E> {
    let mut made = 0;
    loop {
        made += 1;
        let (why, after_ms) = match http.send(req.clone()).await {
            Ok(resp) => match classify(resp) {
                Verdict::Done(t) => return Ok(t),
                Verdict::Fail(e) => return Err(e),
                Verdict::Retry { why, after_ms } => (why, after_ms),
            },
            Err(HttpError::Timeout) => ("timed out".to_owned(), None),
            Err(HttpError::Network(e)) => (format!("network: {e}"), None),
        };
        match backoff.delay(made, after_ms) {
            Some(ms) => {
                log(&format!("attempt {made} failed ({why}); retrying in {ms} ms"));
                sleep(ms).await;
            }
            None => return Err(give_up(made, why)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_capped_and_retry_after() {
        let b = Backoff { attempts: 4, base_ms: 100, max_ms: 250 };
        assert_eq!(b.delay(1, None), Some(100));
        assert_eq!(b.delay(2, None), Some(200));
        assert_eq!(b.delay(3, None), Some(250));
        assert_eq!(b.delay(4, None), None);
        assert_eq!(b.delay(1, Some(2_000)), Some(2_000));
        assert_eq!(b.delay(1, Some(10)), Some(100));
        assert_eq!(b.delay(1, Some(120_000)), None);
        assert_eq!(parse_retry_after(Some("1.5")), Some(1500));
        assert_eq!(parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(parse_retry_after(None), None);
    }
}
