//! Key grammar: every R2 key Hearth reads or writes is built here.
//!
//! Ids that become part of a key are validated first, so a hostile agent id or
//! session key can never climb out of its prefix (`..`, `/`, control bytes).

use std::fmt;

/// Why a piece of a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("agent id must be 1-64 characters of a-z, 0-9, '-' or '_' (got {0:?})")]
    BadAgentId(String),
    #[error("{what} is not a safe key segment: {value:?}")]
    BadSegment { what: &'static str, value: String },
}

/// A validated agent id: `[a-z0-9_-]{1,64}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(String);

impl AgentId {
    pub fn parse(raw: &str) -> Result<Self, KeyError> {
        let ok = !raw.is_empty()
            && raw.len() <= 64
            && raw.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(KeyError::BadAgentId(raw.to_owned()))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A segment that goes verbatim into a key (session ids, skill names, file
/// names): no `/`, no `..`, no control characters, not empty, at most 200 bytes.
pub fn check_segment(what: &'static str, value: &str) -> Result<(), KeyError> {
    let bad = value.is_empty()
        || value.len() > 200
        || value == "."
        || value == ".."
        || value.contains('/')
        || value.contains('\\')
        || value.chars().any(char::is_control);
    if bad {
        Err(KeyError::BadSegment { what, value: value.to_owned() })
    } else {
        Ok(())
    }
}

/// R2's limit on a key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// `agents/{agentId}/`: the agent's own prefix. Workspace files sit right under it.
pub fn agent_prefix(agent: &AgentId) -> String {
    format!("agents/{agent}/")
}

/// `agents/{agentId}/{path}` for a workspace path already checked by the caller.
pub fn workspace_key(agent: &AgentId, path: &str) -> String {
    format!("agents/{agent}/{path}")
}

/// Whether `agents/{agentId}/{path}` fits R2's [`MAX_KEY_BYTES`]: the limit
/// applies to the whole key, prefix included.
pub fn workspace_key_fits(agent: &AgentId, path: &str) -> bool {
    agent_prefix(agent).len() + path.len() <= MAX_KEY_BYTES
}

/// `history/{agentId}/`: the workspace history of an agent (every change to
/// a file of `agents/{agentId}/`, the version it replaced, who and why).
/// Outside the agent's prefix, so neither its listings nor its tools see it.
pub fn history_prefix(agent: &AgentId) -> String {
    format!("history/{agent}/")
}

/// `history/{agentId}/blobs/{sha256}`: the bytes of one version of a file,
/// named by their SHA-256 (lowercase hex): identical versions, of one file
/// or of several, are stored once.
pub fn history_blob(agent: &AgentId, sha256_hex: &str) -> Result<String, KeyError> {
    check_sha256(sha256_hex)?;
    Ok(format!("history/{agent}/blobs/{sha256_hex}"))
}

/// `history/{agentId}/blobs/`.
pub fn history_blobs_prefix(agent: &AgentId) -> String {
    format!("history/{agent}/blobs/")
}

/// `history/{agentId}/files/`: one folder per file path.
pub fn history_files_prefix(agent: &AgentId) -> String {
    format!("history/{agent}/files/")
}

/// Longest file-folder key part (`{path}/`) kept as the path itself; a
/// longer path is named `~{sha256 of the path}/` instead, so that a change
/// record's key (about 150 bytes after the folder) stays within
/// [`MAX_KEY_BYTES`].
pub const HISTORY_PATH_MAX_BYTES: usize = 700;

/// `history/{agentId}/files/{path}/` (or `files/~{sha256 of path}/` for a
/// path longer than [`HISTORY_PATH_MAX_BYTES`]): the changes of one file,
/// each an object `@{rev}~{after}~{before}` (see r2-layout's README).
/// `path_sha256` is asked only for a long path.
pub fn history_file_prefix(agent: &AgentId, path: &str, path_sha256: impl FnOnce() -> String) -> String {
    if path.len() <= HISTORY_PATH_MAX_BYTES {
        format!("history/{agent}/files/{path}/")
    } else {
        format!("history/{agent}/files/~{}/", path_sha256())
    }
}

/// `history/{agentId}/log/`: every change again, newest first (the key is
/// `{9999999999999 - at}-{nonce}`), for "what changed lately" and `/undo`.
pub fn history_log_prefix(agent: &AgentId) -> String {
    format!("history/{agent}/log/")
}

fn check_sha256(hex: &str) -> Result<(), KeyError> {
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(KeyError::BadSegment { what: "sha256", value: hex.to_owned() })
    }
}

/// `agents/{agentId}/memory/`: the daily notes folder.
pub fn daily_notes_prefix(agent: &AgentId) -> String {
    format!("agents/{agent}/memory/")
}

/// `agents/{agentId}/memory/YYYY-MM-DD.md`.
pub fn daily_note(agent: &AgentId, date: &str) -> String {
    format!("agents/{agent}/memory/{date}.md")
}

/// `agents/{agentId}/sessions/`.
pub fn sessions_prefix(agent: &AgentId) -> String {
    format!("agents/{agent}/sessions/")
}

/// How archive file names end (both kinds below); memory entry names do not,
/// so a compaction marker tells an entry from a file.
pub const ARCHIVE_SUFFIX: &str = ".jsonl.gz";

/// `agents/{agentId}/sessions/{sessionId}.jsonl.gz`: the archive written on reset.
pub fn session_archive(agent: &AgentId, session_id: &str) -> Result<String, KeyError> {
    check_segment("session id", session_id)?;
    Ok(format!("agents/{agent}/sessions/{session_id}.jsonl.gz"))
}

/// `agents/{agentId}/sessions/{sessionId}-part{timestamp}.jsonl.gz`: a compaction part.
pub fn session_part(agent: &AgentId, session_id: &str, timestamp_ms: i64) -> Result<String, KeyError> {
    check_segment("session id", session_id)?;
    Ok(format!("agents/{agent}/sessions/{session_id}-part{timestamp_ms}.jsonl.gz"))
}

/// `agents/{agentId}/skills/`.
pub fn agent_skills_prefix(agent: &AgentId) -> String {
    format!("agents/{agent}/skills/")
}

/// `agents/{agentId}/skills/{name}/SKILL.md`.
pub fn agent_skill(agent: &AgentId, name: &str) -> Result<String, KeyError> {
    check_segment("skill name", name)?;
    Ok(format!("agents/{agent}/skills/{name}/SKILL.md"))
}

/// `skills/`: global skills, shared by every agent.
pub const GLOBAL_SKILLS_PREFIX: &str = "skills/";

/// `skills/{name}/SKILL.md`.
pub fn global_skill(name: &str) -> Result<String, KeyError> {
    check_segment("skill name", name)?;
    Ok(format!("skills/{name}/SKILL.md"))
}

/// `media/{sessionKey}/`: everything a session received, deleted on reset.
pub fn media_prefix(session_key: &str) -> String {
    format!("media/{session_key}/")
}

/// `media/{sessionKey}/{uuid}.{ext}`.
pub fn media_object(session_key: &str, uuid: &str, ext: &str) -> Result<String, KeyError> {
    check_segment("media id", uuid)?;
    check_segment("extension", ext)?;
    Ok(format!("media/{session_key}/{uuid}.{ext}"))
}

/// `_catalog/defaults/workspace/{file}`: the bottom overlay layer (seed 001).
pub fn catalog_default(file: &str) -> String {
    format!("_catalog/defaults/workspace/{file}")
}

/// `_catalog/{template}/workspace/{file}`: the template overlay layer.
pub fn catalog_template(template: &str, file: &str) -> Result<String, KeyError> {
    check_segment("template", template)?;
    Ok(format!("_catalog/{template}/workspace/{file}"))
}

/// `_catalog/{template}/workspace-versions/{file}@sha256:{hex}`: pinned bytes.
pub fn catalog_version(template: &str, file: &str, sha256_hex: &str) -> Result<String, KeyError> {
    check_segment("template", template)?;
    if sha256_hex.len() != 64 || !sha256_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(KeyError::BadSegment { what: "sha256", value: sha256_hex.to_owned() });
    }
    Ok(format!("_catalog/{template}/workspace-versions/{file}@sha256:{sha256_hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn main_agent() -> AgentId {
        AgentId::parse("main").unwrap()
    }

    #[test]
    fn agent_ids_are_strict() {
        assert!(AgentId::parse("main").is_ok());
        assert!(AgentId::parse("work-2_b").is_ok());
        for bad in ["", "Main", "../x", "a/b", "a b", &"x".repeat(65)] {
            assert!(AgentId::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn keys_follow_seed_003() {
        let a = main_agent();
        assert_eq!(workspace_key(&a, "SOUL.md"), "agents/main/SOUL.md");
        assert_eq!(daily_note(&a, "2026-11-22"), "agents/main/memory/2026-11-22.md");
        assert_eq!(session_archive(&a, "abc").unwrap(), "agents/main/sessions/abc.jsonl.gz");
        assert_eq!(session_part(&a, "abc", 17).unwrap(), "agents/main/sessions/abc-part17.jsonl.gz");
        assert_eq!(agent_skill(&a, "notes").unwrap(), "agents/main/skills/notes/SKILL.md");
        assert_eq!(global_skill("notes").unwrap(), "skills/notes/SKILL.md");
        assert_eq!(media_object("agent:main:main", "u-1", "jpg").unwrap(), "media/agent:main:main/u-1.jpg");
        assert_eq!(catalog_default("SOUL.md"), "_catalog/defaults/workspace/SOUL.md");
        let hex = "a".repeat(64);
        assert_eq!(
            catalog_version("t", "GUARDRAILS.md", &hex).unwrap(),
            format!("_catalog/t/workspace-versions/GUARDRAILS.md@sha256:{hex}")
        );
    }

    #[test]
    fn key_length_counts_the_prefix() {
        let a = AgentId::parse("work-agent").unwrap();
        let room = MAX_KEY_BYTES - "agents/work-agent/".len();
        assert!(workspace_key_fits(&a, &"x".repeat(room)));
        assert!(!workspace_key_fits(&a, &"x".repeat(room + 1)));
        assert_eq!(workspace_key(&a, &"x".repeat(room)).len(), MAX_KEY_BYTES);
    }

    #[test]
    fn segments_cannot_escape() {
        let a = main_agent();
        for bad in ["..", "a/b", "a\\b", "", "x\u{0}"] {
            assert!(session_archive(&a, bad).is_err(), "{bad:?} accepted");
            assert!(global_skill(bad).is_err());
        }
        assert!(catalog_version("t", "G.md", "zz").is_err());
    }
}
