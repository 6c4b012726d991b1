//! Who is calling Hearth's HTTP surfaces (`/api/...`, `/mcp/{agentId}`):
//! the one place that reads credentials. `ADMIN_TOKEN` is the owner; the
//! keys of `API_TOKENS` are scoped to agents, and owners only when marked
//! so (`durable::settings::api`). The comparison is in constant time
//! (`durable::api::authenticate`).

use crate::adapters::EnvVars;
use durable::api::ApiError;
use durable::settings::api::{parse_api_keys, ApiKey};
use durable::settings::Vars;
use std::rc::Rc;
use worker::{Env, Request, Response, Result};

pub use durable::settings::api::Caller;

/// Why a request is not let in: 401 (no or a wrong token), 503 (no
/// credentials configured: the surfaces are off), 500 (`API_TOKENS` broken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub ApiError);

impl Refused {
    /// `{"error": …}`; a 401 carries a `WWW-Authenticate` challenge.
    pub fn response(&self) -> Result<Response> {
        let resp = Response::from_json(&serde_json::json!({"error": self.0.message}))?.with_status(self.0.status);
        if self.0.status != 401 {
            return Ok(resp);
        }
        let headers = worker::Headers::new();
        headers.set("content-type", "application/json")?;
        headers.set("www-authenticate", "Bearer realm=\"hearth\"")?;
        Ok(resp.with_headers(headers))
    }
}

thread_local! {
    /// `API_TOKENS`, parsed once per isolate (its vars are fixed for its
    /// life). An invalid setting is not kept: every request reports it.
    static KEYS: std::cell::RefCell<Option<Rc<Vec<ApiKey>>>> = const { std::cell::RefCell::new(None) };
}

fn api_keys(vars: &EnvVars) -> std::result::Result<Rc<Vec<ApiKey>>, durable::settings::ConfigError> {
    if let Some(keys) = KEYS.with(|k| k.borrow().clone()) {
        return Ok(keys);
    }
    let keys = Rc::new(parse_api_keys(&vars.get("API_TOKENS").unwrap_or_default())?);
    KEYS.with(|k| *k.borrow_mut() = Some(keys.clone()));
    Ok(keys)
}

/// The caller of `req`, from its `Authorization: Bearer …` header.
pub fn authenticate(req: &Request, env: &Env) -> std::result::Result<Caller, Refused> {
    let vars = EnvVars::of(env);
    let keys = api_keys(&vars).map_err(|e| {
        crate::adapters::log(durable::ports::LogLevel::Error, &e.to_string());
        Refused(ApiError { status: 500, message: format!("configuration error: {e}") })
    })?;
    let header = req.headers().get("authorization").ok().flatten();
    durable::api::authenticate(header.as_deref(), vars.get("ADMIN_TOKEN").as_deref(), &keys).map_err(Refused)
}
