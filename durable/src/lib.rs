//! The agent runtime that runs inside Hearth's Durable Objects.
//!
//! Why a separate crate: everything here can be decided without Cloudflare, so
//! it is plain Rust that `cargo test` runs natively with in-memory doubles. The
//! Worker (`src/` at the repo root) implements the [`ports`] with `worker`
//! types and stays thin glue. WASM is single-threaded, so the ports are plain
//! async traits without `Send`.
//!
//! Map of the crate:
//! - [`ports`]: what the runtime needs from the world (R2, SQLite, HTTP, a
//!   channel to reply on, a clock).
//! - [`config`]: the agent's settings, read from the Worker's vars/secrets.
//! - [`routing`]: who may talk to the agent and which session a message joins.
//! - [`session`]: the session's persistent queue and history, and the turn loop.
//! - [`prompt`]: the workspace loaded from R2 and assembled into a system prompt.
//! - [`llm`]: Anthropic Messages and OpenAI chat-completions encodings, retries.
//! - [`tools`]: the tools the agent can call.
//! - [`memory`]: the BM25 memory (crate `hearth-memory`) as the Agent object hosts it.
//! - [`media`]: attachments stored in R2, hydrated into LLM calls, deleted on reset.
//! - [`overlay`]: workspace layers (agent → template → defaults), placeholders, pinned guardrails.

pub mod agent;
pub mod clock;
pub mod settings;
pub mod text;
pub mod toolkit;

pub mod inbound;
pub mod llm;
pub mod media;
pub mod memory;
pub mod ports;
pub mod prompt;
pub mod protocol;
pub mod retry;
pub mod routing;
pub mod scheduled;
pub mod session;
pub mod storage;
pub mod workspace;

pub mod tools;

#[cfg(test)]
pub mod testing;
