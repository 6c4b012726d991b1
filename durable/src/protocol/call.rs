//! A call from the Worker or one object to another, as a type: each request
//! type says which objects it goes to, with which method and path, and what
//! a 2xx answer holds ([`Call`]). The Worker sends every call through one
//! function (`objects::call::<C>()` in `src/`); the objects' dispatchers
//! (`crate::agent::serve`, `crate::session::serve`) read the same types.
//!
//! A refusal travels as one shape, whatever the object: a 4xx/5xx status
//! with `{"error": "<what to tell the caller>"}` ([`error_body`]), read back
//! into a [`CallError`].

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Which Durable Objects a call goes to (its binding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    /// One per session key.
    Session,
    /// One per agent id.
    Agent,
    /// One per agent whose `DISCORD_GATEWAY` is on.
    Gateway,
}

impl Object {
    /// The binding's name in `wrangler.toml`.
    pub fn binding(self) -> &'static str {
        match self {
            Object::Session => super::SESSION_BINDING,
            Object::Agent => super::AGENT_BINDING,
            Object::Gateway => super::GATEWAY_BINDING,
        }
    }
}

/// An HTTP method, as calls and requests use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    /// Anything else (answered 404 or 405).
    Other,
}

impl Method {
    pub fn parse(s: &str) -> Method {
        match s.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            _ => Method::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other => "OTHER",
        }
    }
}

/// A typed call: the request is the type, and the type knows its route.
/// A `POST` sends the request as its JSON body; a `GET` sends no body and
/// carries what it asks in [`Call::query`].
pub trait Call: Serialize {
    const OBJECT: Object;
    const METHOD: Method;
    const PATH: &'static str;
    /// What a 2xx answer holds.
    type Reply: DeserializeOwned;
    /// The object's name (`idFromName`): a session key, an agent id.
    fn name(&self) -> String;
    /// The query after [`Call::PATH`] (without `?`; empty: none).
    fn query(&self) -> String {
        String::new()
    }
}

/// Implements [`Call`] for a request type in one line per route:
/// `impl_call!(Type => Agent Post PATH, Reply, |r| r.agent.clone());`, and
/// optionally `, query |r| ...` (the query after the path).
macro_rules! impl_call {
    ($ty:ty => $object:ident $method:ident $path:expr, $reply:ty, |$s:ident| $name:expr $(, query |$q:ident| $query:expr)?) => {
        impl $crate::protocol::call::Call for $ty {
            const OBJECT: $crate::protocol::call::Object = $crate::protocol::call::Object::$object;
            const METHOD: $crate::protocol::call::Method = $crate::protocol::call::Method::$method;
            const PATH: &'static str = $path;
            type Reply = $reply;
            fn name(&self) -> String {
                let $s = self;
                $name
            }
            $(
                fn query(&self) -> String {
                    let $q = self;
                    $query
                }
            )?
        }
    };
}
pub(crate) use impl_call;

/// `agent={agent}`: the query of calls to an Agent object that name their agent.
pub fn agent_query(agent: &str) -> String {
    format!("agent={}", encode_component(agent))
}

/// A call as it goes out: where, and the bytes. What the Worker's one
/// sending function takes, so only the encoding is generic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub object: Object,
    pub name: String,
    pub method: Method,
    /// The path and query (`/status?brief=1`).
    pub target: String,
    pub body: Option<Vec<u8>>,
}

impl Outgoing {
    pub fn of<C: Call>(call: &C) -> Result<Outgoing, CallError> {
        let body = match C::METHOD {
            Method::Post | Method::Put => Some(serde_json::to_vec(call)),
            _ => None,
        };
        Outgoing::assemble(C::OBJECT, C::METHOD, C::PATH, call.query(), call.name(), body)
    }

    /// The part of [`Outgoing::of`] that does not depend on the call's type,
    /// out of line: compiled once, not once per call type (issue 37 item 4).
    #[inline(never)]
    fn assemble(
        object: Object,
        method: Method,
        path: &str,
        query: String,
        name: String,
        body: Option<serde_json::Result<Vec<u8>>>,
    ) -> Result<Outgoing, CallError> {
        let target = if query.is_empty() { path.to_owned() } else { format!("{path}?{query}") };
        let body = body.transpose().map_err(|e| CallError::unreachable(format!("unsendable call: {e}")))?;
        Ok(Outgoing { object, name, method, target, body })
    }
}

/// A call that did not get a 2xx answer it could read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// The object's status; 0 when it was not reached (or its answer could
    /// not be read).
    pub status: u16,
    pub message: String,
}

impl CallError {
    /// The object could not be reached (or answered nonsense).
    pub fn unreachable(message: impl Into<String>) -> Self {
        CallError { status: 0, message: message.into() }
    }

    /// A refusal's answer: `{"error": …}` ([`error_body`]), or plain text.
    pub fn of_answer(status: u16, body: &[u8]) -> Self {
        let message = hearth_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        CallError { status, message }
    }

    /// Reads a 2xx answer as `C`'s reply; anything else is the refusal.
    pub fn read<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, CallError> {
        if !(200..300).contains(&status) {
            return Err(CallError::of_answer(status, body));
        }
        hearth_json::from_slice(body).map_err(|e| CallError::unreadable(&e, body))
    }

    /// A 2xx answer that did not read as the reply: out of line, once for
    /// every reply type (issue 37 item 4).
    #[inline(never)]
    fn unreadable(e: &hearth_json::Error, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        CallError::unreachable(format!("unreadable answer ({e}): {text}"))
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            0 => f.write_str(&self.message),
            status => write!(f, "HTTP {status}: {}", self.message),
        }
    }
}

impl std::error::Error for CallError {}

/// The body of every refusal: `{"error": message}`.
pub fn error_body(message: &str) -> Vec<u8> {
    serde_json::json!({ "error": message }).to_string().into_bytes()
}

/// `s` percent-encoded for a query value (unreserved characters kept).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The empty answer of a call that only acts: `{"ok": true}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Ack {
    #[serde(default)]
    pub ok: bool,
}

impl Ack {
    pub const DONE: Ack = Ack { ok: true };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Ping {
        agent: String,
        n: u32,
    }

    impl Call for Ping {
        const OBJECT: Object = Object::Agent;
        const METHOD: Method = Method::Post;
        const PATH: &'static str = "/ping";
        type Reply = Ack;
        fn name(&self) -> String {
            self.agent.clone()
        }
        fn query(&self) -> String {
            format!("agent={}", encode_component(&self.agent))
        }
    }

    #[test]
    fn a_call_goes_out_with_its_route_and_body() {
        let out = Outgoing::of(&Ping { agent: "a b".into(), n: 2 }).unwrap();
        assert_eq!((out.object.binding(), out.name.as_str()), ("AGENT", "a b"));
        assert_eq!((out.method, out.target.as_str()), (Method::Post, "/ping?agent=a%20b"));
        assert_eq!(out.body.as_deref(), Some(br#"{"agent":"a b","n":2}"#.as_slice()));
    }

    #[test]
    fn answers_are_read_as_the_reply_or_the_one_refusal_shape() {
        assert_eq!(CallError::read::<Ack>(200, br#"{"ok":true}"#), Ok(Ack::DONE));
        let refused = CallError::read::<Ack>(404, &error_body("no such session")).unwrap_err();
        assert_eq!(refused, CallError { status: 404, message: "no such session".into() });
        assert_eq!(refused.to_string(), "HTTP 404: no such session");
        let text = CallError::read::<Ack>(400, b"bad body").unwrap_err();
        assert_eq!(text.message, "bad body");
        let garbled = CallError::read::<Ack>(200, b"<html>").unwrap_err();
        assert_eq!(garbled.status, 0, "a 2xx that does not read is not the object's refusal");
        assert!(garbled.message.contains("<html>"));
    }
}
