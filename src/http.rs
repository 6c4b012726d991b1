//! Small HTTP helpers shared by the routes: errors mapped to statuses,
//! bounded body reads, JSON responses.

use durable::serving::{Answer, Incoming, OpenStream, Served};
use durable::settings::ConfigError;
use worker::worker_sys::web_sys;
use worker::{Request, Response, Result};

/// Maps a configuration problem to the status a caller should see.
pub fn error_response(e: &ConfigError) -> Result<Response> {
    match e {
        ConfigError::UnknownAgent(..) => Response::error(e.to_string(), 404),
        _ => Response::error(format!("configuration error: {e}"), 500),
    }
}

/// Reads a body, refusing more than `limit` bytes with a 413.
pub async fn read_body_limited(req: &mut Request, limit: usize) -> std::result::Result<Vec<u8>, Result<Response>> {
    if let Ok(Some(len)) = req.headers().get("content-length") {
        if len.parse::<usize>().is_ok_and(|n| n > limit) {
            return Err(too_large(limit));
        }
    }
    match req.bytes().await {
        Ok(b) if b.len() > limit => Err(too_large(limit)),
        Ok(b) => Ok(b),
        Err(e) => Err(Response::error(format!("could not read body: {e}"), 400)),
    }
}

fn too_large(limit: usize) -> Result<Response> {
    Response::error(format!("body too large: the limit is {} KiB", limit.div_ceil(1024)), 413)
}

pub fn json_response(value: &serde_json::Value, status: u16) -> Result<Response> {
    Ok(Response::from_json(value)?.with_status(status))
}

/// Percent-decodes a path segment or query value (`+` stays a plus: callers
/// decoding a query turn it into a space first). Session keys contain `:`,
/// which clients may encode.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of query parameter `name` of a request, decoded. Read from the
/// raw URL string: parsing it with the `url` crate would link the crate (and
/// its Unicode host tables) into the upload for four call sites.
pub fn query(req: &Request, name: &str) -> Option<String> {
    let url = req.inner().url();
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or("");
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(&k.replace('+', " ")) == name).then(|| percent_decode(&v.replace('+', " ")))
    })
}

/// Every query parameter of a request, decoded, in order.
pub fn query_pairs(req: &Request) -> Vec<(String, String)> {
    let url = req.inner().url();
    let Some((_, query)) = url.split_once('?') else { return vec![] };
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(&k.replace('+', " ")), percent_decode(&v.replace('+', " ")))
        })
        .collect()
}

/// A request as the objects' dispatchers read it ([`Incoming`]).
pub async fn incoming(req: &mut Request) -> Result<Incoming> {
    let method = durable::protocol::call::Method::parse(req.method().as_ref());
    let query = query_pairs(req);
    Ok(Incoming { method, path: req.path(), query, body: req.bytes().await? })
}

/// Opens the one event stream a dispatcher may answer with; the response
/// returns its readable side.
#[derive(Default)]
pub struct JsStreams(std::cell::RefCell<Option<web_sys::ReadableStream>>);

impl OpenStream for JsStreams {
    fn open(&self) -> std::result::Result<Box<dyn durable::ports::EventSink>, String> {
        let (stream, sink) = crate::js::event_stream().map_err(|e| e.to_string())?;
        *self.0.borrow_mut() = Some(stream);
        Ok(Box::new(sink))
    }
}

fn headers_of(pairs: &[(String, String)]) -> Result<worker::Headers> {
    let headers = worker::Headers::new();
    for (name, value) in pairs {
        headers.set(name, value)?;
    }
    Ok(headers)
}

/// A dispatcher's answer as a response; a stream's keep-alive loop runs
/// while anyone listens.
pub fn respond(served: Served, streams: JsStreams) -> Result<Response> {
    match served {
        Served::Answer(a) => answer(a),
        Served::Stream { headers, keepalive } => {
            let stream = streams.0.take().ok_or_else(|| worker::Error::RustError("no stream was opened".into()))?;
            if let Some(k) = keepalive {
                wasm_bindgen_futures::spawn_local(async move {
                    loop {
                        crate::adapters::sleep(k.every_ms).await;
                        if !(k.ping)() {
                            break;
                        }
                    }
                });
            }
            Ok(Response::from_body(worker::ResponseBody::Stream(stream))?.with_headers(headers_of(&headers)?))
        }
    }
}

/// An [`Answer`] as a response.
pub fn answer(a: Answer) -> Result<Response> {
    // An empty answer has no body at all (a 204 must not have one).
    let response = if a.body.is_empty() { Response::empty()? } else { Response::from_bytes(a.body)? };
    Ok(response.with_status(a.status).with_headers(headers_of(&a.headers)?))
}
