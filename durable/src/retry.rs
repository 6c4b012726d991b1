//! Backoff for anything that is worth trying again (LLM calls, channel sends).
//!
//! Exponential from a base, capped, with a server's `retry-after` honoured
//! when it is longer, up to [`MAX_HONOURED_RETRY_AFTER_MS`]: past that we give
//! up at once and tell the user how long the server asked us to wait, rather
//! than hold the session for minutes (see [`GaveUp::asked_wait_ms`]).

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
    let secs = hearth_decimal::read_f64(v)?;
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

/// Why [`send_retrying`] stopped trying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaveUp {
    /// Attempts made.
    pub attempts: u32,
    /// The last failure, for logs.
    pub last: String,
    /// The server asked for a wait longer than [`MAX_HONOURED_RETRY_AFTER_MS`]
    /// (its `retry-after`, in ms): we stopped early instead of sitting through it.
    pub asked_wait_ms: Option<u64>,
}

impl GaveUp {
    /// For a user: what happened, without the technical detail of `last`.
    pub fn summary(&self) -> String {
        match self.asked_wait_ms {
            Some(ms) => format!("asked to wait {} s before trying again", ms.div_ceil(1000)),
            None => format!("failed {} times", self.attempts),
        }
    }
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.asked_wait_ms {
            Some(ms) => write!(f, "{} (asked to wait {} s; not retried)", self.last, ms.div_ceil(1000)),
            None => write!(f, "{} (after {} attempts)", self.last, self.attempts),
        }
    }
}

/// Sends `req` until `classify` says done or fail, or the backoff gives up
/// (then `give_up(why)`). Time-outs and network errors are retried. The one
/// retry loop of Hearth: LLM calls, Telegram and Discord.
pub async fn send_retrying<H: Http, T, E>(
    http: &H,
    req: &HttpRequest,
    backoff: &Backoff,
    sleep: impl AsyncFn(u64),
    log: impl Fn(&str),
    classify: impl Fn(HttpResponse) -> Verdict<T, E>,
    give_up: impl FnOnce(GaveUp) -> E,
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
            None => {
                // Attempts were left: the server's wait was what we refused.
                let asked_wait_ms = after_ms.filter(|&ms| made < backoff.attempts && ms > MAX_HONOURED_RETRY_AFTER_MS);
                return Err(give_up(GaveUp { attempts: made, last: why, asked_wait_ms }));
            }
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

    fn status(code: u16, retry_after: Option<&str>) -> Result<HttpResponse, HttpError> {
        let headers = retry_after.map(|v| vec![("retry-after".to_owned(), v.to_owned())]).unwrap_or_default();
        Ok(HttpResponse { status: code, headers, body: vec![] })
    }

    fn run(http: &crate::testing::ScriptedHttp, backoff: &Backoff) -> (Result<u16, GaveUp>, Vec<u64>) {
        let slept = std::cell::RefCell::new(Vec::new());
        let req = HttpRequest::post_json("https://x/y".into(), &serde_json::json!({}), 1000);
        let out = futures::executor::block_on(send_retrying(
            http,
            &req,
            backoff,
            async |ms| slept.borrow_mut().push(ms),
            |_| {},
            |resp| match resp.status {
                200 => Verdict::Done(200),
                s => {
                    Verdict::Retry { why: format!("HTTP {s}"), after_ms: parse_retry_after(resp.header("retry-after")) }
                }
            },
            |g| g,
        ));
        (out, slept.into_inner())
    }

    #[test]
    fn a_wait_over_the_cap_gives_up_at_once_and_says_how_long() {
        let b = Backoff { attempts: 4, base_ms: 100, max_ms: 250 };
        let http = crate::testing::ScriptedHttp::default();
        http.responses.borrow_mut().push_back(status(429, Some("300")));
        let (out, slept) = run(&http, &b);
        let g = out.unwrap_err();
        assert_eq!((g.attempts, g.asked_wait_ms), (1, Some(300_000)));
        assert_eq!(g.summary(), "asked to wait 300 s before trying again");
        assert!(slept.is_empty(), "did not sit through the wait");
        assert_eq!(http.requests.borrow().len(), 1);

        // Attempts used up on ordinary failures: no wait to report, the count instead.
        let http = crate::testing::ScriptedHttp::default();
        for _ in 0..4 {
            http.responses.borrow_mut().push_back(status(503, None));
        }
        let (out, slept) = run(&http, &b);
        let g = out.unwrap_err();
        assert_eq!((g.attempts, g.asked_wait_ms), (4, None));
        assert_eq!(g.summary(), "failed 4 times");
        assert_eq!(slept, vec![100, 200, 250]);

        // A wait within the cap is sat through, then success.
        let http = crate::testing::ScriptedHttp::default();
        http.responses.borrow_mut().push_back(status(429, Some("2")));
        http.responses.borrow_mut().push_back(status(200, None));
        let (out, slept) = run(&http, &b);
        assert_eq!(out, Ok(200));
        assert_eq!(slept, vec![2_000]);
    }
}
