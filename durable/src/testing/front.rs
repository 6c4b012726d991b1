//! The Worker's side of a webhook in memory ([`FakeFront`]), with real
//! crypto and the WHATWG text decoder.

use super::http::ScriptedHttp;
use crate::ports::*;
use std::cell::{Cell, RefCell};

/// The Worker's side of a webhook, in memory ([`Front`]): settings from a
/// map, scripted HTTP, a clock that moves when told (or when slept on), and
/// records of every message queued, email sent and log line. Signatures are
/// checked with real crypto (`sha2`'s HMAC, `ed25519-dalek`), as the
/// runtime's WebCrypto would.
#[derive(Default)]
pub struct FakeFront {
    pub vars: std::collections::HashMap<String, String>,
    pub http: ScriptedHttp,
    pub now: Cell<i64>,
    pub slept: RefCell<Vec<u64>>,
    pub logs: RefCell<Vec<String>>,
    /// Everything queued, in order (repeats of a dedupe key included once).
    pub queued: RefCell<Vec<(crate::inbound::SessionKey, crate::inbound::Inbound)>>,
    /// While set, every enqueue fails with this.
    pub enqueue_error: RefCell<Option<String>>,
    pub mails: RefCell<Vec<(String, String, Vec<u8>)>>,
    /// While set, every email is refused with this.
    pub mail_error: RefCell<Option<MailError>>,
    pub taps: RefCell<Vec<crate::protocol::dreams::Tap>>,
    /// Door calls, in order (a stranger is told once per sender).
    pub doors: RefCell<Vec<crate::protocol::people::Door>>,
    /// Answers the door gives first, in order (then: a stranger).
    pub door_replies: RefCell<Vec<crate::protocol::people::DoorReply>>,
    /// While set, the door cannot be reached.
    pub door_down: RefCell<bool>,
    pub memory_calls: RefCell<Vec<crate::protocol::memory::MemoryCall>>,
    /// Attachments stashed by key: (bytes, content type).
    pub stash: RefCell<std::collections::BTreeMap<String, (Vec<u8>, String)>>,
}

impl FakeFront {
    /// A front with these settings (`AGENTS` defaults to `main`).
    pub fn with(vars: &[(&str, &str)]) -> Self {
        FakeFront {
            vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            now: Cell::new(1_800_000_000_000),
            ..Default::default()
        }
    }

    pub fn queued_texts(&self) -> Vec<String> {
        self.queued.borrow().iter().map(|(_, m)| m.text.clone()).collect()
    }
}

impl Io for FakeFront {
    type Http = ScriptedHttp;
    fn http(&self) -> &ScriptedHttp {
        &self.http
    }
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    async fn sleep(&self, ms: u64) {
        self.slept.borrow_mut().push(ms);
        self.now.set(self.now.get() + ms as i64);
    }
    fn log(&self, _level: LogLevel, msg: &str) {
        self.logs.borrow_mut().push(msg.to_owned());
    }
    async fn send_email(&self, from: &str, to: &str, raw: &[u8]) -> Result<(), MailError> {
        if let Some(e) = self.mail_error.borrow().clone() {
            return Err(e);
        }
        self.mails.borrow_mut().push((from.to_owned(), to.to_owned(), raw.to_vec()));
        Ok(())
    }
    async fn stashed(&self, key: &str) -> Result<Vec<u8>, String> {
        self.stash.borrow().get(key).map(|(b, _)| b.clone()).ok_or_else(|| format!("no {key}"))
    }
}

/// The runtime's `TextDecoder` natively: `encoding_rs`, the same WHATWG
/// standard (labels, decoders, U+FFFD for malformed bytes).
pub fn decode_text(label: &str, bytes: &[u8]) -> Option<String> {
    let encoding = encoding_rs::Encoding::for_label(label.trim().as_bytes())?;
    // The standard's "replacement" encoding (hz-gb-2312, iso-2022-kr…):
    // `new TextDecoder` refuses those labels.
    if encoding == encoding_rs::REPLACEMENT {
        return None;
    }
    Some(encoding.decode_without_bom_handling(bytes).0.into_owned())
}

impl Front for FakeFront {
    type Vars = std::collections::HashMap<String, String>;
    fn vars(&self) -> &Self::Vars {
        &self.vars
    }
    fn decode_text(&self, label: &str, bytes: &[u8]) -> Option<String> {
        decode_text(label, bytes)
    }
    fn config(&self, agent: &str) -> Result<std::rc::Rc<crate::settings::AgentConfig>, crate::settings::ConfigError> {
        crate::settings::AgentConfig::load(&self.vars, agent).map(std::rc::Rc::new)
    }
    async fn enqueue(
        &self,
        key: &crate::inbound::SessionKey,
        inbound: &crate::inbound::Inbound,
    ) -> Result<bool, String> {
        if let Some(e) = self.enqueue_error.borrow().clone() {
            return Err(e);
        }
        let mut queued = self.queued.borrow_mut();
        if queued.iter().any(|(k, m)| k == key && m.dedupe_key == inbound.dedupe_key) {
            return Ok(false);
        }
        queued.push((key.clone(), inbound.clone()));
        Ok(true)
    }
    async fn session_status(
        &self,
        key: &crate::inbound::SessionKey,
    ) -> Result<crate::protocol::session::SessionStatus, String> {
        let count = self.queued.borrow().iter().filter(|(k, _)| k == key).count() as u64;
        hearth_json::from_value(serde_json::json!({"sessionKey": key.render(), "messageCount": count}))
            .map_err(|e| e.to_string())
    }
    async fn memory(
        &self,
        _agent: &str,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError> {
        self.memory_calls.borrow_mut().push(call.clone());
        Ok(crate::protocol::memory::MemoryReply::Hits { hits: vec![] })
    }
    async fn meter(
        &self,
        _req: &crate::protocol::usage::MeterRequest,
    ) -> Result<crate::protocol::usage::MeterReply, String> {
        Ok(crate::protocol::usage::MeterReply::default())
    }
    async fn door(&self, door: &crate::protocol::people::Door) -> Result<crate::protocol::people::DoorReply, String> {
        self.doors.borrow_mut().push(door.clone());
        if *self.door_down.borrow() {
            return Err("the agent object is unavailable".into());
        }
        if !self.door_replies.borrow().is_empty() {
            return Ok(self.door_replies.borrow_mut().remove(0));
        }
        // A stranger, told once per channel and sender (the cooldown), or every time when free.
        let doors = self.doors.borrow();
        let first = doors.iter().filter(|d| d.channel == door.channel && d.sender == door.sender).count() == 1;
        let notice = (first || door.cooldown_ms == 0)
            .then(|| crate::people::texts::stranger(door.channel, &door.sender, door.configured_owner, None));
        Ok(crate::protocol::people::DoorReply {
            standing: crate::protocol::people::Standing::Stranger,
            notice,
            roster: Default::default(),
        })
    }
    async fn tap(&self, tap: &crate::protocol::dreams::Tap) -> Result<(u16, String), String> {
        self.taps.borrow_mut().push(tap.clone());
        Ok((200, r#"{"note":"noted"}"#.into()))
    }
    async fn stash(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<(), String> {
        self.stash.borrow_mut().insert(key.to_owned(), (bytes, content_type.to_owned()));
        Ok(())
    }
    async fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> Result<[u8; 32], String> {
        Ok(hmac_sha256(key, data))
    }
    async fn ed25519_verify(&self, key: &[u8; 32], signature: &[u8; 64], message: &[u8]) -> Result<bool, String> {
        let key = ed25519_dalek::VerifyingKey::from_bytes(key).map_err(|e| e.to_string())?;
        Ok(key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature)).is_ok())
    }
}

/// HMAC-SHA256 (RFC 2104) over `sha2`, for the native tests' front: the
/// Worker asks the runtime's WebCrypto instead.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(data).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    outer.into()
}
