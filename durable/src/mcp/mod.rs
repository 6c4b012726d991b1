//! MCP: the agent's MCP servers as tools, and Hearth as an MCP server.
//!
//! Client side: [`config`] reads `agents/{id}/mcp.json`; [`client`] speaks
//! Streamable HTTP (initialize and version negotiation, session ids,
//! `tools/list` pages, `tools/call`); [`catalog`] is the Agent object's
//! cache of every server's tool list; [`toolset`] is a session's frozen set
//! of `mcp__{server}__{tool}` tools and calls them; [`content`] turns a
//! result into the text the model reads.
//!
//! Server side: [`server`] answers JSON-RPC for `POST /mcp/{agentId}`;
//! [`transport`] makes and checks its session ids and says its CORS headers.

pub mod catalog;
pub mod client;
pub mod config;
pub mod content;
pub mod endpoint;
pub mod server;
pub mod toolset;
pub mod transport;

#[cfg(test)]
mod tests;
