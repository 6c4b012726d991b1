//! The web console's login and logout (`/console/login`, `/console/logout`).
//! The pages themselves are static assets (`console/` built into
//! `build/console/`, wrangler's `[assets]`), served before the Worker runs;
//! only these two POSTs reach it. The decisions are in `durable::console`.

use crate::adapters::{now_ms, EnvVars};
use crate::api::json_error;
use durable::console;
use durable::settings::Vars;
use worker::{Env, Request, Response, Result};

/// Largest login body read.
const MAX_LOGIN_BYTES: usize = 4096;

fn with_cookie(resp: Response, cookie: &str) -> Result<Response> {
    let headers = worker::Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set("set-cookie", cookie)?;
    headers.set("cache-control", "no-store")?;
    Ok(resp.with_headers(headers))
}

/// The same-origin check of every console POST (login too: a cross-site page
/// must not log a browser in either).
fn same_origin(req: &Request) -> std::result::Result<(), String> {
    let header = |name: &str| req.headers().get(name).ok().flatten();
    console::check_write(
        header("origin").as_deref(),
        header(console::CONSOLE_HEADER).as_deref(),
        &req.inner().url(),
        header("host").as_deref(),
    )
}

/// `POST /console/login` `{"token": ADMIN_TOKEN}` → 200 and the cookie; a
/// wrong token 401, no `ADMIN_TOKEN` configured 503.
pub async fn login(mut req: Request, env: &Env) -> Result<Response> {
    if let Err(why) = same_origin(&req) {
        return json_error(403, &why);
    }
    let Some(admin) = EnvVars::of(env).get("ADMIN_TOKEN").filter(|t| !t.is_empty()) else {
        return json_error(503, "ADMIN_TOKEN is not set: the console is disabled (set it as a secret)");
    };
    let body = match crate::http::read_body_limited(&mut req, MAX_LOGIN_BYTES).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let token = match hearth_json::from_slice::<serde_json::Value>(&body) {
        Ok(v) => v.get("token").and_then(|t| t.as_str()).map(str::to_owned),
        Err(_) => None,
    };
    let Some(token) = token else {
        return json_error(400, "send {\"token\": \"<ADMIN_TOKEN>\"} as JSON");
    };
    // The same constant-time comparison as the bearer token.
    if durable::api::authenticate(Some(&format!("Bearer {token}")), Some(&admin), &[]).is_err() {
        return json_error(401, "wrong token (the console takes ADMIN_TOKEN)");
    }
    let value = console::session_value(&admin, now_ms() / 1000);
    let resp = Response::from_json(&serde_json::json!({"ok": true, "expiresIn": console::SESSION_SECONDS}))?;
    with_cookie(resp, &console::set_cookie(Some(&value)))
}

/// `POST /console/logout`: clears the cookie.
pub fn logout(req: &Request) -> Result<Response> {
    if let Err(why) = same_origin(req) {
        return json_error(403, &why);
    }
    with_cookie(Response::from_json(&serde_json::json!({"ok": true}))?, &console::set_cookie(None))
}
