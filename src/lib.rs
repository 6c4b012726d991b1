//! Hearth's Worker: entry points, routes and the Durable Object classes. Thin by design: decisions live in the `durable` and
//! `r2-layout` crates, which are tested natively; this crate adapts them to
//! `worker` types.

mod access;
mod adapters;
mod agent_do;
mod api;
mod auth;
mod channels;
mod console;
mod front;
mod gateway_do;
mod gateway_ensure;
mod http;
mod js;
mod mcp;
mod objects;
mod platform;
mod sandbox;
mod session_do;

pub use agent_do::Agent;
pub use gateway_do::Gateway;
pub use session_do::Session;

use durable::apart::apart;
use serde_json::json;
use worker::{event, Context, Env, Method, Response, Result, ScheduleContext, ScheduledEvent};

#[event(fetch)]
async fn fetch(raw: worker::worker_sys::web_sys::Request, env: Env, ctx: Context) -> Result<Response> {
    let req = adapters::request_without_cf(raw);
    let path = req.path();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (req.method(), segments.as_slice()) {
        (Method::Get, ["health"]) => {
            http::json_response(&json!({"ok": true, "name": "hearth", "version": env!("CARGO_PKG_VERSION")}), 200)
        }
        // Each route runs as a function of its own (`apart`): a request
        // compiles only its route's code.
        (Method::Post, ["telegram", agent]) => {
            let agent = agent.to_string();
            apart(channels::telegram(req, &env, &ctx, &agent)).await
        }
        (_, ["telegram", _]) => Response::error("use POST", 405),
        (Method::Post, ["discord", agent]) => {
            let agent = agent.to_string();
            apart(channels::discord(req, &env, &ctx, &agent)).await
        }
        (_, ["discord", _]) => Response::error("use POST", 405),
        (Method::Post, ["slack", agent]) => {
            let agent = agent.to_string();
            apart(channels::slack(req, &env, &ctx, &agent)).await
        }
        (_, ["slack", _]) => Response::error("use POST", 405),
        (Method::Get | Method::Post, ["whatsapp", agent]) => {
            let agent = agent.to_string();
            apart(channels::whatsapp(req, &env, &ctx, &agent)).await
        }
        (_, ["whatsapp", _]) => Response::error("use GET or POST", 405),
        (_, ["mcp", agent]) => {
            let agent = agent.to_string();
            apart(mcp::handle(req, &env, &agent)).await
        }
        (Method::Post, ["console", "login"]) => apart(console::login(req, &env)).await,
        (Method::Post, ["console", "logout"]) => console::logout(&req),
        (_, ["api", rest @ ..]) => {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            apart(api::route(req, &env, &rest)).await
        }
        _ => Response::error("not found", 404),
    }
}

#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    // Only tells each Agent object that time passed; the objects do the work.
    adapters::log(durable::ports::LogLevel::Info, &format!("cron tick {} at {}", event.cron(), event.schedule()));
    agent_do::fan_out(&env, event.schedule() as i64).await;
}

#[event(email)]
async fn email(message: worker::ForwardableEmailMessage, env: Env, _ctx: Context) -> Result<()> {
    // Mail to an agent's EMAIL_ADDRESS (Cloudflare Email Routing).
    channels::email(message, &env).await;
    Ok(())
}
