//! How a session speaks: every message it sends (answers, notes, errors,
//! heartbeat notifications) is written to its outbox and sent from there
//! ([`crate::delivery`]), so nothing is lost when the platform misbehaves
//! and the turn never waits out a platform's rate limit.

use super::deps::SessionDeps;
use crate::delivery::flush::Policy;
use crate::delivery::{self, FlushReport, Kind};
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{LogLevel, Platform, StorageError};
use crate::scheduled::notify::{decide, record, NotifyDecision};
use crate::settings::Principal;

/// Sends `text` to `target`: queued in the outbox, then what is due is sent.
pub async fn send<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    target: &ReplyTarget,
    text: &str,
) -> Result<(), StorageError> {
    let id = format!("msg:{}", p.new_uuid());
    send_as(p, deps, target, text, &id).await
}

/// The answer to queued message `seq`. Its outbox id is fixed, so a turn
/// resumed after an eviction that finds the answer in the history does not
/// queue it a second time.
pub async fn send_answer<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    target: &ReplyTarget,
    text: &str,
    seq: i64,
) -> Result<(), StorageError> {
    send_as(p, deps, target, text, &format!("answer:{seq}")).await
}

async fn send_as<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    target: &ReplyTarget,
    text: &str,
    id: &str,
) -> Result<(), StorageError> {
    let now = p.now_ms();
    // The watchers hear everything the session says (an HTTP API client's
    // answer; the notification feed's heartbeat findings).
    deps.watch.said(target, text);
    let owner_target;
    let target = match target.channel {
        // Admin-initiated work (an API reset) has no chat to answer in.
        ChannelKind::Admin => {
            p.log(LogLevel::Info, &format!("admin: {text}"));
            return Ok(());
        }
        // Asked over HTTP: the answer waits in the session for its caller,
        // under the request id the target carries. Posted later (no request):
        // to the agent's notification feed.
        ChannelKind::Api => {
            return match target.extra.as_deref() {
                Some(request) => super::answers::record(p.sql(), request, text, now),
                None => {
                    deps.watch.notice(text);
                    Ok(())
                }
            };
        }
        // Heartbeat and job output: to the owner, unless HEARTBEAT_OK or a repeat.
        ChannelKind::Notify => match decide(p.sql(), deps.config.owners.first(), text, now)? {
            NotifyDecision::Send(t) => {
                record(p.sql(), text, now)?;
                owner_target = t;
                &owner_target
            }
            NotifyDecision::NoOwner => {
                p.log(LogLevel::Error, "OWNER_IDS is empty: no one to notify");
                return Ok(());
            }
            other => {
                p.log(LogLevel::Info, &format!("notification not sent ({other:?}): {} chars", text.len()));
                return Ok(());
            }
        },
        _ => target,
    };
    delivery::enqueue(p.sql(), id, Kind::Reply, target, text, now)?;
    flush(p, deps).await?;
    Ok(())
}

/// Sends whatever in the outbox is due.
pub async fn flush<P: Platform>(p: &P, deps: &SessionDeps<'_>) -> Result<FlushReport, StorageError> {
    let session = deps.key.render();
    let owners = deps.config.owners.iter().map(owner_chat).collect();
    let policy = Policy { settings: &deps.config.delivery, owners, session: &session };
    delivery::flush(p, &policy).await
}

/// An owner's chat (a report, a heartbeat notification).
pub fn owner_chat(owner: &Principal) -> ReplyTarget {
    ReplyTarget { channel: owner.channel, chat_id: owner.id.clone(), ..Default::default() }
}
