//! The HTTP API's requests, decided without the platform: who is calling,
//! what a `generate`/`stream` body asks, and which session a thread is.
//!
//! Threads: `main` is the owner's main session (`agent:{id}:main`, the same
//! conversation as the owner's Telegram DMs, with MEMORY.md and USER.md) and
//! only owner credentials reach it. Any other thread id
//! (`[A-Za-z0-9_-]{1,64}`) is a session in the shared scope: the owner's
//! `agent:{id}:api:{thread}`, and for a key without `owner` its own
//! `agent:{id}:api:key-{name}-{thread}`, so keys never share threads (the
//! owner may open a key's thread as `key-{name}-{thread}`).

use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey, MAIN_THREAD};
use crate::protocol::api::{ApiTurnRequest, StopRequest};
use crate::settings::api::{ApiKey, Caller};
use r2_layout::AgentId;
use serde_json::Value;

pub mod routes;

/// A refused request: the status and what to tell the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

fn refuse(status: u16, message: impl Into<String>) -> ApiError {
    ApiError { status, message: message.into() }
}

/// Largest request body taken (413 past it).
pub const MAX_BODY_BYTES: usize = 512 * 1024;
/// The longest thread id a client may name.
pub const MAX_THREAD_LEN: usize = 64;
const KEY_THREAD_PREFIX: &str = "key-";

/// Constant time in the length of `expected`, so a token cannot be guessed
/// byte by byte.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// Who an `Authorization` header speaks for. `admin`: `ADMIN_TOKEN`, if set.
pub fn authenticate(header: Option<&str>, admin: Option<&str>, keys: &[ApiKey]) -> Result<Caller, ApiError> {
    let admin = admin.filter(|t| !t.is_empty());
    if admin.is_none() && keys.is_empty() {
        return Err(refuse(503, "ADMIN_TOKEN and API_TOKENS are not set: the API is disabled"));
    }
    let given = header.unwrap_or("").trim();
    let token = given.strip_prefix("Bearer ").or_else(|| given.strip_prefix("bearer ")).unwrap_or("").trim();
    if token.is_empty() {
        return Err(refuse(401, "missing bearer token (Authorization: Bearer <ADMIN_TOKEN or an API_TOKENS token>)"));
    }
    // Every candidate is compared, so the time says nothing of which matched.
    let mut found = None;
    if admin.is_some_and(|a| same_secret(token.as_bytes(), a.as_bytes())) {
        found = Some(Caller::Admin);
    }
    for key in keys {
        if same_secret(token.as_bytes(), key.token.as_bytes()) && found.is_none() {
            found = Some(Caller::Key(key.clone()));
        }
    }
    found.ok_or_else(|| refuse(401, "wrong bearer token"))
}

/// What a `generate` or `stream` body asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The user's text (several user messages are joined by a blank line).
    pub text: String,
    pub thread: Option<String>,
    pub resource_id: Option<String>,
}

/// The text of a message's `content`: a string, or parts of `{type: "text"}`.
fn content_text(content: &Value, at: usize) -> Result<String, ApiError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                match (part["type"].as_str(), part["text"].as_str()) {
                    (Some("text"), Some(t)) => texts.push(t),
                    _ => {
                        return Err(refuse(
                            400,
                            format!("messages[{at}].content[{j}] must be {{\"type\": \"text\", \"text\": \"...\"}}"),
                        ))
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(refuse(400, format!("messages[{at}].content must be a string"))),
    }
}

/// Parses a `generate`/`stream` body (seed 004 §9: `{messages: [{role:
/// "user", content}], threadId?, resourceId?}`). The thread keeps the
/// conversation, so only user messages are sent.
pub fn parse_ask(body: &[u8]) -> Result<Ask, ApiError> {
    let v: Value = hearth_json::from_slice(body).map_err(|e| refuse(400, format!("the body is not JSON: {e}")))?;
    let Some(obj) = v.as_object() else { return Err(refuse(400, "the body must be a JSON object")) };
    let messages = match obj.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => {
            return Err(refuse(400, "messages is empty: send at least one {role: \"user\", content}"))
        }
        Some(_) => return Err(refuse(400, "messages must be an array of {role: \"user\", content}")),
        None => return Err(refuse(400, "messages is missing: send [{role: \"user\", content: \"...\"}]")),
    };
    let mut texts = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m["role"].as_str() {
            Some("user") => {}
            Some(role) => {
                return Err(refuse(
                    400,
                    format!("messages[{i}].role is {role:?}: send only user messages (the thread keeps the replies)"),
                ))
            }
            None => return Err(refuse(400, format!("messages[{i}] has no role (use \"user\")"))),
        }
        texts.push(content_text(&m["content"], i)?);
    }
    let text = texts.join("\n\n");
    if text.trim().is_empty() {
        return Err(refuse(400, "the message has no text"));
    }
    let string_field = |name: &str, max: usize| -> Result<Option<String>, ApiError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() && s.len() <= max => Ok(Some(s.clone())),
            Some(_) => Err(refuse(400, format!("{name} must be a non-empty string of at most {max} characters"))),
        }
    };
    let thread = string_field("threadId", 256)?;
    if let Some(t) = &thread {
        check_thread(t)?;
    }
    Ok(Ask { text, thread, resource_id: string_field("resourceId", 256)? })
}

/// Whether `thread` is a thread id a client may name.
pub fn check_thread(thread: &str) -> Result<(), ApiError> {
    let ok = !thread.is_empty()
        && thread.len() <= MAX_THREAD_LEN
        && thread.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(refuse(400, format!("threadId {thread:?} must be 1-{MAX_THREAD_LEN} of A-Z, a-z, 0-9, - and _")))
    }
}

/// The session of `thread` for `caller` (see the module docs).
pub fn thread_session(agent: &AgentId, caller: &Caller, thread: &str) -> Result<SessionKey, ApiError> {
    check_thread(thread)?;
    if thread == MAIN_THREAD {
        return if caller.is_owner() {
            Ok(SessionKey::Main(agent.clone()))
        } else {
            Err(refuse(403, "the thread main is the owner's main session: only owner credentials may use it"))
        };
    }
    let session_thread = match caller {
        Caller::Key(key) if !key.owner => format!("{KEY_THREAD_PREFIX}{}-{thread}", key.name),
        _ => thread.to_owned(),
    };
    SessionKey::api_thread(agent, &session_thread)
        .ok_or_else(|| refuse(400, format!("threadId {thread:?} cannot name a session")))
}

/// The thread id `caller` knows `key` by, if it may see it.
pub fn client_thread(caller: &Caller, key: &SessionKey) -> Option<String> {
    match (key, caller) {
        (SessionKey::Main(_), c) if c.is_owner() => Some(MAIN_THREAD.to_owned()),
        (SessionKey::Api { thread, .. }, c) if c.is_owner() => Some(thread.clone()),
        (SessionKey::Api { thread, .. }, Caller::Key(k)) => {
            thread.strip_prefix(&format!("{KEY_THREAD_PREFIX}{}-", k.name)).map(str::to_owned)
        }
        _ => None,
    }
}

/// A new thread's id, from a random UUID.
pub fn new_thread_id(uuid: &str) -> String {
    let hex: String = uuid.chars().filter(char::is_ascii_hexdigit).take(24).collect();
    format!("t-{hex}")
}

/// The request's `Idempotency-Key` (checked), or a fresh one.
pub fn idempotency_key(header: Option<&str>, fresh: impl FnOnce() -> String) -> Result<String, ApiError> {
    match header.map(str::trim) {
        None | Some("") => Ok(fresh()),
        Some(k) if k.len() <= 128 && k.bytes().all(|b| b.is_ascii_graphic()) => Ok(k.to_owned()),
        Some(_) => Err(refuse(400, "Idempotency-Key must be 1-128 visible ASCII characters")),
    }
}

/// The queued message of an API request.
#[allow(clippy::too_many_arguments)]
pub fn turn_request(
    key: SessionKey,
    caller: &Caller,
    thread: &str,
    ask: &Ask,
    idempotency_key: &str,
    stream: bool,
    last_event_id: Option<String>,
    now: i64,
) -> ApiTurnRequest {
    let speaker = ask.resource_id.clone().unwrap_or_else(|| caller.name().to_owned());
    let request = request_id(caller, idempotency_key);
    ApiTurnRequest {
        session_key: key,
        inbound: Inbound {
            dedupe_key: request.clone(),
            channel: ChannelKind::Api,
            kind: ChatKind::Direct,
            chat_id: thread.to_owned(),
            sender_id: caller.name().to_owned(),
            sender_name: speaker,
            text: ask.text.clone(),
            addressed: true,
            thread_id: None,
            // The request id also files the answer for `ANSWER_PATH` (the MCP
            // server's way to collect it).
            reply_target: ReplyTarget {
                channel: ChannelKind::Api,
                chat_id: thread.to_owned(),
                extra: Some(request),
                ..Default::default()
            },
            received_at: now,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        },
        thread_id: thread.to_owned(),
        stream,
        last_event_id,
    }
}

/// The dedupe key of `caller`'s message sent with `idempotency_key`.
pub fn request_id(caller: &Caller, idempotency_key: &str) -> String {
    format!("api:{}:{idempotency_key}", caller.name())
}

/// What a stop request (`POST /api/agents/{id}/threads/{threadId}/stop`)
/// asks: `{}` or no body (whatever answer the thread is writing), or
/// `{"idempotencyKey": "..."}` (only the answer to that message).
pub fn parse_stop(body: &[u8], caller: &Caller) -> Result<StopRequest, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(StopRequest::default());
    }
    let v: Value = hearth_json::from_slice(body).map_err(|e| refuse(400, format!("the body is not JSON: {e}")))?;
    let Some(obj) = v.as_object() else { return Err(refuse(400, "the body must be a JSON object")) };
    match obj.get("idempotencyKey") {
        None | Some(Value::Null) => Ok(StopRequest::default()),
        Some(Value::String(k)) => {
            let key = idempotency_key(Some(k), String::new)?;
            if key.is_empty() {
                return Err(refuse(400, "idempotencyKey must not be empty"));
            }
            Ok(StopRequest { request: Some(request_id(caller, &key)) })
        }
        Some(_) => Err(refuse(400, "idempotencyKey must be the Idempotency-Key the message was sent with")),
    }
}

/// The idempotency key inside an API message's dedupe key.
pub fn idempotency_of(dedupe_key: &str) -> &str {
    dedupe_key.splitn(3, ':').nth(2).unwrap_or(dedupe_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::api::parse_api_keys;
    use r2_layout::Scope;

    fn keys() -> Vec<ApiKey> {
        parse_api_keys("phone:0123456789abcdef:*:owner,site:fedcba9876543210:main").unwrap()
    }

    #[test]
    fn tokens_name_their_caller() {
        let k = keys();
        let auth = |h: Option<&str>| authenticate(h, Some("admin-token-123"), &k);
        assert_eq!(auth(Some("Bearer admin-token-123")), Ok(Caller::Admin));
        assert!(matches!(auth(Some("Bearer fedcba9876543210")), Ok(Caller::Key(k)) if k.name == "site" && !k.owner));
        assert_eq!(auth(Some("Bearer nope")).unwrap_err().status, 401);
        assert_eq!(auth(None).unwrap_err().status, 401);
        assert_eq!(auth(Some("admin-token-123")).unwrap_err().status, 401, "Bearer is required");
        assert_eq!(authenticate(Some("Bearer x"), None, &[]).unwrap_err().status, 503);
        assert!(matches!(authenticate(Some("Bearer 0123456789abcdef"), None, &k), Ok(Caller::Key(_))));
    }

    #[test]
    fn bodies_are_checked_and_say_what_is_wrong() {
        let ok = parse_ask(br#"{"messages":[{"role":"user","content":"hi"}],"threadId":"work-1","resourceId":"u1"}"#);
        assert_eq!(ok, Ok(Ask { text: "hi".into(), thread: Some("work-1".into()), resource_id: Some("u1".into()) }));
        let parts = parse_ask(
            br#"{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"user","content":"b"}]}"#,
        );
        assert_eq!(parts.unwrap().text, "a\n\nb");
        for (body, says) in [
            (&b"{nope"[..], "not JSON"),
            (b"[]", "JSON object"),
            (b"{}", "messages is missing"),
            (br#"{"messages":[]}"#, "messages is empty"),
            (br#"{"messages":"hi"}"#, "must be an array"),
            (br#"{"messages":[{"role":"assistant","content":"x"}]}"#, "only user messages"),
            (br#"{"messages":[{"content":"x"}]}"#, "has no role"),
            (br#"{"messages":[{"role":"user","content":7}]}"#, "content must be a string"),
            (br#"{"messages":[{"role":"user","content":"  "}]}"#, "no text"),
            (br#"{"messages":[{"role":"user","content":"x"}],"threadId":"a b"}"#, "threadId"),
            (br#"{"messages":[{"role":"user","content":"x"}],"resourceId":5}"#, "resourceId"),
        ] {
            let e = parse_ask(body).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.contains(says), "{}: {}", String::from_utf8_lossy(body), e.message);
        }
    }

    #[test]
    fn threads_are_the_owners_or_the_keys_own() {
        let agent = AgentId::parse("main").unwrap();
        let k = keys();
        let owner_key = Caller::Key(k[0].clone());
        let site = Caller::Key(k[1].clone());
        assert_eq!(thread_session(&agent, &Caller::Admin, "main").unwrap(), SessionKey::Main(agent.clone()));
        assert_eq!(thread_session(&agent, &owner_key, "main").unwrap(), SessionKey::Main(agent.clone()));
        assert_eq!(thread_session(&agent, &site, "main").unwrap_err().status, 403);
        let mine = thread_session(&agent, &site, "support").unwrap();
        assert_eq!(mine.render(), "agent:main:api:key-site-support");
        assert_eq!(mine.scope(), Scope::Shared, "never the owner's private files");
        let owners = thread_session(&agent, &Caller::Admin, "support").unwrap();
        assert_ne!(owners, mine, "a key never reaches the owner's thread of the same name");
        assert_eq!(client_thread(&site, &mine).as_deref(), Some("support"));
        assert_eq!(client_thread(&site, &owners), None);
        assert_eq!(client_thread(&Caller::Admin, &mine).as_deref(), Some("key-site-support"));
        assert_eq!(thread_session(&agent, &Caller::Admin, "key-site-support").unwrap(), mine, "the owner may open it");
        assert_eq!(client_thread(&site, &SessionKey::Main(agent.clone())), None);
        assert!(thread_session(&agent, &site, &"x".repeat(65)).is_err());
        let id = new_thread_id("0b7e2c4e-1f2a-4b3c-9d8e-7f6a5b4c3d2e");
        assert!(check_thread(&id).is_ok() && id.starts_with("t-"), "{id}");
    }

    #[test]
    fn idempotency_keys_and_the_queued_message() {
        assert_eq!(idempotency_key(Some(" abc "), || "fresh".into()).unwrap(), "abc");
        assert_eq!(idempotency_key(None, || "fresh".into()).unwrap(), "fresh");
        assert_eq!(idempotency_key(Some("a b"), || "x".into()).unwrap_err().status, 400);
        let ask = Ask { text: "hi".into(), thread: None, resource_id: Some("user-7".into()) };
        let key = SessionKey::parse("agent:main:api:t").unwrap();
        let req = turn_request(key, &Caller::Admin, "t", &ask, "k:1", true, None, 5);
        assert_eq!(req.inbound.dedupe_key, "api:admin:k:1");
        assert_eq!(idempotency_of(&req.inbound.dedupe_key), "k:1");
        assert_eq!((req.inbound.reply_target.channel.as_str(), req.inbound.sender_name.as_str()), ("api", "user-7"));
    }

    #[test]
    fn a_stop_names_the_callers_message_or_none() {
        let site = Caller::Key(keys()[1].clone());
        assert_eq!(parse_stop(b"", &Caller::Admin).unwrap(), StopRequest::default());
        assert_eq!(parse_stop(b"{}", &Caller::Admin).unwrap(), StopRequest::default());
        let mine = parse_stop(br#"{"idempotencyKey":"k:1"}"#, &site).unwrap();
        assert_eq!(mine.request.as_deref(), Some("api:site:k:1"), "the same key as the message's");
        for (body, says) in [
            (&b"nope"[..], "not JSON"),
            (b"[1]", "JSON object"),
            (br#"{"idempotencyKey":5}"#, "idempotencyKey"),
            (br#"{"idempotencyKey":"a b"}"#, "Idempotency-Key"),
            (br#"{"idempotencyKey":""}"#, "empty"),
        ] {
            let e = parse_stop(body, &Caller::Admin).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.contains(says), "{}: {}", String::from_utf8_lossy(body), e.message);
        }
    }
}
