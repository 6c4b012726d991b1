//! Ports: the small traits through which the runtime touches the world.
//!
//! Each has one production adapter in the Worker (`src/adapters/`) and an
//! in-memory double in [`crate::testing`] that records calls and can inject
//! failures, so the state machines are tested without workerd.

use crate::inbound::ReplyTarget;

/// A storage failure (R2 or SQLite). The message is for logs, not users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("storage: {0}")]
pub struct StorageError(pub String);

/// Listing entry / head result of an R2 object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub uploaded_ms: i64,
}

/// An object read whole from R2.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredObject {
    pub info: ObjectInfo,
    pub body: Vec<u8>,
    pub content_type: Option<String>,
    pub custom_metadata: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PutOptions {
    pub content_type: Option<String>,
    pub custom_metadata: Vec<(String, String)>,
}

/// One page of a listing. `prefixes` are the "folders" when a delimiter is used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPage {
    pub objects: Vec<ObjectInfo>,
    pub prefixes: Vec<String>,
    pub cursor: Option<String>,
}

/// The R2 bucket.
#[allow(async_fn_in_trait)]
pub trait ObjectStore {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError>;
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError>;
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError>;
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError>;
    async fn list(&self, prefix: &str, delimiter: Option<&str>, cursor: Option<&str>)
        -> Result<ListPage, StorageError>;

    /// Gzip-compresses `data` the way the bucket's archives are stored
    /// (`*.jsonl.gz`). The Worker uses the runtime's `CompressionStream`, so
    /// the upload carries no deflate code; test stores use a crate.
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        let _ = data;
        Err(StorageError("this store cannot gzip".into()))
    }

    /// Gunzips `data`, refusing more than `max_bytes` uncompressed (a hostile
    /// or corrupt archive must not fill the isolate's memory).
    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GunzipError> {
        let _ = (data, max_bytes);
        Err(GunzipError::Invalid("this store cannot gunzip".into()))
    }
}

/// Why gzip data could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    #[error("not valid gzip: {0}")]
    Invalid(String),
    #[error("larger than {0} bytes uncompressed")]
    TooLarge(usize),
}

/// A value bound to or read from SQLite.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl SqlValue {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            SqlValue::Int(i) => Some(*i),
            SqlValue::Real(f) => Some(*f as i64),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
    pub fn into_string(self) -> Option<String> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        SqlValue::Int(v)
    }
}
impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        SqlValue::Text(v.to_owned())
    }
}
impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        SqlValue::Text(v)
    }
}

/// The schema versions a database holds, as far as its object has read or
/// written them (see [`crate::storage::ensure`]). `known` is `None` until
/// the object first reads its `schema_versions` table.
#[derive(Debug, Default)]
pub struct SchemaMemo {
    pub(crate) known: std::cell::RefCell<Option<SchemaVersions>>,
    /// When this object last ran each of its periodic chores (pruning old
    /// rows, [`crate::storage::chore_due`]).
    pub(crate) chores: std::cell::RefCell<Vec<(&'static str, i64)>>,
}

/// The rows of a database's `schema_versions` table, whether the table
/// exists, and whether the database had no table at all when the object
/// woke (a new object: its tables are made by today's statements).
#[derive(Debug, Default, Clone)]
pub(crate) struct SchemaVersions {
    pub(crate) table: bool,
    pub(crate) fresh: bool,
    pub(crate) versions: Vec<(String, i64)>,
}

/// A Durable Object's SQLite database. Synchronous, like `ctx.storage.sql`:
/// statements run without an `await` between them are committed together,
/// which is what makes each state transition of the session atomic.
pub trait Sql {
    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError>;

    /// What this database's object already knows of its tables
    /// ([`crate::storage::ensure`]): one memo per object, shared by every
    /// handle on its database. `None` (the default): every schema is set up
    /// again on each use, as before there were memos.
    fn schemas(&self) -> Option<&SchemaMemo> {
        None
    }

    /// The database's size in bytes, where the runtime says
    /// (`ctx.storage.sql.databaseSize`). Default: unknown.
    fn database_size(&self) -> Option<u64> {
        None
    }

    /// Runs `statements` (without parameters), then `last` with its
    /// parameters: in one call where the database takes several statements
    /// at once (a Durable Object's `exec` does), one by one here. Not atomic:
    /// a failure leaves the statements before it done.
    fn exec_batch(&self, statements: &[&str], last: (&str, &[SqlValue])) -> Result<(), StorageError> {
        for stmt in statements {
            self.exec(stmt, &[])?;
        }
        self.exec(last.0, last.1).map(|_| ())
    }

    /// Runs `statements` in order, all or nothing. Adapters that can roll back
    /// override this (Durable Objects: `transactionSync`; tests: a savepoint);
    /// this default runs them one by one and stops at the first failure.
    fn exec_atomic(&self, statements: Vec<(String, Vec<SqlValue>)>) -> Result<(), StorageError> {
        for (query, params) in &statements {
            self.exec(query, params)?;
        }
        Ok(())
    }
}

/// An outgoing HTTP request (to the LLM, Telegram, Discord).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u32,
}

impl HttpRequest {
    pub fn post_json(url: String, body: &serde_json::Value, timeout_ms: u32) -> Self {
        HttpRequest {
            method: "POST",
            url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: serde_json::to_vec(body).unwrap_or_default(),
            timeout_ms,
        }
    }
    pub fn get(url: String, timeout_ms: u32) -> Self {
        HttpRequest { method: "GET", url, headers: vec![], body: vec![], timeout_ms }
    }
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Limits for a request whose answer nobody vouches for (a web page, an MCP
/// server's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Body bytes read; the rest is never downloaded.
    pub max_body_bytes: u64,
    /// Redirects come back as they are (a 3xx with `location`) for the
    /// caller to check each hop, instead of being followed.
    pub manual_redirects: bool,
}

/// A response read within [`FetchLimits`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LimitedResponse {
    pub response: HttpResponse,
    /// The body was longer than the limit and is cut there.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("request timed out")]
    Timeout,
    #[error("network error: {0}")]
    Network(String),
}

/// The pieces of a response body, in order, as the server writes them.
pub type BodyChunks = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Vec<u8>, HttpError>>>>;

/// A response whose body is read as it arrives (an LLM's server-sent events).
pub struct HttpStream {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: BodyChunks,
}

impl HttpStream {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The rest of the body, whole (an error answer, or a server that did
    /// not stream).
    pub async fn collect(mut self) -> Result<HttpResponse, HttpError> {
        use futures::StreamExt;
        let mut body = Vec::new();
        while let Some(piece) = self.body.next().await {
            body.extend_from_slice(&piece?);
        }
        Ok(HttpResponse { status: self.status, headers: self.headers, body })
    }
}

/// Outgoing HTTP.
#[allow(async_fn_in_trait)]
pub trait Http {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, HttpError>;

    /// `req` within `limits`. This default reads the whole answer and cuts
    /// it (for doubles); the Worker's adapter stops reading at the limit and
    /// leaves redirects to the caller when asked.
    async fn send_limited(&self, req: HttpRequest, limits: FetchLimits) -> Result<LimitedResponse, HttpError> {
        let mut response = self.send(req).await?;
        let max = usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX);
        let truncated = response.body.len() > max;
        response.body.truncate(max);
        Ok(LimitedResponse { response, truncated })
    }

    /// The same request, its body handed out piece by piece as it arrives.
    /// `timeout_ms` bounds the wait for the headers and for each piece. Only
    /// streamed LLM calls use it: reading a body in pieces costs a crossing
    /// into the runtime per piece, where [`Http::send`] reads it in one.
    /// Default: [`Http::send`], the body as one piece.
    async fn open(&self, req: HttpRequest) -> Result<HttpStream, HttpError> {
        let resp = self.send(req).await?;
        let body = resp.body;
        Ok(HttpStream {
            status: resp.status,
            headers: resp.headers,
            body: Box::pin(futures::stream::once(async move { Ok(body) })),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("channel failed: {0}")]
    Failed(String),
    /// An attachment larger than the caller's limit (its size in bytes).
    #[error("file too large ({0} bytes)")]
    TooLarge(u64),
}

/// An answer shown while the model writes it (see `crate::session::preview`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preview<'a> {
    pub mode: crate::settings::stream::StreamMode,
    /// The answer so far, as the model writes it (Markdown, maybe unfinished).
    pub text: &'a str,
    /// The message shown so far (edit mode; `None` before the first update).
    pub handle: Option<&'a str>,
    /// Telegram's `draft_id`: non-zero, one per answer.
    pub draft_id: i64,
}

/// What became of one preview update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewOutcome {
    /// Shown; edit mode names the message it shows (to edit, then remove).
    Shown { handle: Option<String> },
    /// Rate-limited: no update for this long.
    Wait(u64),
    /// This chat cannot show this mode (why, for the log).
    Unsupported(String),
    /// This update failed; a later one may work.
    Failed(String),
}

/// One message to send: a piece of a reply, already cut to the channel's
/// limit and rendered by [`crate::delivery`]. The adapter sends it once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingChunk {
    /// The piece as the model wrote it (Markdown).
    pub text: String,
    /// The same piece in the channel's own markup (Telegram HTML, sent with
    /// `parse_mode`). `None`: send `text` as it is (Discord renders Markdown
    /// itself, and a piece whose markup was refused goes again as plain text).
    pub formatted: Option<String>,
    /// The first piece of its reply (Telegram quotes the user's message on it).
    pub first: bool,
    /// The first piece sent in answer to this message at all (Discord edits
    /// the deferred response with it; every later piece is a follow-up).
    pub opens: bool,
}

/// What became of one attempt to send an [`OutgoingChunk`]. The adapter
/// only classifies the platform's answer; [`crate::delivery`] decides what
/// to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    Delivered,
    /// Worth trying again later: a 429 (with the wait the platform asked
    /// for), a 5xx, a time-out, a network error.
    Retry {
        after_ms: Option<u64>,
        why: String,
    },
    /// This piece can never be sent as it is (a 400 about its content).
    Rejected(String),
    /// The chat cannot be reached at all (the bot was blocked or removed, the
    /// chat does not exist, a missing token): nothing more can go there now.
    Unreachable(String),
}

/// The chat channel a session replies on. The adapter sends one piece per
/// call and says how it went; cutting, markup fallback, retries and their
/// order live in [`crate::delivery`].
#[allow(async_fn_in_trait)]
pub trait Channel {
    /// One attempt to send one piece; never sleeps, never retries.
    async fn send_chunk(&self, target: &ReplyTarget, chunk: &OutgoingChunk) -> SendOutcome;
    /// Shows the answer so far, beside the answer itself (which is sent as
    /// always). One attempt, no retries: a preview is worth only its freshness.
    async fn preview(&self, target: &ReplyTarget, preview: &Preview<'_>) -> PreviewOutcome {
        let _ = (target, preview);
        PreviewOutcome::Unsupported("this channel shows no previews".into())
    }
    /// The answer was sent: the preview message `handle` (edit mode) goes.
    async fn end_preview(&self, target: &ReplyTarget, handle: &str) {
        let _ = (target, handle);
    }
    /// Show "typing…" while a turn runs; best effort.
    async fn typing(&self, target: &ReplyTarget);
    /// One attempt to send a voice note (Ogg/Opus) answering `target`
    /// (Telegram `sendVoice`, a Discord attachment). Never retried: the text
    /// of the reply is already on its way.
    async fn send_voice(&self, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        let _ = audio;
        SendOutcome::Unreachable(format!("channel {:?} cannot send voice notes", target.channel))
    }
    /// Downloads an inbound attachment by its channel handle (a Telegram
    /// `file_id`: getFile, then the file URL). More than `max_bytes` is
    /// [`ChannelError::TooLarge`], ideally known before downloading.
    async fn fetch_media(
        &self,
        channel: crate::inbound::ChannelKind,
        handle: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ChannelError> {
        let _ = (handle, max_bytes);
        Err(ChannelError::Failed(format!("channel {channel:?} cannot fetch media")))
    }
}

/// The agent's BM25 memory, hosted by the Agent object: a session reaches it
/// through this port (see [`crate::memory`]).
#[allow(async_fn_in_trait)]
pub trait MemoryService {
    async fn call(
        &self,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError>;

    /// Stores a compaction or reset summary as an Archive entry of `store`
    /// (a taken name gets a numeric suffix; the same add repeated, with the
    /// same summary and time, finds the entry it made). Returns the entry's name.
    async fn add_archive(
        &self,
        store: &str,
        name: &str,
        summary: &str,
        created_at: i64,
    ) -> Result<String, crate::protocol::memory::MemoryCallError> {
        let call = crate::protocol::memory::MemoryCall::AddArchive {
            store: store.to_owned(),
            name: name.to_owned(),
            summary: summary.to_owned(),
            created_at,
        };
        match self.call(&call).await? {
            crate::protocol::memory::MemoryReply::Applied { name: Some(name), .. } => Ok(name),
            other => Err(crate::protocol::memory::MemoryCallError::Unavailable(format!("unexpected reply {other:?}"))),
        }
    }
}

/// A live response that events are written to as they happen (an HTTP
/// client following a turn, or the agent's notification feed).
pub trait EventSink {
    /// Writes `bytes`; `false` once the client is gone (nothing more is
    /// written to it, and nothing else changes: the work goes on).
    fn send(&self, bytes: &[u8]) -> bool;
    /// Ends the response.
    fn close(&self);
}

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

/// The Worker's side of a webhook, for the channels' handlers: their agents'
/// settings, the objects a message is queued in or asked about, and the
/// runtime's crypto. One implementation in the Worker (Durable Object stubs,
/// WebCrypto); [`crate::testing::FakeFront`] in tests. With it, a whole
/// webhook (signature, parsing, routing, the answer) runs natively.
#[allow(async_fn_in_trait)]
pub trait Front: Io {
    type Vars: crate::settings::Vars;
    /// The Worker's vars and secrets.
    fn vars(&self) -> &Self::Vars;
    /// `agent`'s settings, loaded once per isolate.
    fn config(&self, agent: &str) -> Result<std::rc::Rc<crate::settings::AgentConfig>, crate::settings::ConfigError>;
    /// Queues a message in its session's object. `Ok(false)`: a repeat.
    async fn enqueue(
        &self,
        key: &crate::inbound::SessionKey,
        inbound: &crate::inbound::Inbound,
    ) -> Result<bool, String>;
    /// A session's brief status (counts and usage).
    async fn session_status(
        &self,
        key: &crate::inbound::SessionKey,
    ) -> Result<crate::protocol::session::SessionStatus, String>;
    /// A call to `agent`'s memory (its Agent object).
    async fn memory(
        &self,
        agent: &str,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError>;
    /// `agent`'s usage ledger.
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, String>;
    /// A sender the settings and this isolate's roster do not know, asked
    /// about at `door.agent`'s door (its Agent object, see `crate::people`).
    async fn door(&self, door: &crate::protocol::people::Door) -> Result<crate::protocol::people::DoorReply, String>;
    /// A tap on one of the agent's buttons (a dreaming proposal, a tool
    /// call waiting for approval), for `tap.agent`'s object: its answer's
    /// status and body.
    async fn tap(&self, tap: &crate::protocol::dreams::Tap) -> Result<(u16, String), String>;
    /// Keeps an attachment that arrived inside a message (an email's) in the
    /// bucket at `key`, for the session to ingest like a download.
    async fn stash(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), String>;
    /// `bytes` as text in the encoding a WHATWG Encoding Standard `label`
    /// names (the runtime's `TextDecoder`: every legacy charset mail uses, at
    /// no upload cost), malformed sequences as U+FFFD; `None` when the
    /// runtime has no decoder for `label`.
    fn decode_text(&self, label: &str, bytes: &[u8]) -> Option<String>;
    /// HMAC-SHA256 of `data` with `key` (the runtime's WebCrypto).
    async fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> Result<[u8; 32], String>;
    /// Ed25519 verification (the runtime's WebCrypto). `Err`: the key is not
    /// a usable public key.
    async fn ed25519_verify(&self, key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> Result<bool, String>;
}

/// Everything a Durable Object gives the runtime, bundled so the runtime's
/// functions take one generic parameter.
#[allow(async_fn_in_trait)]
pub trait Platform {
    type Store: ObjectStore;
    type Http: Http;
    type Sql: Sql;
    type Channel: Channel;
    type Memory: MemoryService;
    fn store(&self) -> &Self::Store;
    fn http(&self) -> &Self::Http;
    fn sql(&self) -> &Self::Sql;
    fn channel(&self) -> &Self::Channel;
    /// The agent's memory (in the Agent object).
    fn memory(&self) -> &Self::Memory;
    fn now_ms(&self) -> i64;
    /// The agent's pinned guardrail versions (kept by its Agent object),
    /// asked once per turn when the agent has a template. Default: none.
    async fn pins(&self) -> Result<crate::protocol::pins::Pins, StorageError> {
        Ok(crate::protocol::pins::Pins::default())
    }
    /// The agent's MCP servers and their tools (from its Agent object, which
    /// caches the listings), asked when a session starts. Default: none.
    async fn mcp_catalog(&self) -> Result<crate::protocol::mcp::McpCatalog, StorageError> {
        Ok(crate::protocol::mcp::McpCatalog::default())
    }
    /// A session's start from its Agent object: the workspace it composed,
    /// its pins and the MCP servers, in one call
    /// ([`crate::protocol::workspace`]). Default: nothing handed over (the
    /// session loads and asks for each itself).
    async fn session_start(
        &self,
        req: &crate::protocol::workspace::SessionStartRequest,
    ) -> Result<crate::protocol::workspace::SessionStartReply, StorageError> {
        let _ = req;
        Ok(Default::default())
    }
    /// A Worker secret or var by name, for the `${NAME}` placeholders of
    /// `mcp.json`. Default: none.
    fn secret(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
    async fn sleep(&self, ms: u64);
    /// A fresh random UUID (v4, lowercase hyphenated).
    fn new_uuid(&self) -> String;
    fn log(&self, level: LogLevel, msg: &str);
    /// The agent's usage ledger and budget (in its Agent object): settles
    /// finished LLM calls and, when asked, reserves room for the next one
    /// ([`crate::protocol::usage`]). Default: no ledger, every call may go.
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, StorageError> {
        Ok(crate::protocol::usage::MeterReply {
            settled: req.settle.len() as u32,
            decision: req
                .reserve
                .as_ref()
                .map(|_| crate::protocol::usage::Decision::Go { reservation: 0, tight: false }),
            ..Default::default()
        })
    }
    /// A call about people to the agent's Agent object (`crate::people`:
    /// the owner's `/approve`, `/revoke`, `/people`, `/link`). Default: none.
    async fn people(
        &self,
        call: &crate::protocol::people::PeopleCall,
    ) -> Result<crate::protocol::people::PeopleReply, StorageError> {
        let _ = call;
        Err(StorageError("no people service here".into()))
    }
    /// A call about a tool call waiting for the owner (`crate::approvals`).
    /// Default: none.
    async fn approvals(
        &self,
        call: &crate::protocol::approvals::ApprovalCall,
    ) -> Result<crate::protocol::approvals::ApprovalState, StorageError> {
        let _ = call;
        Err(StorageError("no approvals service here".into()))
    }
    /// A call to the agent's reminders (kept by its Agent object,
    /// [`crate::protocol::reminders`]). Default: none can be kept here.
    async fn reminders(
        &self,
        call: &crate::protocol::reminders::ReminderCall,
    ) -> Result<crate::protocol::reminders::ReminderReply, StorageError> {
        let _ = call;
        Err(StorageError("no reminders here: they are kept by the Agent object".into()))
    }
    /// Whether scripts can run in a sandbox here (a Worker Loader binding,
    /// `[[worker_loaders]]`): without it `run_code` is not offered.
    fn sandbox_available(&self) -> bool {
        false
    }
    /// Starts `job` in a fresh isolate ([`SandboxRun`]). Default: no sandbox.
    async fn start_sandbox(&self, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
        let _ = job;
        Err(SandboxError("no Worker Loader binding (LOADER)".into()))
    }
    /// Queues a message in another Session object (a peer's delegated
    /// session, `crate::tasks::delegate`) and waits for its outcome. The
    /// turn runs in that object's alarm; this call only waits, and asking
    /// again with the same dedupe key joins the same turn. Default: there
    /// are no other objects.
    async fn ask_session(
        &self,
        req: &crate::protocol::api::ApiTurnRequest,
    ) -> Result<crate::protocol::api::ApiOutcome, StorageError> {
        let _ = req;
        Err(StorageError("no other sessions can be asked here".into()))
    }
    /// Stops the answer the session `key` is writing to `req.request`.
    async fn stop_session(
        &self,
        key: &crate::inbound::SessionKey,
        req: &crate::protocol::api::StopRequest,
    ) -> Result<(), StorageError> {
        let _ = (key, req);
        Ok(())
    }
    /// A call about the agent's background tasks (its Agent object:
    /// `crate::protocol::tasks`). Default: there are none.
    async fn tasks(
        &self,
        req: &crate::protocol::tasks::TaskRequest,
    ) -> Result<crate::protocol::tasks::TaskReply, StorageError> {
        let _ = req;
        Err(StorageError("background tasks are not available here".into()))
    }
}

/// A shared platform is a platform (a host hands its runtime's platform to
/// turns, and tests keep a handle on it to look inside).
impl<P: Platform> Platform for std::rc::Rc<P> {
    type Store = P::Store;
    type Http = P::Http;
    type Sql = P::Sql;
    type Channel = P::Channel;
    type Memory = P::Memory;
    fn store(&self) -> &Self::Store {
        (**self).store()
    }
    fn http(&self) -> &Self::Http {
        (**self).http()
    }
    fn sql(&self) -> &Self::Sql {
        (**self).sql()
    }
    fn channel(&self) -> &Self::Channel {
        (**self).channel()
    }
    fn memory(&self) -> &Self::Memory {
        (**self).memory()
    }
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }
    async fn pins(&self) -> Result<crate::protocol::pins::Pins, StorageError> {
        (**self).pins().await
    }
    async fn mcp_catalog(&self) -> Result<crate::protocol::mcp::McpCatalog, StorageError> {
        (**self).mcp_catalog().await
    }
    fn secret(&self, name: &str) -> Option<String> {
        (**self).secret(name)
    }
    async fn session_start(
        &self,
        req: &crate::protocol::workspace::SessionStartRequest,
    ) -> Result<crate::protocol::workspace::SessionStartReply, StorageError> {
        (**self).session_start(req).await
    }
    async fn sleep(&self, ms: u64) {
        (**self).sleep(ms).await
    }
    fn new_uuid(&self) -> String {
        (**self).new_uuid()
    }
    fn log(&self, level: LogLevel, msg: &str) {
        (**self).log(level, msg)
    }
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, StorageError> {
        (**self).meter(req).await
    }
    async fn people(
        &self,
        call: &crate::protocol::people::PeopleCall,
    ) -> Result<crate::protocol::people::PeopleReply, StorageError> {
        (**self).people(call).await
    }
    async fn approvals(
        &self,
        call: &crate::protocol::approvals::ApprovalCall,
    ) -> Result<crate::protocol::approvals::ApprovalState, StorageError> {
        (**self).approvals(call).await
    }
    async fn reminders(
        &self,
        call: &crate::protocol::reminders::ReminderCall,
    ) -> Result<crate::protocol::reminders::ReminderReply, StorageError> {
        (**self).reminders(call).await
    }
    fn sandbox_available(&self) -> bool {
        (**self).sandbox_available()
    }
    async fn start_sandbox(&self, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
        (**self).start_sandbox(job).await
    }
    async fn ask_session(
        &self,
        req: &crate::protocol::api::ApiTurnRequest,
    ) -> Result<crate::protocol::api::ApiOutcome, StorageError> {
        (**self).ask_session(req).await
    }
    async fn stop_session(
        &self,
        key: &crate::inbound::SessionKey,
        req: &crate::protocol::api::StopRequest,
    ) -> Result<(), StorageError> {
        (**self).stop_session(key, req).await
    }
    async fn tasks(
        &self,
        req: &crate::protocol::tasks::TaskRequest,
    ) -> Result<crate::protocol::tasks::TaskReply, StorageError> {
        (**self).tasks(req).await
    }
}

/// A shared bucket is a bucket.
impl<O: ObjectStore> ObjectStore for std::rc::Rc<O> {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        (**self).get(key).await
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        (**self).head(key).await
    }
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        (**self).put(key, body, opts).await
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        (**self).delete(keys).await
    }
    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        (**self).list(prefix, delimiter, cursor).await
    }
}

/// A script to run in a fresh isolate (`run_code`, see `crate::codemode`):
/// its modules, and the limits the runtime enforces on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxJob {
    /// `(name, source)` of each ES module; the first is the main module,
    /// which exports the entrypoint class `Sandbox` with a `run(bridge)` method.
    pub modules: Vec<(String, String)>,
    /// Wall-clock time the whole run may take (the parent stops waiting then).
    pub wall_ms: u32,
    /// CPU time the isolate may use (`limits.cpuMs`; enforced in production,
    /// not by local workerd, where the script's own step guard holds).
    pub cpu_ms: u32,
}

/// What a running script asks for, or how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxEvent {
    /// The script calls a tool: `args` is the JSON text it passed, unchecked.
    Call { id: u32, name: String, args: String },
    /// The run is over: `Ok` with what the harness returned (a JSON text,
    /// unchecked), or `Err` with why it failed (load error, limit, crash).
    Done(Result<String, String>),
}

/// The sandbox could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox: {0}")]
pub struct SandboxError(pub String);

/// A script running in its isolate. Its tool calls come out of [`next`]
/// (several may be open at once) and are answered with [`answer`]; the last
/// event is [`SandboxEvent::Done`], after which answers are ignored.
///
/// [`next`]: SandboxRun::next
/// [`answer`]: SandboxRun::answer
pub trait SandboxRun {
    fn next(&self) -> futures::future::LocalBoxFuture<'_, SandboxEvent>;
    /// Answers call `id`: the tool's text, and whether it is an error.
    fn answer(&self, id: u32, is_error: bool, text: &str);
}

#[cfg(test)]
mod tests {
    use super::Platform;
    use crate::testing::TestPlatform;
    use std::rc::Rc;

    /// Every method with a default answer reaches the shared platform: a
    /// default would silently drop its MCP servers or its secrets.
    #[test]
    fn a_shared_platform_answers_as_the_platform_it_shares() {
        let inner = TestPlatform::default();
        inner.secrets.borrow_mut().insert("GITHUB_TOKEN".into(), "ghp_x".into());
        inner.mcp_catalog.borrow_mut().config_error = Some("mcp.json: line 1".into());
        let shared = Rc::new(inner);
        assert_eq!(shared.secret("GITHUB_TOKEN").as_deref(), Some("ghp_x"));
        let catalog = futures::executor::block_on(shared.mcp_catalog()).unwrap();
        assert_eq!(catalog.config_error.as_deref(), Some("mcp.json: line 1"));
        assert_eq!(shared.mcp_catalog_calls.get(), 1);
    }
}
