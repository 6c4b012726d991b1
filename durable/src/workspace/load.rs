//! Loading a session's workspace from R2: what changed since the last turn,
//! and nothing else.
//!
//! The order and the privacy rule come from [`r2_layout::workspace::load_plan`];
//! this module only fetches. Loading is cheap on a warm object: the listings
//! that are due ([`super::listing`]: the agent's own prefix on every turn, its
//! daily notes and skills every minute, template, defaults and global skills
//! every five minutes) are made concurrently, and only files whose etag
//! changed are downloaded again (concurrently too), so an edit made in R2 from
//! outside shows up on the next turn without re-reading everything, and a turn
//! waits at most two R2 round trips.

use super::listing::{list_due, ListingCache, Want, AGENT_FOLDER_TTL_MS, SHARED_LAYER_TTL_MS};
use super::resolve::{fetch_texts, resolve_listed, ListedLayers, OverlayPrefixes, TextCache};
use super::skills::{self, Skill};
use super::Layer;
use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use r2_layout::{keys, AgentId, Scope, WorkspaceFile};
use std::collections::HashMap;
use std::rc::Rc;

/// Files kept between turns (one cache per Session object, and one in the
/// Agent object that hands new Session objects theirs, [`super::snapshot`]).
#[derive(Debug, Default)]
pub struct WorkspaceCache {
    /// Every listing of a load, with its TTL rules.
    pub(super) listings: ListingCache,
    /// Overlay files (agent, template, defaults, pinned) by key and etag.
    pub(super) texts: TextCache,
    /// Today's and yesterday's daily notes by key and etag.
    pub(super) notes: TextCache,
    /// Parsed skills by key and etag (a skipped skill is remembered as
    /// `None`, so its warning is logged once per version).
    pub(super) skills: HashMap<String, (String, Option<Skill>)>,
    /// The pins a handed-over cache was resolved with, for the turn that
    /// takes it (the Agent object's, so that turn asks for none).
    pub(super) handed_pins: Option<crate::protocol::pins::Pins>,
    /// R2 operations the Agent object made to hand it over: counted with
    /// the load that takes it (`/status`, the bench).
    handed_ops: u32,
}

impl WorkspaceCache {
    /// Whether nothing was ever loaded into it (a new or woken object).
    pub fn is_empty(&self) -> bool {
        self.listings.is_empty()
    }

    /// Counts `ops` (made elsewhere to hand this cache over) with its next load.
    pub fn count_handed_ops(&mut self, ops: u32) {
        self.handed_ops = self.handed_ops.saturating_add(ops);
    }

    /// The pins of a cache just handed over, once.
    pub fn take_handed_pins(&mut self) -> Option<crate::protocol::pins::Pins> {
        self.handed_pins.take()
    }

    /// The listing of `prefix` as last made (`delimited`: with `/`).
    pub fn listing(&self, prefix: &str, delimited: bool) -> Option<&[ObjectInfo]> {
        self.listings.get(prefix, delimited)
    }

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
    /// by name; every session lists them all (`allowed-tools` is a hint).
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
    overlay: &super::OverlayInputs<'_>,
    hearth_tools: &[&str],
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
    let WorkspaceCache { texts, notes, skills: skill_cache, .. } = cache;
    let mut warnings = Vec::new();
    let (resolved, note_texts, found_skills) = futures::future::join3(
        resolve_listed(store, agent, overlay.template, &layers, overlay.pins, overlay.values, &wanted, texts),
        fetch_texts(store, &note_reads, notes),
        load_skills(store, (&local_skills, local_listing), global_listing, hearth_tools, skill_cache, &mut warnings),
    )
    .await;
    let (resolved, n) = resolved?;
    ops += n;
    let (note_texts, n) = note_texts?;
    ops += n;
    let (found_skills, n) = found_skills?;
    ops += n;
    if private_ok {
        // A load that may not read the notes leaves them (the Agent object's
        // cache serves the main session too).
        cache.notes.retain_keys(note_reads.iter().map(|(k, _)| k.as_str()));
    }

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
    ws.r2_ops = ops.saturating_add(std::mem::take(&mut cache.handed_ops));
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
                Ok((skill, notes)) => {
                    warnings.extend(notes.into_iter().map(|n| format!("skill {}: {n}", info.key)));
                    match skills::unavailable(&skill, hearth_tools) {
                        None => {
                            if let Some(hint) = skills::allowed_tools_hint(&skill, hearth_tools) {
                                warnings.push(format!("skill {}: {hint}", info.key));
                            }
                            Some(skill)
                        }
                        Some(why) => {
                            warnings.push(format!("leaving out skill {}: {why}", info.key));
                            None
                        }
                    }
                }
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
