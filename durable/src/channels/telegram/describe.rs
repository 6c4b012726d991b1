//! A message without text, in words: what the model reads for a location, a
//! venue, a contact, a poll, a dice roll, a sticker, a story, a game, a
//! checklist, and the attachments to fetch. Without this a 🎲 in a DM was an
//! empty text block: refused by the provider, and in the history for good.

use super::wire::{Party, TgMessage};
use crate::inbound::context::clip;
use crate::inbound::InboundMedia;
use serde_json::Value;

/// Largest file the Bot API's `getFile` serves (20 MB).
pub const TELEGRAM_DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;
/// Longest description (a poll with many options, a long vCard) kept.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Longest piece of free text (an option, a task, web app data) kept.
const MAX_PART_CHARS: usize = 200;

/// "Ana Lopez (@ana)", a chat's title, or its id when it has no name.
pub fn display_name(p: &Party) -> String {
    let name = match (&p.title, &p.first_name, &p.last_name) {
        (Some(t), _, _) if !t.trim().is_empty() => t.trim().to_owned(),
        (_, Some(f), Some(l)) => format!("{} {}", f.trim(), l.trim()).trim().to_owned(),
        (_, Some(f), None) => f.trim().to_owned(),
        (_, None, Some(l)) => l.trim().to_owned(),
        _ => String::new(),
    };
    match (&p.username, name.is_empty()) {
        (Some(u), false) => format!("{name} (@{u})"),
        (Some(u), true) => format!("@{u}"),
        (None, false) => name,
        (None, true) => format!("id {}", p.id),
    }
}

/// A string field of a JSON object, trimmed ("" when absent).
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("").trim()
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// A `Chat` or `User` object, named.
fn party(v: &Value) -> String {
    named(v, v.get("id").and_then(Value::as_i64).unwrap_or(0))
}

/// An object with a user's or a chat's name fields, and its id.
fn named(v: &Value, id: i64) -> String {
    display_name(&Party {
        id,
        kind: None,
        first_name: v.get("first_name").and_then(Value::as_str).map(str::to_owned),
        last_name: v.get("last_name").and_then(Value::as_str).map(str::to_owned),
        username: v.get("username").and_then(Value::as_str).map(str::to_owned),
        title: v.get("title").and_then(Value::as_str).map(str::to_owned),
    })
}

/// `41.899977, 12.501028 (±12 m)`, from a `Location` object.
fn coordinates(l: &Value) -> String {
    let mut s = format!("{:.6}, {:.6}", number(l, "latitude").unwrap_or(0.0), number(l, "longitude").unwrap_or(0.0));
    if let Some(acc) = number(l, "horizontal_accuracy").filter(|a| *a > 0.0) {
        s.push_str(&format!(" (±{acc:.0} m)"));
    }
    s
}

fn contact(c: &Value) -> String {
    let name = format!("{} {}", text(c, "first_name"), text(c, "last_name"));
    let mut s = format!("contact: {}", name.trim());
    if !text(c, "phone_number").is_empty() {
        s.push_str(&format!(", phone {}", text(c, "phone_number")));
    }
    if let Some(id) = c.get("user_id").and_then(Value::as_i64) {
        s.push_str(&format!(", Telegram user id {id}"));
    }
    // The vCard's own lines, without its envelope and any embedded photo.
    let card: Vec<&str> = text(c, "vcard")
        .lines()
        .map(str::trim)
        .filter(|l| {
            let up = l.to_ascii_uppercase();
            !l.is_empty() && !["BEGIN:", "END:", "VERSION:", "PHOTO"].iter().any(|p| up.starts_with(p))
        })
        .collect();
    if !card.is_empty() {
        s.push_str(&format!("; vCard: {}", card.join("; ")));
    }
    s
}

fn poll(p: &Value) -> String {
    let kind = if text(p, "type") == "quiz" { "quiz" } else { "poll" };
    let counted = p.get("total_voter_count").and_then(Value::as_u64).unwrap_or(0) > 0;
    let options: Vec<String> = list(p, "options")
        .iter()
        .map(|o| {
            let option = clip(text(o, "text"), MAX_PART_CHARS);
            match o.get("voter_count").and_then(Value::as_u64).filter(|_| counted) {
                Some(1) => format!("\"{option}\" (1 vote)"),
                Some(n) => format!("\"{option}\" ({n} votes)"),
                None => format!("\"{option}\""),
            }
        })
        .collect();
    let mut s = format!("{kind}: \"{}\"; options: {}", clip(text(p, "question"), MAX_PART_CHARS), options.join(", "));
    if p.get("is_closed").and_then(Value::as_bool) == Some(true) {
        s.push_str("; closed");
    }
    s
}

/// The animated emoji Telegram rolls, what it is called, and its highest value.
fn dice_name(emoji: &str) -> Option<(&'static str, i64)> {
    Some(match emoji {
        "🎲" => ("die", 6),
        "🎯" => ("darts", 6),
        "🏀" => ("basketball", 5),
        "⚽" | "⚽\u{fe0f}" => ("football", 5),
        "🎳" => ("bowling", 6),
        "🎰" => ("slot machine", 64),
        _ => return None,
    })
}

fn shared_users(u: &Value) -> String {
    let users: Vec<String> = match list(u, "users") {
        [] => list(u, "user_ids").iter().map(|id| format!("id {id}")).collect(),
        users => users
            .iter()
            .map(|s| {
                let id = s.get("user_id").and_then(Value::as_i64).unwrap_or(0);
                match named(s, id) {
                    n if n.starts_with("id ") => format!("id {id}"),
                    n => format!("{n}, id {id}"),
                }
            })
            .collect(),
    };
    format!("shared users: {}", users.join("; "))
}

/// What `m` carries besides text, in words (no brackets), or `None` when it
/// carries nothing Hearth describes. Files (photos, voice, ...) are named
/// by [`file_noun`]; their bytes go to the model through the media path.
pub fn content(m: &TgMessage) -> Option<String> {
    let field = |k: &str| m.other.get(k).filter(|v| v.is_object());
    let s = if let Some(v) = field("venue") {
        let mut s = format!("venue: {}", text(v, "title"));
        if !text(v, "address").is_empty() {
            s.push_str(&format!(", {}", text(v, "address")));
        }
        format!("{s} ({})", coordinates(v.get("location").unwrap_or(&Value::Null)))
    } else if let Some(l) = field("location") {
        let live = if number(l, "live_period").is_some_and(|p| p > 0.0) { "live location" } else { "location" };
        format!("{live}: {}", coordinates(l))
    } else if let Some(c) = field("contact") {
        contact(c)
    } else if let Some(p) = field("poll") {
        poll(p)
    } else if let Some(d) = field("dice") {
        let (emoji, value) = (text(d, "emoji"), d.get("value").and_then(Value::as_i64).unwrap_or(0));
        match dice_name(emoji) {
            Some((name, max)) => format!("{emoji} {name} thrown: {value} (of {max})"),
            None => format!("{emoji} thrown: {value}"),
        }
    } else if let Some(st) = &m.sticker {
        let mut out = "sticker".to_owned();
        if let Some(e) = st.emoji.as_deref().filter(|e| !e.is_empty()) {
            out.push_str(&format!(" {e}"));
        }
        if let Some(set) = st.set_name.as_deref().filter(|n| !n.is_empty()) {
            out.push_str(&format!(" from the set \"{set}\""));
        }
        out
    } else if let Some(story) = field("story") {
        match story.get("chat") {
            Some(chat) => format!("a story from {}", party(chat)),
            None => "a story".to_owned(),
        }
    } else if let Some(g) = field("game") {
        format!("game \"{}\": {}", clip(text(g, "title"), MAX_PART_CHARS), clip(text(g, "description"), MAX_PART_CHARS))
    } else if let Some(cl) = field("checklist") {
        let tasks: Vec<String> = list(cl, "tasks")
            .iter()
            .map(|t| {
                let done = t.get("completion_date").and_then(Value::as_i64).is_some_and(|d| d > 0);
                format!("[{}] {}", if done { "x" } else { " " }, clip(text(t, "text"), MAX_PART_CHARS))
            })
            .collect();
        format!("checklist \"{}\": {}", clip(text(cl, "title"), MAX_PART_CHARS), tasks.join("; "))
    } else if let Some(i) = field("invoice") {
        format!(
            "invoice \"{}\": {}",
            clip(text(i, "title"), MAX_PART_CHARS),
            clip(text(i, "description"), MAX_PART_CHARS)
        )
    } else if let Some(w) = field("web_app_data") {
        format!(
            "data from the web app button \"{}\": {}",
            text(w, "button_text"),
            clip(text(w, "data"), MAX_PART_CHARS)
        )
    } else if let Some(u) = field("users_shared") {
        shared_users(u)
    } else if let Some(c) = field("chat_shared") {
        let id = c.get("chat_id").and_then(Value::as_i64).unwrap_or(0);
        match named(c, id) {
            n if n.starts_with("id ") => format!("shared a chat: id {id}"),
            n => format!("shared a chat: {n} (id {id})"),
        }
    } else if field("giveaway").is_some() {
        "a giveaway".to_owned()
    } else if field("paid_media").is_some() {
        "paid media".to_owned()
    } else {
        return None;
    };
    Some(clip(&s, MAX_DESCRIPTION_CHARS))
}

/// The fields [`content`] reads: with [`TgMessage`]'s own, the ones that do
/// not make a message "a kind Hearth cannot read".
pub const DESCRIBED_FIELDS: &[&str] = &[
    "venue",
    "location",
    "contact",
    "poll",
    "dice",
    "story",
    "game",
    "checklist",
    "invoice",
    "web_app_data",
    "users_shared",
    "chat_shared",
    "giveaway",
    "paid_media",
];

/// The attachment `c` carries, as a noun: `photo`, `voice message`, `file "a.pdf"`.
pub fn file_noun(c: &TgMessage) -> Option<String> {
    let named = |base: &str, name: &Option<String>| match name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) => format!("{base} \"{n}\""),
        None => base.to_owned(),
    };
    Some(if !c.photo.is_empty() {
        "photo".to_owned()
    } else if let Some(a) = &c.animation {
        named("GIF", &a.file_name)
    } else if let Some(v) = &c.video {
        named("video", &v.file_name)
    } else if c.video_note.is_some() {
        "video message".to_owned()
    } else if c.voice.is_some() {
        "voice message".to_owned()
    } else if let Some(a) = &c.audio {
        named("audio file", &a.file_name)
    } else if let Some(d) = &c.document {
        named("file", &d.file_name)
    } else {
        return None;
    })
}

/// What a replied-to message held, for a context preface: its text, with
/// what else it carried in brackets first (`[photo] look at this`,
/// `[location: 41.9, 12.5]`).
pub fn summary(body: &str, c: &TgMessage) -> String {
    let mut parts = Vec::new();
    if let Some(what) = content(c).or_else(|| file_noun(c)) {
        parts.push(format!("[{what}]"));
    }
    if !body.trim().is_empty() {
        parts.push(body.trim().to_owned());
    }
    parts.join(" ")
}

/// The attachments to fetch, in the order the history shows them.
pub fn media(c: &TgMessage) -> Vec<InboundMedia> {
    let mut out = Vec::new();
    // The largest photo size Telegram will let us download.
    if let Some(p) = c
        .photo
        .iter()
        .filter(|p| p.file_size.unwrap_or(0) <= TELEGRAM_DOWNLOAD_LIMIT)
        .max_by_key(|p| (p.width as u64) * (p.height as u64))
        .or_else(|| c.photo.iter().min_by_key(|p| p.file_size.unwrap_or(0)))
    {
        out.push(InboundMedia {
            handle: p.file_id.clone(),
            mime_type: "image/jpeg".into(),
            filename: None,
            size: p.file_size,
            kind: "photo".into(),
        });
    }
    let files = [
        (&c.document, "document", "application/octet-stream"),
        (&c.voice, "voice", "audio/ogg"),
        (&c.audio, "audio", "audio/mpeg"),
        (&c.video, "video", "video/mp4"),
        (&c.video_note, "video_note", "video/mp4"),
    ];
    for (file, kind, default_mime) in files {
        if let Some(f) = file {
            out.push(InboundMedia {
                handle: f.file_id.clone(),
                mime_type: f.mime_type.clone().unwrap_or_else(|| default_mime.into()),
                filename: f.file_name.clone(),
                size: f.file_size,
                kind: kind.into(),
            });
        }
    }
    if let Some(s) = &c.sticker {
        // A still sticker is a WebP the model can look at. An animated
        // (Lottie) or video sticker cannot be shown: its still thumbnail
        // can (WebP or JPEG, the bytes tell which). The text names it either way.
        let still = if s.is_animated || s.is_video {
            s.thumbnail.as_ref().map(|t| (t.file_id.clone(), t.file_size))
        } else {
            Some((s.file_id.clone(), s.file_size))
        };
        if let Some((handle, size)) = still {
            out.push(InboundMedia {
                handle,
                mime_type: "image/webp".into(),
                filename: s.emoji.clone(),
                size,
                kind: "sticker".into(),
            });
        }
    }
    out
}
