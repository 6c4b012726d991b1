//! Who is calling Hearth's HTTP surfaces (`/api/...`, `/mcp/{agentId}`):
//! the one place that reads credentials. Today that is the owner's
//! `ADMIN_TOKEN` as a bearer token; scoped API keys for other callers belong
//! here too, as more kinds of [`Caller`].

use crate::adapters::EnvVars;
use crate::telegram::secrets_match;
use durable::settings::Vars;
use worker::{Env, Request, Response, Result};

/// An authenticated caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// The owner's credentials: everything, the main session included.
    pub owner: bool,
}

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No `ADMIN_TOKEN` is configured: the surface is off.
    Disabled,
    /// No bearer token, or a wrong one.
    Unauthorized,
}

impl Refused {
    /// 503 (off) or 401 with a `WWW-Authenticate` challenge.
    pub fn response(self) -> Result<Response> {
        match self {
            Refused::Disabled => {
                Response::error("ADMIN_TOKEN is not set: the API and the MCP server are disabled", 503)
            }
            Refused::Unauthorized => {
                let headers = worker::Headers::new();
                headers.set("www-authenticate", "Bearer realm=\"hearth\"")?;
                Ok(Response::error("missing or wrong bearer token", 401)?.with_headers(headers))
            }
        }
    }
}

/// The caller of `req`, from its `Authorization: Bearer …` header
/// (compared in constant time).
pub fn authenticate(req: &Request, env: &Env) -> std::result::Result<Caller, Refused> {
    let Some(expected) = EnvVars::of(env).get("ADMIN_TOKEN").filter(|t| !t.is_empty()) else {
        return Err(Refused::Disabled);
    };
    let given = req.headers().get("authorization").ok().flatten().unwrap_or_default();
    let token = given.strip_prefix("Bearer ").unwrap_or("");
    if secrets_match(token.as_bytes(), expected.as_bytes()) {
        Ok(Caller { owner: true })
    } else {
        Err(Refused::Unauthorized)
    }
}
