//! Small HTTP helpers shared by the routes: errors mapped to statuses,
//! bounded body reads, JSON responses.

use durable::settings::ConfigError;
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

/// An object's JSON answer, passed on as it came (status and body).
pub fn forward_json((status, body): (u16, String)) -> Result<Response> {
    let headers = worker::Headers::new();
    headers.set("content-type", "application/json")?;
    Ok(Response::ok(body)?.with_status(status).with_headers(headers))
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
