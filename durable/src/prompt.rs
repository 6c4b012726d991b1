//! The workspace, loaded from R2, assembled into the system prompt.
//!
//! The order and the privacy rule come from [`r2_layout::workspace::load_plan`];
//! this module only fetches and renders. Loading is cheap on a warm object:
//! the listings that are due ([`crate::overlay::listing`]: the agent's own
//! prefix on every turn, its daily notes and skills every minute, template,
//! defaults and global skills every five minutes) are made concurrently, and
//! only files whose etag changed are downloaded again (concurrently too), so
//! an edit made in R2 from outside shows up on the next turn without
//! re-reading everything, and a turn waits at most two R2 round trips.
//!
//! The system prompt holds only what is stable for the session; the time goes
//! into a `<system-reminder>` in the user's message, so the provider's prompt
//! cache keeps hitting from turn to turn.

use crate::identity::{parse_identity, strip_template_placeholders};
use crate::overlay::listing::{list_due, ListingCache, Want, AGENT_FOLDER_TTL_MS, SHARED_LAYER_TTL_MS};
use crate::overlay::resolve::{fetch_texts, resolve_listed, ListedLayers, OverlayPrefixes, TextCache};
use crate::overlay::Layer;
use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use crate::text::{truncate_chars, TRUNCATED_MARKER};
use crate::skills::{self, Skill};
use r2_layout::workspace::{load_plan, Section};
use r2_layout::{keys, AgentId, Scope, WorkspaceFile};
use std::collections::HashMap;
use std::rc::Rc;

/// Per-file budget (seed 000).
pub const MAX_FILE_CHARS: usize = 12_000;
/// Whole-workspace budget (seed 000): the workspace files and daily notes
/// together. The core scaffold, the skills list and the runtime line are
/// not workspace files and are always emitted whole.
pub const MAX_TOTAL_CHARS: usize = 60_000;

/// Files kept between turns (one cache per Session object).
#[derive(Debug, Default)]
pub struct WorkspaceCache {
    /// Every listing of a load, with its TTL rules.
    listings: ListingCache,
    /// Overlay files (agent, template, defaults, pinned) by key and etag.
    texts: TextCache,
    /// Today's and yesterday's daily notes by key and etag.
    notes: TextCache,
    /// Parsed skills by key and etag (a skipped skill is remembered as
    /// `None`, so its warning is logged once per version).
    skills: HashMap<String, (String, Option<Skill>)>,
}

impl WorkspaceCache {
    /// Forgets the cached listings of the agent's own folders (daily notes,
    /// skills), e.g. after this object wrote one; the agent's root is listed
    /// on every turn anyway, and shared layers cannot be written by it.
    pub fn invalidate_listings(&mut self) {
        self.listings.invalidate_agent_folders();
    }
}

/// What one turn's prompt is made of.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    pub files: HashMap<WorkspaceFile, Rc<str>>,
    /// The overlay layer each file came from.
    pub layers: HashMap<WorkspaceFile, Layer>,
    pub yesterday: Option<Rc<str>>,
    pub today: Option<Rc<str>>,
    /// Every readable skill Hearth can run, local shadowing global, sorted
    /// by name (a session shows those its tools allow: [`skills::eligible`]).
    pub skills: Vec<Skill>,
    /// Problems worth a log line (e.g. a malformed skill that was skipped).
    pub warnings: Vec<String>,
    /// R2 operations this load made (`/status`, the bench and tests show them).
    pub r2_ops: u32,
}

impl Workspace {
    pub fn bootstrap(&self) -> bool {
        self.files.contains_key(&WorkspaceFile::Bootstrap)
    }
}

/// Loads the files a session of `scope` may see. `today` and `yesterday` are
/// `YYYY-MM-DD` in the agent's time zone.
#[allow(clippy::too_many_arguments)]
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
    let private_ok = scope == Scope::Main;
    // Round trip 1: every listing that is due, concurrently.
    let prefixes = OverlayPrefixes::new(agent, overlay.template)?;
    let local_skills = keys::agent_skills_prefix(agent);
    // One listing narrowed to the two dates' common prefix finds both notes.
    let common: String = today.chars().zip(yesterday.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect();
    let notes_prefix = format!("{}{common}", keys::daily_notes_prefix(agent));
    let mut wants = prefixes.wants();
    let overlay_wants = wants.len();
    wants.push(Want { prefix: &local_skills, delimiter: None, ttl_ms: AGENT_FOLDER_TTL_MS });
    wants.push(Want { prefix: keys::GLOBAL_SKILLS_PREFIX, delimiter: None, ttl_ms: SHARED_LAYER_TTL_MS });
    if private_ok {
        wants.push(Want { prefix: &notes_prefix, delimiter: None, ttl_ms: AGENT_FOLDER_TTL_MS });
    }
    let (listed, mut ops) = list_due(store, &mut cache.listings, &wants, now_ms).await?;
    let layers = ListedLayers::new(&prefixes, &listed[..overlay_wants]);
    let (local_listing, global_listing) = (&listed[overlay_wants], &listed[overlay_wants + 1]);
    let note_reads: Vec<(String, Option<String>)> = match listed.get(overlay_wants + 2) {
        Some(notes) => [today, yesterday]
            .iter()
            .map(|date| {
                let key = keys::daily_note(agent, date);
                let etag = notes.iter().find(|o| o.key == key).map(|o| o.etag.clone());
                (key, etag)
            })
            .filter(|(_, etag)| etag.is_some())
            .collect(),
        None => Vec::new(),
    };

    // Round trip 2: what changed since the last turn, concurrently.
    let wanted: Vec<WorkspaceFile> = WorkspaceFile::ALL.into_iter().filter(|f| private_ok || !f.is_private()).collect();
    let hearth_tools = crate::tools::all_tool_names();
    let WorkspaceCache { texts, notes, skills: skill_cache, .. } = cache;
    let mut warnings = Vec::new();
    let (resolved, note_texts, found_skills) = futures::future::join3(
        resolve_listed(store, agent, overlay.template, &layers, overlay.pins, overlay.values, &wanted, texts),
        fetch_texts(store, &note_reads, notes),
        load_skills(store, (&local_skills, local_listing), global_listing, &hearth_tools, skill_cache, &mut warnings),
    )
    .await;
    let (resolved, n) = resolved?;
    ops += n;
    let (note_texts, n) = note_texts?;
    ops += n;
    let (found_skills, n) = found_skills?;
    ops += n;
    cache.notes.retain_keys(note_reads.iter().map(|(k, _)| k.as_str()));

    let mut ws = Workspace {
        files: resolved.files,
        layers: resolved.layers,
        skills: found_skills,
        warnings,
        ..Default::default()
    };
    for ((key, _), text) in note_reads.iter().zip(note_texts) {
        if *key == keys::daily_note(agent, today) {
            ws.today = text;
        } else {
            ws.yesterday = text;
        }
    }
    ws.r2_ops = ops;
    Ok(ws)
}

/// Agent-local and global skills from their listings, each SKILL.md parsed
/// once per etag (changed ones read concurrently). A skill that is malformed
/// or needs what Hearth does not have is left out with one warning per
/// version. Returns them merged (local shadowing global) and the R2 reads.
async fn load_skills<S: ObjectStore>(
    store: &S,
    (local_prefix, local): (&str, &[ObjectInfo]),
    global: &[ObjectInfo],
    hearth_tools: &[&str],
    cache: &mut HashMap<String, (String, Option<Skill>)>,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Skill>, u32), StorageError> {
    // (info, folder name, local) of every `{prefix}{name}/SKILL.md`.
    let mut found: Vec<(&ObjectInfo, &str, bool)> = Vec::new();
    for (prefix, listing, is_local) in [(local_prefix, local, true), (keys::GLOBAL_SKILLS_PREFIX, global, false)] {
        for info in listing {
            let dir = info.key.strip_prefix(prefix).and_then(|r| r.strip_suffix("/SKILL.md"));
            if let Some(dir) = dir.filter(|d| !d.is_empty() && !d.contains('/')) {
                found.push((info, dir, is_local));
            }
        }
    }
    let stale = |info: &ObjectInfo| cache.get(&info.key).is_none_or(|(etag, _)| *etag != info.etag);
    let to_read: Vec<&(&ObjectInfo, &str, bool)> = found.iter().filter(|(info, ..)| stale(info)).collect();
    let read = futures::future::join_all(to_read.iter().map(|(info, ..)| store.get(&info.key))).await;
    let ops = to_read.len() as u32;
    for ((info, dir, is_local), got) in to_read.into_iter().zip(read) {
        let parsed = match got? {
            Some(obj) => match skills::parse_skill(dir, &info.key, *is_local, &String::from_utf8_lossy(&obj.body)) {
                Ok(skill) => match skills::unavailable(&skill, hearth_tools) {
                    None => Some(skill),
                    Some(why) => {
                        warnings.push(format!("leaving out skill {}: {why}", info.key));
                        None
                    }
                },
                Err(e) => {
                    warnings.push(format!("skipping skill {}: {e}", info.key));
                    None
                }
            },
            None => None, // deleted between list and get
        };
        cache.insert(info.key.clone(), (info.etag.clone(), parsed));
    }
    cache.retain(|key, _| found.iter().any(|(info, ..)| info.key == *key));
    let (mut local_skills, mut global_skills) = (Vec::new(), Vec::new());
    for (info, _, is_local) in &found {
        if let Some((_, Some(skill))) = cache.get(&info.key) {
            if *is_local { &mut local_skills } else { &mut global_skills }.push(skill.clone());
        }
    }
    Ok((skills::merge(local_skills, global_skills), ops))
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

/// Assembles the system prompt: sections in plan order. Each workspace file
/// (and daily note) is cut to [`MAX_FILE_CHARS`], and together they stay
/// within [`MAX_TOTAL_CHARS`]: once that is spent, the remaining files are
/// left out whole. The scaffold, the skills list and the runtime line are
/// outside the budget and always emitted.
pub fn build_system_prompt(ws: &Workspace, runtime: &RuntimeInfo<'_>) -> String {
    let plan = load_plan(runtime.scope, ws.bootstrap());
    let mut out = String::with_capacity(8 * 1024);
    let mut budget = MAX_TOTAL_CHARS;
    let marker_chars = TRUNCATED_MARKER.chars().count();
    for section in plan {
        let (body, budgeted): (Option<String>, bool) = match section {
            Section::Scaffold => (Some(SCAFFOLD.to_owned()), false),
            Section::File(f) => (file_body(ws, f), true),
            Section::Yesterday => (ws.yesterday.as_ref().map(|t| t.to_string()), true),
            Section::Today => (ws.today.as_ref().map(|t| t.to_string()), true),
            Section::Skills => {
                let eligible = skills::eligible(&ws.skills, runtime.tool_names);
                ((!eligible.is_empty()).then(|| skills::render(&eligible, MAX_FILE_CHARS)), false)
            }
            Section::Runtime => (Some(render_runtime(runtime)), false),
        };
        let Some(body) = body else { continue };
        let body = body.trim();
        if body.is_empty() {
            continue;
        }
        let body = if budgeted {
            let room = MAX_FILE_CHARS.min(budget);
            if room <= marker_chars {
                continue; // the workspace budget is spent: nothing of this file fits
            }
            let cut = truncate_chars(body, room);
            budget = budget.saturating_sub(cut.chars().count());
            cut
        } else {
            body.to_owned()
        };
        out.push_str("## ");
        out.push_str(section.title());
        out.push_str("\n\n");
        out.push_str(&body);
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out
}

/// A workspace file as the prompt shows it. HEARTBEAT.md only with
/// meaningful content; IDENTITY.md with its persona line; unfilled template
/// placeholders (`- **Name:** _(your name)_`) removed from every file but
/// the pinned guardrails, and a file that held nothing else is left out.
fn file_body(ws: &Workspace, file: WorkspaceFile) -> Option<String> {
    let text = ws.files.get(&file)?;
    if file.is_guardrail() {
        return Some(text.to_string());
    }
    let stripped = strip_template_placeholders(text);
    if file == WorkspaceFile::Identity {
        return Some(match parse_identity(text).persona_line() {
            Some(line) => format!("{line}\n\n{}", stripped.trim()),
            None => stripped.into_owned(),
        });
    }
    let only_placeholders =
        matches!(stripped, std::borrow::Cow::Owned(_)) && !hearth_schedule::heartbeat::is_meaningful(&stripped);
    if only_placeholders || (file == WorkspaceFile::Heartbeat && !hearth_schedule::heartbeat::is_meaningful(&stripped))
    {
        return None;
    }
    Some(stripped.into_owned())
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

/// The `<system-reminder>` put before the user's text: what changes each turn.
pub fn system_reminder(now_local: &str) -> String {
    format!("<system-reminder>Current time: {now_local}</system-reminder>")
}

#[cfg(test)]
mod tests;
