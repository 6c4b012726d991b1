//! The self-report tools of seed 000: `who_am_i`, `what_do_i_know` (MEMORY.md's
//! sections within the seed's caps) and `my_stats`.

use super::tool_context::{call_error, err, ok, MemoryToolContext};
use crate::ports::MemoryService;
use crate::protocol::memory::{MemoryCall, MemoryReply};
use crate::text::truncate_chars;
use crate::toolkit::ToolOutcome;
use crate::workspace::Workspace;
use r2_layout::{keys, WorkspaceFile};
use serde_json::{json, Value};

/// Seed 000: `who_am_i`'s soul excerpt.
pub const SOUL_EXCERPT_CHARS: usize = 2048;
/// Seed 000: `what_do_i_know` caps.
pub const KNOW_MAX_BYTES: usize = 6144;
pub const KNOW_MAX_BULLETS: usize = 10;

pub(super) fn who_am_i(ctx: &MemoryToolContext<'_>) -> ToolOutcome {
    let identity = ctx
        .workspace
        .files
        .get(&WorkspaceFile::Identity)
        .map(|t| crate::workspace::identity::parse_identity(t))
        .unwrap_or_default();
    let soul = ctx.workspace.files.get(&WorkspaceFile::Soul).map(|t| truncate_chars(t, SOUL_EXCERPT_CHARS));
    ok(json!({
        "agent_id": ctx.agent.as_str(),
        "model": ctx.model,
        "workspace_dir": keys::agent_prefix(ctx.agent),
        "identity": identity,
        "soul_excerpt": soul,
    }))
}

/// MEMORY.md as sections of bullets, within seed 000's caps.
pub fn what_do_i_know(ws: &Workspace, filter: Option<&str>) -> ToolOutcome {
    let Some(text) = ws.files.get(&WorkspaceFile::Memory) else {
        return ok(json!({"sections": [], "truncated": false, "note": "MEMORY.md does not exist yet"}));
    };
    ok(know_sections(text, filter))
}

/// Longest bullet (and heading) kept whole, in characters: one long bullet cannot
/// take a whole answer's budget.
pub const KNOW_MAX_ITEM_CHARS: usize = 500;
/// A bullet cut to fit the remaining bytes keeps at least this many characters, or
/// is left out.
const KNOW_MIN_CUT_CHARS: usize = 24;

struct KnowSection {
    heading: String,
    bullets: Vec<String>,
}

/// Bytes `s` takes as a JSON string (quotes and escapes included), as serde_json writes it.
fn json_len(s: &str) -> usize {
    2 + s.chars().map(json_char_len).sum::<usize>()
}

fn json_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// `s` cut to at most `max_chars` characters, with an ellipsis when cut.
fn cut_chars(s: &str, max_chars: usize) -> (String, bool) {
    match s.char_indices().nth(max_chars) {
        None => (s.to_owned(), false),
        Some((at, _)) => (format!("{}…", &s[..at]), true),
    }
}

/// The longest prefix of `s` (plus an ellipsis) whose JSON string fits `room` bytes.
fn cut_to_json_bytes(s: &str, room: usize) -> Option<String> {
    let mut used = 2 + '…'.len_utf8();
    let mut end = 0;
    for (i, c) in s.char_indices() {
        used += json_char_len(c);
        if used > room {
            break;
        }
        end = i + c.len_utf8();
    }
    let kept = &s[..end];
    (kept.chars().count() >= KNOW_MIN_CUT_CHARS).then(|| format!("{kept}…"))
}

/// Sections of MEMORY.md: headings (`#`...) with their items. Bullets (`-`, `*`, `+`,
/// `1.`) lose their marker; other non-empty lines are items too, so a MEMORY.md
/// written as plain lines still shows.
fn parse_sections(text: &str) -> Vec<KnowSection> {
    let mut sections: Vec<KnowSection> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with('#') {
            sections.push(KnowSection { heading: t.trim_start_matches('#').trim().to_owned(), bullets: Vec::new() });
            continue;
        }
        let numbered = t
            .split_once(". ")
            .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|(_, rest)| rest);
        let item = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .or_else(|| t.strip_prefix("+ "))
            .or(numbered)
            .unwrap_or(t)
            .trim();
        if item.is_empty() {
            continue;
        }
        if sections.is_empty() {
            sections.push(KnowSection { heading: String::new(), bullets: Vec::new() });
        }
        if let Some(last) = sections.last_mut() {
            last.bullets.push(item.to_owned());
        }
    }
    sections
}

/// Seed 000's `what_do_i_know`: at most [`KNOW_MAX_BULLETS`] bullets per section and
/// [`KNOW_MAX_BYTES`] of JSON in all. The budget goes to every heading first, then to
/// the sections' bullets in rounds (each section's first bullet, then each one's
/// second, ...), so one long section cannot crowd out the ones after it; a bullet that
/// does not fit whole is cut to the room left. `truncated` tells that something was
/// left out or cut.
pub fn know_sections(text: &str, filter: Option<&str>) -> Value {
    let filter = filter.map(str::trim).filter(|f| !f.is_empty()).map(str::to_lowercase);
    let mut truncated = false;
    let all = parse_sections(text);
    let headings: Vec<String> = all.iter().map(|s| s.heading.clone()).collect();
    let mut sections: Vec<KnowSection> = all
        .into_iter()
        .filter(|s| filter.as_ref().is_none_or(|f| s.heading.to_lowercase().contains(f.as_str())))
        .map(|mut s| {
            truncated |= s.bullets.len() > KNOW_MAX_BULLETS;
            s.bullets.truncate(KNOW_MAX_BULLETS);
            let (heading, cut) = cut_chars(&s.heading, KNOW_MAX_ITEM_CHARS);
            truncated |= cut;
            let bullets = s
                .bullets
                .iter()
                .map(|b| {
                    let (b, cut) = cut_chars(b, KNOW_MAX_ITEM_CHARS);
                    truncated |= cut;
                    b
                })
                .collect();
            KnowSection { heading, bullets }
        })
        .collect();

    // `{"sections":[...],"truncated":false}`: the wrapper, then what each part adds.
    let mut size = r#"{"sections":[],"truncated":false}"#.len();
    let mut kept: Vec<KnowSection> = Vec::new();
    for section in &mut sections {
        let cost = r#"{"heading":,"bullets":[]}"#.len() + json_len(&section.heading) + usize::from(!kept.is_empty());
        if size + cost > KNOW_MAX_BYTES {
            truncated = true;
            break;
        }
        size += cost;
        kept.push(KnowSection { heading: std::mem::take(&mut section.heading), bullets: Vec::new() });
    }
    truncated |= kept.len() < sections.len();
    let mut open = vec![true; kept.len()];
    for round in 0..KNOW_MAX_BULLETS {
        for (at, section) in kept.iter_mut().enumerate() {
            let Some(bullet) = sections.get(at).and_then(|s| s.bullets.get(round)) else { continue };
            if !open[at] {
                continue;
            }
            let comma = usize::from(round > 0);
            let cost = json_len(bullet) + comma;
            if size + cost <= KNOW_MAX_BYTES {
                size += cost;
                section.bullets.push(bullet.clone());
                continue;
            }
            // The budget is nearly spent: cut this bullet to the room left (or leave
            // it out), and stop adding to this section.
            truncated = true;
            open[at] = false;
            if let Some(cut) = cut_to_json_bytes(bullet, KNOW_MAX_BYTES.saturating_sub(size + comma)) {
                size += json_len(&cut) + comma;
                section.bullets.push(cut);
            }
        }
    }
    let sections: Vec<Value> = kept.into_iter().map(|s| json!({"heading": s.heading, "bullets": s.bullets})).collect();
    let mut out = json!({"sections": sections, "truncated": truncated});
    if let (Some(f), true) = (&filter, out["sections"].as_array().is_some_and(Vec::is_empty)) {
        let mut list = headings.into_iter().filter(|h| !h.is_empty()).collect::<Vec<_>>().join(" | ");
        list = cut_chars(&list, 2000).0;
        out["note"] = json!(format!("no section heading contains {f:?}; the headings are: {list}"));
    }
    out
}

/// Seed 000's `my_stats`. `memories_promoted` and `last_dream_ts` come from
/// dreaming (null before the first sweep); Hearth has no concept tags, so
/// that field is null rather than invented.
pub(super) async fn my_stats<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>) -> ToolOutcome {
    let mut files: Vec<&str> = ctx.workspace.files.keys().map(|f| f.file_name()).collect();
    crate::order::sort(&mut files);
    match memory.call(&MemoryCall::Stats { store: ctx.store.clone() }).await {
        Ok(MemoryReply::Stats { stats }) => ok(json!({
            "sessions_total": stats.sessions_total,
            "memories_stored": stats.entries,
            "memories_promoted": stats.memories_promoted,
            "last_dream_ts": stats.last_dream_ts,
            "recall_events_7d": stats.recall_events_7d,
            "top_concept_tags_7d": null,
            "workspace_files_present": files,
            "memory_store": stats.store,
            "notes": stats.notes,
            "archives": stats.archives,
            "distinct_terms": stats.vocabulary,
            "conversation_exchanges": stats.conversations,
        })),
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}
