//! Chat previews: the answer shown in the chat while the model writes it
//! (`STREAM_REPLIES`, see [`crate::settings::stream`]).
//!
//! Beside the answer, never instead of it: the answer is sent as always once
//! the turn has it, and a preview only shows the text so far. Updates are
//! throttled (an interval, and the wait a rate-limited platform asks for);
//! one that fails is skipped, not retried, since the next one supersedes it.
//! A Telegram chat that refuses drafts gets an edited message instead.
//!
//! Nothing is sent twice: a draft is replaced by the answer; an edited
//! preview message is kept in the session's SQLite (`meta`
//! `preview:{seq}`), so a turn resumed after an eviction edits the same
//! message, and it is removed once the answer was sent.

use super::deps::SessionDeps;
use crate::inbound::{Inbound, ReplyTarget};
use crate::ports::{Channel, LogLevel, Platform, Preview, PreviewOutcome, Sql, SqlValue, StorageError};
use crate::settings::stream::StreamMode;
use crate::settings::AgentConfig;
use std::cell::{Cell, RefCell};
use std::future::Future;

/// How `inbound`'s chat sees its answer being written.
pub fn mode_for(cfg: &AgentConfig, inbound: &Inbound) -> StreamMode {
    crate::channels::preview_mode(inbound.reply_target.channel, inbound.kind, &cfg.stream)
}

fn meta_key(seq: i64) -> String {
    format!("preview:{seq}")
}

/// The preview of one message's answer.
pub struct Previewer {
    mode: Cell<StreamMode>,
    /// Edit mode may stand in when a chat refuses drafts.
    edit_allowed: bool,
    interval: u64,
    seq: i64,
    handle: RefCell<Option<String>>,
    shown: RefCell<String>,
    next_at: Cell<i64>,
}

impl Previewer {
    /// The preview of message `seq` (an edited message of a resumed turn is
    /// found again).
    pub fn new<P: Platform>(p: &P, deps: &SessionDeps<'_>, inbound: &Inbound, seq: i64) -> Self {
        let mode = mode_for(deps.config, inbound);
        let handle = match mode {
            StreamMode::Off => None,
            _ => stored_handle(p.sql(), seq).ok().flatten(),
        };
        Previewer {
            mode: Cell::new(mode),
            edit_allowed: deps.config.stream.groups == StreamMode::Edit,
            interval: deps.config.stream.interval(mode),
            seq,
            handle: RefCell::new(handle),
            shown: RefCell::default(),
            next_at: Cell::new(0),
        }
    }

    pub fn active(&self) -> bool {
        self.mode.get() != StreamMode::Off
    }

    /// Runs `work` (a model call) while the preview follows what it writes.
    pub async fn during<P: Platform, F: Future>(
        &self,
        p: &P,
        deps: &SessionDeps<'_>,
        target: &ReplyTarget,
        work: F,
    ) -> F::Output {
        if !self.active() {
            return work.await;
        }
        let stop = Cell::new(false);
        let busy = Cell::new(false);
        // Ticks a few times per interval, so the first text shows soon; the
        // interval itself is kept by `next_at`.
        let tick = (self.interval / 4).max(50);
        let updates = async {
            loop {
                p.sleep(tick).await;
                if stop.get() || !self.active() {
                    break;
                }
                busy.set(true);
                self.update(p, deps, target).await;
                busy.set(false);
                if stop.get() {
                    break;
                }
            }
        };
        let work = std::pin::pin!(work);
        let updates = std::pin::pin!(updates);
        match futures::future::select(work, updates).await {
            futures::future::Either::Left((out, updates)) => {
                stop.set(true);
                if busy.get() {
                    // An update on its way lands before the answer, never after it.
                    updates.await;
                }
                out
            }
            futures::future::Either::Right(((), work)) => work.await,
        }
    }

    /// Shows the text so far, when it changed and the interval has passed.
    async fn update<P: Platform>(&self, p: &P, deps: &SessionDeps<'_>, target: &ReplyTarget) {
        if p.now_ms() < self.next_at.get() {
            return;
        }
        let Some(text) = deps.watch.preview() else { return };
        if *self.shown.borrow() == text {
            return;
        }
        let mode = self.mode.get();
        let handle = self.handle.borrow().clone();
        let preview = Preview { mode, text: &text, handle: handle.as_deref(), draft_id: self.seq.max(1) };
        let outcome = p.channel().preview(target, &preview).await;
        let now = p.now_ms();
        match outcome {
            PreviewOutcome::Shown { handle: shown_in } => {
                *self.shown.borrow_mut() = text;
                self.next_at.set(now + self.interval as i64);
                if let Some(h) = shown_in.filter(|h| handle.as_deref() != Some(h.as_str())) {
                    if let Err(e) = store_handle(p.sql(), self.seq, &h) {
                        p.log(LogLevel::Warn, &format!("preview message not remembered: {e}"));
                    }
                    *self.handle.borrow_mut() = Some(h);
                }
            }
            PreviewOutcome::Wait(ms) => self.next_at.set(now + ms as i64),
            PreviewOutcome::Unsupported(why) => {
                let next =
                    if mode == StreamMode::Draft && self.edit_allowed { StreamMode::Edit } else { StreamMode::Off };
                p.log(LogLevel::Warn, &format!("{} preview refused ({why}); now {}", mode.name(), next.name()));
                self.mode.set(next);
            }
            PreviewOutcome::Failed(why) => {
                p.log(LogLevel::Warn, &format!("preview update failed: {why}"));
                self.next_at.set(now + 2 * self.interval as i64);
            }
        }
    }
}

fn stored_handle<S: Sql>(sql: &S, seq: i64) -> Result<Option<String>, StorageError> {
    let rows = sql.exec("SELECT value FROM meta WHERE key = ?", &[meta_key(seq).into()])?;
    Ok(rows.into_iter().next().and_then(|r| r.into_iter().next()).and_then(SqlValue::into_string))
}

fn store_handle<S: Sql>(sql: &S, seq: i64, handle: &str) -> Result<(), StorageError> {
    sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &[meta_key(seq).into(), handle.into()])?;
    Ok(())
}

/// The answer to message `seq` was sent: its preview message (if one was
/// edited) goes.
pub async fn finish<P: Platform>(p: &P, inbound: &Inbound, seq: i64) -> Result<(), StorageError> {
    if !crate::channels::preview_is_a_message(inbound.reply_target.channel) {
        return Ok(());
    }
    if let Some(handle) = stored_handle(p.sql(), seq)? {
        p.channel().end_preview(&inbound.reply_target, &handle).await;
        p.sql().exec("DELETE FROM meta WHERE key = ?", &[meta_key(seq).into()])?;
    }
    Ok(())
}
