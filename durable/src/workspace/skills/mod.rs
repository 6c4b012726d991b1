//! Skills: `SKILL.md` files with YAML front matter (Agent Skills format),
//! listed in the prompt and loaded on demand with the `load_skill` tool.
//!
//! Agent-local skills (`agents/{id}/skills/{name}/SKILL.md`) shadow global
//! ones (`skills/{name}/SKILL.md`) of the same name. The list is sorted by
//! name so the prompt is byte-stable. A malformed skill is skipped with a
//! warning naming the problem and where it is; it never breaks the prompt.
//!
//! Reading one ([`parse_skill`]):
//! - The front matter is real YAML ([`super::yaml`], a parser with caps on
//!   size, nodes and depth), so nested `metadata:` maps, flow maps over
//!   several lines, block scalars and a description on the next line all
//!   read as other agents read them. `metadata` is kept as a value tree.
//! - The folder is the skill's identity: a `name:` that differs from it
//!   (common in published collections) is reported as a warning and the
//!   skill is listed under its folder's name.
//! - Invalid YAML whose only fault is a one-line plain value containing
//!   `: ` is read a second time with that value quoted ([`lenient`]), with a
//!   warning; any other invalid front matter is an error with its line.
//! - A SKILL.md may be up to [`MAX_SKILL_BYTES`] (256 KiB: the largest public
//!   skills are ~128 KB). `load_skill` returns a large one in parts.
//!
//! Compatibility: when a SKILL.md is read ([`unavailable`], see [`needs`]),
//! a skill Hearth can never run is left out, with one warning per version of
//! the file: a `command-tool` Hearth lacks, programs, environment variables
//! or an operating system its metadata requires, or `compatibility` text
//! asking for what a Worker cannot offer. `allowed-tools` is a hint, not a
//! requirement ([`allowed_tools_hint`]): every session lists every skill
//! Hearth can run, and `load_skill` says which of the tools it names the
//! session does not have (`Bash`, or `write_file` in a group).
//!
//! Companion files (`skills/{name}/reference.md`, `scripts/x.py`) are read
//! as text through `load_skill`'s `file` argument, confined to the skill's
//! folder ([`companion_key`]).

mod lenient;
pub mod needs;

use super::front_matter;
use super::yaml::{self, Yaml};
pub use needs::{allowed_tools_hint, tools_missing, unavailable, Needs, UNAVAILABLE_NEEDS};

/// Largest SKILL.md read (front matter and body): twice the largest skill
/// seen in public collections (128 KB). `load_skill` hands out larger than
/// a tool result in parts.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skill {
    /// Its folder's name (see the module docs).
    pub name: String,
    pub description: String,
    pub compatibility: Option<String>,
    pub allowed_tools: Vec<String>,
    /// `command-tool`: the tool OpenClaw's slash command for it calls,
    /// which its instructions use too.
    pub command_tool: Option<String>,
    /// The `metadata` map as written (`Yaml::Null` without one).
    pub metadata: Yaml,
    /// Requirements declared in the front matter ([`needs`]).
    pub needs: Needs,
    /// `disable-model-invocation: true`: only a person may start it.
    pub model_may_not_invoke: bool,
    /// The R2 key of its SKILL.md.
    pub key: String,
    pub local: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error(
        "no YAML front matter: SKILL.md must start with a '---' line, then `name:` and `description:` lines, then a '---' line"
    )]
    NoFrontMatter,
    #[error("front matter is not valid YAML: {0}")]
    Yaml(String),
    #[error("front matter has no description (a `description:` line saying what the skill does and when to use it)")]
    NoDescription,
    #[error("`{0}` in the front matter must be text, not a list or a map")]
    NotText(&'static str),
    #[error("folder name {0:?} is not a skill name: use 1-64 characters of a-z, 0-9 and '-'")]
    BadFolder(String),
    #[error("SKILL.md is {0} bytes; skills up to {MAX_SKILL_BYTES} bytes (256 KiB) are read")]
    TooLarge(usize),
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A YAML error with its line counted in SKILL.md (the front matter starts
/// on line 2, after the opening `---`).
fn in_file(e: &yaml::YamlError) -> String {
    format!("line {}, column {} of SKILL.md: {}", e.line + 1, e.column, e.message)
}

/// The first line (1-based, of `yaml`) left by an unresolved git merge.
fn conflict_marker(yaml: &str) -> Option<usize> {
    let marker = |l: &str| ["<<<<<<< ", ">>>>>>> "].iter().any(|m| l.starts_with(m)) || l.trim_end() == "=======";
    yaml.lines().position(marker).map(|i| i + 1)
}

/// Parses a SKILL.md found in folder `dir_name` at `key`. Returns the skill
/// and warnings worth a log line (it is usable, but something is off).
pub fn parse_skill(dir_name: &str, key: &str, local: bool, text: &str) -> Result<(Skill, Vec<String>), SkillError> {
    if text.len() > MAX_SKILL_BYTES {
        return Err(SkillError::TooLarge(text.len()));
    }
    if !valid_name(dir_name) {
        return Err(SkillError::BadFolder(dir_name.to_owned()));
    }
    let fm = front_matter::split(text).ok_or(SkillError::NoFrontMatter)?;
    let mut warnings = Vec::new();
    let tree = match yaml::parse_map(fm.yaml) {
        Ok(tree) => tree,
        Err(strict) => {
            let second = lenient::quote_plain_values(fm.yaml)
                .and_then(|(fixed, keys)| yaml::parse_map(&fixed).ok().map(|tree| (tree, keys)));
            let Some((tree, keys)) = second else {
                return Err(SkillError::Yaml(match conflict_marker(fm.yaml) {
                    Some(line) => {
                        format!("line {} of SKILL.md is a merge-conflict marker: resolve the conflict", line + 1)
                    }
                    None => in_file(&strict),
                }));
            };
            warnings.push(format!(
                "front matter is not valid YAML ({}); read with the value of {} as plain text: quote it in the file",
                in_file(&strict),
                keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ));
            tree
        }
    };
    let text_of = |k: &'static str| match tree.get(k) {
        None | Some(Yaml::Null) => Ok(None),
        Some(v) => v.as_str().map(|s| Some(s.to_owned())).ok_or(SkillError::NotText(k)),
    };
    if let Some(name) = text_of("name")? {
        let name = name.trim();
        if name != dir_name {
            warnings.push(format!(
                "its name {name:?} differs from its folder {dir_name:?} (the Agent Skills format wants them equal): listed as {dir_name:?}"
            ));
        }
    }
    let description = text_of("description")?.map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "));
    let description = description.filter(|d| !d.is_empty()).ok_or(SkillError::NoDescription)?;
    let allowed_tools = match tree.get("allowed-tools") {
        Some(Yaml::Str(s)) => s.split([' ', ',']).filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        Some(v) => v.strings(),
        None => vec![],
    };
    let compatibility = match tree.get("compatibility") {
        Some(v @ Yaml::List(_)) => Some(v.strings().join("; ")),
        _ => text_of("compatibility")?,
    };
    let skill = Skill {
        name: dir_name.to_owned(),
        description,
        compatibility: compatibility.filter(|c| !c.trim().is_empty()),
        allowed_tools,
        command_tool: text_of("command-tool")?.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()),
        metadata: tree.get("metadata").cloned().unwrap_or(Yaml::Null),
        needs: Needs::read(&tree),
        model_may_not_invoke: tree.get("disable-model-invocation") == Some(&Yaml::Bool(true)),
        key: key.to_owned(),
        local,
    };
    Ok((skill, warnings))
}

/// Local skills first, then global ones not shadowed; sorted by name.
pub fn merge(local: Vec<Skill>, global: Vec<Skill>) -> Vec<Skill> {
    let mut all = local;
    for g in global {
        if !all.iter().any(|s| s.name == g.name) {
            all.push(g);
        }
    }
    crate::order::sort_by(&mut all, |a, b| a.name.cmp(&b.name));
    all
}

impl Skill {
    /// The skill's folder, `…/skills/{name}/` (its SKILL.md's key without the file name).
    pub fn folder(&self) -> &str {
        self.key.strip_suffix("SKILL.md").unwrap_or(&self.key)
    }
}

/// Why a companion file path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompanionError {
    #[error("'file' is empty: name a file of the skill's folder, e.g. \"reference.md\"")]
    Empty,
    #[error(
        "'file' must be a path inside the skill's folder (like \"reference.md\" or \"scripts/run.py\"): no leading '/', no '..', '\\' or control characters"
    )]
    OutsideFolder,
    #[error("'file' is too long: with the skill's folder an R2 key is at most 1024 bytes")]
    TooLong,
}

/// The R2 key of `file` in `skill`'s folder. `file` is relative to the
/// folder (a leading `./`, as skills write their links, is dropped); it can
/// never leave it: absolute paths, `..` and `.` segments, backslashes and
/// control characters are refused.
pub fn companion_key(skill: &Skill, file: &str) -> Result<String, CompanionError> {
    let mut path = file.trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    if path.is_empty() {
        return Err(CompanionError::Empty);
    }
    let bad_segment = |seg: &str| seg.is_empty() || seg == "." || seg == "..";
    if path.starts_with('/')
        || path.contains('\\')
        || path.chars().any(char::is_control)
        || path.split('/').any(bad_segment)
    {
        return Err(CompanionError::OutsideFolder);
    }
    let key = format!("{}{path}", skill.folder());
    if key.len() > 1024 {
        return Err(CompanionError::TooLong);
    }
    Ok(key)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The "Skills (Mandatory Scan)" section body, at most about `max_chars`
/// characters: skills that do not fit are left out whole (never cut
/// mid-entry), and a line says how many.
pub fn render(skills: &[&Skill], max_chars: usize) -> String {
    let mut out = String::from(
        "Before you answer, scan these skills. If one fits the request, call `load_skill` with its name and follow it.\n<available_skills>\n",
    );
    let mut used = out.chars().count();
    let mut left_out = 0;
    for s in skills {
        let mut entry = String::from("  <skill>\n    <name>");
        entry.push_str(&xml_escape(&s.name));
        entry.push_str("</name>\n    <description>");
        entry.push_str(&xml_escape(&s.description));
        entry.push_str("</description>\n");
        if let Some(c) = &s.compatibility {
            entry.push_str("    <compatibility>");
            entry.push_str(&xml_escape(c));
            entry.push_str("</compatibility>\n");
        }
        entry.push_str("  </skill>\n");
        let n = entry.chars().count();
        if left_out > 0 || used + n > max_chars {
            left_out += 1;
            continue;
        }
        used += n;
        out.push_str(&entry);
    }
    out.push_str("</available_skills>");
    if left_out > 0 {
        out.push_str(&format!("\n({left_out} more skills are not listed: the list is full.)"));
    }
    out
}

#[cfg(test)]
mod tests;
