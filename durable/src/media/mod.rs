//! Media: attachments kept in R2, referenced from the history, hydrated into
//! LLM calls (seed 003, "Media").
//!
//! - [`ingest`] runs once per inbound message, before the user message joins
//!   the history: each attachment is fetched through the channel
//!   ([`Channel::fetch_media`]), stored at `media/{sessionKey}/{uuid}.{ext}`
//!   with its content type and custom metadata, and becomes a reference block
//!   ([`UserBlock::Image`] / [`UserBlock::File`]); voice and audio get a
//!   transcript block when a transcription endpoint is configured. Anything
//!   over the size cap is refused with a short message to the user; the
//!   message's text still gets its turn. Progress is recorded in SQLite per
//!   attachment (the uuid before the upload, the blocks after), so a turn
//!   interrupted mid-ingest resumes without storing anything twice.
//! - [`prepare`] runs before each LLM call: the references the encoder will
//!   use are loaded (through the [`MediaCache`], a byte-budgeted LRU) into a
//!   [`Hydrated`] map; images that cannot be shown become short text notes.
//! - [`delete_session_media`] empties `media/{sessionKey}/` (session reset).

use crate::inbound::InboundMedia;
use crate::ports::{ObjectStore, StorageError};
use r2_layout::mime::MAX_MEDIA_BYTES;
use r2_layout::{keys, UserBlock};

pub mod cache;
pub mod hydrate;
pub mod ingest;

#[cfg(test)]
mod tests;

pub use cache::MediaCache;
pub use hydrate::prepare;
pub use ingest::ingest;

/// Byte budget of the in-object media cache (seed 003: 50 MB).
pub const CACHE_BUDGET_BYTES: usize = 50 * 1024 * 1024;
/// Anthropic refuses images over 5 MB of base64: 3.75 MiB of raw bytes.
pub const ANTHROPIC_MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;
/// OpenAI takes images up to 20 MB.
pub const OPENAI_MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// Raw media bytes sent in one LLM call. The request body holds them base64
/// (×4/3) a few times over while it is encoded and sent, next to the 50 MB
/// cache, inside a 128 MB isolate: older media beyond this is described.
pub const MAX_CALL_MEDIA_BYTES: u64 = 10 * 1024 * 1024;
/// At most this many media blocks per call (newest first).
pub const MAX_CALL_MEDIA_ITEMS: usize = 20;

/// Transcripts longer than this are cut.
const MAX_TRANSCRIPT_CHARS: usize = 20_000;

/// What a channel lets us download ([`crate::channels::download_limit`]),
/// capped by the storage limit.
pub fn download_limit(channel: crate::inbound::ChannelKind) -> u64 {
    crate::channels::download_limit(channel).map_or(MAX_MEDIA_BYTES, |limit| limit.min(MAX_MEDIA_BYTES))
}

/// How the model gets to see a stored attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaClass {
    /// JPEG, PNG, GIF, WebP: an image block (both providers take these).
    Image,
    /// A PDF: an Anthropic document block.
    Pdf,
    /// Voice and music: described, transcribed when configured.
    Audio,
    Video,
    Other,
}

pub fn classify(mime: &str) -> MediaClass {
    let m = essence(mime);
    match m.as_str() {
        "image/jpeg" | "image/png" | "image/gif" | "image/webp" => MediaClass::Image,
        "application/pdf" => MediaClass::Pdf,
        _ if m.starts_with("audio/") => MediaClass::Audio,
        _ if m.starts_with("video/") => MediaClass::Video,
        _ => MediaClass::Other,
    }
}

fn essence(mime: &str) -> String {
    mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// The type the bytes really are, for the formats whose type matters to the
/// providers: an image labelled with the wrong type (or sent as a file with
/// `application/octet-stream`) is rejected by the API on every later call.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => Some("image/png"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        [b'%', b'P', b'D', b'F', b'-', ..] => Some("application/pdf"),
        _ => None,
    }
}

/// The content type to store and reference: what the bytes are when we can
/// tell, else what the sender declared, unless it declared a type the
/// providers decode (an image, a PDF) that the bytes are not: such a file is
/// kept as `application/octet-stream`, a file the model is told of but not
/// sent (sent as an image, the provider would refuse every later request).
pub fn effective_mime(declared: &str, bytes: &[u8]) -> String {
    match sniff(bytes) {
        Some(t) => t.to_owned(),
        None if declared.trim().is_empty() => "application/octet-stream".to_owned(),
        None if matches!(classify(declared), MediaClass::Image | MediaClass::Pdf) => {
            "application/octet-stream".to_owned()
        }
        None => declared.trim().to_owned(),
    }
}

/// Whether an attachment is fetched, judged on what the message says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    Fetch { max_bytes: u64 },
    TooLarge { size: u64, limit: u64 },
}

pub fn admit(channel: crate::inbound::ChannelKind, m: &InboundMedia) -> Admission {
    let limit = download_limit(channel);
    match m.size {
        Some(size) if size > limit => Admission::TooLarge { size, limit },
        _ => Admission::Fetch { max_bytes: limit },
    }
}

/// "photo", "voice message", "file \"report.pdf\"", ...
pub fn describe(m: &InboundMedia) -> String {
    let base = match m.kind.as_str() {
        "photo" => "photo",
        "voice" => "voice message",
        "audio" => "audio file",
        "video" => "video",
        "video_note" => "video message",
        "sticker" => "sticker",
        _ => "file",
    };
    match m.filename.as_deref() {
        Some(f) if !f.is_empty() && m.kind != "sticker" => format!("{base} \"{f}\""),
        _ => base.to_owned(),
    }
}

pub fn human_size(bytes: u64) -> String {
    let mb = bytes as f64 / (1024.0 * 1024.0);
    if mb >= 1.0 {
        format!("{mb:.1} MB")
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

/// The reference blocks for a stored attachment.
pub fn reference_blocks(mime: &str, r2_key: &str, m: &InboundMedia) -> Vec<UserBlock> {
    match classify(mime) {
        MediaClass::Image => vec![UserBlock::Image { mime_type: mime.to_owned(), r2_key: r2_key.to_owned() }],
        _ => vec![UserBlock::File {
            mime_type: mime.to_owned(),
            r2_key: r2_key.to_owned(),
            filename: m.filename.clone().filter(|f| !f.is_empty() && m.kind != "sticker").or_else(|| {
                // A name the model can refer to ("voice message", "video").
                (m.kind != "document").then(|| describe(m))
            }),
        }],
    }
}

/// Deletes every object under `media/{sessionKey}/`, across all pages of the
/// listing. Returns how many were deleted. Used by session reset.
pub async fn delete_session_media<S: ObjectStore>(store: &S, session_key: &str) -> Result<usize, StorageError> {
    let prefix = keys::media_prefix(session_key);
    let (objects, _) = crate::storage::list_all(store, &prefix, None).await?;
    let keys: Vec<String> = objects.into_iter().map(|o| o.key).filter(|k| k.starts_with(&prefix)).collect();
    // Listed in full first: deleting while paging could move the cursor.
    for chunk in keys.chunks(1000) {
        store.delete(chunk).await?;
    }
    Ok(keys.len())
}
