//! Who follows a message's turn while it happens: HTTP clients of `/stream`
//! (every piece of text as the model writes it, tool steps, then the
//! answer) and `/generate` (the answer), chat previews (the text so far),
//! and the agent's notification feed (what heartbeats and jobs say).
//!
//! Why here and not in a request: the turn runs in the Session object's
//! alarm, one at a time, whatever the channel; a request only watches. A
//! client that disconnects stops watching and changes nothing else.
//!
//! What a client saw is kept as a position per step of the turn (one step
//! per model call): the step, the bytes of its text, its tool events. When
//! the model is asked again mid-answer (a broken stream, a retry after an
//! error), the new text is held back while it repeats what was shown and
//! only what goes beyond is sent; if it says something else, the step's text
//! is sent whole once with `replace`. A client that reconnects with
//! `Last-Event-ID` (its last position) gets what comes after it, also after
//! an eviction, when the turn resumes from its stored steps.
//!
//! A client may also stop the answer being written ([`Watch::stop`]): the
//! model call in flight is dropped (see [`Watch::unless_stopped`]), and the
//! turn keeps what was written (`super::stop`).

use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget};
use crate::llm::Delta;
use crate::ports::{EventSink, Sql, SqlValue, StorageError};
use crate::protocol::api::{sse_event, ApiOutcome, ApiUsage};
use futures::channel::oneshot;
use r2_layout::Usage;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// How long the answer of an API message is kept for a repeated request
/// with the same `Idempotency-Key`.
pub const RESULT_RETENTION_MS: i64 = 24 * 3600 * 1000;

const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS api_results (key TEXT PRIMARY KEY, outcome TEXT NOT NULL, at INTEGER NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "api_results", statements: &[SCHEMA] };

/// The watchers of a Session object's messages (one per object).
#[derive(Default)]
pub struct Watch {
    inner: RefCell<Inner>,
    schema_ready: Cell<bool>,
    /// A keep-alive loop runs for the stream clients ([`Watch::ping`]).
    pinging: Cell<bool>,
}

/// What a silent stream client gets now and then: an SSE comment, which
/// clients ignore and proxies count as traffic.
pub const KEEPALIVE: &[u8] = b": keep-alive\n\n";

#[derive(Default)]
struct Inner {
    /// The message the drain is answering.
    current: Option<Current>,
    /// Listeners of messages still in the queue, by dedupe key.
    waiting: HashMap<String, Vec<Listener>>,
    /// What heartbeats and jobs said, for the agent's notification feed.
    notices: Vec<String>,
    /// The name of the person who wrote last in a one-to-one chat.
    speaker: Option<String>,
    /// Where the answer to the message being answered goes (a tool that
    /// follows it up later names this chat).
    answering: Option<ReplyTarget>,
}

struct Current {
    key: String,
    /// An API message: its answer is collected for its clients.
    api: bool,
    steps: Vec<Step>,
    step: usize,
    /// The text of the running attempt of the current step.
    attempt: String,
    replies: Vec<String>,
    failed: Option<String>,
    usage: Usage,
    listeners: Vec<Listener>,
    /// Someone asked to stop this answer.
    stop_asked: bool,
    /// Wakes the model call in flight when a stop comes.
    stop_wake: Option<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Step {
    text: String,
    /// Bumped when the text was replaced rather than extended.
    version: u32,
    tools: Vec<(String, &'static str)>,
}

struct Listener {
    thread_id: String,
    kind: Kind,
}

enum Kind {
    /// `spoke`: sent something since the last [`Watch::ping`].
    Stream {
        sink: Box<dyn EventSink>,
        at: Cursor,
        open: bool,
        spoke: bool,
    },
    Wait(oneshot::Sender<ApiOutcome>),
}

/// How far into a message's turn a client is: `{step}-{bytes}-{tools}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub step: usize,
    pub bytes: usize,
    pub tools: usize,
    version: u32,
}

impl Cursor {
    /// A `Last-Event-ID`; anything else is the start.
    pub fn parse(id: &str) -> Cursor {
        let mut parts = id.trim().splitn(3, '-').map(|p| p.parse::<usize>());
        match (parts.next(), parts.next(), parts.next()) {
            (Some(Ok(step)), Some(Ok(bytes)), Some(Ok(tools))) => Cursor { step, bytes, tools, version: 0 },
            _ => Cursor::default(),
        }
    }

    fn id(&self) -> String {
        format!("{}-{}-{}", self.step, self.bytes, self.tools)
    }
}

/// How a model call run by [`Watch::unless_stopped`] ended.
pub enum Run<T> {
    Done(T),
    /// Stopped before it began: nothing was asked of the model.
    NotStarted,
    /// Stopped while the model wrote: the call was dropped.
    Stopped,
}

/// What a new listener gets (see [`Watch::attach`]).
pub enum Attach {
    /// A `/stream` client: its sink, and its `Last-Event-ID`.
    Stream(Box<dyn EventSink>, Option<String>),
    /// A `/generate` client: the answer comes through the receiver.
    Wait,
}

impl Watch {
    /// A client for the message `key` (queued or being answered): from now
    /// on it is sent what the turn does. `Some` receiver for [`Attach::Wait`].
    pub fn attach(&self, key: &str, thread_id: &str, how: Attach) -> Option<oneshot::Receiver<ApiOutcome>> {
        let (kind, rx) = match how {
            Attach::Stream(sink, last) => {
                let at = last.as_deref().map(Cursor::parse).unwrap_or_default();
                (Kind::Stream { sink, at, open: true, spoke: false }, None)
            }
            Attach::Wait => {
                let (tx, rx) = oneshot::channel();
                (Kind::Wait(tx), Some(rx))
            }
        };
        let listener = Listener { thread_id: thread_id.to_owned(), kind };
        let mut inner = self.inner.borrow_mut();
        match inner.current.as_mut().filter(|c| c.key == key) {
            Some(current) => {
                current.listeners.push(listener);
                current.flush();
            }
            None => inner.waiting.entry(key.to_owned()).or_default().push(listener),
        }
        rx
    }

    /// The drain starts (or resumes) a message. Clients of a message that
    /// did not finish (a budget holds it, storage failed) keep following it:
    /// they wait for it again, or go on with it.
    pub fn begin(&self, inbound: &Inbound) {
        let mut inner = self.inner.borrow_mut();
        if let Some(unfinished) = inner.current.take() {
            inner.waiting.entry(unfinished.key).or_default().extend(unfinished.listeners);
        }
        let listeners = inner.waiting.remove(&inbound.dedupe_key).unwrap_or_default();
        let person = !matches!(inbound.channel, ChannelKind::System | ChannelKind::Admin | ChannelKind::Api);
        if person && inbound.kind == ChatKind::Direct && !inbound.sender_name.trim().is_empty() {
            inner.speaker = Some(inbound.sender_name.clone());
        }
        inner.answering = Some(inbound.reply_target.clone());
        inner.current = Some(Current {
            key: inbound.dedupe_key.clone(),
            // A post into an HTTP thread has no request waiting for it.
            api: inbound.reply_target.channel == ChannelKind::Api
                && !inbound.dedupe_key.starts_with(crate::protocol::session::POST_KEY_PREFIX),
            steps: Vec::new(),
            step: 0,
            attempt: String::new(),
            replies: Vec::new(),
            failed: None,
            usage: Usage::default(),
            listeners,
            stop_asked: false,
            stop_wake: None,
        });
    }

    /// Stops the answer being written: the one to message `request` (a
    /// dedupe key), or whichever is, for `None`. Whether one was stopped.
    pub fn stop(&self, request: Option<&str>) -> bool {
        let mut inner = self.inner.borrow_mut();
        let Some(c) = inner.current.as_mut().filter(|c| request.is_none_or(|r| r == c.key)) else { return false };
        c.stop_asked = true;
        if let Some(wake) = c.stop_wake.take() {
            let _ = wake.send(());
        }
        true
    }

    /// Whether the answer being written was asked to stop.
    pub fn stop_asked(&self) -> bool {
        self.inner.borrow().current.as_ref().is_some_and(|c| c.stop_asked)
    }

    /// Runs `work` (a model call) unless the answer is stopped first: then
    /// `work` is dropped where it stands (a streamed call's connection with
    /// it), or never started.
    pub async fn unless_stopped<F: std::future::Future>(&self, work: F) -> Run<F::Output> {
        let stop = {
            let mut inner = self.inner.borrow_mut();
            match inner.current.as_mut() {
                Some(c) if c.stop_asked => return Run::NotStarted,
                Some(c) => {
                    let (tx, rx) = oneshot::channel();
                    c.stop_wake = Some(tx);
                    Some(rx)
                }
                None => None,
            }
        };
        let Some(stop) = stop else { return Run::Done(work.await) };
        let work = std::pin::pin!(work);
        let out = match futures::future::select(work, stop).await {
            futures::future::Either::Left((out, _)) => Run::Done(out),
            futures::future::Either::Right((Ok(()), _)) => Run::Stopped,
            // The waker went with its message (cannot happen mid-call): go on.
            futures::future::Either::Right((Err(_), work)) => Run::Done(work.await),
        };
        if let Some(c) = self.inner.borrow_mut().current.as_mut() {
            c.stop_wake = None;
        }
        out
    }

    /// The text the current model call has written so far (what a client
    /// following it was shown).
    pub fn written(&self) -> String {
        let inner = self.inner.borrow();
        inner.current.as_ref().and_then(|c| c.steps.get(c.step)).map(|s| s.text.clone()).unwrap_or_default()
    }

    /// Whether someone reads the current message's answer as it is written
    /// (then its model calls are streamed).
    pub fn streaming(&self) -> bool {
        let inner = self.inner.borrow();
        inner
            .current
            .as_ref()
            .is_some_and(|c| c.listeners.iter().any(|l| matches!(l.kind, Kind::Stream { open: true, .. })))
    }

    /// A model call starts: the `step`th of the message, counted from its
    /// start (steps stored before an eviction count).
    pub fn step(&self, step: usize) {
        if let Some(c) = self.inner.borrow_mut().current.as_mut() {
            c.step = step;
            if c.steps.len() <= step {
                c.steps.resize_with(step + 1, Step::default);
            }
            c.attempt.clear();
        }
    }

    /// What the streamed model call writes.
    pub fn delta(&self, delta: Delta<'_>) {
        let mut inner = self.inner.borrow_mut();
        let Some(c) = inner.current.as_mut() else { return };
        if c.steps.len() <= c.step {
            c.steps.resize_with(c.step + 1, Step::default);
        }
        match delta {
            Delta::Retry => c.attempt.clear(),
            Delta::Text(piece) => {
                c.attempt.push_str(piece);
                let step = &mut c.steps[c.step];
                if c.attempt.len() <= step.text.len() && step.text.starts_with(c.attempt.as_str()) {
                    // A new attempt repeating what was shown: nothing new yet.
                    return;
                }
                if c.attempt.starts_with(step.text.as_str()) {
                    step.text.push_str(&c.attempt[step.text.len()..]);
                } else {
                    step.text.clone_from(&c.attempt);
                    step.version += 1;
                }
                c.flush();
            }
        }
    }

    /// A tool of the current step: `running`, then `done` or `error`.
    pub fn tool(&self, name: &str, status: &'static str) {
        let mut inner = self.inner.borrow_mut();
        let Some(c) = inner.current.as_mut() else { return };
        if c.steps.len() <= c.step {
            c.steps.resize_with(c.step + 1, Step::default);
        }
        c.steps[c.step].tools.push((name.to_owned(), status));
        c.flush();
    }

    /// Tokens of one model call of the current message.
    pub fn usage(&self, usage: &Usage) {
        if let Some(c) = self.inner.borrow_mut().current.as_mut() {
            c.usage.add(usage);
        }
    }

    /// The session says `text` to `target` (every message it sends passes
    /// here): an API message's answer is collected, and what a heartbeat or
    /// job tells the owner goes to the notification feed.
    pub fn said(&self, target: &ReplyTarget, text: &str) {
        let mut inner = self.inner.borrow_mut();
        if target.channel == ChannelKind::Notify && !hearth_schedule::heartbeat::is_heartbeat_ok(text) {
            inner.notices.push(text.to_owned());
        }
        if let Some(c) = inner.current.as_mut().filter(|c| c.api && target.channel == ChannelKind::Api) {
            c.replies.push(text.to_owned());
        }
    }

    /// The turn could not answer (the model failed): `message` is what the
    /// user is told.
    pub fn failed(&self, message: &str) {
        if let Some(c) = self.inner.borrow_mut().current.as_mut() {
            c.failed = Some(message.to_owned());
        }
    }

    /// The answer as written so far, for a chat preview.
    pub fn preview(&self) -> Option<String> {
        let inner = self.inner.borrow();
        let c = inner.current.as_ref()?;
        c.steps.iter().rev().find(|s| !s.text.trim().is_empty()).map(|s| s.text.clone())
    }

    /// The message is done (its inbox row finished): its clients get the
    /// answer, which is kept a day for a repeated request.
    pub fn finish<S: Sql>(&self, sql: &S, now: i64) -> Result<(), StorageError> {
        let Some(current) = self.inner.borrow_mut().current.take() else { return Ok(()) };
        if !current.api {
            current.close_all(&ApiOutcome::Failed { message: "this message was not asked over the API".into() });
            return Ok(());
        }
        let outcome = match &current.failed {
            Some(message) => ApiOutcome::Failed { message: message.clone() },
            None => ApiOutcome::Done {
                text: current.replies.join("\n\n"),
                usage: ApiUsage::from(&current.usage),
                stopped: current.stop_asked,
            },
        };
        self.ensure_schema(sql)?;
        let stored = serde_json::to_string(&outcome).map_err(|e| StorageError(e.to_string()))?;
        sql.exec(
            "INSERT OR REPLACE INTO api_results (key, outcome, at) VALUES (?, ?, ?)",
            &[current.key.as_str().into(), stored.into(), now.into()],
        )?;
        sql.exec("DELETE FROM api_results WHERE at < ?", &[(now - RESULT_RETENTION_MS).into()])?;
        current.close_all(&outcome);
        Ok(())
    }

    /// The kept answer of an API message already done.
    pub fn stored<S: Sql>(&self, sql: &S, key: &str) -> Result<Option<ApiOutcome>, StorageError> {
        self.ensure_schema(sql)?;
        let rows = sql.exec("SELECT outcome FROM api_results WHERE key = ?", &[key.into()])?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_str)
            .and_then(|s| hearth_json::from_slice(s.as_bytes()).ok()))
    }

    /// Every client is told `message` (the object cannot run turns now).
    pub fn fail_all(&self, message: &str) {
        let outcome = ApiOutcome::Failed { message: message.to_owned() };
        let mut inner = self.inner.borrow_mut();
        if let Some(c) = inner.current.as_mut() {
            for l in c.listeners.drain(..) {
                l.close(&outcome);
            }
        }
        for (_, listeners) in inner.waiting.drain() {
            for l in listeners {
                l.close(&outcome);
            }
        }
    }

    /// Keeps silent `/stream` answers open: a message still queued behind
    /// others, or a model slow to start, sends nothing for a while, and a
    /// proxy or browser may drop a response that says nothing. Each stream
    /// client sent nothing since the last call gets [`KEEPALIVE`]. `false`
    /// once no stream client is left (the keep-alive loop then ends).
    pub fn ping(&self) -> bool {
        let mut inner = self.inner.borrow_mut();
        let Inner { current, waiting, .. } = &mut *inner;
        let listeners = current.iter_mut().flat_map(|c| c.listeners.iter_mut()).chain(waiting.values_mut().flatten());
        let mut any = false;
        for l in listeners {
            let Kind::Stream { sink, open, spoke, .. } = &mut l.kind else { continue };
            if !*open {
                continue;
            }
            if !std::mem::take(spoke) && !sink.send(KEEPALIVE) {
                *open = false;
                continue;
            }
            any = true;
        }
        if !any {
            self.pinging.set(false);
        }
        any
    }

    /// Whether the caller should start the keep-alive loop (none runs yet).
    pub fn claim_pinger(&self) -> bool {
        !self.pinging.replace(true)
    }

    /// The name of the person who wrote last in this one-to-one chat.
    pub fn speaker(&self) -> Option<String> {
        self.inner.borrow().speaker.clone()
    }

    /// Where the answer to the message being answered (or last answered)
    /// goes: what a tool that follows it up later posts to.
    pub fn answering(&self) -> Option<ReplyTarget> {
        self.inner.borrow().answering.clone()
    }

    /// A text for the agent's notification feed (a post whose chat is an
    /// HTTP thread: nobody waits for it there).
    pub fn notice(&self, text: &str) {
        self.inner.borrow_mut().notices.push(text.to_owned());
    }

    /// What heartbeats and jobs said since the last call.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.inner.borrow_mut().notices)
    }

    fn ensure_schema<S: Sql>(&self, sql: &S) -> Result<(), StorageError> {
        if !self.schema_ready.get() {
            crate::storage::ensure(sql, &TABLES)?;
            self.schema_ready.set(true);
        }
        Ok(())
    }
}

impl Current {
    /// Sends each stream client what it has not seen yet, in one write.
    fn flush(&mut self) {
        for l in &mut self.listeners {
            let Kind::Stream { sink, at, open, spoke } = &mut l.kind else { continue };
            if !*open {
                continue;
            }
            let out = catch_up(&self.steps, at);
            if !out.is_empty() {
                *spoke = true;
                if !sink.send(out.as_bytes()) {
                    *open = false;
                }
            }
        }
    }

    fn close_all(mut self, outcome: &ApiOutcome) {
        self.flush();
        for l in self.listeners {
            l.close(outcome);
        }
    }
}

impl Listener {
    fn close(self, outcome: &ApiOutcome) {
        match self.kind {
            Kind::Stream { sink, open, .. } => {
                if open {
                    sink.send(outcome.event(&self.thread_id).as_bytes());
                }
                sink.close();
            }
            Kind::Wait(tx) => {
                let _ = tx.send(outcome.clone());
            }
        }
    }
}

/// The events that bring a client at `at` up to date with `steps`.
fn catch_up(steps: &[Step], at: &mut Cursor) -> String {
    let mut out = String::new();
    for (n, step) in steps.iter().enumerate().skip(at.step) {
        if n > at.step {
            *at = Cursor { step: n, bytes: 0, tools: 0, version: step.version };
        }
        if at.bytes > 0 && at.version != step.version {
            // The model said something else the second time: the step anew.
            at.bytes = step.text.len();
            at.version = step.version;
            let data = json!({"text": step.text, "replace": true}).to_string();
            out.push_str(&sse_event("delta", Some(&at.id()), &data));
        } else if step.text.len() > at.bytes {
            // A reconnecting client's position may fall inside a character.
            let mut from = at.bytes;
            while !step.text.is_char_boundary(from) {
                from -= 1;
            }
            at.bytes = step.text.len();
            at.version = step.version;
            let data = json!({"text": &step.text[from..]}).to_string();
            out.push_str(&sse_event("delta", Some(&at.id()), &data));
        } else {
            at.version = step.version;
        }
        for (name, status) in step.tools.iter().skip(at.tools) {
            at.tools += 1;
            let data = json!({"name": name, "status": status}).to_string();
            out.push_str(&sse_event("tool", Some(&at.id()), &data));
        }
    }
    out
}

#[cfg(test)]
mod tests;
