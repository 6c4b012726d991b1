//! The workspace, loaded from R2, assembled into the system prompt.
//!
//! The order and the privacy rule come from [`r2_layout::workspace::load_plan`];
//! this module only fetches and renders. Loading is cheap on a warm object:
//! one listing of the agent's prefix tells which files exist and their etags,
//! and only files whose etag changed are downloaded again, so an edit made in
//! R2 from outside shows up on the next turn without re-reading everything.
//!
//! The system prompt holds only what is stable for the session; the time goes
//! into a `<system-reminder>` in the user's message, so the provider's prompt
//! cache keeps hitting from turn to turn.

use crate::identity::parse_identity;
use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use crate::skills::{self, Skill};
use base64::Engine as _;
use r2_layout::workspace::{load_plan, Section};
use r2_layout::{keys, AgentId, Scope, WorkspaceFile};
use std::collections::HashMap;

/// Per-file budget (seed 000).
pub const MAX_FILE_CHARS: usize = 12_000;
/// Whole-workspace budget (seed 000).
pub const MAX_TOTAL_CHARS: usize = 60_000;
pub const TRUNCATED_MARKER: &str = "\n[truncated]";

/// How long listings of folders that change rarely (daily notes, skills) are
/// reused. The agent's own top-level files are listed on every turn.
pub const FOLDER_LISTING_TTL_MS: i64 = 60_000;

/// Files kept between turns, keyed by R2 key, with the etag they had.
#[derive(Debug, Default)]
pub struct WorkspaceCache {
    files: HashMap<String, (String, std::rc::Rc<str>)>,
    /// Folder listings by prefix, with the time they were made.
    listings: HashMap<String, (i64, Vec<ObjectInfo>)>,
    /// Parsed skills by key and etag (a bad skill is remembered as `None`).
    skills: HashMap<String, (String, Option<Skill>)>,
    /// Template/defaults listings and texts of the overlay (seed 001).
    overlay: crate::overlay::OverlayCache,
    /// R2 operations made by the last load (for the bench and tests).
    pub last_load_ops: u32,
}

impl WorkspaceCache {
    /// Forgets cached listings, e.g. after this object wrote a daily note.
    pub fn invalidate_listings(&mut self) {
        self.listings.clear();
    }
}

/// What one turn's prompt is made of.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    pub files: HashMap<WorkspaceFile, std::rc::Rc<str>>,
    pub yesterday: Option<std::rc::Rc<str>>,
    pub today: Option<std::rc::Rc<str>>,
    /// Every readable skill, local shadowing global, sorted by name.
    pub skills: Vec<Skill>,
    /// Problems worth a log line (e.g. a malformed skill that was skipped).
    pub warnings: Vec<String>,
}

impl Workspace {
    pub fn bootstrap(&self) -> bool {
        self.files.contains_key(&WorkspaceFile::Bootstrap)
    }
}

/// Loads the files a session of `scope` may see. `today` and `yesterday` are
/// `YYYY-MM-DD` in the agent's time zone.
pub async fn load_workspace<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    scope: Scope,
    today: &str,
    yesterday: &str,
    now_ms: i64,
    overlay: &crate::overlay::OverlayInputs<'_>,
    cache: &mut WorkspaceCache,
) -> Result<Workspace, StorageError> {
    let mut ops = 0;
    let mut ws = Workspace::default();
    let private_ok = scope == Scope::Main;
    // Each file through the overlay: agent → template → defaults, guardrails
    // pinned, placeholders substituted (one listing of the agent's prefix).
    let wanted: Vec<WorkspaceFile> = WorkspaceFile::ALL.into_iter().filter(|f| private_ok || !f.is_private()).collect();
    let resolved = crate::overlay::resolve_workspace(
        store, agent, overlay.template, overlay.pins, overlay.values, &wanted, &mut cache.overlay, now_ms,
    )
    .await?;
    ops += cache.overlay.last_ops;
    ws.files = resolved.files;
    if private_ok {
        // One listing narrowed to the two dates' common prefix finds both notes.
        let folder = keys::daily_notes_prefix(agent);
        let common: String = today.chars().zip(yesterday.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect();
        let notes = list_cached(store, &format!("{folder}{common}"), now_ms, cache, &mut ops).await?;
        for info in &notes {
            let slot = if info.key == keys::daily_note(agent, today) {
                &mut ws.today
            } else if info.key == keys::daily_note(agent, yesterday) {
                &mut ws.yesterday
            } else {
                continue;
            };
            *slot = fetch_cached(store, &info.key, &info.etag, cache, &mut ops).await?;
        }
    }
    ws.skills = load_skills(store, agent, now_ms, cache, &mut ops, &mut ws.warnings).await?;
    cache.last_load_ops = ops;
    Ok(ws)
}

/// A listing reused for [`FOLDER_LISTING_TTL_MS`].
async fn list_cached<S: ObjectStore>(
    store: &S,
    prefix: &str,
    now_ms: i64,
    cache: &mut WorkspaceCache,
    ops: &mut u32,
) -> Result<Vec<ObjectInfo>, StorageError> {
    if let Some((at, objects)) = cache.listings.get(prefix) {
        if now_ms - at < FOLDER_LISTING_TTL_MS && now_ms >= *at {
            return Ok(objects.clone());
        }
    }
    let mut objects = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(prefix, None, cursor.as_deref()).await?;
        *ops += 1;
        objects.extend(page.objects);
        match page.cursor {
            Some(c) if !c.is_empty() && Some(&c) != cursor.as_ref() => cursor = Some(c),
            _ => break,
        }
    }
    cache.listings.insert(prefix.to_owned(), (now_ms, objects.clone()));
    Ok(objects)
}

/// Agent-local and global skills, each SKILL.md parsed once per etag.
async fn load_skills<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    now_ms: i64,
    cache: &mut WorkspaceCache,
    ops: &mut u32,
    warnings: &mut Vec<String>,
) -> Result<Vec<Skill>, StorageError> {
    let mut found = [Vec::new(), Vec::new()];
    for (i, (prefix, local)) in [(keys::agent_skills_prefix(agent), true), (keys::GLOBAL_SKILLS_PREFIX.to_owned(), false)]
        .into_iter()
        .enumerate()
    {
        for info in list_cached(store, &prefix, now_ms, cache, ops).await? {
            let Some(dir) = info.key.strip_prefix(&prefix).and_then(|r| r.strip_suffix("/SKILL.md")) else { continue };
            if dir.contains('/') {
                continue;
            }
            let parsed = match cache.skills.get(&info.key) {
                Some((etag, parsed)) if *etag == info.etag => parsed.clone(),
                _ => {
                    *ops += 1;
                    let parsed = match store.get(&info.key).await? {
                        Some(obj) => match skills::parse_skill(dir, &info.key, local, &String::from_utf8_lossy(&obj.body)) {
                            Ok(s) => Some(s),
                            Err(e) => {
                                warnings.push(format!("skipping skill {}: {e}", info.key));
                                None
                            }
                        },
                        None => None,
                    };
                    cache.skills.insert(info.key.clone(), (info.etag.clone(), parsed.clone()));
                    parsed
                }
            };
            found[i].extend(parsed);
        }
    }
    let [local, global] = found;
    Ok(skills::merge(local, global))
}

async fn fetch_cached<S: ObjectStore>(
    store: &S,
    key: &str,
    etag: &str,
    cache: &mut WorkspaceCache,
    ops: &mut u32,
) -> Result<Option<std::rc::Rc<str>>, StorageError> {
    if let Some((cached_etag, text)) = cache.files.get(key) {
        if cached_etag == etag {
            return Ok(Some(text.clone()));
        }
    }
    *ops += 1;
    match store.get(key).await? {
        Some(obj) => {
            let text: std::rc::Rc<str> = String::from_utf8_lossy(&obj.body).into();
            cache.files.insert(key.to_owned(), (obj.info.etag.clone(), text.clone()));
            Ok(Some(text))
        }
        None => Ok(None), // deleted between list and get
    }
}

/// Facts about the session that do not change from turn to turn.
#[derive(Debug, Clone)]
pub struct RuntimeInfo<'a> {
    pub agent: &'a str,
    pub session_key: &'a str,
    pub channel: &'a str,
    pub model: &'a str,
    pub timezone: &'a str,
    pub scope: Scope,
    /// Names of the session's tools (skills needing others are left out).
    pub tool_names: &'a [&'a str],
}

const SCAFFOLD: &str = "You are a personal AI agent running on Hearth. Your workspace files below \
define who you are, who you serve and how you work; follow them. Reply in the language of the \
person you talk to. Be concise: your replies are chat messages. Use your tools when they help; \
`read_file` reads any file of your workspace (e.g. `SOUL.md`, `memory/2026-01-31.md`).";

/// Assembles the system prompt: sections in plan order, each file within its
/// budget, the whole within the total budget.
pub fn build_system_prompt(ws: &Workspace, runtime: &RuntimeInfo<'_>) -> String {
    let plan = load_plan(runtime.scope, ws.bootstrap());
    let mut out = String::with_capacity(8 * 1024);
    let mut budget = MAX_TOTAL_CHARS;
    for section in plan {
        let body: Option<String> = match section {
            Section::Scaffold => Some(SCAFFOLD.to_owned()),
            Section::File(WorkspaceFile::Heartbeat) => ws
                .files
                .get(&WorkspaceFile::Heartbeat)
                .filter(|t| hearth_schedule::heartbeat::is_meaningful(t))
                .map(|t| t.to_string()),
            Section::File(WorkspaceFile::Identity) => ws.files.get(&WorkspaceFile::Identity).map(|t| {
                let body = crate::identity::without_placeholders(t);
                match parse_identity(t).persona_line() {
                    Some(line) => format!("{line}\n\n{}", body.trim()),
                    None => body,
                }
            }),
            Section::File(f) => ws.files.get(&f).map(|t| t.to_string()),
            Section::Yesterday => ws.yesterday.as_ref().map(|t| t.to_string()),
            Section::Today => ws.today.as_ref().map(|t| t.to_string()),
            Section::Skills => {
                let eligible = skills::eligible(&ws.skills, runtime.tool_names);
                (!eligible.is_empty()).then(|| skills::render(&eligible))
            }
            Section::Runtime => Some(render_runtime(runtime)),
        };
        let Some(body) = body else { continue };
        let body = truncate_chars(body.trim(), MAX_FILE_CHARS.min(budget));
        budget = budget.saturating_sub(body.chars().count());
        out.push_str("## ");
        out.push_str(section.title());
        out.push_str("\n\n");
        out.push_str(&body);
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out
}

fn render_runtime(r: &RuntimeInfo<'_>) -> String {
    let kind = match r.scope {
        Scope::Main => "main (your owner's private session)",
        Scope::Shared => "shared (not your owner's private session: never reveal private notes here)",
    };
    format!(
        "agent={} | session={} | kind={} | channel={} | model={} | timezone={}",
        r.agent, r.session_key, kind, r.channel, r.model, r.timezone
    )
}

/// Cuts `text` to at most `max` characters (never inside a UTF-8 sequence),
/// marking the cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(TRUNCATED_MARKER.chars().count());
    let end = text.char_indices().nth(keep).map(|(i, _)| i).unwrap_or(text.len());
    let mut s = text[..end].to_owned();
    s.push_str(TRUNCATED_MARKER);
    s
}

/// The `<system-reminder>` put before the user's text: what changes each turn.
pub fn system_reminder(now_local: &str) -> String {
    format!("<system-reminder>Current time: {now_local}</system-reminder>")
}

pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A text stand-in for media the model cannot take. When a transcript of it
/// comes next (voice, audio) the note says so instead of "not available".
pub fn file_note(mime: &str, filename: Option<&str>, transcript_follows: bool) -> String {
    let what = match filename {
        Some(f) if !f.is_empty() => format!("attached file {f:?} ({mime})"),
        _ => format!("attached file ({mime})"),
    };
    if transcript_follows {
        format!("[{what}; its transcript follows]")
    } else {
        format!("[{what}; its content is not available to you]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_utf8_and_marks() {
        let s = "é".repeat(20);
        let t = truncate_chars(&s, 15);
        assert_eq!(t.chars().count(), 15);
        assert!(t.ends_with("[truncated]"));
        assert_eq!(truncate_chars("short", 15), "short");
    }
}
