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

use crate::settings::media::TranscribeConfig;
use crate::settings::{AgentConfig, Provider};
use crate::text::TRANSCRIPT_PREFIX;
use crate::llm::Hydrated;
use crate::ports::{Channel, ChannelError, Http, HttpRequest, LogLevel, ObjectStore, Platform, PutOptions, Sql, StorageError};
use crate::inbound::{Inbound, InboundMedia};
use lru::LruCache;
use r2_layout::metadata::MediaMetadata;
use r2_layout::mime::{extension_for, MAX_MEDIA_BYTES};
use r2_layout::{keys, Message, UserBlock, UserContent};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

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

/// What a channel lets us download (Telegram's Bot API `getFile` serves at
/// most 20 MB), capped by the storage limit.
pub fn download_limit(channel: &str) -> u64 {
    match channel {
        "telegram" => (20 * 1024 * 1024).min(MAX_MEDIA_BYTES),
        _ => MAX_MEDIA_BYTES,
    }
}

// ---------------------------------------------------------------- cache

/// Counters of the media cache since the object started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    /// Media objects read from R2 (cache misses that found the object).
    pub r2_reads: u64,
    pub evictions: u64,
}

/// An LRU of media bytes bounded by total size, not entry count. Built on
/// `lru::LruCache` in unbounded mode: the crate orders the entries, this
/// type keeps the byte total and evicts from the cold end while over budget.
pub struct MediaCache {
    lru: LruCache<String, Rc<Vec<u8>>>,
    bytes: usize,
    budget: usize,
    /// Sizes of every object seen, so oversize media is not read again to
    /// learn that it is oversize.
    sizes: HashMap<String, u64>,
    pub stats: CacheStats,
}

impl Default for MediaCache {
    fn default() -> Self {
        MediaCache::new(CACHE_BUDGET_BYTES)
    }
}

impl MediaCache {
    pub fn new(budget: usize) -> Self {
        MediaCache { lru: LruCache::unbounded(), bytes: 0, budget, sizes: HashMap::new(), stats: CacheStats::default() }
    }

    /// The bytes of `key`, marked most recently used. Counts a hit.
    pub fn get(&mut self, key: &str) -> Option<Rc<Vec<u8>>> {
        let v = self.lru.get(key).cloned();
        if v.is_some() {
            self.stats.hits += 1;
        }
        v
    }

    /// Adds (or refreshes) an entry, evicting the least recently used until
    /// the total fits. An entry larger than the whole budget is not kept.
    pub fn insert(&mut self, key: &str, bytes: Rc<Vec<u8>>) {
        self.sizes.insert(key.to_owned(), bytes.len() as u64);
        if let Some(old) = self.lru.pop(key) {
            self.bytes -= old.len();
        }
        if bytes.len() > self.budget {
            return;
        }
        self.bytes += bytes.len();
        self.lru.put(key.to_owned(), bytes);
        while self.bytes > self.budget {
            match self.lru.pop_lru() {
                Some((_, v)) => {
                    self.bytes -= v.len();
                    self.stats.evictions += 1;
                }
                None => break,
            }
        }
    }

    pub fn known_size(&self, key: &str) -> Option<u64> {
        self.sizes.get(key).copied()
    }

    pub fn note_size(&mut self, key: &str, size: u64) {
        self.sizes.insert(key.to_owned(), size);
    }

    /// Forgets everything under a prefix (after a reset deleted it).
    pub fn forget_prefix(&mut self, prefix: &str) {
        let keys: Vec<String> = self.lru.iter().map(|(k, _)| k.clone()).filter(|k| k.starts_with(prefix)).collect();
        for k in keys {
            if let Some(v) = self.lru.pop(&k) {
                self.bytes -= v.len();
            }
        }
        self.sizes.retain(|k, _| !k.starts_with(prefix));
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.lru.contains(key)
    }
}

// ---------------------------------------------------------------- ingest decisions

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
/// tell, else what the sender declared.
pub fn effective_mime(declared: &str, bytes: &[u8]) -> String {
    match sniff(bytes) {
        Some(t) => t.to_owned(),
        None if declared.trim().is_empty() => "application/octet-stream".to_owned(),
        None => declared.trim().to_owned(),
    }
}

/// Whether an attachment is fetched, judged on what the message says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    Fetch { max_bytes: u64 },
    TooLarge { size: u64, limit: u64 },
}

pub fn admit(channel: &str, m: &InboundMedia) -> Admission {
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

// ---------------------------------------------------------------- ingest

const INGEST_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS media_ingest (
    seq INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    uuid TEXT NOT NULL,
    blocks TEXT,
    PRIMARY KEY (seq, idx))";

/// The outcome of one attachment: reference blocks (or a note), and what to
/// tell the user, if anything.
struct Outcome {
    blocks: Vec<UserBlock>,
    notice: Option<String>,
}

fn note(text: String) -> Vec<UserBlock> {
    vec![UserBlock::Text { text }]
}

/// Fetches and stores the attachments of queued message `seq`, returning the
/// blocks that join the user's message. Storage errors of the bookkeeping
/// table are returned (the drain stops and the alarm retries, resuming here);
/// failures of one attachment become a note and a message to the user.
pub async fn ingest<P: Platform>(
    p: &P,
    cfg: &AgentConfig,
    session_key: &str,
    seq: i64,
    inbound: &Inbound,
    cache: &RefCell<MediaCache>,
) -> Result<Vec<UserBlock>, StorageError> {
    if inbound.media.is_empty() {
        return Ok(Vec::new());
    }
    let sql = p.sql();
    sql.exec(INGEST_SCHEMA, &[])?;
    // Earlier messages are done (the queue runs in order): forget them.
    sql.exec("DELETE FROM media_ingest WHERE seq <> ?", &[seq.into()])?;
    let mut out = Vec::new();
    for (idx, m) in inbound.media.iter().enumerate() {
        let idx = idx as i64;
        let mut rows =
            sql.exec("SELECT uuid, blocks FROM media_ingest WHERE seq = ? AND idx = ?", &[seq.into(), idx.into()])?;
        let row = rows.pop();
        let done: Option<Vec<UserBlock>> =
            row.as_ref().and_then(|r| r.get(1)).and_then(|v| v.as_str()).and_then(|s| serde_json::from_str(s).ok());
        if let Some(blocks) = done {
            out.extend(blocks);
            continue;
        }
        // The uuid is fixed before the upload: a resumed ingest overwrites
        // the same key instead of storing a second copy.
        let uuid = match row.and_then(|mut r| r.get_mut(0).map(|v| std::mem::replace(v, crate::ports::SqlValue::Null)))
        {
            Some(crate::ports::SqlValue::Text(u)) => u,
            _ => {
                let u = p.new_uuid();
                sql.exec(
                    "INSERT OR REPLACE INTO media_ingest (seq, idx, uuid, blocks) VALUES (?, ?, ?, NULL)",
                    &[seq.into(), idx.into(), u.as_str().into()],
                )?;
                u
            }
        };
        let outcome = ingest_one(p, cfg, session_key, &inbound.channel, m, &uuid, cache).await;
        let json = serde_json::to_string(&outcome.blocks).map_err(|e| StorageError(e.to_string()))?;
        sql.exec(
            "UPDATE media_ingest SET blocks = ? WHERE seq = ? AND idx = ?",
            &[json.into(), seq.into(), idx.into()],
        )?;
        // Recorded first: a resumed ingest does not repeat the message.
        if let Some(text) = outcome.notice {
            if let Err(e) = p.channel().send_text(&inbound.reply_target, &text).await {
                p.log(LogLevel::Warn, &format!("media notice not delivered: {e}"));
            }
        }
        out.extend(outcome.blocks);
    }
    Ok(out)
}

async fn ingest_one<P: Platform>(
    p: &P,
    cfg: &AgentConfig,
    session_key: &str,
    channel: &str,
    m: &InboundMedia,
    uuid: &str,
    cache: &RefCell<MediaCache>,
) -> Outcome {
    let what = describe(m);
    let too_large = |size: u64, limit: u64| Outcome {
        blocks: note(format!(
            "[The user sent a {what} ({}) that was too large to keep; it is not available.]",
            human_size(size)
        )),
        notice: Some(format!(
            "⚠️ Your {what} is too large for me ({}; the limit is {}). I'll answer your message without it.",
            human_size(size),
            human_size(limit)
        )),
    };
    let failed = |why: &str| Outcome {
        blocks: note(format!("[The user sent a {what}, but it could not be {why}; it is not available.]")),
        notice: Some(format!(
            "⚠️ I couldn't {} your {what}. You may want to send it again.",
            if why == "stored" { "store" } else { "download" }
        )),
    };
    let max_bytes = match admit(channel, m) {
        Admission::TooLarge { size, limit } => return too_large(size, limit),
        Admission::Fetch { max_bytes } => max_bytes,
    };
    let bytes = match p.channel().fetch_media(channel, &m.handle, max_bytes).await {
        Ok(b) if b.len() as u64 > max_bytes => return too_large(b.len() as u64, max_bytes),
        Ok(b) => b,
        Err(ChannelError::TooLarge(size)) => return too_large(size, max_bytes),
        Err(e) => {
            p.log(LogLevel::Error, &format!("media download failed ({}): {e}", m.kind));
            return failed("downloaded");
        }
    };
    let mime = effective_mime(&m.mime_type, &bytes);
    let key = match keys::media_object(session_key, uuid, extension_for(&mime)) {
        Ok(k) => k,
        Err(e) => {
            p.log(LogLevel::Error, &format!("media key: {e}"));
            return failed("stored");
        }
    };
    let meta = MediaMetadata {
        original_filename: m.filename.clone().unwrap_or_default(),
        uploaded_at: p.now_ms(),
        session_key: session_key.to_owned(),
    };
    let size = bytes.len() as u64;
    let bytes = Rc::new(bytes);
    let opts = PutOptions { content_type: Some(mime.clone()), custom_metadata: meta.to_pairs() };
    if let Err(e) = p.store().put(&key, bytes.as_ref().clone(), opts).await {
        p.log(LogLevel::Error, &format!("media put failed: {e}"));
        return failed("stored");
    }
    let class = classify(&mime);
    {
        let mut c = cache.borrow_mut();
        c.note_size(&key, size);
        // The next call will want it: keep it instead of reading it back.
        if matches!(class, MediaClass::Image | MediaClass::Pdf) {
            c.insert(&key, bytes.clone());
        }
    }
    let mut blocks = reference_blocks(&mime, &key, m);
    if class == MediaClass::Audio || matches!(m.kind.as_str(), "voice" | "audio") {
        if let Some(t) = &cfg.media.transcribe {
            match transcribe(p, t, &bytes, &mime, uuid).await {
                Ok(text) if !text.trim().is_empty() => blocks.push(UserBlock::Text {
                    text: format!(
                        "{TRANSCRIPT_PREFIX}{what}]: {}",
                        crate::text::truncate_chars(text.trim(), MAX_TRANSCRIPT_CHARS)
                    ),
                }),
                Ok(_) => {}
                Err(e) => p.log(LogLevel::Warn, &format!("transcription failed: {e}")),
            }
        }
    }
    Outcome { blocks, notice: None }
}

// ---------------------------------------------------------------- transcription

/// The multipart body of `POST /audio/transcriptions`.
pub fn transcription_body(boundary: &str, model: &str, filename: &str, mime: &str, audio: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(audio.len() + 512);
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n{model}\r\n").as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {mime}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(audio);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

/// Asks the OpenAI-compatible endpoint for the text of an audio file.
pub async fn transcribe<P: Platform>(
    p: &P,
    t: &TranscribeConfig,
    audio: &[u8],
    mime: &str,
    uuid: &str,
) -> Result<String, String> {
    let boundary = format!("hearth-{uuid}");
    let filename = format!("{uuid}.{}", extension_for(mime));
    let mut req = HttpRequest {
        method: "POST",
        url: format!("{}/audio/transcriptions", t.base_url),
        headers: vec![("content-type".into(), format!("multipart/form-data; boundary={boundary}"))],
        body: transcription_body(&boundary, &t.model, &filename, mime, audio),
        timeout_ms: 120_000,
    };
    if let Some(k) = &t.api_key {
        req = req.header("authorization", &format!("Bearer {k}"));
    }
    let resp = p.http().send(req).await.map_err(|e| e.to_string())?;
    if !(200..300).contains(&resp.status) {
        return Err(format!("HTTP {}: {}", resp.status, resp.text().chars().take(200).collect::<String>()));
    }
    let v: serde_json::Value = serde_json::from_slice(&resp.body).map_err(|e| e.to_string())?;
    v["text"].as_str().map(str::to_owned).ok_or_else(|| "no text in the answer".to_owned())
}

// ---------------------------------------------------------------- hydration

/// The history as one LLM call sees it, and the media bytes it needs.
pub struct Prepared<'h> {
    pub messages: Cow<'h, [Message]>,
    pub media: Hydrated,
}

/// Why a reference is not shown (the note that replaces an image).
fn not_shown_note(why: &str) -> String {
    format!("[An image the user sent is not shown: {why}.]")
}

/// Which references the encoder will use, newest first, without repeats.
pub fn wanted_refs(cfg: &AgentConfig, history: &[Message]) -> Vec<(String, MediaClass)> {
    if !cfg.media.vision {
        return Vec::new();
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in history.iter().rev() {
        let Message::User { content: UserContent::Blocks(blocks), .. } = m else { continue };
        for b in blocks.iter().rev() {
            let (key, class) = match b {
                UserBlock::Image { r2_key, .. } => (r2_key, MediaClass::Image),
                UserBlock::File { mime_type, r2_key, .. }
                    if cfg.llm.provider == Provider::Anthropic && classify(mime_type) == MediaClass::Pdf =>
                {
                    (r2_key, MediaClass::Pdf)
                }
                _ => continue,
            };
            if seen.insert(key.clone()) {
                out.push((key.clone(), class));
            }
        }
    }
    out
}

fn image_limit(provider: Provider) -> u64 {
    match provider {
        Provider::Anthropic => ANTHROPIC_MAX_IMAGE_BYTES,
        Provider::OpenAi => OPENAI_MAX_IMAGE_BYTES,
    }
}

/// Loads what the next call needs: from the cache, else from R2 (then cached).
pub async fn prepare<'h, P: Platform>(
    p: &P,
    cfg: &AgentConfig,
    cache: &RefCell<MediaCache>,
    history: &'h [Message],
) -> Prepared<'h> {
    let mut media = Hydrated::new();
    let mut notes: HashMap<String, String> = HashMap::new();
    let mut budget = MAX_CALL_MEDIA_BYTES;
    for (key, class) in wanted_refs(cfg, history) {
        let limit = match class {
            MediaClass::Image => image_limit(cfg.llm.provider),
            _ => MAX_CALL_MEDIA_BYTES,
        };
        let fits = |size: u64, budget: u64| -> Result<(), String> {
            if size > limit {
                Err(format!("it is {}, over the model's {} limit", human_size(size), human_size(limit)))
            } else if size > budget {
                Err("older media is left out to keep the request small; ask the user to send it again if needed".into())
            } else {
                Ok(())
            }
        };
        if media.len() >= MAX_CALL_MEDIA_ITEMS {
            notes.insert(key, "only the most recent media is shown".into());
            continue;
        }
        let known = cache.borrow().known_size(&key);
        if let Some(size) = known {
            if let Err(why) = fits(size, budget) {
                notes.insert(key, why);
                continue;
            }
        }
        let cached = cache.borrow_mut().get(&key);
        let bytes = match cached {
            Some(b) => b,
            None => match p.store().get(&key).await {
                Ok(Some(obj)) => {
                    let b = Rc::new(obj.body);
                    let mut c = cache.borrow_mut();
                    c.stats.r2_reads += 1;
                    c.note_size(&key, b.len() as u64);
                    if fits(b.len() as u64, u64::MAX).is_ok() {
                        c.insert(&key, b.clone());
                    }
                    b
                }
                Ok(None) => {
                    notes.insert(key, "it is no longer stored".into());
                    continue;
                }
                Err(e) => {
                    p.log(LogLevel::Error, &format!("media hydration failed for {key}: {e}"));
                    notes.insert(key, "it could not be loaded".into());
                    continue;
                }
            },
        };
        if let Err(why) = fits(bytes.len() as u64, budget) {
            notes.insert(key, why);
            continue;
        }
        budget -= bytes.len() as u64;
        media.insert(key, bytes);
    }
    let messages = rewrite_unshown(cfg, history, &media, &notes);
    Prepared { messages, media }
}

/// Images that are not hydrated become a note saying why (the encoders would
/// otherwise only say "not available"). Unchanged history is borrowed.
fn rewrite_unshown<'h>(
    cfg: &AgentConfig,
    history: &'h [Message],
    media: &Hydrated,
    notes: &HashMap<String, String>,
) -> Cow<'h, [Message]> {
    let unshown = |b: &UserBlock| matches!(b, UserBlock::Image { r2_key, .. } if !media.contains_key(r2_key));
    let any = history.iter().any(|m| match m {
        Message::User { content: UserContent::Blocks(bs), .. } => bs.iter().any(unshown),
        _ => false,
    });
    if !any {
        return Cow::Borrowed(history);
    }
    let rewritten = history
        .iter()
        .map(|m| match m {
            Message::User { content: UserContent::Blocks(bs), timestamp } if bs.iter().any(unshown) => Message::User {
                content: UserContent::Blocks(
                    bs.iter()
                        .map(|b| match b {
                            UserBlock::Image { r2_key, .. } if !media.contains_key(r2_key) => {
                                let why = if !cfg.media.vision {
                                    "the model in use cannot see images"
                                } else {
                                    notes.get(r2_key).map(String::as_str).unwrap_or("it could not be loaded")
                                };
                                UserBlock::Text { text: not_shown_note(why) }
                            }
                            other => other.clone(),
                        })
                        .collect(),
                ),
                timestamp: *timestamp,
            },
            other => other.clone(),
        })
        .collect();
    Cow::Owned(rewritten)
}

// ---------------------------------------------------------------- lifecycle

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

#[cfg(test)]
mod tests;
