//! A request as a Durable Object (or the Worker's HTTP front) receives it,
//! and what its dispatch answers: a reply, or an event stream the Worker
//! opens (a turn's `/stream`, the notification feed). The Agent's and the
//! Session's dispatchers (`crate::agent::serve`, `crate::session::serve`)
//! and the HTTP API (`crate::http_api`) answer in these types; the Worker
//! turns them into responses.

use crate::ports::EventSink;
use crate::protocol::call::{error_body, Method, Outgoing};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A request: method, path, the query's pairs (decoded) and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Incoming {
    pub fn new(method: Method, path: &str) -> Self {
        Incoming { method, path: path.to_owned(), query: vec![], body: vec![] }
    }

    /// A `POST` of `body` (what the native tests send).
    pub fn post(path: &str, body: impl Into<Vec<u8>>) -> Self {
        Incoming { body: body.into(), ..Incoming::new(Method::Post, path) }
    }

    /// A `POST` of `value` as JSON.
    pub fn post_json<T: Serialize>(path: &str, value: &T) -> Self {
        Incoming::post(path, serde_json::to_vec(value).unwrap_or_default())
    }

    /// A call as its object receives it (the native tests' way through a
    /// dispatcher, the same bytes the Worker sends).
    pub fn of(out: &Outgoing) -> Self {
        let (path, query) = out.target.split_once('?').unwrap_or((&out.target, ""));
        let query = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode_component(k), decode_component(v))
            })
            .collect();
        Incoming { method: out.method, path: path.to_owned(), query, body: out.body.clone().unwrap_or_default() }
    }

    pub fn with_query(mut self, name: &str, value: &str) -> Self {
        self.query.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The value of query parameter `name` (`Some("")` for a bare `?name`).
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as `T`, or the 400 naming what was wrong (`what`: the body's name).
    pub fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, Answer> {
        hearth_json::from_slice(&self.body).map_err(|e| bad_body(what, &e))
    }
}

/// The 400 of a body that did not read: out of line, once for every body
/// type (issue 37 item 4).
#[inline(never)]
fn bad_body(what: &str, e: &hearth_json::Error) -> Answer {
    Answer::error(400, &format!("bad {what}: {e}"))
}

/// `s` with its `%XX` escapes decoded (what [`crate::protocol::call::encode_component`] wrote).
pub fn decode_component(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A reply: status, headers (names lowercased) and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub const JSON: &str = "application/json";

impl Answer {
    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Self {
        Answer { status, headers: vec![("content-type".into(), content_type.to_owned())], body }
    }

    /// `value` as JSON.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Self {
        Answer::written(status, serde_json::to_vec(value))
    }

    /// The part of [`Answer::json`] that does not depend on the value's
    /// type, out of line: compiled once, not once per type (issue 37 item 4).
    #[inline(never)]
    fn written(status: u16, body: serde_json::Result<Vec<u8>>) -> Self {
        match body {
            Ok(body) => Answer::bytes(status, JSON, body),
            Err(e) => Answer::error(500, &format!("the answer could not be written: {e}")),
        }
    }

    /// `{"ok": true}`.
    pub fn ok() -> Self {
        Answer::json(200, &crate::protocol::call::Ack::DONE)
    }

    /// A refusal in the one shape every object and the HTTP API use:
    /// `{"error": message}`.
    pub fn error(status: u16, message: &str) -> Self {
        Answer::bytes(status, JSON, error_body(message))
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.to_owned()));
        self
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as text (for logs and tests).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }
}

/// What a dispatcher answers.
pub enum Served {
    Answer(Answer),
    /// An event stream: its sink came from [`OpenStream::open`]; the Worker
    /// returns the stream's readable side with these headers and, while
    /// `keepalive` says, pings its clients.
    Stream {
        headers: Vec<(String, String)>,
        keepalive: Option<Keepalive>,
    },
}

impl From<Answer> for Served {
    fn from(a: Answer) -> Self {
        Served::Answer(a)
    }
}

impl Served {
    /// The answer, when it is not a stream (tests).
    pub fn answer(self) -> Option<Answer> {
        match self {
            Served::Answer(a) => Some(a),
            Served::Stream { .. } => None,
        }
    }
}

/// A loop that keeps an event stream's quiet clients connected: every
/// `every_ms`, `ping` (false: nobody listens any more, the loop ends).
pub struct Keepalive {
    pub every_ms: u64,
    pub ping: Box<dyn Fn() -> bool>,
}

/// Opens an event stream's sink (the Worker's `ReadableStream`; natively,
/// a recording sink).
pub trait OpenStream {
    fn open(&self) -> Result<Box<dyn EventSink>, String>;
}

/// Headers of an event stream.
pub fn stream_headers() -> Vec<(String, String)> {
    vec![
        ("content-type".into(), "text/event-stream; charset=utf-8".into()),
        ("cache-control".into(), "no-cache".into()),
    ]
}
