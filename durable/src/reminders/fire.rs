//! The Agent object's alarm fires the reminders that are due: each fire is
//! claimed (with the reminder moved on) in one step, then posted into its
//! chat's session; a post that fails waits for its retry.

use super::store::{Due, ReminderStore};
use super::when;
use crate::inbound::{ReplyTarget, SessionKey};
use crate::ports::{LogLevel, Sql, StorageError};
use crate::protocol::session::{PostMode, PostRequest};
use crate::scheduled::SessionQueue;

/// At most this many posts per alarm (a free plan's invocation may make 50
/// calls to other objects); the rest go in the next alarm, at once.
pub const POSTS_PER_ALARM: i64 = 40;
/// A reminder fired this long after its time says it is late.
pub const LATE_MS: i64 = 60_000;
/// A post that failed is tried again after this, doubling up to
/// [`MAX_RETRY_MS`], and given up [`GIVE_UP_MS`] after its time.
pub const RETRY_MS: i64 = 2_000;
pub const MAX_RETRY_MS: i64 = 5 * 60_000;
pub const GIVE_UP_MS: i64 = 24 * 3_600_000;

/// What one alarm did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FireReport {
    /// Fires claimed now (reminders that were due).
    pub claimed: u32,
    /// Posts their sessions took (new fires and retries).
    pub posted: u32,
    /// Posts that failed (tried again later, or given up).
    pub failed: u32,
    /// More is due than one alarm takes: run again at once.
    pub more: bool,
    /// When the next reminder or retry is due.
    pub next_wake: Option<i64>,
}

/// The post a due reminder makes: its id is the fire's, its text what the
/// chat is told (said, or a task's prompt).
pub fn post_of(due: &Due, key: SessionKey, next: Option<i64>, now: i64) -> PostRequest {
    let r = &due.reminder;
    let late = now.saturating_sub(due.slot_ms) > LATE_MS;
    let due_local = crate::clock::datetime_string(due.slot_ms, &r.timezone);
    let text = match r.mode {
        PostMode::Say if late => {
            format!("⏰ {}\n\n(This was due {due_local}; I could not send it on time.)", r.text)
        }
        PostMode::Say => format!("⏰ {}", r.text),
        PostMode::Turn => {
            let repeat = when::repeat_said(&when::Repeat::of(r)).map(|s| format!(", {s}")).unwrap_or_default();
            let late = if late { "; it runs late: Hearth could not run it on time" } else { "" };
            format!(
                "[Reminder {}: a task you set in this chat{repeat}, due {due_local}{late}. Nobody wrote this \
                 message: do what it says and answer here.]\n{}",
                r.id, r.text
            )
        }
    };
    let next_run_in_ms = match (r.mode, next) {
        (PostMode::Turn, Some(next)) => Some(next - now),
        _ => None,
    };
    PostRequest {
        session_key: key,
        id: format!("reminder:{}:{}", r.id, due.slot_ms),
        mode: r.mode,
        text,
        target: hearth_json::from_slice::<ReplyTarget>(due.target.as_bytes()).ok(),
        next_run_in_ms,
    }
}

/// Fires what is due at `now`, retries posts whose time came, and says when
/// to come back. Storage errors stop it (the alarm is retried; claims keep
/// every fire once); a session that cannot be reached only delays its post.
pub async fn fire<S: Sql, Q: SessionQueue>(
    sql: &S,
    queue: &Q,
    now: i64,
    log: &dyn Fn(LogLevel, &str),
) -> Result<FireReport, StorageError> {
    let store = ReminderStore::open(sql)?;
    let due = store.due(now, POSTS_PER_ALARM)?;
    let mut report = FireReport::default();
    for d in &due {
        let next = when::next_after(&when::Repeat::of(&d.reminder), d.slot_ms, now, d.reminder.until);
        let Some(key) = SessionKey::parse(&d.reminder.session_key) else {
            log(LogLevel::Error, &format!("reminder {} has a bad session key; cancelled", d.reminder.id));
            store.cancel(&d.reminder.id, None, now)?;
            continue;
        };
        store.claim(d, &post_of(d, key, next, now), next, now)?;
        report.claimed += 1;
    }
    let open = store.open_fires(now, POSTS_PER_ALARM)?;
    // Their sessions are different objects: asked at once, not in turn.
    let results = futures::future::join_all(open.iter().map(|f| queue.post(&f.request))).await;
    for (f, result) in open.iter().zip(results) {
        match result {
            Ok(_) => {
                store.posted(&f.id)?;
                report.posted += 1;
            }
            Err(e) => {
                report.failed += 1;
                let wait = RETRY_MS.saturating_mul(1 << f.attempts.clamp(0, 16)).min(MAX_RETRY_MS);
                let next_try = (now.saturating_sub(f.slot_ms) < GIVE_UP_MS).then_some(now + wait);
                let what = if next_try.is_some() { "tried again later" } else { "given up after a day" };
                log(LogLevel::Error, &format!("reminder fire {} could not be posted ({what}): {e}", f.id));
                store.failed(&f.id, next_try, &e.to_string())?;
            }
        }
    }
    if report.claimed > 0 {
        store.prune(now)?;
    }
    report.more = due.len() as i64 == POSTS_PER_ALARM || open.len() as i64 == POSTS_PER_ALARM;
    report.next_wake = store.next_wake()?;
    Ok(report)
}
