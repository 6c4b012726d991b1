//! The agent runtime that runs inside Hearth's Durable Objects.
//!
//! Why a separate crate: everything here can be decided without Cloudflare, so
//! it is plain Rust that `cargo test` runs natively with in-memory doubles. The
//! Worker (`src/` at the repo root) implements the [`ports`] with `worker`
//! types, and its Durable Object classes are thin wrappers over the hosts
//! here (`struct Session(SessionHost<_>)`, `struct Agent(AgentHost<_>)`).
//! WASM is single-threaded, so the ports are plain async traits without `Send`.
//!
//! The crate has floors; a module imports only from its own floor or below.
//! `tests/architecture.rs` holds the table of floors and fails the build's
//! tests when an import runs back up, or when one platform's folder of
//! [`channels`] reaches into another's.
//!
//! **Ground floor**: small shared things every feature may use.
//! - [`ports`]: what the runtime needs from the world (R2, SQLite, HTTP, a
//!   channel to reply on, the agent's memory, a clock).
//! - [`settings`]: the agent's settings, read from the Worker's vars/secrets.
//! - [`inbound`]: message types, session keys, reply targets.
//! - [`protocol`]: the typed requests and replies objects send each other.
//! - [`text`], [`clock`], [`retry`], [`storage`], [`toolkit`], [`order`]: text
//!   helpers, local time, backoff, listing/row helpers (and tables set up
//!   once per object), tool specs and outcomes, the one sort the crate
//!   compiles; [`apart`]: code compiled only when it runs.
//!
//! **Features**: each one job, none importing another feature above it.
//! - [`llm`]: Anthropic Messages and OpenAI chat-completions encodings, retries,
//!   provider-native blocks (server-side web search) kept for replay.
//! - [`delivery`]: replies cut for their channel, kept in an outbox and
//!   retried in order until delivered or given up (and reported).
//! - [`workspace`]: the workspace loaded from R2 through its overlay layers
//!   (agent → template → defaults), placeholders, pins, skills.
//! - [`prompt`]: the workspace rendered into a system prompt.
//! - [`tools`]: the workspace tools; [`memory`]: the BM25 memory, its host
//!   and its tools; [`media`]: attachments ingested, cached, hydrated (its
//!   notices go through [`delivery`]).
//! - [`routing`]: who may talk to the agent and which session a message joins.
//! - [`people`]: who the owner let in from the chat (pairing codes, the
//!   claim, linked accounts), kept by the Agent object; [`approvals`]: tool
//!   calls that wait for the owner's yes.
//! - [`channels`]: the chat platforms, one folder each (wire types, signature
//!   check, reader into [`inbound`] messages, client, formatting, the
//!   webhook's flow), tested natively on real payloads through the
//!   [`ports::Front`] port.
//! - [`scheduled`]: heartbeats and `cron.json` jobs; [`reminders`]: the
//!   ones the agent sets itself (the `remind` tool, fired by the Agent
//!   object's alarm into the chat where they were set).
//! - [`tasks`]: handing work off: a peer agent asked (`delegate`).
//! - [`web`]: `web_fetch` (address rules, readable HTML) and web search.
//! - [`mcp`]: the agent's MCP servers as tools (config, client, the Agent's
//!   cached catalog, a session's frozen tool set) and Hearth as an MCP server.
//! - [`dreaming`]: the nightly memory sweep (recall evidence → candidates →
//!   one LLM call → `## Dreamed` facts in MEMORY.md, DREAMS.md), with
//!   optional approval on Telegram.
//! - [`usage`]: prices, the usage ledger, budgets and cache health.
//! - [`voice`]: voice replies (text to speech, `/voice`).
//! - [`api`]: the HTTP API's callers, requests and threads.
//! - [`console`]: the web console's login cookie and its CSRF check.
//!
//! **Top floor**: the objects.
//! - [`session`]: the session's queue, history and turn loop, reset and
//!   compaction, who watches a turn (API clients, chat previews), and
//!   [`session::host`], the Session object's logic.
//! - [`agent`]: the Agent object's logic (memory, registry, pins, schedule).

pub mod ports;
pub mod settings;

pub mod apart;
pub mod clock;
pub mod http_api;
pub mod inbound;
pub mod order;
pub mod protocol;
pub mod retry;
pub mod serving;
pub mod storage;
pub mod text;
pub mod toolkit;

pub mod api;
pub mod approvals;
pub mod channels;
pub mod codemode;
pub mod console;
pub mod delivery;
pub mod dreaming;
pub mod llm;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod people;
pub mod prompt;
pub mod reminders;
pub mod routing;
pub mod scheduled;
pub mod tasks;
pub mod tools;
pub mod usage;
pub mod voice;
pub mod web;
pub mod workspace;

pub mod agent;
pub mod session;

#[cfg(test)]
pub mod testing;
