//! The chat double: what would have been sent, and sends that fail on cue.

use super::wait::YieldOnce;
use crate::inbound::ReplyTarget;
use crate::ports::*;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// Records what would have been sent to the chat. Every attempt is
/// recorded; `sent` holds what arrived (target and text). Attempts can be
/// failed: `script` answers the next attempts in order, `down` answers every
/// attempt to a chat id while it is set.
#[derive(Default)]
pub struct RecordingChannel {
    pub sent: RefCell<Vec<(ReplyTarget, String)>>,
    pub attempts: RefCell<Vec<(ReplyTarget, OutgoingChunk)>>,
    pub script: RefCell<VecDeque<SendOutcome>>,
    pub down: RefCell<std::collections::HashMap<String, SendOutcome>>,
    pub typing: Cell<u32>,
    /// "typing…" takes a moment (one poll), as a real chat's call does: a
    /// test can queue another message while a turn prepares.
    pub typing_yields: Cell<bool>,
    /// Attachments it can serve, by handle; every fetch is recorded.
    pub media: RefCell<std::collections::HashMap<String, Vec<u8>>>,
    pub fetched: RefCell<Vec<String>>,
    /// Shows previews (else it refuses them, as a channel without any would).
    pub previews_work: Cell<bool>,
    /// Scripted answers to preview updates (then: shown; an edit preview in
    /// message `m{n}`, its first update's number).
    pub preview_outcomes: RefCell<VecDeque<PreviewOutcome>>,
    /// Everything in order: `send: …`, `draft#id: …`, `edit m1: …`, `end m1`.
    pub log: RefCell<Vec<String>>,
}

impl RecordingChannel {
    /// The texts that arrived, in order.
    pub fn texts(&self) -> Vec<String> {
        self.sent.borrow().iter().map(|(_, t)| t.clone()).collect()
    }
    /// The texts that arrived in chat `chat_id`.
    pub fn texts_to(&self, chat_id: &str) -> Vec<String> {
        self.sent.borrow().iter().filter(|(t, _)| t.chat_id == chat_id).map(|(_, t)| t.clone()).collect()
    }
    /// Answers the next attempt (of any chat) with `outcome`.
    pub fn fail_next(&self, outcome: SendOutcome) {
        self.script.borrow_mut().push_back(outcome);
    }
    /// Answers every attempt to `chat_id` with `outcome` until [`Self::recover`].
    pub fn take_down(&self, chat_id: &str, outcome: SendOutcome) {
        self.down.borrow_mut().insert(chat_id.to_owned(), outcome);
    }
    pub fn recover(&self) {
        self.down.borrow_mut().clear();
    }
}

impl Channel for RecordingChannel {
    async fn send_chunk(&self, target: &ReplyTarget, chunk: &OutgoingChunk) -> SendOutcome {
        self.attempts.borrow_mut().push((target.clone(), chunk.clone()));
        let outcome = match self.down.borrow().get(&target.chat_id) {
            Some(o) => o.clone(),
            None => self.script.borrow_mut().pop_front().unwrap_or(SendOutcome::Delivered),
        };
        if outcome == SendOutcome::Delivered {
            self.sent.borrow_mut().push((target.clone(), chunk.text.clone()));
            self.log.borrow_mut().push(format!("send: {}", chunk.text));
        }
        outcome
    }
    async fn preview(&self, _target: &ReplyTarget, preview: &Preview<'_>) -> PreviewOutcome {
        let scripted = self.preview_outcomes.borrow_mut().pop_front();
        if let Some(outcome) = scripted {
            self.log.borrow_mut().push(format!("refused {}: {outcome:?}", preview.mode.name()));
            return outcome;
        }
        if !self.previews_work.get() {
            return PreviewOutcome::Unsupported("recording channel".into());
        }
        let mut log = self.log.borrow_mut();
        match preview.mode {
            crate::settings::stream::StreamMode::Draft => {
                log.push(format!("draft#{}: {}", preview.draft_id, preview.text));
                PreviewOutcome::Shown { handle: None }
            }
            _ => {
                let handle = preview.handle.map(str::to_owned).unwrap_or_else(|| format!("m{}", log.len() + 1));
                log.push(format!("edit {handle}: {}", preview.text));
                PreviewOutcome::Shown { handle: Some(handle) }
            }
        }
    }
    async fn end_preview(&self, _target: &ReplyTarget, handle: &str) {
        self.log.borrow_mut().push(format!("end {handle}"));
    }
    async fn typing(&self, _target: &ReplyTarget) {
        self.typing.set(self.typing.get() + 1);
        if self.typing_yields.get() {
            YieldOnce::default().await;
        }
    }
    async fn fetch_media(
        &self,
        _channel: crate::inbound::ChannelKind,
        handle: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ChannelError> {
        self.fetched.borrow_mut().push(handle.to_owned());
        match self.media.borrow().get(handle) {
            Some(b) if b.len() as u64 > max_bytes => Err(ChannelError::TooLarge(b.len() as u64)),
            Some(b) => Ok(b.clone()),
            None => Err(ChannelError::Failed(format!("no file {handle}"))),
        }
    }
}
