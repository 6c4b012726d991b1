//! A webhook as the channels' handlers see it: the request the Worker read
//! (method, headers, query, body), the reply to give, and the work that
//! runs after the reply ([`Later`]: the platform gets its answer first;
//! `crate::channels::webhook::run_later` carries it out). Plus what every
//! handler shares: the agent's settings once the caller is known, queueing
//! a message that will not be delivered again, and comparing secrets in
//! constant time.

use crate::inbound::{Inbound, ReplyTarget, SessionKey};
use crate::ports::{Front, LogLevel};

/// An incoming webhook request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The query's pairs, decoded.
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl WebRequest {
    pub fn post(body: impl Into<Vec<u8>>) -> Self {
        WebRequest { method: "POST".into(), body: body.into(), ..Default::default() }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What a handler answers, and what it leaves for after the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct WebReply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// Work for `ctx.waitUntil`: it must not delay the platform's answer.
    pub later: Option<Box<Later>>,
}

impl WebReply {
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        WebReply { status, content_type: "text/plain; charset=utf-8", body: body.into(), later: None }
    }

    pub fn ok(body: impl Into<String>) -> Self {
        Self::text(200, body)
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        WebReply { status, content_type: "application/json", body: value.to_string(), later: None }
    }

    pub fn then(mut self, later: Later) -> Self {
        self.later = Some(Box::new(later));
        self
    }

    /// This reply, then (when the door gave one) its note sent to `target`.
    pub fn telling(self, agent: &str, notice: Option<&String>, target: ReplyTarget) -> Self {
        match notice {
            Some(text) => self.then(Later::Tell { agent: agent.to_owned(), target, text: text.clone() }),
            None => self,
        }
    }
}

/// Work a handler leaves for after its answer (the Worker runs it with
/// `crate::channels::webhook::run_later` in `ctx.waitUntil`).
#[derive(Debug, Clone, PartialEq)]
pub enum Later {
    /// A note from the door (a stranger's pairing code, a claim's outcome):
    /// a send from the bot's budget the platform need not wait for.
    Tell { agent: String, target: ReplyTarget, text: String },
    /// A Slack button's outcome, posted to its `response_url`.
    Respond { url: String, body: serde_json::Value },
    /// Queue a message (its platform is answered already, and will not
    /// deliver it again: queued reliably).
    Enqueue { key: SessionKey, inbound: Box<Inbound> },
}

/// Whether `agent` is one of `AGENTS`.
pub fn is_configured<F: Front>(front: &F, agent: &str) -> bool {
    crate::settings::agent_ids(front.vars()).iter().any(|a| a == agent)
}

/// An agent id that is not configured: a plain 404. The configured ids are
/// never listed to the caller (they could be anyone on the internet).
pub fn unknown_agent() -> WebReply {
    WebReply::text(404, "not found")
}

/// Once the caller is authenticated: the agent's settings, or the answer to
/// give (unknown agent: 404; a broken setting: 500 naming it, also logged so
/// `wrangler dev` and `wrangler tail` show it).
pub fn config_after_auth<F: Front>(
    front: &F,
    agent: &str,
    known: bool,
) -> Result<std::rc::Rc<crate::settings::AgentConfig>, WebReply> {
    if !known {
        return Err(unknown_agent());
    }
    front.config(agent).map_err(|e| {
        front.log(LogLevel::Error, &format!("agent {agent}: {e}"));
        match e {
            crate::settings::ConfigError::UnknownAgent(..) => WebReply::text(404, e.to_string()),
            _ => WebReply::text(500, format!("configuration error: {e}")),
        }
    })
}

/// Enqueue attempts of [`enqueue_reliably`] (waits of 0.2, 0.4, 0.8 s between).
const ENQUEUE_ATTEMPTS: u32 = 4;

/// Queues `inbound`, tried again briefly on failure: for a message that is
/// never delivered again (a Gateway event, a webhook answered already). The
/// last error is returned and logged.
pub async fn enqueue_reliably<F: Front>(front: &F, key: &SessionKey, inbound: &Inbound) -> Result<bool, String> {
    let mut wait = 200;
    let mut attempt = 1;
    loop {
        match front.enqueue(key, inbound).await {
            Ok(queued) => return Ok(queued),
            Err(e) if attempt >= ENQUEUE_ATTEMPTS => {
                front.log(LogLevel::Error, &format!("message {} for {key} not queued: {e}", inbound.dedupe_key));
                return Err(e);
            }
            Err(_) => {
                front.sleep(wait).await;
                wait *= 2;
                attempt += 1;
            }
        }
    }
}

/// Constant-time comparison, so a secret cannot be guessed byte by byte.
pub fn constant_eq(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = (given.len() ^ expected.len()) as u8 | (given.len() != expected.len()) as u8;
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_comparison() {
        assert!(constant_eq(b"abc", b"abc"));
        assert!(!constant_eq(b"abd", b"abc"));
        assert!(!constant_eq(b"ab", b"abc"));
        assert!(!constant_eq(b"abcd", b"abc"));
        assert!(!constant_eq(b"", b"abc"));
        assert_eq!(hex(&[0, 15, 16, 255]), "000f10ff");
    }
}
