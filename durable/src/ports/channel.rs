//! The chat channel a session replies on: pieces sent, previews, voice
//! notes, attachments fetched.

use crate::inbound::ReplyTarget;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("channel failed: {0}")]
    Failed(String),
    /// An attachment larger than the caller's limit (its size in bytes).
    #[error("file too large ({0} bytes)")]
    TooLarge(u64),
}

/// An answer shown while the model writes it (see `crate::session::preview`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preview<'a> {
    pub mode: crate::settings::stream::StreamMode,
    /// The answer so far, as the model writes it (Markdown, maybe unfinished).
    pub text: &'a str,
    /// The message shown so far (edit mode; `None` before the first update).
    pub handle: Option<&'a str>,
    /// Telegram's `draft_id`: non-zero, one per answer.
    pub draft_id: i64,
}

/// What became of one preview update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewOutcome {
    /// Shown; edit mode names the message it shows (to edit, then remove).
    Shown { handle: Option<String> },
    /// Rate-limited: no update for this long.
    Wait(u64),
    /// This chat cannot show this mode (why, for the log).
    Unsupported(String),
    /// This update failed; a later one may work.
    Failed(String),
}

/// One message to send: a piece of a reply, already cut to the channel's
/// limit and rendered by [`crate::delivery`]. The adapter sends it once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingChunk {
    /// The piece as the model wrote it (Markdown).
    pub text: String,
    /// The same piece in the channel's own markup (Telegram HTML, sent with
    /// `parse_mode`). `None`: send `text` as it is (Discord renders Markdown
    /// itself, and a piece whose markup was refused goes again as plain text).
    pub formatted: Option<String>,
    /// The first piece of its reply (Telegram quotes the user's message on it).
    pub first: bool,
    /// The first piece sent in answer to this message at all (Discord edits
    /// the deferred response with it; every later piece is a follow-up).
    pub opens: bool,
}

/// What became of one attempt to send an [`OutgoingChunk`]. The adapter
/// only classifies the platform's answer; [`crate::delivery`] decides what
/// to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    Delivered,
    /// Worth trying again later: a 429 (with the wait the platform asked
    /// for), a 5xx, a time-out, a network error.
    Retry {
        after_ms: Option<u64>,
        why: String,
    },
    /// This piece can never be sent as it is (a 400 about its content).
    Rejected(String),
    /// The chat cannot be reached at all (the bot was blocked or removed, the
    /// chat does not exist, a missing token): nothing more can go there now.
    Unreachable(String),
}

/// The chat channel a session replies on. The adapter sends one piece per
/// call and says how it went; cutting, markup fallback, retries and their
/// order live in [`crate::delivery`].
#[allow(async_fn_in_trait)]
pub trait Channel {
    /// One attempt to send one piece; never sleeps, never retries.
    async fn send_chunk(&self, target: &ReplyTarget, chunk: &OutgoingChunk) -> SendOutcome;
    /// Shows the answer so far, beside the answer itself (which is sent as
    /// always). One attempt, no retries: a preview is worth only its freshness.
    async fn preview(&self, target: &ReplyTarget, preview: &Preview<'_>) -> PreviewOutcome {
        let _ = (target, preview);
        PreviewOutcome::Unsupported("this channel shows no previews".into())
    }
    /// The answer was sent: the preview message `handle` (edit mode) goes.
    async fn end_preview(&self, target: &ReplyTarget, handle: &str) {
        let _ = (target, handle);
    }
    /// Show "typing…" while a turn runs; best effort.
    async fn typing(&self, target: &ReplyTarget);
    /// One attempt to send a voice note (Ogg/Opus) answering `target`
    /// (Telegram `sendVoice`, a Discord attachment). Never retried: the text
    /// of the reply is already on its way.
    async fn send_voice(&self, target: &ReplyTarget, audio: &[u8]) -> SendOutcome {
        let _ = audio;
        SendOutcome::Unreachable(format!("channel {:?} cannot send voice notes", target.channel))
    }
    /// Downloads an inbound attachment by its channel handle (a Telegram
    /// `file_id`: getFile, then the file URL). More than `max_bytes` is
    /// [`ChannelError::TooLarge`], ideally known before downloading.
    async fn fetch_media(
        &self,
        channel: crate::inbound::ChannelKind,
        handle: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ChannelError> {
        let _ = (handle, max_bytes);
        Err(ChannelError::Failed(format!("channel {channel:?} cannot fetch media")))
    }
}
