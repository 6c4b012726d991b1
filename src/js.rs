//! Direct calls into the runtime where the `worker` crate's wrappers cost a
//! turn real CPU. A profile of a plain turn (`npm run profile`) showed them:
//! converting a `web_sys::Response` into a `worker::Response` reads its
//! headers, status, `cf` and body stream, and `Response::bytes` then reads
//! the body chunk by chunk through a stream reader, a promise per chunk.
//! Here a request is built once, sent with the runtime's own `fetch` (or a
//! Durable Object stub's), and its body read with one `arrayBuffer()`.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::Env;

/// A JS error as text.
pub fn js_message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

fn err(e: JsValue) -> worker::Error {
    worker::Error::RustError(js_message(&e))
}

/// A request with `method`, `headers` and an optional body.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    signal: Option<&web_sys::AbortSignal>,
) -> worker::Result<web_sys::Request> {
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if !headers.is_empty() {
        let h = web_sys::Headers::new().map_err(err)?;
        for (k, v) in headers {
            h.set(k, v).map_err(err)?;
        }
        init.set_headers(&h);
    }
    if let Some(body) = body {
        init.set_body(&js_sys::Uint8Array::from(body));
    }
    if let Some(signal) = signal {
        init.set_signal(Some(signal));
    }
    web_sys::Request::new_with_str_and_init(url, &init).map_err(err)
}

/// The runtime's `fetch`.
pub async fn fetch(req: &web_sys::Request) -> worker::Result<web_sys::Response> {
    let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let resp = JsFuture::from(global.fetch_with_request(req)).await.map_err(err)?;
    resp.dyn_into().map_err(err)
}

/// A Durable Object stub's `fetch`: the object named `name` of `binding`.
pub async fn stub_fetch(
    env: &Env,
    binding: &str,
    name: &str,
    req: &web_sys::Request,
) -> worker::Result<web_sys::Response> {
    let call = |target: &JsValue, method: &str, arg: &JsValue| -> worker::Result<JsValue> {
        let f: js_sys::Function = js_sys::Reflect::get(target, &method.into()).map_err(err)?.dyn_into().map_err(err)?;
        f.call1(target, arg).map_err(err)
    };
    let namespace = js_sys::Reflect::get(env.as_ref(), &binding.into()).map_err(err)?;
    if namespace.is_undefined() {
        return Err(worker::Error::RustError(format!("no binding {binding}")));
    }
    let id = call(&namespace, "idFromName", &name.into())?;
    let stub = call(&namespace, "get", &id)?;
    let promise: js_sys::Promise = call(&stub, "fetch", req.as_ref())?.dyn_into().map_err(err)?;
    JsFuture::from(promise).await.map_err(err)?.dyn_into().map_err(err)
}

/// Refuses a delivered email (`message.setReject(reason)`). Awaited when the
/// runtime answers with a promise (Miniflare's local trigger passes the
/// message over RPC, where the call is asynchronous; production's is not).
pub async fn reject_email(message: &worker::ForwardableEmailMessage, reason: &str) {
    let target: &JsValue = message.as_ref();
    // Not `dyn_into`: an RPC stub is callable without being an `instanceof Function`.
    let Ok(f) = js_sys::Reflect::get(target, &"setReject".into()) else { return };
    let f: js_sys::Function = f.unchecked_into();
    if let Ok(answer) = js_sys::Reflect::apply(&f, target, &js_sys::Array::of1(&reason.into())) {
        // An RPC answer is a thenable, not always a `Promise`: resolve it either way.
        let _ = JsFuture::from(js_sys::Promise::resolve(&answer)).await;
    }
}

/// A stream's whole content (an email's raw message), read through a
/// `Response` with one `arrayBuffer()` call.
pub async fn stream_bytes(stream: &web_sys::ReadableStream) -> worker::Result<Vec<u8>> {
    let resp = web_sys::Response::new_with_opt_readable_stream(Some(stream)).map_err(err)?;
    body_bytes(&resp).await
}

/// A response's whole body, with one `arrayBuffer()` call.
pub async fn body_bytes(resp: &web_sys::Response) -> worker::Result<Vec<u8>> {
    let buffer = JsFuture::from(resp.array_buffer().map_err(err)?).await.map_err(err)?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// The headers of a response, names lowercased. Two calls into the runtime
/// (`Object.fromEntries`, `JSON.stringify`) and one string, instead of an
/// iterator step, an array and two strings per header: every LLM call and
/// chat send reads them, and the crossings cost more than parsing the JSON.
pub fn headers(resp: &web_sys::Response) -> Vec<(String, String)> {
    let json = js_sys::Object::from_entries(resp.headers().as_ref())
        .and_then(|o| js_sys::JSON::stringify(&o))
        .ok()
        .and_then(|s| s.as_string());
    let Some(Ok(serde_json::Value::Object(map))) = json.map(|j| hearth_json::from_str::<serde_json::Value>(&j)) else {
        return Vec::new();
    };
    map.into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(v) => Some((k.to_ascii_lowercase(), v)),
            _ => None,
        })
        .collect()
}

/// The headers of a response among `names` (lowercase): one lookup each.
pub fn headers_named(resp: &web_sys::Response, names: &[&str]) -> Vec<(String, String)> {
    let headers = resp.headers();
    names.iter().filter_map(|n| Some(((*n).to_owned(), headers.get(n).ok().flatten()?))).collect()
}

/// `req` again, with redirects left to the caller (`redirect: "manual"`):
/// a 3xx comes back as it is, so each hop can be checked before it is taken.
pub fn with_manual_redirect(req: &web_sys::Request) -> worker::Result<web_sys::Request> {
    let init = web_sys::RequestInit::new();
    init.set_redirect(web_sys::RequestRedirect::Manual);
    web_sys::Request::new_with_request_and_init(req, &init).map_err(err)
}

/// At most `max` bytes of a response's body, read chunk by chunk; the rest
/// is never downloaded (the stream is cancelled). `true`: the body was longer.
pub async fn body_prefix(resp: &web_sys::Response, max: u64) -> worker::Result<(Vec<u8>, bool)> {
    // A body whose announced length fits is read whole, with one call.
    let announced = resp.headers().get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n <= max) {
        let mut body = body_bytes(resp).await?;
        let truncated = body.len() as u64 > max;
        body.truncate(max as usize);
        return Ok((body, truncated));
    }
    let Some(stream) = resp.body() else { return Ok((Vec::new(), false)) };
    let method = |target: &JsValue, name: &str| -> worker::Result<JsValue> {
        let f: js_sys::Function = js_sys::Reflect::get(target, &name.into()).map_err(err)?.dyn_into().map_err(err)?;
        f.call0(target).map_err(err)
    };
    let reader = method(stream.as_ref(), "getReader")?;
    let mut out = Vec::new();
    loop {
        let promise: js_sys::Promise = method(&reader, "read")?.dyn_into().map_err(err)?;
        let chunk = JsFuture::from(promise).await.map_err(err)?;
        if js_sys::Reflect::get(&chunk, &"done".into()).map_err(err)?.as_bool().unwrap_or(true) {
            return Ok((out, false));
        }
        let value: js_sys::Uint8Array =
            js_sys::Reflect::get(&chunk, &"value".into()).map_err(err)?.dyn_into().map_err(err)?;
        let room = max.saturating_sub(out.len() as u64);
        if u64::from(value.length()) > room {
            out.extend(value.subarray(0, room as u32).to_vec());
            // Best effort: stop the download.
            let _ = method(&reader, "cancel");
            return Ok((out, true));
        }
        out.extend(value.to_vec());
    }
}

/// A response body's reader, for bodies read as they arrive (streamed LLM
/// calls only: each piece costs a promise and a copy, where
/// [`body_bytes`] reads a whole body in one call).
pub struct BodyReader(web_sys::ReadableStreamDefaultReader);

impl BodyReader {
    /// The reader of `resp`'s body (`None`: no body).
    pub fn of(resp: &web_sys::Response) -> Option<BodyReader> {
        let body = resp.body()?;
        Some(BodyReader(body.get_reader().unchecked_into()))
    }

    /// The next piece; `None` at the end.
    pub async fn next(&self) -> worker::Result<Option<Vec<u8>>> {
        let result = JsFuture::from(self.0.read()).await.map_err(err)?;
        let done = js_sys::Reflect::get(&result, &"done".into()).map_err(err)?;
        if done.as_bool() == Some(true) {
            return Ok(None);
        }
        let value = js_sys::Reflect::get(&result, &"value".into()).map_err(err)?;
        Ok(Some(js_sys::Uint8Array::new(&value).to_vec()))
    }
}

impl Drop for BodyReader {
    /// A body left unread (the answer was complete, a time-out) is cancelled,
    /// so its connection is let go.
    fn drop(&mut self) {
        let _ = self.0.cancel();
    }
}

/// A response body written as events happen: a `ReadableStream` whose
/// controller is kept, so each write is one synchronous `enqueue` (no
/// promise per write). Durable Objects share one I/O context across
/// requests, so the alarm's turn writes to the stream a request returned.
pub struct JsSink {
    controller: JsValue,
    enqueue: js_sys::Function,
    close: js_sys::Function,
    /// The reader cancelled (the client went away).
    cancelled: std::rc::Rc<std::cell::Cell<bool>>,
    closed: std::cell::Cell<bool>,
    /// Kept alive while the stream may still call it.
    _on_cancel: wasm_bindgen::closure::Closure<dyn FnMut(JsValue)>,
}

/// A stream to return as a response body, and the sink that writes it.
pub fn event_stream() -> worker::Result<(web_sys::ReadableStream, JsSink)> {
    let slot: std::rc::Rc<std::cell::RefCell<Option<JsValue>>> = Default::default();
    let cancelled: std::rc::Rc<std::cell::Cell<bool>> = Default::default();
    let start = {
        let slot = slot.clone();
        wasm_bindgen::closure::Closure::once_into_js(move |controller: JsValue| {
            *slot.borrow_mut() = Some(controller);
        })
    };
    let on_cancel = {
        let cancelled = cancelled.clone();
        wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |_reason: JsValue| cancelled.set(true))
    };
    let source = js_sys::Object::new();
    js_sys::Reflect::set(&source, &"start".into(), &start).map_err(err)?;
    js_sys::Reflect::set(&source, &"cancel".into(), on_cancel.as_ref()).map_err(err)?;
    let stream = web_sys::ReadableStream::new_with_underlying_source(&source).map_err(err)?;
    // `start` runs inside the constructor.
    let controller = slot.borrow_mut().take().ok_or_else(|| worker::Error::RustError("stream did not start".into()))?;
    let method = |name: &str| -> worker::Result<js_sys::Function> {
        js_sys::Reflect::get(&controller, &name.into()).map_err(err)?.dyn_into().map_err(err)
    };
    let (enqueue, close) = (method("enqueue")?, method("close")?);
    let sink = JsSink { controller, enqueue, close, cancelled, closed: Default::default(), _on_cancel: on_cancel };
    Ok((stream, sink))
}

impl durable::ports::EventSink for JsSink {
    fn send(&self, bytes: &[u8]) -> bool {
        if self.cancelled.get() || self.closed.get() {
            return false;
        }
        let chunk = js_sys::Uint8Array::from(bytes);
        let ok = self.enqueue.call1(&self.controller, &chunk).is_ok();
        if !ok {
            self.closed.set(true);
        }
        ok
    }

    fn close(&self) {
        if !self.closed.replace(true) && !self.cancelled.get() {
            let _ = self.close.call0(&self.controller);
        }
    }
}

impl Drop for JsSink {
    /// Closed before its `cancel` callback goes, so the stream never calls it.
    fn drop(&mut self) {
        durable::ports::EventSink::close(self);
    }
}

/// Calls `target.method(arg)`.
fn call1(target: &JsValue, method: &str, arg: &JsValue) -> worker::Result<JsValue> {
    let f: js_sys::Function = js_sys::Reflect::get(target, &method.into()).map_err(err)?.dyn_into().map_err(err)?;
    f.call1(target, arg).map_err(err)
}

/// `data` piped through the runtime's `CompressionStream("gzip")` or
/// `DecompressionStream("gzip")`: archives are gzipped by the runtime, so the
/// upload carries no deflate code. A decompression stops past `max_bytes`.
async fn gzip_stream(data: &[u8], decompress: bool, max_bytes: usize) -> Result<Vec<u8>, durable::ports::GunzipError> {
    use durable::ports::GunzipError;
    let invalid = |e: JsValue| GunzipError::Invalid(js_message(&e));
    let ctor_name = if decompress { "DecompressionStream" } else { "CompressionStream" };
    let ctor: js_sys::Function =
        js_sys::Reflect::get(&js_sys::global(), &ctor_name.into()).map_err(invalid)?.dyn_into().map_err(invalid)?;
    let transform = js_sys::Reflect::construct(&ctor, &js_sys::Array::of1(&"gzip".into())).map_err(invalid)?;
    let input = web_sys::Response::new_with_opt_u8_array(Some(&mut data.to_vec())).map_err(invalid)?;
    let Some(body) = input.body() else { return Ok(Vec::new()) };
    let piped = call1(body.as_ref(), "pipeThrough", &transform).map_err(|e| GunzipError::Invalid(e.to_string()))?;
    let reader = call1(&piped, "getReader", &JsValue::UNDEFINED).map_err(|e| GunzipError::Invalid(e.to_string()))?;
    let mut out = Vec::new();
    loop {
        let step = call1(&reader, "read", &JsValue::UNDEFINED).map_err(|e| GunzipError::Invalid(e.to_string()))?;
        let step = JsFuture::from(js_sys::Promise::from(step)).await.map_err(invalid)?;
        if js_sys::Reflect::get(&step, &"done".into()).map_err(invalid)?.as_bool().unwrap_or(true) {
            return Ok(out);
        }
        let chunk = js_sys::Uint8Array::new(&js_sys::Reflect::get(&step, &"value".into()).map_err(invalid)?);
        if out.len() + chunk.length() as usize > max_bytes {
            let _ = call1(&reader, "cancel", &JsValue::UNDEFINED);
            return Err(GunzipError::TooLarge(max_bytes));
        }
        let at = out.len();
        out.resize(at + chunk.length() as usize, 0);
        chunk.copy_to(&mut out[at..]);
    }
}

/// Gzip by the runtime.
pub async fn gzip(data: &[u8]) -> worker::Result<Vec<u8>> {
    gzip_stream(data, false, usize::MAX).await.map_err(|e| worker::Error::RustError(e.to_string()))
}

/// Gunzip by the runtime, refusing more than `max_bytes` uncompressed.
pub async fn gunzip(data: &[u8], max_bytes: usize) -> Result<Vec<u8>, durable::ports::GunzipError> {
    gzip_stream(data, true, max_bytes).await
}

/// `crypto.subtle`'s `method(...args)`, awaited.
async fn subtle(method: &str, args: &js_sys::Array) -> Result<JsValue, JsValue> {
    let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())?;
    let subtle = js_sys::Reflect::get(&crypto, &"subtle".into())?;
    let f: js_sys::Function = js_sys::Reflect::get(&subtle, &method.into())?.dyn_into()?;
    let promise: js_sys::Promise = f.apply(&subtle, args)?.dyn_into()?;
    JsFuture::from(promise).await
}

/// Ed25519 by the runtime's WebCrypto (`crypto.subtle`): `Err` when the
/// runtime refuses the key, `Ok(false)` when the signature does not match.
/// Replaces a Rust Ed25519 (curve arithmetic and SHA-512, ~12 KiB of the
/// upload gzipped); the native tests use `ed25519-dalek`.
pub async fn ed25519_verify(key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> Result<bool, String> {
    let algorithm = js_sys::Object::new();
    js_sys::Reflect::set(&algorithm, &"name".into(), &"Ed25519".into()).map_err(|e| js_message(&e))?;
    let import_args = js_sys::Array::of5(
        &"raw".into(),
        &js_sys::Uint8Array::from(&key[..]),
        &algorithm,
        &JsValue::FALSE,
        &js_sys::Array::of1(&"verify".into()),
    );
    let crypto_key = subtle("importKey", &import_args).await.map_err(|e| js_message(&e))?;
    let verify_args = js_sys::Array::of4(
        &algorithm,
        &crypto_key,
        &js_sys::Uint8Array::from(&signature[..]),
        &js_sys::Uint8Array::from(message),
    );
    // A signature the runtime cannot even read does not match.
    let verdict = subtle("verify", &verify_args).await.unwrap_or(JsValue::FALSE);
    Ok(verdict.as_bool() == Some(true))
}

/// HMAC-SHA256 by the runtime's WebCrypto (Slack's and WhatsApp's request
/// signatures): no hash code in the upload; the native tests use `sha2`.
pub async fn hmac_sha256(key: &[u8], data: &[u8]) -> Result<[u8; 32], String> {
    let algorithm = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&algorithm, &k.into(), v).map_err(|e| js_message(&e));
    set("name", &"HMAC".into())?;
    set("hash", &"SHA-256".into())?;
    let import_args = js_sys::Array::of5(
        &"raw".into(),
        &js_sys::Uint8Array::from(key),
        &algorithm,
        &JsValue::FALSE,
        &js_sys::Array::of1(&"sign".into()),
    );
    let crypto_key = subtle("importKey", &import_args).await.map_err(|e| js_message(&e))?;
    let sign_args = js_sys::Array::of3(&"HMAC".into(), &crypto_key, &js_sys::Uint8Array::from(data));
    let mac = subtle("sign", &sign_args).await.map_err(|e| js_message(&e))?;
    js_sys::Uint8Array::new(&mac).to_vec().try_into().map_err(|_| "HMAC-SHA256 gave no 32 bytes".to_owned())
}

/// Sends a raw message through the `SEND_EMAIL` binding (`send_email` in
/// wrangler.toml): `new EmailMessage(from, to, raw)` from `cloudflare:email`.
pub async fn send_email(env: &Env, from: &str, to: &str, raw: &[u8]) -> Result<(), durable::ports::MailError> {
    use durable::ports::MailError;
    let binding = js_sys::Reflect::get(env.as_ref(), &durable::protocol::SEND_EMAIL_BINDING.into())
        .ok()
        .filter(|b| !b.is_undefined())
        .ok_or(MailError::NoBinding)?;
    let binding: worker::SendEmail = binding.unchecked_into();
    let raw = String::from_utf8_lossy(raw);
    let message = worker::EmailMessage::new(from, to, &raw).map_err(|e| MailError::Refused(js_message(&e)))?;
    binding.send(&message).await.map(|_| ()).map_err(|e| MailError::Refused(js_message(&e)))
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// The runtime's `TextDecoder` (WHATWG Encoding Standard).
    #[wasm_bindgen(js_name = TextDecoder)]
    type JsTextDecoder;
    #[wasm_bindgen(catch, constructor, js_class = TextDecoder)]
    fn new(label: &str) -> Result<JsTextDecoder, JsValue>;
    #[wasm_bindgen(catch, method, js_class = TextDecoder)]
    fn decode(this: &JsTextDecoder, input: &[u8]) -> Result<String, JsValue>;
}

/// `bytes` in the encoding a WHATWG `label` names, by the runtime's own
/// `TextDecoder` (no decoder tables in the upload); `None` when it has none
/// for the label (`new TextDecoder` throws a RangeError).
pub fn decode_text(label: &str, bytes: &[u8]) -> Option<String> {
    JsTextDecoder::new(label).ok()?.decode(bytes).ok()
}
