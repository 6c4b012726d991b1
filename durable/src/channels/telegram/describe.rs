//! A message without text, in words: what the model reads for a location, a
//! venue, a contact, a poll, a dice roll, a sticker, a story, a game, a
//! checklist, and the attachments to fetch. Without this a 🎲 in a DM was an
//! empty text block: refused by the provider, and in the history for good.

use super::wire::{Contact, Content, Location, Party, Poll, TgMessage};
use crate::inbound::context::clip;
use crate::inbound::InboundMedia;

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

fn coordinates(l: &Location) -> String {
    let mut s = format!("{:.6}, {:.6}", l.latitude, l.longitude);
    if let Some(acc) = l.horizontal_accuracy.filter(|a| *a > 0.0) {
        s.push_str(&format!(" (±{acc:.0} m)"));
    }
    s
}

fn contact(c: &Contact) -> String {
    let name = match &c.last_name {
        Some(l) if !l.trim().is_empty() => format!("{} {}", c.first_name.trim(), l.trim()),
        _ => c.first_name.trim().to_owned(),
    };
    let mut s = format!("contact: {name}");
    if !c.phone_number.trim().is_empty() {
        s.push_str(&format!(", phone {}", c.phone_number.trim()));
    }
    if let Some(id) = c.user_id {
        s.push_str(&format!(", Telegram user id {id}"));
    }
    // The vCard's own lines, without its envelope and any embedded photo.
    let card: Vec<&str> = c
        .vcard
        .as_deref()
        .unwrap_or("")
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

fn votes(n: u64) -> String {
    if n == 1 {
        "1 vote".into()
    } else {
        format!("{n} votes")
    }
}

fn poll(p: &Poll) -> String {
    let kind = if p.kind.as_deref() == Some("quiz") { "quiz" } else { "poll" };
    let counted = p.total_voter_count > 0;
    let options: Vec<String> = p
        .options
        .iter()
        .map(|o| {
            let text = clip(&o.text, MAX_PART_CHARS);
            if counted {
                format!("\"{text}\" ({})", votes(o.voter_count))
            } else {
                format!("\"{text}\"")
            }
        })
        .collect();
    let mut s = format!("{kind}: \"{}\"; options: {}", clip(&p.question, MAX_PART_CHARS), options.join(", "));
    if p.is_closed {
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

/// What `c` carries besides text, in words (no brackets), or `None` when it
/// carries nothing Hearth describes. Files (photos, voice, ...) are named
/// by [`file_noun`]; their bytes go to the model through the media path.
pub fn content(c: &Content) -> Option<String> {
    let s = if let Some(v) = &c.venue {
        let mut s = format!("venue: {}", v.title.trim());
        if !v.address.trim().is_empty() {
            s.push_str(&format!(", {}", v.address.trim()));
        }
        format!("{s} ({})", coordinates(&v.location))
    } else if let Some(l) = &c.location {
        let live = if l.live_period.is_some_and(|p| p > 0) { "live location" } else { "location" };
        format!("{live}: {}", coordinates(l))
    } else if let Some(ct) = &c.contact {
        contact(ct)
    } else if let Some(p) = &c.poll {
        poll(p)
    } else if let Some(d) = &c.dice {
        match dice_name(&d.emoji) {
            Some((name, max)) => format!("{} {name} thrown: {} (of {max})", d.emoji, d.value),
            None => format!("{} thrown: {}", d.emoji, d.value),
        }
    } else if let Some(s) = &c.sticker {
        let mut out = "sticker".to_owned();
        if let Some(e) = s.emoji.as_deref().filter(|e| !e.is_empty()) {
            out.push_str(&format!(" {e}"));
        }
        if let Some(set) = s.set_name.as_deref().filter(|n| !n.is_empty()) {
            out.push_str(&format!(" from the set \"{set}\""));
        }
        out
    } else if let Some(s) = &c.story {
        match &s.chat {
            Some(chat) => format!("a story from {}", display_name(chat)),
            None => "a story".to_owned(),
        }
    } else if let Some(g) = &c.game {
        format!("game \"{}\": {}", clip(&g.title, MAX_PART_CHARS), clip(&g.description, MAX_PART_CHARS))
    } else if let Some(cl) = &c.checklist {
        let tasks: Vec<String> = cl
            .tasks
            .iter()
            .map(|t| {
                let done = if t.completion_date.is_some_and(|d| d > 0) { "x" } else { " " };
                format!("[{done}] {}", clip(&t.text, MAX_PART_CHARS))
            })
            .collect();
        format!("checklist \"{}\": {}", clip(&cl.title, MAX_PART_CHARS), tasks.join("; "))
    } else if let Some(i) = &c.invoice {
        format!("invoice \"{}\": {}", clip(&i.title, MAX_PART_CHARS), clip(&i.description, MAX_PART_CHARS))
    } else if let Some(w) = &c.web_app_data {
        format!("data from the web app button \"{}\": {}", w.button_text, clip(&w.data, MAX_PART_CHARS))
    } else if let Some(u) = &c.users_shared {
        let users: Vec<String> = if u.users.is_empty() {
            u.user_ids.iter().map(|id| format!("id {id}")).collect()
        } else {
            u.users
                .iter()
                .map(|s| {
                    let p = Party {
                        id: s.user_id,
                        first_name: s.first_name.clone(),
                        last_name: s.last_name.clone(),
                        username: s.username.clone(),
                        ..Default::default()
                    };
                    match display_name(&p) {
                        n if n.starts_with("id ") => n,
                        n => format!("{n}, id {}", s.user_id),
                    }
                })
                .collect()
        };
        format!("shared users: {}", users.join("; "))
    } else if let Some(ch) = &c.chat_shared {
        let p = Party { id: ch.chat_id, title: ch.title.clone(), username: ch.username.clone(), ..Default::default() };
        format!("shared a chat: {} (id {})", display_name(&p), ch.chat_id)
    } else if c.giveaway.is_some() {
        "a giveaway".to_owned()
    } else if c.paid_media.is_some() {
        "paid media".to_owned()
    } else {
        return None;
    };
    Some(clip(&s, MAX_DESCRIPTION_CHARS))
}

/// The attachment `c` carries, as a noun: `photo`, `voice message`, `file "a.pdf"`.
pub fn file_noun(c: &Content) -> Option<String> {
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
pub fn summary(body: &str, c: &Content) -> String {
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
pub fn media(msg: &TgMessage) -> Vec<InboundMedia> {
    let c = &msg.content;
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
