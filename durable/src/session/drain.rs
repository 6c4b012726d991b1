//! The drain loop: take queued messages in order and answer each, one turn
//! at a time; recognise resets and messages already answered before an
//! eviction.

use super::deps::SessionDeps;
use super::meter;
use super::prefix::{prefetch, prepare, KnownSession};
use super::preview;
use super::reply::{self, send, send_answer};
use super::reset::{self, ResetError, ResetReason};
use super::sequence::Start;
use super::store::{InboxItem, SessionStore};
use super::turn::run_turn;
use crate::apart::apart;
use crate::clock;
use crate::inbound::Inbound;
use crate::media;
use crate::memory;
use crate::ports::{Channel, LogLevel, Platform, StorageError};
use crate::prompt;
use r2_layout::{AssistantBlock, Message, UserBlock, UserContent};

/// A message that failed this many times is given up (and the user told).
pub const MAX_ATTEMPTS_PER_MESSAGE: i64 = 3;

/// Told when a message waited in the queue past its reply deadline.
pub const QUEUED_PAST_DEADLINE: &str = "⚠️ Your message waited in my queue longer than I can still answer it here, \
so I did not start on it. It is saved in our history; please ask again.";
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DrainReport {
    pub turns: u32,
    pub llm_calls: u32,
    /// The next message waits until then: for messages sent before it that
    /// may still arrive ([`super::sequence`]), or for the rest of its batch.
    pub wake_at: Option<i64>,
}

/// Takes every open message, in the order sent, and runs its turn. Returns when
/// the queue is empty. Storage errors stop the drain (the alarm retries);
/// LLM and channel errors are handled inside the turn. Replies whose retry
/// is due are sent first, and again at the end.
pub async fn drain<P: Platform>(p: &P, deps: &SessionDeps<'_>) -> Result<DrainReport, StorageError> {
    let store = SessionStore::new(p.sql());
    let mut report = DrainReport::default();
    reply::flush(p, deps).await?;
    while let Some(item) = store.next_open()? {
        let inbound: Option<Inbound> = hearth_json::from_slice(item.payload.as_bytes()).ok();
        let Some(mut inbound) = inbound else {
            p.log(LogLevel::Error, &format!("dropping unreadable queued message {}", item.seq));
            store.finish(item.seq, p.now_ms())?;
            continue;
        };
        let hold = deps.config.order_hold_ms;
        let start = super::sequence::wait_until(&store, &item, &inbound, hold, p.now_ms())?;
        if let Start::At(at) = start {
            // A message sent just before it is likely on its way.
            report.wake_at = Some(at);
            break;
        }
        if !item.active && inbound.batch.is_some() {
            // An album's first photo waits for the rest, then takes them in;
            // the messages behind it wait too (their order is kept).
            if let Some(at) = super::batch::wait_until(&inbound, p.now_ms()) {
                report.wake_at = Some(at);
                break;
            }
            inbound = super::batch::gather(&store, item.seq, inbound, p.now_ms())?;
        }
        if item.active {
            // Parked on a call waiting for the owner: come back when due.
            if let Some(at) = apart(super::parked::still_waiting(p, deps, item.seq)).await? {
                report.wake_at = Some(at);
                break;
            }
        }
        deps.watch.begin(&inbound);
        if item.attempts >= MAX_ATTEMPTS_PER_MESSAGE {
            p.log(LogLevel::Error, &format!("giving up on message {} after {} attempts", item.seq, item.attempts));
            deps.watch.failed(GAVE_UP);
            if let Some(id) = store.meta("session_id")? {
                super::notes::record(p.sql(), &id, p.now_ms(), super::notes::ERROR, GAVE_UP)?;
            }
            send(p, deps, &inbound.reply_target, GAVE_UP).await?;
            finish(p, deps, &store, item.seq)?;
            continue;
        }
        if super::group::is_listen(&inbound) {
            // Another agent's turn (or a message for another agent): this
            // agent reads it in the thread, and says nothing.
            super::group::listen(p, &store, &item, &inbound)?;
            deps.watch.finish(p.sql(), p.now_ms())?;
            continue;
        }
        // Posted by the runtime (a reminder, a task's result): said as it is,
        // or a turn whose text is never read as a chat command.
        let post = super::post::mark(p.sql(), &inbound)?;
        if post.is_some_and(|m| m.mode == crate::protocol::session::PostMode::Say) {
            apart(super::post::say(p, deps, &store, &item, &inbound)).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        let command = post.is_none();
        if let Some(cmd) = crate::voice::parse_command(&inbound.text).filter(|_| command) {
            store.start(item.seq, "", None)?;
            apart(super::voice::answer_command(p, deps, &store, &inbound, cmd)).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        // `/undo`: the agent's last workspace change reverted (no LLM call).
        if command && is_undo_command(&inbound.text) {
            if item.active {
                store.retry(item.seq)?;
            } else {
                store.start(item.seq, "", None)?;
            }
            let text = apart(undo_now(p, deps)).await;
            send(p, deps, &inbound.reply_target, &text).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        // `/approve`, `/revoke`, `/people`, `/link`: the Agent object decides (no LLM call).
        if let Some(cmd) = crate::people::commands::owner_command(&inbound.text).filter(|_| command) {
            store.start(item.seq, "", None)?;
            apart(super::people::answer(p, deps, &inbound, cmd)).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        if let Some(cmd) = crate::tasks::spawn::parse_command(&inbound.text).filter(|_| command) {
            // `/tasks`: this chat's background tasks, from the Agent object (no LLM call).
            store.start(item.seq, "", None)?;
            apart(super::handoff::answer_command(p, deps, &inbound, cmd)).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        if command && crate::reminders::command::is_command(&inbound.text) {
            // This chat's reminders, no LLM call; not part of the conversation.
            store.start(item.seq, "", None)?;
            let ctx = super::toolbox::reminder_context(p, deps);
            let text = apart(crate::reminders::command::answer(p, &ctx, &inbound.text)).await;
            send(p, deps, &inbound.reply_target, &text).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        if command && meter::is_usage_command(&inbound.text) {
            // Answered from the ledger, no LLM call; not part of the conversation.
            store.start(item.seq, "", None)?;
            apart(meter::answer_usage(p, deps, &inbound)).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        // A reset is recognised whether it starts now or resumes (eviction,
        // or a retry after a storage error): never answered as a message.
        if command && is_reset_command(&inbound.text) {
            if item.active {
                p.log(LogLevel::Warn, &format!("resuming interrupted reset for message {}", item.seq));
                store.retry(item.seq)?;
            } else {
                store.start(item.seq, "", None)?;
            }
            let text = match apart(reset_now(p, deps, inbound.channel.as_str(), ResetReason::Command)).await? {
                Ok(o) if o.messages == 0 => "🧹 Fresh start (there was nothing to archive).".to_owned(),
                Ok(o) => format!(
                    "🧹 Fresh start. I archived our conversation ({} messages){}.",
                    o.messages,
                    if o.memories > 0 {
                        format!(" and noted {} things to remember", o.memories)
                    } else {
                        String::new()
                    }
                ),
                Err(e) => {
                    p.log(LogLevel::Error, &format!("reset failed: {e}"));
                    "⚠️ I couldn't archive our conversation, so I kept it: nothing was deleted. Try /reset again in a moment.".to_owned()
                }
            };
            send(p, deps, &inbound.reply_target, &text).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        if !item.active {
            let last_activity = store.meta("updated_at")?.and_then(|v| v.parse().ok());
            if let Some(reason) = reset::policy_reset_due(deps, last_activity, p.now_ms()) {
                if let Err(e) = apart(reset_now(p, deps, inbound.channel.as_str(), reason)).await? {
                    // The old session goes on; the next message tries again.
                    p.log(LogLevel::Error, &format!("{reason:?} reset failed, history kept: {e}"));
                }
            }
        }
        let session_id = store.session_id(|| p.new_uuid(), p.now_ms())?;
        if !item.active && inbound.reply_target.past_deadline(p.now_ms()) {
            // Waited in the queue until its answer could no longer arrive:
            // keep the message, spend nothing on it, say so.
            begin(p, &store, &item, &inbound, &session_id, deps, Additions::default())?;
            send(p, deps, &inbound.reply_target, QUEUED_PAST_DEADLINE).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        // The conversation starts with this message (counted as `prepare` will, after `begin`).
        let starting = store.message_count(&session_id)? + i64::from(!item.active) <= 1;
        // What a turn waits for before the model, at once: "typing…" in the
        // chat, recall and the session's start (on its first turn in this
        // object) from the Agent object.
        let recall = async {
            if item.active {
                None
            } else {
                let (text, tz) = (&inbound.text, &deps.config.timezone);
                memory::recall::recall_gated(p.memory(), deps.recall, p.now_ms(), deps.key, text, tz).await
            }
        };
        let typing = p.channel().typing(&inbound.reply_target);
        let (recall, (), ()) = futures::future::join3(recall, prefetch(p, deps, &session_id, starting), typing).await;
        if start == Start::Watching && gave_way(&store, &item, &inbound)? {
            // One sent before it arrived meanwhile: that one first (nothing
            // of this turn is written yet; it is taken again after).
            continue;
        }
        // Attachments are fetched and stored once, before the message is started.
        // A message without any does not enter `ingest` at all: its code would
        // be compiled on the first turn after a boot for nothing.
        let attached = if item.active || inbound.media.is_empty() {
            Vec::new()
        } else {
            media::ingest(p, deps.config, &deps.key.render(), item.seq, &inbound, deps.media_cache).await?
        };
        if !inbound.media.is_empty() {
            // A notice about an attachment goes out now, not after the answer.
            reply::flush(p, deps).await?;
        }
        begin(p, &store, &item, &inbound, &session_id, deps, Additions { recall, attached })?;
        if let Some(answer) = answered_before_interruption(&store, &item, &session_id)? {
            // Evicted between the answer and its bookkeeping: deliver it
            // instead of paying for the turn again (queued once: an answer
            // already in the outbox is not queued again).
            send_answer(p, deps, &inbound.reply_target, &answer, item.seq).await?;
            super::group::relay(p, deps, &inbound, &answer, item.seq)?;
            preview::finish(p, &inbound, item.seq).await?;
            finish(p, deps, &store, item.seq)?;
            report.turns += 1;
            continue;
        }
        report.llm_calls +=
            run_turn(p, &store, &inbound, item.seq, KnownSession { id: &session_id, starting }, deps).await?;
        if let Some(at) = super::parked::waiting(p.sql(), item.seq)? {
            // A call waits for the owner: the message stays open (this attempt
            // does not count) and the alarm comes back at the deadline, or
            // sooner when the Agent object wakes us with the answer.
            store.uncount_attempt(item.seq)?;
            report.wake_at = Some(at);
            break;
        }
        if meter::held(deps) {
            // A budget holds the message: it stays open (this attempt does
            // not count as a failure) until the Agent object wakes us.
            store.uncount_attempt(item.seq)?;
            apart(meter::answer_waiting_usage(p, deps, &store)).await?;
            break;
        }
        preview::finish(p, &inbound, item.seq).await?;
        finish(p, deps, &store, item.seq)?;
        report.turns += 1;
    }
    if let Some(again) = super::subagent::report(p, deps, &store).await? {
        // A sub-agent's end not yet told to its Agent object.
        report.wake_at = Some(report.wake_at.map_or(again, |at| at.min(again)));
    }
    reply::flush(p, deps).await?;
    meter::flush(p, deps).await?;
    Ok(report)
}

/// Whether a message of `inbound`'s stream sent before it arrived while its
/// turn prepared (see `sequence`, "give way before the model call").
fn gave_way<S: crate::ports::Sql>(
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    inbound: &Inbound,
) -> Result<bool, StorageError> {
    match &inbound.order {
        Some(order) => store.sent_before_waiting(item, order),
        None => Ok(false),
    }
}

/// Told when a message failed every attempt.
pub const GAVE_UP: &str = "⚠️ I could not process your message after several tries. It is saved in our history.";

/// A message is done: its row, and then its watchers (who may ask again
/// with the same idempotency key once it is).
fn finish<P: Platform, S: crate::ports::Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    seq: i64,
) -> Result<(), StorageError> {
    let now = p.now_ms();
    store.finish(seq, now)?;
    deps.watch.finish(p.sql(), now)
}

/// For a resumed message: the final answer already in the history, if the
/// turn got that far (the last message is an assistant reply with text and
/// no tool calls).
fn answered_before_interruption<S: crate::ports::Sql>(
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    session_id: &str,
) -> Result<Option<String>, StorageError> {
    if !item.active {
        return Ok(None);
    }
    let rows = store.history_rows(session_id)?;
    Ok(match rows.last() {
        Some((_, Message::Assistant { content, .. }))
            if !content.iter().any(|b| matches!(b, AssistantBlock::ToolCall { .. })) =>
        {
            let text = rows.last().map(|(_, m)| m.text()).unwrap_or_default();
            (!text.trim().is_empty()).then(|| super::answer::from_history(text))
        }
        _ => None,
    })
}

/// `/reset` or `/new`, possibly addressed as `/reset@botname`.
pub fn is_reset_command(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    let cmd = first.split('@').next().unwrap_or("");
    cmd.eq_ignore_ascii_case("/reset") || cmd.eq_ignore_ascii_case("/new")
}

/// `/undo`, possibly addressed as `/undo@botname`.
pub fn is_undo_command(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("");
    words.next().is_none() && first.split('@').next().unwrap_or("").eq_ignore_ascii_case("/undo")
}

/// Reverts the agent's last workspace change (the owner's main session
/// only) and says what it reverted. A repeated `/undo` walks further back.
async fn undo_now<P: Platform>(p: &P, deps: &SessionDeps<'_>) -> String {
    if deps.key.scope() != r2_layout::Scope::Main {
        return "↩️ Only my owner can undo my workspace changes, in our private chat.".into();
    }
    let cfg = deps.config;
    let undo = crate::workspace::history::view::undo(p.store(), &cfg.agent, p.now_ms(), cfg.history_keep).await;
    deps.workspace_cache.borrow_mut().invalidate_listings();
    match undo {
        Ok(u) => crate::workspace::history::view::describe(&u, &cfg.timezone),
        Err(e) => {
            p.log(LogLevel::Error, &format!("/undo failed: {e}"));
            format!("⚠️ I could not undo right now ({e}). Nothing was changed; try /undo again in a moment.")
        }
    }
}

/// Runs a reset; the outer `Result` is storage trouble (the alarm retries),
/// the inner one an archive failure the user is told about.
async fn reset_now<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    channel: &str,
    reason: ResetReason,
) -> Result<Result<reset::ResetOutcome, ResetError>, StorageError> {
    let prepared = prepare(p, deps, channel, None).await;
    match reset::reset(p, deps, &prepared, reason).await {
        Ok(o) => Ok(Ok(o)),
        Err(ResetError::Storage(e)) => Err(e),
        Err(e) => Ok(Err(e)),
    }
}

/// What joins the user's text in the stored message: notes recalled from
/// memory and the attached media's blocks.
#[derive(Default)]
struct Additions {
    recall: Option<String>,
    attached: Vec<UserBlock>,
}

/// First attempt: the user's message joins the history as the row goes
/// active. A resumed attempt finds it there already.
fn begin<P: Platform, S: crate::ports::Sql>(
    p: &P,
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    inbound: &Inbound,
    session_id: &str,
    deps: &SessionDeps<'_>,
    Additions { recall, attached }: Additions,
) -> Result<(), StorageError> {
    if item.active {
        p.log(LogLevel::Warn, &format!("resuming interrupted turn for message {}", item.seq));
        return store.retry(item.seq);
    }
    let now = p.now_ms();
    let local = clock::datetime_string(now, &deps.config.timezone);
    let text = inbound.user_text();
    let mut blocks = vec![UserBlock::Text { text: prompt::system_reminder(&local) }];
    blocks.extend(recall.map(|text| UserBlock::Text { text }));
    let only_media = !attached.is_empty() && text.trim().is_empty();
    blocks.extend(attached);
    if !only_media {
        blocks.push(UserBlock::Text { text });
    }
    let message = Message::User {
        content: UserContent::Blocks(blocks),
        timestamp: now,
        sender: inbound.sender(),
        channel: Some(inbound.channel.as_str().to_owned()),
    };
    store.start(item.seq, session_id, Some(&message))
}
