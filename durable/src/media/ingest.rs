//! Ingest: each attachment of an inbound message fetched through its channel,
//! stored in R2 once, and turned into the reference blocks the history keeps.

use super::cache::MediaCache;
use super::*;
use crate::inbound::{Inbound, InboundMedia};
use crate::ports::{
    Channel, ChannelError, Http, HttpRequest, LogLevel, ObjectStore, Platform, PutOptions, Sql, StorageError,
};
use crate::settings::media::TranscribeConfig;
use crate::settings::AgentConfig;
use crate::text::TRANSCRIPT_PREFIX;
use r2_layout::metadata::MediaMetadata;
use r2_layout::mime::extension_for;
use r2_layout::{keys, UserBlock};
use std::cell::RefCell;
use std::rc::Rc;

const INGEST_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS media_ingest (
    seq INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    uuid TEXT NOT NULL,
    blocks TEXT,
    PRIMARY KEY (seq, idx))";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "media_ingest", statements: &[INGEST_SCHEMA] };

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
    crate::storage::ensure(sql, &TABLES)?;
    // Earlier messages are done (the queue runs in order): forget them.
    sql.exec("DELETE FROM media_ingest WHERE seq <> ?", &[seq.into()])?;
    let mut out = Vec::new();
    for (idx, m) in inbound.media.iter().enumerate() {
        let idx = idx as i64;
        let mut rows =
            sql.exec("SELECT uuid, blocks FROM media_ingest WHERE seq = ? AND idx = ?", &[seq.into(), idx.into()])?;
        let row = rows.pop();
        let done: Option<Vec<UserBlock>> = row
            .as_ref()
            .and_then(|r| r.get(1))
            .and_then(|v| v.as_str())
            .and_then(|s| hearth_json::from_slice(s.as_bytes()).ok());
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
        let outcome = ingest_one(p, cfg, session_key, inbound.channel, m, &uuid, cache).await;
        let json = serde_json::to_string(&outcome.blocks).map_err(|e| StorageError(e.to_string()))?;
        sql.exec(
            "UPDATE media_ingest SET blocks = ? WHERE seq = ? AND idx = ?",
            &[json.into(), seq.into(), idx.into()],
        )?;
        // Queued with the outcome (no await between them, so both or
        // neither): a resumed ingest does not repeat the message. It goes
        // out ahead of the answer, from the same outbox.
        if let Some(text) = outcome.notice {
            let id = format!("media:{seq}:{idx}");
            crate::delivery::enqueue(sql, &id, crate::delivery::Kind::Reply, &inbound.reply_target, &text, p.now_ms())?;
        }
        out.extend(outcome.blocks);
    }
    Ok(out)
}

async fn ingest_one<P: Platform>(
    p: &P,
    cfg: &AgentConfig,
    session_key: &str,
    channel: crate::inbound::ChannelKind,
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
    let v: serde_json::Value = hearth_json::from_slice(&resp.body).map_err(|e| e.to_string())?;
    v["text"].as_str().map(str::to_owned).ok_or_else(|| "no text in the answer".to_owned())
}
