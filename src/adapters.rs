//! The core's ports implemented with `worker` types: R2, Durable Object
//! SQLite, `fetch`, the clock. Nothing here decides anything.

use durable::ports::*;
use durable::settings::Vars;
use futures::future::{select, Either};
use std::collections::HashMap;
use std::time::Duration;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use worker::worker_sys::DurableObjectState;
use worker::{AbortController, Bucket, Date, Delay, Env, HttpMetadata, Request, SqlStorage, SqlStorageValue, State};

fn storage_err(e: worker::Error) -> StorageError {
    StorageError(e.to_string())
}

/// The Worker's vars and secrets.
pub struct EnvVars(pub Env);

impl EnvVars {
    /// The vars of `env` (an `Env` handle is cheap to clone).
    pub fn of(env: &Env) -> Self {
        EnvVars(env.clone())
    }
}

thread_local! {
    /// Vars and secrets already read. An isolate's are fixed for its life
    /// (changing one deploys new isolates), and reading one crosses into JS
    /// twice (var, then secret): loading an agent's settings reads about
    /// seventy names, on every webhook and every turn.
    static VAR_CACHE: std::cell::RefCell<HashMap<String, Option<String>>> = std::cell::RefCell::new(HashMap::new());
}

impl Vars for EnvVars {
    fn get(&self, name: &str) -> Option<String> {
        if let Some(hit) = VAR_CACHE.with(|c| c.borrow().get(name).cloned()) {
            return hit;
        }
        let value =
            self.0.var(name).map(|v| v.to_string()).or_else(|_| self.0.secret(name).map(|v| v.to_string())).ok();
        VAR_CACHE.with(|c| c.borrow_mut().insert(name.to_owned(), value.clone()));
        value
    }
}

/// The R2 bucket binding. `fault_put_prefix` is a chaos switch for tests
/// and drills (`HEARTH_FAULT_R2_PUT_PREFIX`): puts under it fail, as a
/// failing R2 would, so "nothing is lost" can be shown in workerd.
pub struct R2 {
    pub bucket: Bucket,
    pub fault_put_prefix: Option<String>,
}

impl R2 {
    pub fn from_env(env: &Env) -> worker::Result<Self> {
        let fault_put_prefix = EnvVars::of(env).get("HEARTH_FAULT_R2_PUT_PREFIX").filter(|p| !p.is_empty());
        Ok(R2 { bucket: env.bucket(durable::protocol::BUCKET_BINDING)?, fault_put_prefix })
    }
}

fn info_of(o: &worker::Object) -> ObjectInfo {
    ObjectInfo { key: o.key(), size: o.size(), etag: o.etag(), uploaded_ms: o.uploaded().as_millis() as i64 }
}

impl ObjectStore for R2 {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        let Some(obj) = self.bucket.get(key).execute().await.map_err(storage_err)? else { return Ok(None) };
        let info = info_of(&obj);
        let content_type = obj.http_metadata().content_type;
        let custom_metadata = obj.custom_metadata().unwrap_or_default().into_iter().collect();
        let body = match obj.body() {
            Some(b) => b.bytes().await.map_err(storage_err)?,
            None => Vec::new(),
        };
        Ok(Some(StoredObject { info, body, content_type, custom_metadata }))
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        Ok(self.bucket.head(key).await.map_err(storage_err)?.as_ref().map(info_of))
    }

    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        if self.fault_put_prefix.as_deref().is_some_and(|p| key.starts_with(p)) {
            return Err(StorageError(format!("injected R2 put failure for {key}")));
        }
        let mut b = self.bucket.put(key, body);
        if let Some(ct) = opts.content_type {
            b = b.http_metadata(HttpMetadata { content_type: Some(ct), ..Default::default() });
        }
        if !opts.custom_metadata.is_empty() {
            b = b.custom_metadata(opts.custom_metadata.into_iter().collect::<HashMap<_, _>>());
        }
        b.execute().await.map_err(storage_err)?;
        Ok(())
    }

    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        // R2 deletes at most 1000 keys per call.
        for chunk in keys.chunks(1000) {
            self.bucket.delete_multiple(chunk.to_vec()).await.map_err(storage_err)?;
        }
        Ok(())
    }

    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        let mut b = self.bucket.list().prefix(prefix);
        if let Some(d) = delimiter {
            b = b.delimiter(d);
        }
        if let Some(c) = cursor {
            b = b.cursor(c);
        }
        let page = b.execute().await.map_err(storage_err)?;
        Ok(ListPage {
            objects: page.objects().iter().map(info_of).collect(),
            prefixes: page.delimited_prefixes(),
            cursor: if page.truncated() { page.cursor() } else { None },
        })
    }
    async fn list_with_metadata(&self, prefix: &str, cursor: Option<&str>) -> Result<MetadataPage, StorageError> {
        let mut b = self.bucket.list().prefix(prefix).include(vec![worker::Include::CustomMetadata]);
        if let Some(c) = cursor {
            b = b.cursor(c);
        }
        let page = b.execute().await.map_err(storage_err)?;
        let objects = page
            .objects()
            .iter()
            .map(|o| (info_of(o), o.custom_metadata().unwrap_or_default().into_iter().collect()))
            .collect();
        Ok(MetadataPage { objects, cursor: if page.truncated() { page.cursor() } else { None } })
    }
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        crate::js::gzip(data).await.map_err(storage_err)
    }

    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GunzipError> {
        crate::js::gunzip(data, max_bytes).await
    }
}

/// A Durable Object's SQLite database. Change sets ([`Sql::exec_atomic`]) go
/// through `storage.transactionSync`, so a failing statement rolls back the
/// ones before it: a session transition, a schedule claim or a memory commit
/// is all or nothing. Clones share what the object knows of its tables
/// ([`SchemaMemo`]): make one per object and clone it.
#[derive(Clone)]
pub struct DoSql {
    state: JsValue,
    sql: SqlStorage,
    schemas: std::rc::Rc<SchemaMemo>,
}

impl DoSql {
    pub fn new(state: &State) -> Self {
        DoSql {
            state: AsRef::<JsValue>::as_ref(state.as_raw()).clone(),
            sql: state.storage().sql(),
            schemas: Default::default(),
        }
    }
}

fn js_error(e: JsValue) -> StorageError {
    StorageError(
        e.dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .or_else(|| e.as_string())
            .unwrap_or_else(|| format!("{e:?}")),
    )
}

impl Sql for DoSql {
    fn schemas(&self) -> Option<&SchemaMemo> {
        Some(&self.schemas)
    }

    fn database_size(&self) -> Option<u64> {
        Some(self.sql.database_size() as u64)
    }

    fn exec(&self, query: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, StorageError> {
        let bindings: Vec<SqlStorageValue> = params
            .iter()
            .map(|p| match p {
                SqlValue::Null => SqlStorageValue::Null,
                SqlValue::Int(i) => SqlStorageValue::Integer(*i),
                SqlValue::Real(f) => SqlStorageValue::Float(*f),
                SqlValue::Text(s) => SqlStorageValue::String(s.clone()),
                SqlValue::Blob(b) => SqlStorageValue::Blob(b.clone()),
            })
            .collect();
        let cursor = self.sql.exec(query, Some(bindings)).map_err(storage_err)?;
        cursor
            .raw()
            .map(|row| {
                row.map_err(storage_err).map(|cols| {
                    cols.into_iter()
                        .map(|v| match v {
                            SqlStorageValue::Null => SqlValue::Null,
                            SqlStorageValue::Boolean(b) => SqlValue::Int(b as i64),
                            SqlStorageValue::Integer(i) => SqlValue::Int(i),
                            SqlStorageValue::Float(f) => SqlValue::Real(f),
                            SqlStorageValue::String(s) => SqlValue::Text(s),
                            SqlStorageValue::Blob(b) => SqlValue::Blob(b),
                        })
                        .collect()
                })
            })
            .collect()
    }

    /// One `exec` of the statements joined (`exec` runs them in order; the
    /// parameters go to the last).
    fn exec_batch(&self, statements: &[&str], last: (&str, &[SqlValue])) -> Result<(), StorageError> {
        let mut script = statements.join(";\n");
        script.push_str(";\n");
        script.push_str(last.0);
        self.exec(&script, last.1).map(|_| ())
    }

    fn exec_atomic(&self, statements: Vec<(String, Vec<SqlValue>)>) -> Result<(), StorageError> {
        let raw = self.state.clone();
        let work = Closure::once_into_js(move || -> Result<(), JsValue> {
            let state = State::from(raw.unchecked_into::<DurableObjectState>());
            let sql = DoSql::new(&state);
            for (query, params) in &statements {
                // Throwing makes transactionSync roll back every statement so far.
                sql.exec(query, params).map_err(|e| JsValue::from(js_sys::Error::new(&e.0)))?;
            }
            Ok(())
        });
        let storage = js_sys::Reflect::get(&self.state, &"storage".into()).map_err(js_error)?;
        let tx = js_sys::Reflect::get(&storage, &"transactionSync".into()).map_err(js_error)?;
        let tx: &js_sys::Function = tx.dyn_ref().ok_or_else(|| StorageError("transactionSync is missing".into()))?;
        tx.call1(&storage, &work).map(|_| ()).map_err(js_error)
    }
}

/// Outgoing `fetch`, with a time-out that aborts the request.
pub struct FetchHttp;

impl Http for FetchHttp {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let net = |e: worker::Error| HttpError::Network(e.to_string());
        let controller = AbortController::default();
        let signal = controller.signal();
        let body = (!req.body.is_empty()).then_some(req.body.as_slice());
        let request = crate::js::request(req.method, &req.url, &req.headers, body, Some(&signal)).map_err(net)?;
        Self::within(controller, req.timeout_ms, async move {
            let resp = crate::js::fetch(&request).await?;
            let body = crate::js::body_bytes(&resp).await?;
            Ok(HttpResponse { status: resp.status(), headers: crate::js::headers_named(&resp, &READ_HEADERS), body })
        })
        .await
    }

    /// Reads at most `max_body_bytes` (the rest is not downloaded) and, when
    /// asked, returns redirects instead of following them.
    async fn send_limited(&self, req: HttpRequest, limits: FetchLimits) -> Result<LimitedResponse, HttpError> {
        let net = |e: worker::Error| HttpError::Network(e.to_string());
        let controller = AbortController::default();
        let signal = controller.signal();
        let body = (!req.body.is_empty()).then_some(req.body.as_slice());
        let mut request = crate::js::request(req.method, &req.url, &req.headers, body, Some(&signal)).map_err(net)?;
        if limits.manual_redirects {
            request = crate::js::with_manual_redirect(&request).map_err(net)?;
        }
        Self::within(controller, req.timeout_ms, async move {
            let resp = crate::js::fetch(&request).await?;
            let (body, truncated) = crate::js::body_prefix(&resp, limits.max_body_bytes).await?;
            let response =
                HttpResponse { status: resp.status(), headers: crate::js::headers_named(&resp, &READ_HEADERS), body };
            Ok(LimitedResponse { response, truncated })
        })
        .await
    }

    async fn open(&self, req: HttpRequest) -> Result<HttpStream, HttpError> {
        FetchHttp::open_stream(req).await
    }
}

impl FetchHttp {
    /// Runs `fetch` (a request's whole exchange) against `timeout_ms`,
    /// aborting the request when the time is up.
    async fn within<T>(
        controller: AbortController,
        timeout_ms: u32,
        fetch: impl std::future::Future<Output = worker::Result<T>>,
    ) -> Result<T, HttpError> {
        let fetch = Box::pin(fetch);
        let timeout = Box::pin(Delay::from(Duration::from_millis(timeout_ms.max(1) as u64)));
        match select(fetch, timeout).await {
            Either::Left((Ok(v), _)) => Ok(v),
            Either::Left((Err(e), _)) => Err(HttpError::Network(e.to_string())),
            Either::Right(_) => {
                controller.abort();
                Err(HttpError::Timeout)
            }
        }
    }
}

impl FetchHttp {
    /// Streamed: the headers within `timeout_ms`, then each piece within
    /// `timeout_ms` of the last (a model that stalls mid-answer is a time-out).
    async fn open_stream(req: HttpRequest) -> Result<HttpStream, HttpError> {
        let net = |e: worker::Error| HttpError::Network(e.to_string());
        let controller = AbortController::default();
        let signal = controller.signal();
        let body = (!req.body.is_empty()).then_some(req.body.as_slice());
        let request = crate::js::request(req.method, &req.url, &req.headers, body, Some(&signal)).map_err(net)?;
        let idle = Duration::from_millis(req.timeout_ms.max(1) as u64);
        let resp = match select(Box::pin(crate::js::fetch(&request)), Box::pin(Delay::from(idle))).await {
            Either::Left((Ok(resp), _)) => resp,
            Either::Left((Err(e), _)) => return Err(net(e)),
            Either::Right(_) => {
                controller.abort();
                return Err(HttpError::Timeout);
            }
        };
        let status = resp.status();
        let headers = crate::js::headers_named(&resp, &READ_HEADERS);
        let Some(reader) = crate::js::BodyReader::of(&resp) else {
            return Ok(HttpStream { status, headers, body: Box::pin(futures::stream::empty()) });
        };
        // One timer per quiet stretch, not one per piece (a model's answer
        // comes in hundreds of pieces): when it fires, the time since the
        // last piece says whether the stream is idle or the timer is set
        // again for the rest.
        let reading = Reading { reader, controller, timer: Box::pin(Delay::from(idle)), last: Date::now().as_millis() };
        let idle_ms = idle.as_millis() as u64;
        let pieces = futures::stream::unfold(Some(reading), move |state| async move {
            let mut st = state?;
            let mut read = Box::pin(st.reader.next());
            let read = loop {
                match select(read, st.timer.as_mut()).await {
                    Either::Left((read, _)) => break Some(read),
                    Either::Right(((), pending)) => {
                        let quiet = Date::now().as_millis().saturating_sub(st.last);
                        if quiet >= idle_ms {
                            break None;
                        }
                        st.timer = Box::pin(Delay::from(Duration::from_millis(idle_ms - quiet)));
                        read = pending;
                    }
                }
            };
            st.last = Date::now().as_millis();
            match read {
                Some(Ok(Some(piece))) => Some((Ok(piece), Some(st))),
                Some(Ok(None)) => None,
                Some(Err(e)) => Some((Err(HttpError::Network(e.to_string())), None)),
                None => {
                    st.controller.abort();
                    Some((Err(HttpError::Timeout), None))
                }
            }
        });
        Ok(HttpStream { status, headers, body: Box::pin(pieces) })
    }
}

/// A streamed body being read: its reader, the request's abort, the timer
/// of the current quiet stretch and when the last piece came (ms).
struct Reading {
    reader: crate::js::BodyReader,
    controller: AbortController,
    timer: std::pin::Pin<Box<Delay>>,
    last: u64,
}

/// A request's body as JSON, decoded in Rust. (`Request::json` decodes it
/// in JS, then walks the object field by field across the boundary.)
pub async fn request_json<T: serde::de::DeserializeOwned>(req: &mut Request) -> Result<T, String> {
    let bytes = req.bytes().await.map_err(|e| e.to_string())?;
    hearth_json::from_slice(&bytes).map_err(|e| e.to_string())
}

/// An incoming request as a `worker::Request`, without reading `request.cf`.
/// The conversion the `worker` crate does reads it, and workerd builds the
/// whole `cf` object (parsed from JSON) for that read: about a tenth of a
/// plain turn's CPU in a profile. Hearth uses nothing in `cf`, so the getter
/// is shadowed by an own `undefined` property first.
pub fn request_without_cf(raw: worker::worker_sys::web_sys::Request) -> Request {
    let descriptor = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&descriptor, &"value".into(), &JsValue::UNDEFINED);
    // Best effort: if the runtime refuses, the conversion reads `cf` as before.
    let _ = js_sys::Reflect::define_property(raw.as_ref(), &"cf".into(), &descriptor);
    Request::from(raw)
}

pub fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

pub async fn sleep(ms: u64) {
    Delay::from(Duration::from_millis(ms)).await
}

/// A random v4 UUID from the runtime's `crypto.randomUUID()`.
pub fn new_uuid() -> String {
    js_sys::Reflect::get(&js_sys::global(), &"crypto".into())
        .ok()
        .and_then(|c| {
            let f = js_sys::Reflect::get(&c, &"randomUUID".into()).ok()?;
            let f: &js_sys::Function = wasm_bindgen::JsCast::dyn_ref(&f)?;
            f.call0(&c).ok()?.as_string()
        })
        .unwrap_or_else(|| format!("{:x}-fallback", now_ms()))
}

pub fn log(level: LogLevel, msg: &str) {
    match level {
        LogLevel::Info => worker::console_log!("{msg}"),
        LogLevel::Warn => worker::console_warn!("{msg}"),
        LogLevel::Error => worker::console_error!("{msg}"),
    }
}
