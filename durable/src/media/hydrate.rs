//! Hydration: before each model call, the media the request will show is
//! loaded (through the [`super::cache::MediaCache`]) into a [`Hydrated`] map;
//! what cannot be shown becomes a short text note.
//!
//! The bytes are checked against what the block declares: the providers
//! refuse an image block whose bytes are not an image (Anthropic: `Could not
//! process image`) or not the declared type (`Image does not match the
//! provided media type`), and the block would be replayed on every later
//! turn. Bytes of another image type are sent with their real type; bytes
//! that are no image (or no PDF) are not sent.

use super::cache::MediaCache;
use super::*;
use crate::llm::Hydrated;
use crate::ports::{LogLevel, ObjectStore, Platform};
use crate::settings::{AgentConfig, Provider};
use r2_layout::{Message, UserBlock, UserContent};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

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
        if let Some(why) = not_what_it_says(class, &bytes) {
            p.log(LogLevel::Warn, &format!("media {key} not sent: {why}"));
            notes.insert(key, why.into());
            continue;
        }
        budget -= bytes.len() as u64;
        media.insert(key, bytes);
    }
    let messages = rewrite_unshown(cfg, history, &media, &notes);
    Prepared { messages, media }
}

/// Why bytes loaded for a block of `class` must not be sent as it, if so.
fn not_what_it_says(class: MediaClass, bytes: &[u8]) -> Option<&'static str> {
    match (class, sniff(bytes)) {
        (MediaClass::Image, Some(t)) if classify(t) == MediaClass::Image => None,
        (MediaClass::Image, _) => Some("its bytes are not an image the model can read"),
        (MediaClass::Pdf, Some("application/pdf")) => None,
        (MediaClass::Pdf, _) => Some("its bytes are not a PDF"),
        _ => None,
    }
}

/// The type an image block's bytes really are, when it is not the declared one.
fn real_image_type(declared: &str, bytes: &[u8]) -> Option<&'static str> {
    sniff(bytes).filter(|t| classify(t) == MediaClass::Image && *t != essence(declared))
}

/// Images that are not hydrated become a note saying why (the encoders would
/// otherwise only say "not available"); hydrated ones whose bytes are another
/// image type get that type. Unchanged history is borrowed.
fn rewrite_unshown<'h>(
    cfg: &AgentConfig,
    history: &'h [Message],
    media: &Hydrated,
    notes: &HashMap<String, String>,
) -> Cow<'h, [Message]> {
    let unshown = |b: &UserBlock| match b {
        UserBlock::Image { r2_key, mime_type } => match media.get(r2_key) {
            None => true,
            Some(bytes) => real_image_type(mime_type, bytes).is_some(),
        },
        _ => false,
    };
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
            Message::User { content: UserContent::Blocks(bs), timestamp, sender, channel }
                if bs.iter().any(unshown) =>
            {
                Message::User {
                    content: UserContent::Blocks(
                        bs.iter()
                            .map(|b| match b {
                                UserBlock::Image { r2_key, mime_type } if media.contains_key(r2_key) => {
                                    let real = media.get(r2_key).and_then(|bytes| real_image_type(mime_type, bytes));
                                    UserBlock::Image {
                                        mime_type: real.map_or_else(|| mime_type.clone(), str::to_owned),
                                        r2_key: r2_key.clone(),
                                    }
                                }
                                UserBlock::Image { r2_key, .. } => {
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
                    sender: sender.clone(),
                    channel: channel.clone(),
                }
            }
            other => other.clone(),
        })
        .collect();
    Cow::Owned(rewritten)
}
