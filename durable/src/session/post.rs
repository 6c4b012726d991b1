//! Posts into the session's chat from the runtime ([`PostRequest`]): a
//! reminder that is due, a background task's result.
//!
//! A post is queued like a message, so it waits for the turn before it and
//! takes its place in the history between turns, never inside one (a text
//! appended while a turn runs would split a tool call from its result). It
//! is an [`Inbound`] whose dedupe key is `post:{id}`: the queue's own
//! de-duplication makes a repeated id a no-op, for as long as it remembers
//! delivered messages. Its mode (and, for recurring work, when it comes
//! again) is kept beside it in the `posts` table, written in the same step.
//!
//! - [`PostMode::Say`]: the text joins the history as the agent's message
//!   and goes to the chat through the outbox, under the queued row's answer
//!   id (sent once, also when resumed after an eviction). No LLM call.
//! - [`PostMode::Turn`]: an ordinary turn whose prompt is the text. It is
//!   never read as a chat command (`/reset` in a reminder's text is just
//!   text), its calls are booked as background work (the first to stop
//!   under a budget), and recurring work gets a heartbeat's cache rule.
//!
//! Where it goes: the request's target, made fit for later
//! ([`crate::channels::later`]), else the chat a person last wrote from in
//! this session ([`TARGET_META`], kept when a message is queued), else, for
//! the owner's sessions, the owner's first chat. A group's session keeps its
//! group scope: what a session sees depends on its key, not on the post.

use super::deps::SessionDeps;
use super::store::{InboxItem, SessionStore, DEDUPE_RETENTION_MS};
use crate::channels::later;
use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::llm::cache_ttl::{prefix_ttl, CacheTtl};
use crate::ports::{Platform, Sql, SqlValue, StorageError};
use crate::protocol::session::{PostMode, PostRequest};
use crate::settings::AgentConfig;
use r2_layout::{AssistantBlock, Message};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS posts (
    dedupe_key TEXT PRIMARY KEY,
    mode TEXT NOT NULL,
    next_run_in_ms INTEGER,
    at INTEGER NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "posts", statements: &[SCHEMA] };

use crate::protocol::session::POST_KEY_PREFIX as KEY_PREFIX;
/// Meta key: the target of the last message a person sent in this session,
/// as [`later::remembered`] keeps it (JSON).
pub const TARGET_META: &str = "post_target";

/// The queue's key of the post `id`.
pub fn dedupe_key(id: &str) -> String {
    format!("{KEY_PREFIX}{id}")
}

/// Whether a queued message is a post (no SQL: its key says so).
pub fn is_post(inbound: &Inbound) -> bool {
    inbound.dedupe_key.starts_with(KEY_PREFIX)
}

/// What the queue keeps of a post besides its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostMark {
    pub mode: PostMode,
    pub next_run_in_ms: Option<i64>,
}

/// The mark of a queued message: `None` for anything not posted (without a
/// statement). A post whose mark is missing is a turn: the safer reading
/// of a text that was queued to be acted on.
pub fn mark<S: Sql>(sql: &S, inbound: &Inbound) -> Result<Option<PostMark>, StorageError> {
    if !is_post(inbound) {
        return Ok(None);
    }
    crate::storage::ensure(sql, &TABLES)?;
    let rows =
        sql.exec("SELECT mode, next_run_in_ms FROM posts WHERE dedupe_key = ?", &[inbound.dedupe_key.as_str().into()])?;
    let row = rows.first();
    let mode = match row.and_then(|r| r.first()).and_then(SqlValue::as_str) {
        Some("say") => PostMode::Say,
        _ => PostMode::Turn,
    };
    let next_run_in_ms = row.and_then(|r| r.get(1)).and_then(SqlValue::as_i64);
    Ok(Some(PostMark { mode, next_run_in_ms }))
}

/// Why a post was refused (the caller's mistake; nothing was queued).
pub fn check(req: &PostRequest) -> Result<(), String> {
    let id = req.id.as_str();
    if id.is_empty() || id.len() > PostRequest::MAX_ID_LEN || id.chars().any(char::is_control) {
        return Err(format!("a post's id is 1 to {} characters without control characters", PostRequest::MAX_ID_LEN));
    }
    if req.text.trim().is_empty() {
        return Err("a post needs a text".into());
    }
    let chars = req.text.chars().count();
    if chars > PostRequest::MAX_TEXT_CHARS {
        return Err(format!("a post's text is at most {} characters (this one: {chars})", PostRequest::MAX_TEXT_CHARS));
    }
    Ok(())
}

/// Where a post goes (see the module docs). `Err`: no chat is known.
pub fn resolve(
    req: &PostRequest,
    known: Option<&ReplyTarget>,
    key: &SessionKey,
    config: Option<&AgentConfig>,
) -> Result<ReplyTarget, String> {
    let owner = || config.and_then(|c| c.owners.first()).map(super::reply::owner_chat);
    let target = match &req.target {
        Some(t) => later::later(t, known),
        None => match (known, key) {
            (Some(k), _) => k.clone(),
            (None, SessionKey::Main(_) | SessionKey::Heartbeat(_)) => {
                owner().ok_or("no chat is known for this session yet, and OWNER_IDS is empty")?
            }
            (None, _) => return Err("no one has written in this session yet: name the target".into()),
        },
    };
    Ok(match target.channel {
        // The owner's notifications drop repeats within hours: a reminder
        // that says the same thing every hour must still arrive.
        ChannelKind::Notify => owner().ok_or("OWNER_IDS is empty: there is no owner to tell")?,
        _ => target,
    })
}

/// The queued message of a post: from nobody (no sender name: a person's
/// name would become the chat's title, and a group's `[name]:` prefix), on
/// the target's channel (the system prompt names the channel, and stays the
/// conversation's: its cached prefix is reused).
pub fn inbound(req: &PostRequest, target: &ReplyTarget, now: i64) -> Inbound {
    let kind = match req.session_key {
        SessionKey::Group { .. } => ChatKind::Group,
        _ => ChatKind::Direct,
    };
    let channel = match target.channel {
        ChannelKind::Admin | ChannelKind::Notify | ChannelKind::Relay => ChannelKind::System,
        other => other,
    };
    Inbound {
        dedupe_key: dedupe_key(&req.id),
        channel,
        kind,
        chat_id: target.chat_id.clone(),
        sender_id: "hearth".into(),
        sender_name: String::new(),
        text: req.text.clone(),
        addressed: true,
        thread_id: target.thread_id.clone(),
        reply_target: target.clone(),
        received_at: now,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    }
}

/// Queues a post: its message and its mark, in one step (no `await`
/// between them). `false`: a post with this id was queued before.
pub fn queue<S: Sql>(
    store: &SessionStore<'_, S>,
    req: &PostRequest,
    inbound: &Inbound,
    now: i64,
) -> Result<bool, StorageError> {
    crate::storage::ensure(store.sql, &TABLES)?;
    let payload = serde_json::to_string(inbound).map_err(|e| StorageError(e.to_string()))?;
    if !store.enqueue(&inbound.dedupe_key, &payload, now)? {
        return Ok(false);
    }
    let mode = match req.mode {
        PostMode::Say => "say",
        PostMode::Turn => "turn",
    };
    let next = req.next_run_in_ms.map_or(SqlValue::Null, SqlValue::Int);
    store.sql.exec(
        "INSERT OR REPLACE INTO posts (dedupe_key, mode, next_run_in_ms, at) VALUES (?, ?, ?, ?)",
        &[inbound.dedupe_key.as_str().into(), mode.into(), next, now.into()],
    )?;
    // The queue forgets delivered keys after this long; so do the marks.
    store.sql.exec("DELETE FROM posts WHERE at < ?", &[(now - DEDUPE_RETENTION_MS).into()])?;
    Ok(true)
}

/// A [`PostMode::Say`] post: the text joins the history as the agent's
/// message (with the row going active, in one step), then goes to the chat
/// under the row's answer id, so a post resumed after an eviction is not
/// sent twice.
pub async fn say<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, P::Sql>,
    item: &InboxItem,
    inbound: &Inbound,
) -> Result<(), StorageError> {
    if item.active {
        store.retry(item.seq)?;
    } else {
        let session_id = store.session_id(|| p.new_uuid(), p.now_ms())?;
        let message = Message::Assistant {
            content: vec![AssistantBlock::Text { text: inbound.text.clone() }],
            timestamp: p.now_ms(),
            model: None,
            stop_reason: None,
            usage: None,
        };
        store.start(item.seq, &session_id, Some(&message))?;
    }
    super::reply::send_answer(p, deps, &inbound.reply_target, &inbound.text, item.seq).await
}

/// The prompt-cache lifetime of a posted turn: a recurring one is cached as
/// a heartbeat's run is (by when it comes again), others for 5 minutes.
pub fn cache_ttl(deps: &SessionDeps<'_>, mark: &PostMark) -> CacheTtl {
    prefix_ttl(deps.config.llm.cache_policy, true, mark.next_run_in_ms)
}

/// Keeps where a person's message came from, for later posts that name no
/// target: written when it changes (`last`: what this object wrote last).
pub fn remember<S: Sql>(
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    last: &std::cell::RefCell<Option<String>>,
) -> Result<(), StorageError> {
    let from_person = inbound.channel.is_platform() && inbound.group.as_ref().is_none_or(|g| !g.listen);
    let api = inbound.channel == ChannelKind::Api && inbound.reply_target.channel == ChannelKind::Api;
    if !(from_person || api) || is_post(inbound) {
        return Ok(());
    }
    let json =
        serde_json::to_string(&later::remembered(&inbound.reply_target)).map_err(|e| StorageError(e.to_string()))?;
    if last.borrow().as_deref() == Some(json.as_str()) {
        return Ok(());
    }
    store.set_meta(TARGET_META, &json)?;
    *last.borrow_mut() = Some(json);
    Ok(())
}

/// The target [`remember`] kept.
pub fn known<S: Sql>(store: &SessionStore<'_, S>) -> Result<Option<ReplyTarget>, StorageError> {
    Ok(store.meta(TARGET_META)?.and_then(|j| hearth_json::from_slice(j.as_bytes()).ok()))
}
