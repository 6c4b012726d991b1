//! `load_skill`: the instructions of a listed skill, on demand, and the
//! files beside its SKILL.md. Every skill the session lists can be loaded:
//! `allowed-tools` is a hint (a skill written for Claude Code names `Bash`,
//! `Read`), so when it names tools this session lacks, the result says which,
//! and the model works with the tools it has.
//!
//! What the model gets is the SKILL.md body: the front matter is for the
//! loader (its name and description are already in the prompt's list). A
//! body longer than [`PART_CHARS`] (real skills reach 128 KB, a tool result
//! is at most [`crate::toolkit::MAX_RESULT_CHARS`]) comes in parts cut at
//! line ends: each part says which it is and how to ask for the next
//! (`{"name": …, "part": 2}`), so nothing is silently cut off. The first
//! part ends with the skill's other files, which `{"name": …, "file":
//! "reference.md"}` reads as text (scripts too: they are instructions to read
//! here, nothing runs them), confined to the skill's folder
//! ([`crate::workspace::skills::companion_key`]).

use super::{ToolContext, ToolOutcome};
use crate::ports::ObjectStore;
use crate::workspace::front_matter;
use crate::workspace::skills::{companion_key, tools_missing, Skill};
use serde_json::Value;

/// Most characters of a skill body in one result (the part's header line
/// fits in the rest of a tool result).
pub const PART_CHARS: usize = 30_000;
/// Largest companion file read (a skill's reference documents run to tens of KB).
pub const MAX_COMPANION_BYTES: u64 = 1024 * 1024;
/// Most characters of the list of a skill's files after its first part.
const MAX_LISTING_CHARS: usize = 1_000;

pub fn spec() -> crate::toolkit::ToolSpec {
    crate::toolkit::ToolSpec {
        name: "load_skill".into(),
        description: "Load the full instructions of one of your available skills by name. A long skill comes in \
parts: the result says so, and `part` asks for the next one. `file` reads one of the files beside the skill's \
SKILL.md (e.g. \"reference.md\", \"scripts/extract.py\"), as text."
            .into(),
        input_schema: crate::toolkit::schema(
            r#"{"type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "part": {"type": "integer", "minimum": 1, "description": "Which part of a long skill or file (default 1)"},
                    "file": {"type": "string", "description": "A file of the skill's folder, relative to it (default: its SKILL.md)"}
                },
                "required": ["name"]}"#,
        ),
        native: None,
    }
}

pub async fn load_skill<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return ToolOutcome::err("missing string argument 'name'");
    };
    let part = match args.get("part") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64().filter(|p| *p >= 1) {
            Some(p) => p as usize,
            None => return ToolOutcome::err("'part' must be a whole number from 1"),
        },
    };
    let file = match args.get("file") {
        None | Some(Value::Null) => None,
        Some(Value::String(f)) => Some(f.as_str()),
        Some(_) => return ToolOutcome::err("'file' must be a path (a string), e.g. \"reference.md\""),
    };
    let listed = &ctx.workspace.skills;
    let Some(skill) = listed.iter().find(|s| s.name == name.trim()) else {
        let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
        return ToolOutcome::err(format!("no skill named {name:?}; available: {}", names.join(", ")));
    };
    match file {
        Some(file) => companion(ctx, skill, file, part).await,
        None => instructions(ctx, skill, part).await,
    }
}

/// The SKILL.md body, part `part`; the first part says which tools of
/// `allowed-tools` this session lacks and ends with the skill's other files.
async fn instructions<S: ObjectStore>(ctx: &ToolContext<'_, S>, skill: &Skill, part: usize) -> ToolOutcome {
    let name = &skill.name;
    let text = match ctx.store.get(&skill.key).await {
        Ok(Some(o)) => String::from_utf8_lossy(&o.body).into_owned(),
        Ok(None) => return ToolOutcome::err(format!("skill {name} was removed")),
        Err(e) => return ToolOutcome::err(format!("could not load skill {name}: {e}")),
    };
    let body = front_matter::split(&text).map_or(text.as_str(), |fm| fm.body).trim();
    let parts = split_parts(body, PART_CHARS);
    let count = parts.len();
    let Some(text) = parts.get(part - 1) else {
        return ToolOutcome::err(format!("skill {name} has {count} part(s); ask for part 1 to {count}"));
    };
    let mut out = String::new();
    if count > 1 {
        out.push_str(&part_header(&format!("Skill {name}"), part, count, name, None));
        out.push_str("\n\n");
    }
    if part == 1 {
        let missing = tools_missing(skill, ctx.tool_names);
        if !missing.is_empty() {
            out.push_str(&format!(
                "[This skill's allowed-tools names tools you do not have here: {}. It was written for another \
agent: do what it asks with the tools you have, and say plainly what you cannot do.]\n\n",
                missing.join(", ")
            ));
        }
    }
    out.push_str(text);
    if part == 1 {
        if let Some(files) = other_files(ctx.store, skill).await.filter(|f| !f.is_empty()) {
            let quote = |s: &str| Value::from(s).to_string();
            out.push_str(&format!(
                "\n\n[Files beside this SKILL.md: {}. Read one with load_skill {{\"name\": {}, \"file\": {}}}.]",
                listing(&files),
                quote(name),
                quote(&files[0])
            ));
        }
    }
    ToolOutcome::ok(out)
}

/// `[Skill x, part 2 of 3. Call load_skill with {"name": "x", "part": 3} for the next part.]`
fn part_header(what: &str, part: usize, count: usize, name: &str, file: Option<&str>) -> String {
    if part < count {
        let quote = |s: &str| Value::from(s).to_string();
        let file = file.map(|f| format!(", \"file\": {}", quote(f))).unwrap_or_default();
        let next = format!("{{\"name\": {}{file}, \"part\": {}}}", quote(name), part + 1);
        format!("[{what}, part {part} of {count}. Call load_skill with {next} for the next part.]")
    } else {
        format!("[{what}, part {part} of {count}: the last.]")
    }
}

/// The skill's files other than SKILL.md, relative to its folder (the
/// first page of a listing); `None` if the listing failed.
async fn other_files<S: ObjectStore>(store: &S, skill: &Skill) -> Option<Vec<String>> {
    let folder = skill.folder();
    let page = store.list(folder, None, None).await.ok()?;
    Some(
        page.objects
            .iter()
            .filter_map(|o| o.key.strip_prefix(folder))
            .filter(|p| *p != "SKILL.md")
            .map(str::to_owned)
            .collect(),
    )
}

/// `a.md, scripts/b.py` within [`MAX_LISTING_CHARS`] (and how many more).
fn listing(files: &[String]) -> String {
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        if out.len() + f.len() > MAX_LISTING_CHARS {
            out.push_str(&format!(" and {} more", files.len() - i));
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(f);
    }
    out
}

/// A file of the skill's folder as text, part `part`.
async fn companion<S: ObjectStore>(ctx: &ToolContext<'_, S>, skill: &Skill, file: &str, part: usize) -> ToolOutcome {
    let name = &skill.name;
    let key = match companion_key(skill, file) {
        Ok(k) => k,
        Err(e) => return ToolOutcome::err(e.to_string()),
    };
    let path = &key[skill.folder().len()..];
    let info = match ctx.store.head(&key).await {
        Ok(Some(info)) => info,
        Ok(None) => {
            let files = other_files(ctx.store, skill).await.unwrap_or_default();
            let have = if files.is_empty() { "none besides SKILL.md".to_owned() } else { listing(&files) };
            return ToolOutcome::err(format!("skill {name} has no file {path:?}; its files: {have}"));
        }
        Err(e) => return ToolOutcome::err(format!("could not read {path} of skill {name}: {e}")),
    };
    if info.size > MAX_COMPANION_BYTES {
        return ToolOutcome::err(format!(
            "{path} of skill {name} is {} bytes; files up to {MAX_COMPANION_BYTES} bytes (1 MiB) are read",
            info.size
        ));
    }
    let bytes = match ctx.store.get(&key).await {
        Ok(Some(o)) => o.body,
        Ok(None) => return ToolOutcome::err(format!("{path} of skill {name} was removed")),
        Err(e) => return ToolOutcome::err(format!("could not read {path} of skill {name}: {e}")),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) if !t.contains('\0') => t,
        Ok(t) => return not_text(name, path, t.len()),
        Err(e) => return not_text(name, path, e.as_bytes().len()),
    };
    let parts = split_parts(&text, PART_CHARS);
    let count = parts.len();
    match parts.get(part - 1) {
        Some(text) if count == 1 => ToolOutcome::ok((*text).to_owned()),
        Some(text) => {
            let header = part_header(&format!("File {path} of skill {name}"), part, count, name, Some(path));
            ToolOutcome::ok(format!("{header}\n\n{text}"))
        }
        None => ToolOutcome::err(format!("{path} of skill {name} has {count} part(s); ask for part 1 to {count}")),
    }
}

fn not_text(name: &str, path: &str, size: usize) -> ToolOutcome {
    ToolOutcome::err(format!(
        "{path} of skill {name} is not a text file ({size} bytes: an image, an archive…): load_skill reads text files only"
    ))
}

/// `text` in pieces of at most `max` characters, cut after a line end when
/// one is in the piece (else at a character boundary). Never empty.
fn split_parts(text: &str, max: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > max {
        // The byte index just past `max` characters.
        let limit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        let cut = rest[..limit].rfind('\n').map_or(limit, |i| i + 1);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    parts.push(rest);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_cut_at_line_ends_and_lose_nothing() {
        let text = "line one\nline two\nline three\n".repeat(3);
        let parts = split_parts(&text, 25);
        assert!(parts.iter().all(|p| p.chars().count() <= 25 && p.ends_with('\n')), "{parts:?}");
        assert_eq!(parts.concat(), text);
        let one_long_line = "é".repeat(70);
        let parts = split_parts(&one_long_line, 30);
        assert_eq!(parts.iter().map(|p| p.chars().count()).collect::<Vec<_>>(), [30, 30, 10]);
        assert_eq!(split_parts("", 10), [""]);
    }
}
