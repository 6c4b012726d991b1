//! Scripted HTTP: answers (and streamed answers) from a queue, every
//! request recorded.

use super::wait::YieldOnce;
use crate::ports::*;
use futures::StreamExt;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// Scripted HTTP: answers from a queue, records every request.
#[derive(Default)]
pub struct ScriptedHttp {
    pub responses: RefCell<VecDeque<Result<HttpResponse, HttpError>>>,
    pub requests: RefCell<Vec<HttpRequest>>,
    /// Each request stays pending this many polls before it answers (a slow
    /// server, for what runs meanwhile).
    pub pending_polls: Cell<u32>,
    /// Answers to streamed requests ([`Http::open`]), taken before
    /// `responses` (an `Err`: the connection failed).
    pub streams: RefCell<VecDeque<Result<ScriptedStream, HttpError>>>,
}

/// Scripted HTTP is an [`Io`] too (no clock, no waits, no logs), for
/// clients tested on their requests alone.
impl Io for ScriptedHttp {
    type Http = ScriptedHttp;
    fn http(&self) -> &ScriptedHttp {
        self
    }
    fn now_ms(&self) -> i64 {
        0
    }
    async fn sleep(&self, _: u64) {}
    fn log(&self, _: LogLevel, _: &str) {}
}

/// A scripted streamed answer (see [`ScriptedHttp::streams`]).
pub struct ScriptedStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body's pieces in order; an `Err` breaks the stream there.
    pub pieces: Vec<Result<Vec<u8>, HttpError>>,
}

impl ScriptedHttp {
    /// A 200 `text/event-stream` answer in these pieces.
    pub fn push_sse(&self, pieces: Vec<Result<Vec<u8>, HttpError>>) {
        let headers = vec![("content-type".into(), "text/event-stream; charset=utf-8".into())];
        self.streams.borrow_mut().push_back(Ok(ScriptedStream { status: 200, headers, pieces }));
    }
    /// A whole SSE body, cut into pieces of `size` bytes.
    pub fn push_sse_text(&self, body: &str, size: usize) {
        self.push_sse(body.as_bytes().chunks(size.max(1)).map(|c| Ok(c.to_vec())).collect());
    }
    pub fn push_json(&self, status: u16, body: serde_json::Value) {
        self.responses.borrow_mut().push_back(Ok(HttpResponse {
            status,
            headers: vec![],
            body: serde_json::to_vec(&body).unwrap_or_default(),
        }));
    }
    pub fn request_json(&self, i: usize) -> serde_json::Value {
        hearth_json::from_slice(&self.requests.borrow()[i].body).unwrap_or_default()
    }
    /// Queues an answer with this status and body.
    pub fn reply(&self, status: u16, body: &str) {
        self.reply_bytes(status, body.as_bytes());
    }
    pub fn reply_bytes(&self, status: u16, body: &[u8]) {
        self.responses.borrow_mut().push_back(Ok(HttpResponse { status, headers: vec![], body: body.to_vec() }));
    }
    /// Every request so far: its URL and its body as JSON (`null` when not JSON).
    pub fn sent_json(&self) -> Vec<(String, serde_json::Value)> {
        self.requests
            .borrow()
            .iter()
            .map(|r| (r.url.clone(), hearth_json::from_slice(&r.body).unwrap_or_default()))
            .collect()
    }
}

impl Http for ScriptedHttp {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.requests.borrow_mut().push(req);
        for _ in 0..self.pending_polls.get() {
            YieldOnce::default().await;
        }
        self.responses
            .borrow_mut()
            .pop_front()
            .unwrap_or_else(|| Err(HttpError::Network("no scripted response".into())))
    }

    async fn open(&self, req: HttpRequest) -> Result<HttpStream, HttpError> {
        let scripted = self.streams.borrow_mut().pop_front();
        let Some(scripted) = scripted else {
            let resp = self.send(req).await?;
            let body = resp.body;
            return Ok(HttpStream {
                status: resp.status,
                headers: resp.headers,
                body: Box::pin(futures::stream::once(async move { Ok(body) })),
            });
        };
        self.requests.borrow_mut().push(req);
        let ScriptedStream { status, headers, pieces } = scripted?;
        // Each piece is its own poll, as pieces off a network would be.
        let body = futures::stream::iter(pieces).then(|piece| async move {
            YieldOnce::default().await;
            piece
        });
        Ok(HttpStream { status, headers, body: Box::pin(body) })
    }
}
