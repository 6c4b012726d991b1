//! Stopping the answer being written (`POST /api/agents/{id}/threads/{threadId}/stop`,
//! through [`super::watch::Watch::stop`]).
//!
//! The model call in flight is dropped where it stands, which aborts its
//! stream: the provider stops writing (and charging). What the model had
//! written stays: it joins the history as the answer, marked
//! `stopReason: "stopped"`, so the next question reads it like any answer
//! and a client reading the thread sees it was cut. Nothing written yet
//! leaves a note instead ([`super::notes`]). The chat (or API client) is
//! told like an answer: what was written, marked as stopped.
//!
//! A stop that comes between model calls (a tool running) lets the tool
//! finish, and the turn ends before the next call.

use super::deps::SessionDeps;
use super::meter;
use super::notes;
use super::reply::send_answer;
use super::store::SessionStore;
use crate::inbound::{ChannelKind, Inbound};
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::protocol::usage::UsageKind;
use r2_layout::{AssistantBlock, Message, Usage};

/// The stop reason kept on a stopped answer in the history.
pub const STOP_REASON: &str = "stopped";
/// How a chat is told that the answer above was stopped.
pub const STOPPED_MARK: &str = "⏹ Stopped.";
/// The note of an answer stopped before anything was written.
pub const STOPPED_EARLY: &str = "Stopped before anything was written.";

/// The model call a stop cut short: what it was and what it was sent.
pub struct CutCall {
    pub kind: UsageKind,
    /// The request's estimated size.
    pub prompt_tokens: u64,
}

/// Ends message `seq`'s turn after a stop. `cut`: the model call that was
/// dropped (`None`: the stop came between calls).
pub async fn stopped<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    inbound: &Inbound,
    seq: i64,
    cut: Option<CutCall>,
) -> Result<(), StorageError> {
    let now = p.now_ms();
    let written = if cut.is_some() { deps.watch.written() } else { String::new() };
    let mut usage = None;
    if let Some(cut) = cut {
        // The provider's own figures went with the dropped stream: the
        // request as estimated, and four characters a token written.
        let u = Usage::new(cut.prompt_tokens, (written.len() as u64).div_ceil(4), 0, 0);
        meter::cut_call(p, deps, store, session_id, cut.kind, &u)?;
        deps.watch.usage(&u);
        usage = Some(u);
    }
    p.log(LogLevel::Info, &format!("answer to message {seq} stopped after {} bytes", written.len()));
    let target = &inbound.reply_target;
    if written.trim().is_empty() {
        notes::record(p.sql(), session_id, now, notes::STOPPED, STOPPED_EARLY)?;
        if target.channel != ChannelKind::Api {
            send_answer(p, deps, target, STOPPED_MARK, seq).await?;
        }
        return Ok(());
    }
    let answer = Message::Assistant {
        content: vec![AssistantBlock::Text { text: written.clone() }],
        timestamp: now,
        model: Some(deps.config.llm.model.clone()),
        stop_reason: Some(STOP_REASON.to_owned()),
        usage,
    };
    store.append(session_id, &answer)?;
    // An API client is told `stopped` beside the text; a chat reads the mark.
    let told = if target.channel == ChannelKind::Api { written } else { format!("{written}\n\n{STOPPED_MARK}") };
    send_answer(p, deps, target, &told, seq).await
}
