//! The HTTP API's routes that only ask the objects (people, approvals,
//! reminders, tasks, usage, sessions, memory, the schedule, MCP and pins
//! views), answered without the platform: the Worker reads the request,
//! [`crate::api::routes`] decides the route and the caller's right to it,
//! and [`serve`] answers it through the [`ApiFront`] port. Refusals are one
//! shape, `{"error": …}` ([`ApiError::body`]).
//!
//! What still runs in the Worker: the two streams (a turn's `/stream`, the
//! notifications), see `src/api.rs`.

mod archives;
mod front;
mod history;
mod objects;
mod threads;
mod workspace;

pub use front::{refused, ApiFront};

use crate::api::routes::Route;
use crate::channels::webhook::WebRequest;
use crate::serving::Answer as WebReply;
use crate::settings::api::Caller;

/// Whether [`serve`] answers `route` (the Worker reads the body first).
pub fn serves(route: &Route<'_>) -> bool {
    matches!(
        route,
        Route::Threads { .. }
            | Route::CreateThread { .. }
            | Route::Stop { .. }
            | Route::History { .. }
            | Route::AgentWorkspace { .. }
            | Route::TemplateWorkspace { .. }
            | Route::DefaultsWorkspace { .. }
            | Route::Sessions { .. }
            | Route::Archive { .. }
    ) || objects::serves(route)
}

/// The most of a body the Worker reads for `route` (413 past it).
pub fn body_limit(route: &Route<'_>) -> usize {
    match route {
        Route::History { .. } => history::MAX_FILE_BYTES,
        Route::AgentWorkspace { .. } | Route::TemplateWorkspace { .. } | Route::DefaultsWorkspace { .. } => {
            workspace::MAX_FILE_BYTES
        }
        _ => crate::api::MAX_BODY_BYTES,
    }
}

/// Answers `route` if it is one of these; `None`: the Worker's.
pub async fn serve<F: ApiFront>(front: &F, caller: &Caller, route: &Route<'_>, req: &WebRequest) -> Option<WebReply> {
    match *route {
        Route::Threads { agent } => Some(threads::list(front, agent, caller).await),
        Route::CreateThread { agent } => Some(threads::create(front, req, agent, caller).await),
        Route::Stop { agent, thread } => Some(threads::stop(front, req, agent, caller, thread).await),
        Route::History { agent, rest } => Some(history::serve(front, req, agent, rest).await),
        Route::AgentWorkspace { agent, rest } => Some(workspace::agent(front, req, agent, rest).await),
        Route::TemplateWorkspace { template, rest } => Some(workspace::shared(front, req, Some(template), rest).await),
        Route::DefaultsWorkspace { rest } => Some(workspace::shared(front, req, None, rest).await),
        Route::Sessions { agent } => Some(archives::list(front, agent).await),
        Route::Archive { agent, id } => Some(archives::read(front, agent, id).await),
        _ => objects::serve(front, route, req).await,
    }
}

#[cfg(test)]
mod tests;
