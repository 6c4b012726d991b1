//! The outbox's state machine: send what is due, piece by piece, and decide
//! what each answer means for the piece (see the module docs of
//! [`crate::delivery`]).

use super::outbox::{GaveUp, Outbox, Row};
use super::{enqueue, Kind, MAX_BACKOFF_MS};
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Channel, LogLevel, Platform, SendOutcome, Sql, StorageError};
use crate::settings::delivery::DeliveryConfig;

/// No wait before a retry is shorter (a `retry_after` of 0, a zero base).
const MIN_WAIT_MS: u64 = 10;
/// Attempts one flush makes at most (a safety bound: each attempt either
/// delivers a piece, moves its next attempt into the future, or gives it up).
const MAX_STEPS: usize = 200;
/// Characters of a reply quoted in a report.
const PREVIEW_CHARS: usize = 120;

/// Who a flush works for.
pub struct Policy<'a> {
    pub settings: &'a DeliveryConfig,
    /// Where reports of replies given up go: the owner's chats, in
    /// `OWNER_IDS` order (a report goes to the first on another channel
    /// than the reply that failed, when there is one).
    pub owners: Vec<ReplyTarget>,
    /// The session, named in reports so the owner can look it up.
    pub session: &'a str,
}

impl Policy<'_> {
    /// The wait before attempt `attempt + 1` of a piece after a failure
    /// (`after_ms`: what the platform asked for).
    pub fn wait_ms(&self, attempt: i64, after_ms: Option<u64>) -> u64 {
        let wait = after_ms.unwrap_or_else(|| {
            let doublings = attempt.saturating_sub(1).clamp(0, 20) as u32;
            self.settings.retry_base_ms.saturating_mul(1 << doublings).min(MAX_BACKOFF_MS)
        });
        let wait = self.settings.max_wait_ms.map_or(wait, |cap| wait.min(cap));
        wait.max(MIN_WAIT_MS)
    }
}

/// What one flush did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FlushReport {
    pub sent: u32,
    pub deferred: u32,
    pub gave_up: u32,
}

/// When the object's alarm should run next for the outbox, if anything waits.
pub fn next_due<S: Sql>(sql: &S) -> Result<Option<i64>, StorageError> {
    Outbox::open(sql)?.next_due()
}

/// Sends every piece that is due, each chat in order, until nothing is due.
/// Storage errors stop it (the alarm retries; nothing marked sent goes again).
pub async fn flush<P: Platform>(p: &P, policy: &Policy<'_>) -> Result<FlushReport, StorageError> {
    let outbox = Outbox::open(p.sql())?;
    let mut done = FlushReport::default();
    // Each chat's head, read again only when what was read may be out of
    // date: a chat with more pieces after the one sent, anything but a
    // delivery (those may queue notices and reports).
    let mut heads = outbox.heads()?;
    for _ in 0..MAX_STEPS {
        let now = p.now_ms();
        let Some(at) = heads.iter().position(|(r, _)| r.next_at <= now) else { break };
        let (head, queued) = heads.remove(at);
        let give_up_at = head.created_at.saturating_add(policy.settings.give_up_ms);
        if now >= give_up_at {
            let why = head.last_error.clone().unwrap_or_else(|| "not sent in time".into());
            done.gave_up += outbox.give_up_reply(&head.reply, GaveUp::Expired, &why, now)? as u32;
            let age = human_duration(now.saturating_sub(head.created_at));
            report(p, policy, &head, &format!("still failing after {age} ({why}), so I gave up"))?;
            heads = outbox.heads()?;
            continue;
        }
        let piece = crate::channels::render(head.target.channel, &head.text, head.markup, head.part == 0, head.opens);
        let outcome = p.channel().send_chunk(&head.target, &piece).await;
        let now = p.now_ms();
        let delivered = outcome == SendOutcome::Delivered;
        match outcome {
            SendOutcome::Delivered => {
                outbox.mark_sent(head.seq, now)?;
                done.sent += 1;
            }
            SendOutcome::Retry { after_ms, why } => {
                let next = now.saturating_add(policy.wait_ms(head.attempts + 1, after_ms) as i64).min(give_up_at);
                outbox.defer(head.seq, next, &why)?;
                done.deferred += 1;
                p.log(
                    LogLevel::Warn,
                    &format!("{} of {}: {why}; next attempt in {} ms", describe(&head), head.chat, next - now),
                );
            }
            SendOutcome::Rejected(why) if head.markup => {
                // Telegram could not parse the HTML: the same piece, plain.
                p.log(LogLevel::Warn, &format!("{}: markup refused ({why}); resending as plain text", describe(&head)));
                outbox.drop_markup(head.seq, &why)?;
            }
            SendOutcome::Rejected(why) => {
                outbox.give_up_piece(head.seq, GaveUp::Rejected, &why, true, now)?;
                done.gave_up += 1;
                if head.kind == Kind::Reply.as_str() {
                    let note = format!("⚠️ I could not deliver (all of) my reply: {why}");
                    enqueue(
                        p.sql(),
                        &format!("notice:{}:{}", head.reply, head.part),
                        Kind::Notice,
                        &head.target,
                        &note,
                        now,
                    )?;
                }
                report(p, policy, &head, &format!("{} refused it ({why})", channel_name(&head.target.channel)))?;
            }
            SendOutcome::Unreachable(why) => {
                outbox.give_up_piece(head.seq, GaveUp::Unreachable, &why, true, now)?;
                let rest = outbox.give_up_target(&head.target, GaveUp::Unreachable, &why, now)?;
                done.gave_up += 1 + rest as u32;
                let also = if rest > 0 {
                    format!("; {rest} more queued piece(s) for it were dropped too")
                } else {
                    String::new()
                };
                report(p, policy, &head, &format!("the chat cannot be reached ({why}){also}"))?;
            }
        }
        if !delivered || queued > 1 {
            heads = outbox.heads()?;
        }
    }
    Ok(done)
}

/// Logs a give-up, and for a conversation reply queues a report to the owner.
fn report<P: Platform>(p: &P, policy: &Policy<'_>, head: &Row, what: &str) -> Result<(), StorageError> {
    let where_ = format!("{} chat {}", channel_name(&head.target.channel), head.target.chat_id);
    p.log(LogLevel::Error, &format!("{} to {where_} given up: {what}", describe(head)));
    if head.kind != Kind::Reply.as_str() {
        return Ok(());
    }
    // A reply WhatsApp refuses outside its 24-hour window would fail the
    // same way as a report to the owner there: the owner hears of it elsewhere.
    let elsewhere = policy.owners.iter().find(|o| o.channel != head.target.channel);
    let Some(owner) = elsewhere.or(policy.owners.first()) else {
        p.log(LogLevel::Error, "OWNER_IDS is empty: no one to tell that a reply was not delivered");
        return Ok(());
    };
    let part = if head.parts > 1 { format!("Part {} of {} of a", head.part + 1, head.parts) } else { "A".into() };
    let preview = crate::text::truncate_chars(head.text.trim(), PREVIEW_CHARS);
    let text = format!(
        "⚠️ {part} reply to {where_} (session {}) was not delivered: {what}. It is kept in the session's history. \
         It read: “{preview}”",
        policy.session
    );
    let id = format!("report:{}:{}", head.reply, head.part);
    enqueue(p.sql(), &id, Kind::Report, owner, &text, p.now_ms())?;
    Ok(())
}

fn describe(row: &Row) -> String {
    format!("{} {} part {}/{}", row.kind, row.reply, row.part + 1, row.parts)
}

fn channel_name(channel: &ChannelKind) -> String {
    let mut c = channel.as_str().chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => "the channel".into(),
    }
}

/// `45 s`, `12 min`, `3 h`.
pub fn human_duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}
