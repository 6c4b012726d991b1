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
            return Err(Response::error("body too large", 413));
        }
    }
    match req.bytes().await {
        Ok(b) if b.len() > limit => Err(Response::error("body too large", 413)),
        Ok(b) => Ok(b),
        Err(e) => Err(Response::error(format!("could not read body: {e}"), 400)),
    }
}

pub fn json_response(value: &serde_json::Value, status: u16) -> Result<Response> {
    Ok(Response::from_json(value)?.with_status(status))
}

/// Calls a Durable Object by name with an optional JSON body; returns the
/// status and the JSON answer (`Null` when the body is not JSON).
pub async fn call_object(
    env: &worker::Env,
    binding: &str,
    name: &str,
    method: worker::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<(u16, serde_json::Value)> {
    let stub = env.durable_object(binding)?.id_from_name(name)?.get_stub()?;
    let mut init = worker::RequestInit::new();
    init.with_method(method);
    if let Some(b) = body {
        init.with_body(Some(wasm_bindgen::JsValue::from_str(&b.to_string())));
    }
    let mut resp = stub.fetch_with_request(Request::new_with_init(&format!("https://object{path}"), &init)?).await?;
    let status = resp.status_code();
    let text = resp.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))))
}
