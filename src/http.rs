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
