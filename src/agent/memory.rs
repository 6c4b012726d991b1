//! The agent's BM25 memory, hosted in the Agent object (memory issue).

use super::Agent;
use worker::{Request, Response, Result};

/// In-object state of the memory feature (loaded stores, caches).
#[derive(Default)]
pub struct MemoryHost {}

pub async fn handle(_agent: &Agent, _req: Request) -> Result<Response> {
    Response::error("memory is not available yet", 404)
}
