//! The `notify` reply channel: what a heartbeat or job turn says goes to the
//! owner, unless it is `HEARTBEAT_OK` or the same text went out recently.
//!
//! The state (hashes of what was sent) lives in the SQLite of the Session
//! object whose turn is replying (the heartbeat session, or one job's
//! session), so repeats are caught per heartbeat / per job.

use crate::inbound::ReplyTarget;
use crate::ports::{Sql, SqlValue, StorageError};
use crate::settings::Principal;
use hearth_schedule::heartbeat::is_heartbeat_ok;
use hearth_schedule::notify::{is_duplicate, notification_hash, SentNotification, DEFAULT_DEDUPE_WINDOW_MS};

// The hash is stored as hex text: a u64 does not survive JavaScript numbers.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS notify_sent (hash TEXT NOT NULL, sent_at INTEGER NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "notify_sent", statements: &[SCHEMA] };

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyDecision {
    /// `HEARTBEAT_OK`: nothing to say.
    Silent,
    /// The same text was sent within the window.
    Duplicate,
    /// No owner to send to (`OWNER_IDS` is empty).
    NoOwner,
    /// Send to this target.
    Send(ReplyTarget),
}

/// Decides what to do with `text` on the notify channel at `now`.
pub fn decide<S: Sql>(
    sql: &S,
    owner: Option<&Principal>,
    text: &str,
    now: i64,
) -> Result<NotifyDecision, StorageError> {
    if is_heartbeat_ok(text) {
        return Ok(NotifyDecision::Silent);
    }
    crate::storage::ensure(sql, &TABLES)?;
    let since = now.saturating_sub(DEFAULT_DEDUPE_WINDOW_MS);
    let rows = sql.exec("SELECT hash, sent_at FROM notify_sent WHERE sent_at >= ?", &[since.into()])?;
    let sent: Vec<SentNotification> = rows
        .iter()
        .filter_map(|r| {
            Some(SentNotification {
                hash: u64::from_str_radix(r.first().and_then(SqlValue::as_str)?, 16).ok()?,
                sent_at_ms: r.get(1).and_then(SqlValue::as_i64)?,
            })
        })
        .collect();
    if is_duplicate(text, now, &sent, DEFAULT_DEDUPE_WINDOW_MS) {
        return Ok(NotifyDecision::Duplicate);
    }
    let Some(owner) = owner else { return Ok(NotifyDecision::NoOwner) };
    Ok(NotifyDecision::Send(ReplyTarget { channel: owner.channel, chat_id: owner.id.clone(), ..Default::default() }))
}

/// Remembers that `text` went out at `now` (queued in the outbox for the
/// owner: a repeat is held back even while the first still waits to be
/// delivered), and forgets old records.
pub fn record<S: Sql>(sql: &S, text: &str, now: i64) -> Result<(), StorageError> {
    crate::storage::ensure(sql, &TABLES)?;
    sql.exec(
        "INSERT INTO notify_sent (hash, sent_at) VALUES (?, ?)",
        &[format!("{:016x}", notification_hash(text)).into(), now.into()],
    )?;
    sql.exec("DELETE FROM notify_sent WHERE sent_at < ?", &[now.saturating_sub(DEFAULT_DEDUPE_WINDOW_MS).into()])?;
    Ok(())
}
