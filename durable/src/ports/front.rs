//! The Worker's side of a webhook.

use super::io::Io;

/// The Worker's side of a webhook, for the channels' handlers: their agents'
/// settings, the objects a message is queued in or asked about, and the
/// runtime's crypto. One implementation in the Worker (Durable Object stubs,
/// WebCrypto); [`crate::testing::FakeFront`] in tests. With it, a whole
/// webhook (signature, parsing, routing, the answer) runs natively.
#[allow(async_fn_in_trait)]
pub trait Front: Io {
    type Vars: crate::settings::Vars;
    /// The Worker's vars and secrets.
    fn vars(&self) -> &Self::Vars;
    /// `agent`'s settings, loaded once per isolate.
    fn config(&self, agent: &str) -> Result<std::rc::Rc<crate::settings::AgentConfig>, crate::settings::ConfigError>;
    /// Queues a message in its session's object. `Ok(false)`: a repeat.
    async fn enqueue(
        &self,
        key: &crate::inbound::SessionKey,
        inbound: &crate::inbound::Inbound,
    ) -> Result<bool, String>;
    /// A session's brief status (counts and usage).
    async fn session_status(
        &self,
        key: &crate::inbound::SessionKey,
    ) -> Result<crate::protocol::session::SessionStatus, String>;
    /// A call to `agent`'s memory (its Agent object).
    async fn memory(
        &self,
        agent: &str,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError>;
    /// `agent`'s usage ledger.
    async fn meter(
        &self,
        req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, String>;
    /// A sender the settings and this isolate's roster do not know, asked
    /// about at `door.agent`'s door (its Agent object, see `crate::people`).
    async fn door(&self, door: &crate::protocol::people::Door) -> Result<crate::protocol::people::DoorReply, String>;
    /// A tap on one of the agent's buttons (a dreaming proposal, a tool
    /// call waiting for approval), for `tap.agent`'s object: its answer's
    /// status and body.
    async fn tap(&self, tap: &crate::protocol::dreams::Tap) -> Result<(u16, String), String>;
    /// Keeps an attachment that arrived inside a message (an email's) in the
    /// bucket at `key`, for the session to ingest like a download.
    async fn stash(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), String>;
    /// `bytes` as text in the encoding a WHATWG Encoding Standard `label`
    /// names (the runtime's `TextDecoder`: every legacy charset mail uses, at
    /// no upload cost), malformed sequences as U+FFFD; `None` when the
    /// runtime has no decoder for `label`.
    fn decode_text(&self, label: &str, bytes: &[u8]) -> Option<String>;
    /// HMAC-SHA256 of `data` with `key` (the runtime's WebCrypto).
    async fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> Result<[u8; 32], String>;
    /// Ed25519 verification (the runtime's WebCrypto). `Err`: the key is not
    /// a usable public key.
    async fn ed25519_verify(&self, key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> Result<bool, String>;
}
