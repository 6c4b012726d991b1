//! Heartbeats and scheduled jobs, driven by the Agent object's alarm
//! (heartbeat issue).

use super::Agent;
use worker::{Request, Response, Result};

/// In-object state of the schedule feature.
#[derive(Default)]
pub struct ScheduleHost {}

pub async fn handle(_agent: &Agent, _req: Request) -> Result<Response> {
    Response::error("schedule is not available yet", 404)
}

pub async fn alarm(_agent: &Agent) -> Result<Response> {
    super::memory::maintenance(_agent).await;
    Response::ok("nothing scheduled")
}
