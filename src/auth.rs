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

/// The caller of `req`, from its `Authorization: Bearer …` header, else the
/// web console's login cookie (the owner; a write with the cookie must pass
/// the console's CSRF check, `durable::console::check_write`).
pub fn authenticate(req: &Request, env: &Env) -> std::result::Result<Caller, Refused> {
    let vars = EnvVars::of(env);
    let keys = api_keys(&vars).map_err(|e| {
        crate::adapters::log(durable::ports::LogLevel::Error, &e.to_string());
        Refused(ApiError { status: 500, message: format!("configuration error: {e}") })
    })?;
    let header = req.headers().get("authorization").ok().flatten();
    let admin = vars.get("ADMIN_TOKEN");
    if header.is_none() {
        if let Some(caller) = console_caller(req, admin.as_deref())? {
            return Ok(caller);
        }
    }
    durable::api::authenticate(header.as_deref(), admin.as_deref(), &keys).map_err(Refused)
}

/// The owner, when `req` carries a valid console cookie (and, for anything
/// but a read, passes the CSRF check); `None` without a cookie.
fn console_caller(req: &Request, admin: Option<&str>) -> std::result::Result<Option<Caller>, Refused> {
    use durable::console;
    let header = |name: &str| req.headers().get(name).ok().flatten();
    let Some(cookies) = header("cookie") else { return Ok(None) };
    let Some(value) = console::cookie(&cookies, console::COOKIE_NAME) else { return Ok(None) };
    let now = crate::adapters::now_ms() / 1000;
    if !console::session_valid(value, admin.unwrap_or(""), now) {
        let message = "the console session has expired or ADMIN_TOKEN changed: log in again".to_owned();
        return Err(Refused(ApiError { status: 401, message }));
    }
    if !matches!(req.method(), worker::Method::Get | worker::Method::Head) {
        let url = req.inner().url();
        let checked = console::check_write(
            header("origin").as_deref(),
            header(console::CONSOLE_HEADER).as_deref(),
            &url,
            header("host").as_deref(),
        );
        if let Err(message) = checked {
            return Err(Refused(ApiError { status: 403, message }));
        }
    }
    Ok(Some(Caller::Admin))
}
