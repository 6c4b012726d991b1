//! In-memory doubles of the ports, for native tests. Each records what it was
//! asked (a "sink") so tests read like specs, and can be told to fail.

use crate::inbound::ReplyTarget;
use crate::ports::*;
use futures::StreamExt;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

/// One kind of bucket operation, for [`Fault`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp {
    Get,
    Head,
    Put,
    Delete,
    List,
}

/// An injected bucket failure: of the `op` calls that touch a key under
/// `prefix` (for a listing: whose prefix is under it), the first `skip`
/// succeed and the next `times` fail. So a test can fail "the media delete",
/// "the part archive put" or "the 3rd put", and let everything else through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub op: StoreOp,
    pub prefix: String,
    pub skip: u32,
    pub times: u32,
}

impl Fault {
    /// Every `op` under `prefix` fails (until the fault is cleared).
    pub fn always(op: StoreOp, prefix: &str) -> Self {
        Fault { op, prefix: prefix.to_owned(), skip: 0, times: u32::MAX }
    }
    /// The next `op` under `prefix` fails, once.
    pub fn once(op: StoreOp, prefix: &str) -> Self {
        Fault { op, prefix: prefix.to_owned(), skip: 0, times: 1 }
    }
    /// The `n`th `op` from now (1-based), on any key, fails once.
    pub fn nth(op: StoreOp, n: u32) -> Self {
        Fault { op, prefix: String::new(), skip: n.saturating_sub(1), times: 1 }
    }
}

/// An R2 bucket in memory. `fail_puts` makes every put fail; [`MemStore::inject`]
/// fails chosen operations only.
#[derive(Default)]
pub struct MemStore {
    pub objects: RefCell<BTreeMap<String, StoredObject>>,
    pub ops: RefCell<Vec<String>>,
    pub fail_puts: Cell<bool>,
    pub faults: RefCell<Vec<Fault>>,
    /// Objects + prefixes per listing page, like R2's `limit` (0: all in one page).
    pub page_size: Cell<usize>,
    /// Each operation stays pending this many polls before it answers (a slow
    /// bucket, for what runs meanwhile).
    pub pending_polls: Cell<u32>,
    etag_counter: Cell<u64>,
}

impl MemStore {
    pub fn put_text(&self, key: &str, text: &str) {
        let n = self.etag_counter.get() + 1;
        self.etag_counter.set(n);
        self.objects.borrow_mut().insert(
            key.to_owned(),
            StoredObject {
                info: ObjectInfo {
                    key: key.to_owned(),
                    size: text.len() as u64,
                    etag: format!("e{n}"),
                    uploaded_ms: 0,
                },
                body: text.as_bytes().to_vec(),
                ..Default::default()
            },
        );
    }
    pub fn op_count(&self) -> usize {
        self.ops.borrow().len()
    }
    /// Adds a failure (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.faults.borrow_mut().push(fault);
    }
    pub fn clear_faults(&self) {
        self.faults.borrow_mut().clear();
    }
    /// How many recorded operations start with `prefix` (e.g. `"put agents/main/sessions/"`).
    pub fn ops_matching(&self, prefix: &str) -> usize {
        self.ops.borrow().iter().filter(|o| o.starts_with(prefix)).count()
    }
    async fn answer_later(&self) {
        for _ in 0..self.pending_polls.get() {
            YieldOnce::default().await;
        }
    }
    fn check(&self, op: StoreOp, keys: &[&str]) -> Result<(), StorageError> {
        for f in self.faults.borrow_mut().iter_mut() {
            if f.op != op || f.times == 0 || !keys.iter().any(|k| k.starts_with(&f.prefix)) {
                continue;
            }
            if f.skip > 0 {
                f.skip -= 1;
                continue;
            }
            f.times -= 1;
            return Err(StorageError(format!("injected {op:?} failure on {}", keys.join(","))));
        }
        Ok(())
    }
}

impl ObjectStore for MemStore {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        self.ops.borrow_mut().push(format!("get {key}"));
        self.answer_later().await;
        self.check(StoreOp::Get, &[key])?;
        Ok(self.objects.borrow().get(key).cloned())
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        self.ops.borrow_mut().push(format!("head {key}"));
        self.answer_later().await;
        self.check(StoreOp::Head, &[key])?;
        Ok(self.objects.borrow().get(key).map(|o| o.info.clone()))
    }
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        self.ops.borrow_mut().push(format!("put {key}"));
        self.answer_later().await;
        if self.fail_puts.get() {
            return Err(StorageError("injected put failure".into()));
        }
        self.check(StoreOp::Put, &[key])?;
        let n = self.etag_counter.get() + 1;
        self.etag_counter.set(n);
        self.objects.borrow_mut().insert(
            key.to_owned(),
            StoredObject {
                info: ObjectInfo {
                    key: key.to_owned(),
                    size: body.len() as u64,
                    etag: format!("e{n}"),
                    uploaded_ms: 0,
                },
                body,
                content_type: opts.content_type,
                custom_metadata: opts.custom_metadata,
            },
        );
        Ok(())
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        self.ops.borrow_mut().push(format!("delete {}", keys.join(",")));
        self.answer_later().await;
        self.check(StoreOp::Delete, &keys.iter().map(String::as_str).collect::<Vec<_>>())?;
        let mut objs = self.objects.borrow_mut();
        for k in keys {
            objs.remove(k);
        }
        Ok(())
    }
    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        self.ops.borrow_mut().push(format!("list {prefix}"));
        self.answer_later().await;
        self.check(StoreOp::List, &[prefix])?;
        let mut page = ListPage::default();
        // The cursor is the last key of the previous page.
        let start = cursor.unwrap_or(prefix).to_owned();
        let limit = self.page_size.get();
        let mut last: Option<&String> = None;
        for (k, o) in self.objects.borrow().range(start..) {
            if Some(k.as_str()) == cursor {
                continue;
            }
            let Some(rest) = k.strip_prefix(prefix) else { break };
            if limit > 0 && page.objects.len() + page.prefixes.len() >= limit {
                page.cursor = last.cloned();
                break;
            }
            last = Some(k);
            match delimiter.and_then(|d| rest.find(d).map(|i| (i, d))) {
                Some((i, d)) => {
                    let p = format!("{prefix}{}{d}", &rest[..i]);
                    if !page.prefixes.contains(&p) {
                        page.prefixes.push(p);
                    }
                }
                None => page.objects.push(o.info.clone()),
            }
        }
        Ok(page)
    }
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        Ok(r2_layout::archive::gzip(data))
    }
    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GunzipError> {
        r2_layout::archive::gunzip(data, max_bytes).map_err(|e| match e {
            r2_layout::archive::ArchiveError::TooLarge(n) => GunzipError::TooLarge(n),
            other => GunzipError::Invalid(other.to_string()),
        })
    }
}

/// SQLite in memory through rusqlite: the same SQL as production.
#[cfg(test)]
pub struct MemSql {
    pub conn: rusqlite::Connection,
    pub fail_writes: Cell<bool>,
    /// Writes whose SQL contains this text fail (e.g. `"DELETE FROM history"`).
    pub fail_writes_containing: RefCell<Option<String>>,
    /// Writes with a text parameter containing this fail (one chosen value,
    /// e.g. a meta row saved with `"inMemory":true`).
    pub fail_writes_of_value: RefCell<Option<String>>,
    /// What the object knows of its tables, as a Durable Object's handle keeps it.
    pub schemas: crate::ports::SchemaMemo,
}

#[cfg(test)]
impl Default for MemSql {
    fn default() -> Self {
        MemSql {
            conn: rusqlite::Connection::open_in_memory().expect("sqlite"),
            fail_writes: Cell::new(false),
            fail_writes_containing: RefCell::new(None),
            fail_writes_of_value: RefCell::new(None),
            schemas: Default::default(),
        }
    }
}

#[cfg(test)]
impl Sql for MemSql {
    fn schemas(&self) -> Option<&crate::ports::SchemaMemo> {
        Some(&self.schemas)
    }

    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
        use rusqlite::types::{Value as V, ValueRef};
        let is_write = !query.trim_start().to_ascii_uppercase().starts_with("SELECT");
        if is_write && self.fail_writes.get() {
            return Err(StorageError("injected write failure".into()));
        }
        if is_write && self.fail_writes_containing.borrow().as_deref().is_some_and(|t| query.contains(t)) {
            return Err(StorageError(format!("injected write failure: {query}")));
        }
        if let (true, Some(value)) = (is_write, self.fail_writes_of_value.borrow().as_deref()) {
            if params.iter().any(|p| matches!(p, SqlValue::Text(t) if t.contains(value))) {
                return Err(StorageError(format!("injected write failure: a value containing {value}")));
            }
        }
        let mut stmt = self.conn.prepare(query).map_err(|e| StorageError(e.to_string()))?;
        let bound: Vec<V> = params
            .iter()
            .map(|p| match p {
                SqlValue::Null => V::Null,
                SqlValue::Int(i) => V::Integer(*i),
                SqlValue::Real(f) => V::Real(*f),
                SqlValue::Text(s) => V::Text(s.clone()),
                SqlValue::Blob(b) => V::Blob(b.clone()),
            })
            .collect();
        let n = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(bound)).map_err(|e| StorageError(e.to_string()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| StorageError(e.to_string()))? {
            let mut r = Vec::with_capacity(n);
            for i in 0..n {
                r.push(match row.get_ref(i).map_err(|e| StorageError(e.to_string()))? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(i) => SqlValue::Int(i),
                    ValueRef::Real(f) => SqlValue::Real(f),
                    ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
                });
            }
            out.push(r);
        }
        Ok(out)
    }

    fn exec_atomic(&self, statements: Vec<(String, Vec<SqlValue>)>) -> Result<(), StorageError> {
        let sp = |q: &str| self.conn.execute_batch(q).map_err(|e| StorageError(e.to_string()));
        sp("SAVEPOINT exec_atomic")?;
        for (query, params) in &statements {
            if let Err(e) = self.exec(query, params) {
                sp("ROLLBACK TO exec_atomic; RELEASE exec_atomic")?;
                return Err(e);
            }
        }
        sp("RELEASE exec_atomic")
    }
}

/// The Agent object's memory in process: a real [`crate::memory::MemoryHub`]
/// over its own SQLite, reached through the same JSON as in production.
#[cfg(test)]
pub struct InProcessMemory {
    pub hub: RefCell<crate::memory::MemoryHub<MemSql>>,
    pub sql: std::rc::Rc<MemSql>,
    pub calls: RefCell<Vec<crate::protocol::memory::MemoryCall>>,
    pub unavailable: Cell<bool>,
}

#[cfg(test)]
impl Default for InProcessMemory {
    fn default() -> Self {
        let sql = std::rc::Rc::new(MemSql::default());
        InProcessMemory {
            hub: RefCell::new(crate::memory::MemoryHub::new(sql.clone())),
            sql,
            calls: RefCell::default(),
            unavailable: Cell::new(false),
        }
    }
}

#[cfg(test)]
impl MemoryService for InProcessMemory {
    async fn call(
        &self,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError> {
        self.calls.borrow_mut().push(call.clone());
        if self.unavailable.get() {
            return Err(crate::protocol::memory::MemoryCallError::Unavailable("injected".into()));
        }
        self.hub.borrow_mut().call(call.clone())
    }
}

/// A future that is pending once (and asks to be polled again), then ready.
#[derive(Default)]
pub struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

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

/// Records what would have been sent to the chat. Every attempt is
/// recorded; `sent` holds what arrived (target and text). Attempts can be
/// failed: `script` answers the next attempts in order, `down` answers every
/// attempt to a chat id while it is set.
#[derive(Default)]
pub struct RecordingChannel {
    pub sent: RefCell<Vec<(ReplyTarget, String)>>,
    pub attempts: RefCell<Vec<(ReplyTarget, OutgoingChunk)>>,
    pub script: RefCell<VecDeque<SendOutcome>>,
    pub down: RefCell<std::collections::HashMap<String, SendOutcome>>,
    pub typing: Cell<u32>,
    /// "typing…" takes a moment (one poll), as a real chat's call does: a
    /// test can queue another message while a turn prepares.
    pub typing_yields: Cell<bool>,
    /// Attachments it can serve, by handle; every fetch is recorded.
    pub media: RefCell<std::collections::HashMap<String, Vec<u8>>>,
    pub fetched: RefCell<Vec<String>>,
    /// Shows previews (else it refuses them, as a channel without any would).
    pub previews_work: Cell<bool>,
    /// Scripted answers to preview updates (then: shown; an edit preview in
    /// message `m{n}`, its first update's number).
    pub preview_outcomes: RefCell<VecDeque<PreviewOutcome>>,
    /// Everything in order: `send: …`, `draft#id: …`, `edit m1: …`, `end m1`.
    pub log: RefCell<Vec<String>>,
}

impl RecordingChannel {
    /// The texts that arrived, in order.
    pub fn texts(&self) -> Vec<String> {
        self.sent.borrow().iter().map(|(_, t)| t.clone()).collect()
    }
    /// The texts that arrived in chat `chat_id`.
    pub fn texts_to(&self, chat_id: &str) -> Vec<String> {
        self.sent.borrow().iter().filter(|(t, _)| t.chat_id == chat_id).map(|(_, t)| t.clone()).collect()
    }
    /// Answers the next attempt (of any chat) with `outcome`.
    pub fn fail_next(&self, outcome: SendOutcome) {
        self.script.borrow_mut().push_back(outcome);
    }
    /// Answers every attempt to `chat_id` with `outcome` until [`Self::recover`].
    pub fn take_down(&self, chat_id: &str, outcome: SendOutcome) {
        self.down.borrow_mut().insert(chat_id.to_owned(), outcome);
    }
    pub fn recover(&self) {
        self.down.borrow_mut().clear();
    }
}

impl Channel for RecordingChannel {
    async fn send_chunk(&self, target: &ReplyTarget, chunk: &OutgoingChunk) -> SendOutcome {
        self.attempts.borrow_mut().push((target.clone(), chunk.clone()));
        let outcome = match self.down.borrow().get(&target.chat_id) {
            Some(o) => o.clone(),
            None => self.script.borrow_mut().pop_front().unwrap_or(SendOutcome::Delivered),
        };
        if outcome == SendOutcome::Delivered {
            self.sent.borrow_mut().push((target.clone(), chunk.text.clone()));
            self.log.borrow_mut().push(format!("send: {}", chunk.text));
        }
        outcome
    }
    async fn preview(&self, _target: &ReplyTarget, preview: &Preview<'_>) -> PreviewOutcome {
        let scripted = self.preview_outcomes.borrow_mut().pop_front();
        if let Some(outcome) = scripted {
            self.log.borrow_mut().push(format!("refused {}: {outcome:?}", preview.mode.name()));
            return outcome;
        }
        if !self.previews_work.get() {
            return PreviewOutcome::Unsupported("recording channel".into());
        }
        let mut log = self.log.borrow_mut();
        match preview.mode {
            crate::settings::stream::StreamMode::Draft => {
                log.push(format!("draft#{}: {}", preview.draft_id, preview.text));
                PreviewOutcome::Shown { handle: None }
            }
            _ => {
                let handle = preview.handle.map(str::to_owned).unwrap_or_else(|| format!("m{}", log.len() + 1));
                log.push(format!("edit {handle}: {}", preview.text));
                PreviewOutcome::Shown { handle: Some(handle) }
            }
        }
    }
    async fn end_preview(&self, _target: &ReplyTarget, handle: &str) {
        self.log.borrow_mut().push(format!("end {handle}"));
    }
    async fn typing(&self, _target: &ReplyTarget) {
        self.typing.set(self.typing.get() + 1);
        if self.typing_yields.get() {
            YieldOnce::default().await;
        }
    }
    async fn fetch_media(
        &self,
        _channel: crate::inbound::ChannelKind,
        handle: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ChannelError> {
        self.fetched.borrow_mut().push(handle.to_owned());
        match self.media.borrow().get(handle) {
            Some(b) if b.len() as u64 > max_bytes => Err(ChannelError::TooLarge(b.len() as u64)),
            Some(b) => Ok(b.clone()),
            None => Err(ChannelError::Failed(format!("no file {handle}"))),
        }
    }
}

/// The Agent object's usage ledger in process: a real
/// [`crate::usage::book::UsageBook`] over its own SQLite, reached through
/// the same typed requests as in production (recorded).
#[cfg(test)]
pub struct InProcessUsage {
    pub book: RefCell<crate::usage::book::UsageBook>,
    pub sql: MemSql,
    pub requests: RefCell<Vec<crate::protocol::usage::MeterRequest>>,
    pub unavailable: Cell<bool>,
}

#[cfg(test)]
impl Default for InProcessUsage {
    fn default() -> Self {
        InProcessUsage {
            book: RefCell::new(crate::usage::book::UsageBook::new("main", "UTC", Default::default())),
            sql: MemSql::default(),
            requests: RefCell::default(),
            unavailable: Cell::new(false),
        }
    }
}

#[cfg(test)]
impl InProcessUsage {
    /// The ledger with these settings (budget, prices) in `timezone`.
    pub fn configure(&self, settings: crate::settings::usage::UsageSettings, timezone: &str) {
        *self.book.borrow_mut() = crate::usage::book::UsageBook::new("main", timezone, settings);
    }
}

/// The agent's reminders as its Agent object keeps them (the same code,
/// its own SQLite), with every call recorded.
#[cfg(test)]
#[derive(Default)]
pub struct InProcessReminders {
    pub sql: MemSql,
    /// `REMINDERS_MAX` (default: the runtime's).
    pub max: Cell<Option<u32>>,
    pub calls: RefCell<Vec<crate::protocol::reminders::ReminderCall>>,
    /// The alarm times the Agent object would set.
    pub wake_ats: RefCell<Vec<i64>>,
    /// The Agent object cannot be reached.
    pub unavailable: Cell<bool>,
}

/// A platform of doubles; time advances only when slept through.
#[cfg(test)]
#[derive(Default)]
pub struct TestPlatform {
    pub reminders: InProcessReminders,
    pub store: MemStore,
    pub http: ScriptedHttp,
    pub sql: MemSql,
    pub channel: RecordingChannel,
    pub memory: InProcessMemory,
    pub usage: InProcessUsage,
    pub now: Cell<i64>,
    pub slept: RefCell<Vec<u64>>,
    pub logs: RefCell<Vec<String>>,
    uuid_counter: Cell<u64>,
    /// What the Agent object answers for the MCP catalog (default: no servers).
    pub mcp_catalog: RefCell<crate::protocol::mcp::McpCatalog>,
    /// The Agent object cannot be reached for it.
    pub mcp_catalog_fails: Cell<bool>,
    /// How many times the catalog was asked for.
    pub mcp_catalog_calls: Cell<u32>,
    /// The Worker's secrets, for `mcp.json` placeholders.
    pub secrets: RefCell<std::collections::HashMap<String, String>>,
    /// `run_code`'s sandbox; `None` (the default): no Worker Loader binding.
    pub sandbox: RefCell<Option<ScriptedSandbox>>,
    /// The Agent object's side of tool calls waiting for the owner.
    pub approvals: RefCell<TestApprovals>,
    /// The Agent object's side of the people commands: the calls, and the reply.
    pub people_calls: RefCell<Vec<crate::protocol::people::PeopleCall>>,
    pub people_reply: RefCell<crate::protocol::people::PeopleReply>,
    /// Other sessions asked (`ask_session`), and what they answer in turn:
    /// `None` never answers; none left: the session cannot be reached.
    pub sessions: SessionDoubles,
}

/// The Agent object's approvals as a test scripts them: every call, and
/// how a request stands (`Waiting` until the test decides; a request past
/// its time asked with `expire` becomes `Expired`).
#[derive(Debug)]
pub struct TestApprovals {
    pub calls: Vec<crate::protocol::approvals::ApprovalCall>,
    pub decision: crate::protocol::approvals::Decision,
    pub expires_at: i64,
    /// Where the owner is asked (`None`: no chat).
    pub asked_in: Option<crate::protocol::approvals::AskedIn>,
}

impl Default for TestApprovals {
    fn default() -> Self {
        TestApprovals {
            calls: Vec::new(),
            decision: crate::protocol::approvals::Decision::Waiting,
            expires_at: 0,
            asked_in: None,
        }
    }
}

/// Other Session objects, as a session's turn reaches them.
#[cfg(test)]
#[derive(Default)]
pub struct SessionDoubles {
    pub asked: RefCell<Vec<crate::protocol::api::ApiTurnRequest>>,
    pub answers: RefCell<VecDeque<Option<crate::protocol::api::ApiOutcome>>>,
    pub stopped: RefCell<Vec<(crate::inbound::SessionKey, crate::protocol::api::StopRequest)>>,
    /// Calls to the agent's task list, and its answers in turn (none left:
    /// `{"ok": true}`; `None`: the Agent object cannot be reached).
    pub tasks: RefCell<Vec<crate::protocol::tasks::TaskRequest>>,
    pub task_replies: RefCell<VecDeque<Option<crate::protocol::tasks::TaskReply>>>,
}

/// A sandbox whose runs are scripted: each run gives the next list of
/// events (its script's calls, then how it ended); the jobs it was given and
/// the answers to the calls are recorded.
#[cfg(test)]
#[derive(Default)]
pub struct ScriptedSandbox {
    pub runs: VecDeque<Vec<SandboxEvent>>,
    pub jobs: Vec<SandboxJob>,
    pub answers: std::rc::Rc<RefCell<Vec<(u32, bool, String)>>>,
}

#[cfg(test)]
struct ScriptedRun {
    events: RefCell<VecDeque<SandboxEvent>>,
    answers: std::rc::Rc<RefCell<Vec<(u32, bool, String)>>>,
}

#[cfg(test)]
impl SandboxRun for ScriptedRun {
    fn next(&self) -> futures::future::LocalBoxFuture<'_, SandboxEvent> {
        let event = self.events.borrow_mut().pop_front().unwrap_or(SandboxEvent::Done(Err("no more events".into())));
        Box::pin(async move { event })
    }
    fn answer(&self, id: u32, is_error: bool, text: &str) {
        self.answers.borrow_mut().push((id, is_error, text.to_owned()));
    }
}

#[cfg(test)]
impl Platform for TestPlatform {
    type Store = MemStore;
    type Http = ScriptedHttp;
    type Sql = MemSql;
    type Channel = RecordingChannel;
    type Memory = InProcessMemory;
    fn memory(&self) -> &InProcessMemory {
        &self.memory
    }
    fn store(&self) -> &MemStore {
        &self.store
    }
    fn http(&self) -> &ScriptedHttp {
        &self.http
    }
    fn sql(&self) -> &MemSql {
        &self.sql
    }
    fn channel(&self) -> &RecordingChannel {
        &self.channel
    }
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    async fn mcp_catalog(&self) -> Result<crate::protocol::mcp::McpCatalog, StorageError> {
        self.mcp_catalog_calls.set(self.mcp_catalog_calls.get() + 1);
        if self.mcp_catalog_fails.get() {
            return Err(StorageError("agent object unavailable".into()));
        }
        Ok(self.mcp_catalog.borrow().clone())
    }
    fn secret(&self, name: &str) -> Option<String> {
        self.secrets.borrow().get(name).cloned()
    }
    async fn people(
        &self,
        call: &crate::protocol::people::PeopleCall,
    ) -> Result<crate::protocol::people::PeopleReply, StorageError> {
        self.people_calls.borrow_mut().push(call.clone());
        Ok(self.people_reply.borrow().clone())
    }
    async fn approvals(
        &self,
        call: &crate::protocol::approvals::ApprovalCall,
    ) -> Result<crate::protocol::approvals::ApprovalState, StorageError> {
        use crate::protocol::approvals::{ApprovalCall, ApprovalState, Decision};
        let mut a = self.approvals.borrow_mut();
        a.calls.push(call.clone());
        match call {
            ApprovalCall::Ask(ask) if a.expires_at == 0 => a.expires_at = self.now.get() + ask.timeout_ms,
            ApprovalCall::Status { expire: true, .. }
                if a.decision == Decision::Waiting && self.now.get() >= a.expires_at =>
            {
                a.decision = Decision::Expired;
            }
            _ => {}
        }
        Ok(ApprovalState { id: 1, decision: a.decision, expires_at: a.expires_at, asked_in: a.asked_in.clone() })
    }
    fn sandbox_available(&self) -> bool {
        self.sandbox.borrow().is_some()
    }
    async fn start_sandbox(&self, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
        let mut sandbox = self.sandbox.borrow_mut();
        let Some(sandbox) = sandbox.as_mut() else { return Err(SandboxError("no sandbox".into())) };
        sandbox.jobs.push(job.clone());
        let events = sandbox.runs.pop_front().unwrap_or_default();
        Ok(Box::new(ScriptedRun { events: RefCell::new(events.into()), answers: sandbox.answers.clone() }))
    }
    async fn sleep(&self, ms: u64) {
        self.slept.borrow_mut().push(ms);
        self.now.set(self.now.get() + ms as i64);
        // Lets whatever runs beside the sleeper make progress, as a timer would.
        YieldOnce::default().await;
    }
    fn new_uuid(&self) -> String {
        let n = self.uuid_counter.get() + 1;
        self.uuid_counter.set(n);
        format!("00000000-0000-4000-8000-{n:012}")
    }
    fn log(&self, _level: LogLevel, msg: &str) {
        self.logs.borrow_mut().push(msg.to_owned());
    }
    async fn reminders(
        &self,
        call: &crate::protocol::reminders::ReminderCall,
    ) -> Result<crate::protocol::reminders::ReminderReply, StorageError> {
        let r = &self.reminders;
        r.calls.borrow_mut().push(call.clone());
        if r.unavailable.get() {
            return Err(StorageError("injected: the Agent object is unavailable".into()));
        }
        let limit = |_: &str| Ok(r.max.get().unwrap_or(crate::protocol::reminders::DEFAULT_MAX));
        let answered = crate::reminders::answer(&r.sql, call, self.now.get(), &limit)?;
        r.wake_ats.borrow_mut().extend(answered.wake_at);
        Ok(answered.reply)
    }
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, StorageError> {
        self.usage.requests.borrow_mut().push(req.clone());
        if self.usage.unavailable.get() {
            return Err(StorageError("injected: the Agent object is unavailable".into()));
        }
        let log = |_: LogLevel, msg: &str| self.logs.borrow_mut().push(msg.to_owned());
        self.usage.book.borrow_mut().meter(&self.usage.sql, req, self.now.get(), &log)
    }
    async fn ask_session(
        &self,
        req: &crate::protocol::api::ApiTurnRequest,
    ) -> Result<crate::protocol::api::ApiOutcome, StorageError> {
        self.sessions.asked.borrow_mut().push(req.clone());
        let next = self.sessions.answers.borrow_mut().pop_front();
        match next {
            Some(Some(outcome)) => Ok(outcome),
            Some(None) => futures::future::pending().await,
            None => Err(StorageError("injected: the session cannot be reached".into())),
        }
    }
    async fn stop_session(
        &self,
        key: &crate::inbound::SessionKey,
        req: &crate::protocol::api::StopRequest,
    ) -> Result<(), StorageError> {
        self.sessions.stopped.borrow_mut().push((key.clone(), req.clone()));
        Ok(())
    }
    async fn tasks(
        &self,
        req: &crate::protocol::tasks::TaskRequest,
    ) -> Result<crate::protocol::tasks::TaskReply, StorageError> {
        self.sessions.tasks.borrow_mut().push(req.clone());
        match self.sessions.task_replies.borrow_mut().pop_front() {
            Some(Some(reply)) => Ok(reply),
            Some(None) => Err(StorageError("injected: the Agent object cannot be reached".into())),
            None => Ok(crate::protocol::tasks::TaskReply { ok: true, ..Default::default() }),
        }
    }
}

/// The LLM settings an agent gets from `vars` (plus defaults), for tests of
/// the encodings and the retry loop.
#[cfg(test)]
pub fn llm_config(vars: &[(&str, &str)]) -> crate::settings::LlmConfig {
    let vars: std::collections::HashMap<String, String> =
        vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    match crate::settings::AgentConfig::load(&vars, "main") {
        Ok(c) => c.llm,
        Err(e) => panic!("test settings rejected: {e}"),
    }
}

/// The Worker's side of a webhook, in memory ([`Front`]): settings from a
/// map, scripted HTTP, a clock that moves when told (or when slept on), and
/// records of every message queued, email sent and log line. Signatures are
/// checked with real crypto (`sha2`'s HMAC, `ed25519-dalek`), as the
/// runtime's WebCrypto would.
#[derive(Default)]
pub struct FakeFront {
    pub vars: std::collections::HashMap<String, String>,
    pub http: ScriptedHttp,
    pub now: Cell<i64>,
    pub slept: RefCell<Vec<u64>>,
    pub logs: RefCell<Vec<String>>,
    /// Everything queued, in order (repeats of a dedupe key included once).
    pub queued: RefCell<Vec<(crate::inbound::SessionKey, crate::inbound::Inbound)>>,
    /// While set, every enqueue fails with this.
    pub enqueue_error: RefCell<Option<String>>,
    pub mails: RefCell<Vec<(String, String, Vec<u8>)>>,
    /// While set, every email is refused with this.
    pub mail_error: RefCell<Option<MailError>>,
    pub taps: RefCell<Vec<crate::protocol::dreams::Tap>>,
    /// Door calls, in order (a stranger is told once per sender).
    pub doors: RefCell<Vec<crate::protocol::people::Door>>,
    /// Answers the door gives first, in order (then: a stranger).
    pub door_replies: RefCell<Vec<crate::protocol::people::DoorReply>>,
    /// While set, the door cannot be reached.
    pub door_down: RefCell<bool>,
    pub memory_calls: RefCell<Vec<crate::protocol::memory::MemoryCall>>,
    /// Attachments stashed by key: (bytes, content type).
    pub stash: RefCell<std::collections::BTreeMap<String, (Vec<u8>, String)>>,
}

impl FakeFront {
    /// A front with these settings (`AGENTS` defaults to `main`).
    pub fn with(vars: &[(&str, &str)]) -> Self {
        FakeFront {
            vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            now: Cell::new(1_800_000_000_000),
            ..Default::default()
        }
    }

    pub fn queued_texts(&self) -> Vec<String> {
        self.queued.borrow().iter().map(|(_, m)| m.text.clone()).collect()
    }
}

impl Io for FakeFront {
    type Http = ScriptedHttp;
    fn http(&self) -> &ScriptedHttp {
        &self.http
    }
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    async fn sleep(&self, ms: u64) {
        self.slept.borrow_mut().push(ms);
        self.now.set(self.now.get() + ms as i64);
    }
    fn log(&self, _level: LogLevel, msg: &str) {
        self.logs.borrow_mut().push(msg.to_owned());
    }
    async fn send_email(&self, from: &str, to: &str, raw: &[u8]) -> Result<(), MailError> {
        if let Some(e) = self.mail_error.borrow().clone() {
            return Err(e);
        }
        self.mails.borrow_mut().push((from.to_owned(), to.to_owned(), raw.to_vec()));
        Ok(())
    }
    async fn stashed(&self, key: &str) -> Result<Vec<u8>, String> {
        self.stash.borrow().get(key).map(|(b, _)| b.clone()).ok_or_else(|| format!("no {key}"))
    }
}

/// The runtime's `TextDecoder` natively: `encoding_rs`, the same WHATWG
/// standard (labels, decoders, U+FFFD for malformed bytes).
pub fn decode_text(label: &str, bytes: &[u8]) -> Option<String> {
    let encoding = encoding_rs::Encoding::for_label(label.trim().as_bytes())?;
    // The standard's "replacement" encoding (hz-gb-2312, iso-2022-kr…):
    // `new TextDecoder` refuses those labels.
    if encoding == encoding_rs::REPLACEMENT {
        return None;
    }
    Some(encoding.decode_without_bom_handling(bytes).0.into_owned())
}

impl Front for FakeFront {
    type Vars = std::collections::HashMap<String, String>;
    fn vars(&self) -> &Self::Vars {
        &self.vars
    }
    fn decode_text(&self, label: &str, bytes: &[u8]) -> Option<String> {
        decode_text(label, bytes)
    }
    fn config(&self, agent: &str) -> Result<std::rc::Rc<crate::settings::AgentConfig>, crate::settings::ConfigError> {
        crate::settings::AgentConfig::load(&self.vars, agent).map(std::rc::Rc::new)
    }
    async fn enqueue(
        &self,
        key: &crate::inbound::SessionKey,
        inbound: &crate::inbound::Inbound,
    ) -> Result<bool, String> {
        if let Some(e) = self.enqueue_error.borrow().clone() {
            return Err(e);
        }
        let mut queued = self.queued.borrow_mut();
        if queued.iter().any(|(k, m)| k == key && m.dedupe_key == inbound.dedupe_key) {
            return Ok(false);
        }
        queued.push((key.clone(), inbound.clone()));
        Ok(true)
    }
    async fn session_status(
        &self,
        key: &crate::inbound::SessionKey,
    ) -> Result<crate::protocol::session::SessionStatus, String> {
        let count = self.queued.borrow().iter().filter(|(k, _)| k == key).count() as u64;
        hearth_json::from_value(serde_json::json!({"sessionKey": key.render(), "messageCount": count}))
            .map_err(|e| e.to_string())
    }
    async fn memory(
        &self,
        _agent: &str,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError> {
        self.memory_calls.borrow_mut().push(call.clone());
        Ok(crate::protocol::memory::MemoryReply::Hits { hits: vec![] })
    }
    async fn meter(
        &self,
        _req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, String> {
        Ok(crate::protocol::usage::MeterReply::default())
    }
    async fn door(&self, door: &crate::protocol::people::Door) -> Result<crate::protocol::people::DoorReply, String> {
        self.doors.borrow_mut().push(door.clone());
        if *self.door_down.borrow() {
            return Err("the agent object is unavailable".into());
        }
        if !self.door_replies.borrow().is_empty() {
            return Ok(self.door_replies.borrow_mut().remove(0));
        }
        // A stranger, told once per channel and sender (the cooldown), or every time when free.
        let doors = self.doors.borrow();
        let first = doors.iter().filter(|d| d.channel == door.channel && d.sender == door.sender).count() == 1;
        let notice = (first || door.cooldown_ms == 0)
            .then(|| crate::people::texts::stranger(door.channel, &door.sender, door.configured_owner, None));
        Ok(crate::protocol::people::DoorReply {
            standing: crate::protocol::people::Standing::Stranger,
            notice,
            roster: Default::default(),
        })
    }
    async fn tap(&self, tap: &crate::protocol::dreams::Tap) -> Result<(u16, String), String> {
        self.taps.borrow_mut().push(tap.clone());
        Ok((200, r#"{"note":"noted"}"#.into()))
    }
    async fn stash(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), String> {
        self.stash.borrow_mut().insert(key.to_owned(), (bytes, content_type.to_owned()));
        Ok(())
    }
    async fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> Result<[u8; 32], String> {
        Ok(hmac_sha256(key, data))
    }
    async fn ed25519_verify(&self, key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> Result<bool, String> {
        let key = ed25519_dalek::VerifyingKey::from_bytes(key).map_err(|e| e.to_string())?;
        Ok(key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature)).is_ok())
    }
}

/// HMAC-SHA256 (RFC 2104) over `sha2`, for the native tests' front: the
/// Worker asks the runtime's WebCrypto instead.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(data).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    outer.into()
}

/// A direct Telegram message from Ana in chat 1, as the session queues it:
/// the one message most session tests need (`order`: its send position).
#[cfg(test)]
pub fn telegram_dm(
    dedupe_key: impl Into<String>,
    text: &str,
    order: Option<crate::inbound::SendOrder>,
) -> crate::inbound::Inbound {
    use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget};
    Inbound {
        dedupe_key: dedupe_key.into(),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Direct,
        chat_id: "1".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: text.into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
        received_at: 0,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order,
    }
}

/// An event stream's client, as the native tests read it: what was written, and whether it ended.
#[derive(Default)]
pub struct StreamClient {
    pub written: RefCell<String>,
    pub closed: Cell<bool>,
}

struct StreamSink(std::rc::Rc<StreamClient>);

impl crate::ports::EventSink for StreamSink {
    fn send(&self, bytes: &[u8]) -> bool {
        self.0.written.borrow_mut().push_str(&String::from_utf8_lossy(bytes));
        true
    }
    fn close(&self) {
        self.0.closed.set(true);
    }
}

/// Opens recording sinks ([`crate::serving::OpenStream`]): the streams a dispatcher opened, in order.
#[derive(Default)]
pub struct TestStreams(pub RefCell<Vec<std::rc::Rc<StreamClient>>>);

impl crate::serving::OpenStream for TestStreams {
    fn open(&self) -> Result<Box<dyn crate::ports::EventSink>, String> {
        let client = std::rc::Rc::new(StreamClient::default());
        self.0.borrow_mut().push(client.clone());
        Ok(Box::new(StreamSink(client)))
    }
}
