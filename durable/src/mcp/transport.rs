//! The Streamable HTTP side of Hearth's MCP server (`/mcp/{agentId}`):
//! session ids and CORS. The JSON-RPC is [`super::server`].
//!
//! Session ids (`Mcp-Session-Id`, MCP 2025-03-26 and later): the answer to
//! `initialize` carries one, and a client sends it back on every request.
//! The server keeps nothing per session (each request stands alone and
//! still needs its bearer token), so an id is made to be checked without
//! storage: `hs1.{issued ms}.{nonce}.{mac}`, `mac` the HMAC-SHA256 of the
//! agent, the caller's name, the time and the nonce, keyed with the caller's
//! own token. An id is good only with the credentials it was issued to and
//! for its agent; one that is not (another key's, a rotated token's, made
//! up) is answered 404, which tells the client to initialize again, as the
//! specification says. Requests without an id are taken too (a client that
//! does not do sessions, `curl`). There is nothing to end, so `DELETE` is
//! 405, which the specification allows ("the server does not allow clients
//! to terminate sessions").
//!
//! CORS: a browser client on another origin may call the server. Every
//! answer allows any origin (`*`, without credentials: the bearer token is
//! the credential, and a page can use it only if it has it) and exposes
//! `Mcp-Session-Id`; a preflight (`OPTIONS`) is answered before any
//! authentication, as browsers send it without the `Authorization` header.

use crate::console::hmac_sha256;

const PREFIX: &str = "hs1";
/// Hex digits of the MAC kept in an id (128 bits).
const MAC_HEX: usize = 32;

/// The response header that carries a session id (and the request header
/// that brings it back).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Headers on every answer of `/mcp/{agentId}`.
pub const CORS_HEADERS: [(&str, &str); 2] = [
    ("access-control-allow-origin", "*"),
    ("access-control-expose-headers", "mcp-session-id, mcp-protocol-version, www-authenticate"),
];

/// Headers of the answer to a preflight (`OPTIONS`), besides [`CORS_HEADERS`].
pub const PREFLIGHT_HEADERS: [(&str, &str); 3] = [
    ("access-control-allow-methods", "POST, GET, DELETE, OPTIONS"),
    (
        "access-control-allow-headers",
        "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id",
    ),
    ("access-control-max-age", "86400"),
];

fn mac(secret: &str, agent: &str, caller: &str, issued: i64, nonce: &str) -> String {
    let message = format!("hearth-mcp-session|{agent}|{caller}|{issued}|{nonce}");
    hmac_sha256(secret.as_bytes(), message.as_bytes()).iter().take(MAC_HEX / 2).map(|b| format!("{b:02x}")).collect()
}

/// A new session id for `caller` (its name) of `agent`, keyed with the
/// caller's token `secret`. `nonce`: fresh randomness (a UUID's hex digits).
pub fn new_session_id(secret: &str, agent: &str, caller: &str, issued: i64, nonce: &str) -> String {
    let nonce: String = nonce.chars().filter(char::is_ascii_hexdigit).take(32).collect();
    format!("{PREFIX}.{issued}.{nonce}.{}", mac(secret, agent, caller, issued, &nonce))
}

/// Whether `id` is a session id issued to this caller for this agent.
pub fn session_valid(id: &str, secret: &str, agent: &str, caller: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut parts = id.trim().split('.');
    let (Some(PREFIX), Some(issued), Some(nonce), Some(given), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(issued) = issued.parse::<i64>() else { return false };
    if nonce.is_empty() || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    same(given.as_bytes(), mac(secret, agent, caller, issued, nonce).as_bytes())
}

/// Constant time in the length of `expected`.
fn same(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "3f2b8c1e-5d4a-4e2b-9c1d-7a6b5c4d3e2f";

    #[test]
    fn an_id_is_good_only_for_the_caller_and_agent_it_was_issued_to() {
        let id = new_session_id("key-token-aaaaaaaa", "main", "site", 1_776_000_000_000, UUID);
        assert!(id.starts_with("hs1.1776000000000.3f2b8c1e5d4a4e2b9c1d7a6b5c4d3e2f."), "{id}");
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII, as the specification asks");
        assert!(session_valid(&id, "key-token-aaaaaaaa", "main", "site"));
        assert!(!session_valid(&id, "other-token-bbbbbbbb", "main", "site"), "another key's token");
        assert!(!session_valid(&id, "key-token-aaaaaaaa", "work", "site"), "another agent");
        assert!(!session_valid(&id, "key-token-aaaaaaaa", "main", "admin"), "another caller");
        assert!(!session_valid(&id, "", "main", "site"));
        let mut forged = id.clone();
        forged.replace_range(4..5, "2");
        assert!(!session_valid(&forged, "key-token-aaaaaaaa", "main", "site"), "a changed time");
        for junk in ["", "hs1", "hs1.1.ab", "hs1.x.ab.cd", "hs1.1.zz.00", &format!("{id}.more"), "hs2.1.ab.cd"] {
            assert!(!session_valid(junk, "key-token-aaaaaaaa", "main", "site"), "{junk:?}");
        }
        let other = new_session_id("key-token-aaaaaaaa", "main", "site", 1_776_000_000_000, "0123456789abcdef");
        assert_ne!(other, id, "a fresh nonce, a fresh id");
    }
}
