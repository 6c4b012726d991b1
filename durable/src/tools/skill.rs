//! `load_skill`: the instructions of a listed skill, on demand. Only the
//! skills this session lists ([`crate::workspace::skills::eligible`] for its tools) can
//! be loaded: a skill needing `write_file` is not loaded in a group.
//!
//! What the model gets is the SKILL.md body: the front matter is for the
//! loader (its name and description are already in the prompt's list). A
//! body longer than [`PART_CHARS`] (real skills reach 128 KB, a tool result
//! is at most [`crate::toolkit::MAX_RESULT_CHARS`]) comes in parts cut at
//! line ends: each part says which it is and how to ask for the next
//! (`{"name": …, "part": 2}`), so nothing is silently cut off.

use super::{ToolContext, ToolOutcome};
use crate::ports::ObjectStore;
use crate::workspace::front_matter;
use serde_json::{json, Value};

/// Most characters of a skill body in one result (the part's header line
/// fits in the rest of a tool result).
pub const PART_CHARS: usize = 30_000;

pub fn spec() -> crate::toolkit::ToolSpec {
    crate::toolkit::ToolSpec {
        name: "load_skill".into(),
        description: "Load the full instructions of one of your available skills by name. A long skill comes in \
parts: the result says so, and `part` asks for the next one."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "part": {"type": "integer", "minimum": 1, "description": "Which part of a long skill (default 1)"}
            },
            "required": ["name"]
        }),
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
    let listed = crate::workspace::skills::eligible(&ctx.workspace.skills, ctx.tool_names);
    let Some(skill) = listed.iter().find(|s| s.name == name.trim()) else {
        let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
        return ToolOutcome::err(format!("no skill named {name:?}; available: {}", names.join(", ")));
    };
    let name = &skill.name;
    let text = match ctx.store.get(&skill.key).await {
        Ok(Some(o)) => String::from_utf8_lossy(&o.body).into_owned(),
        Ok(None) => return ToolOutcome::err(format!("skill {name} was removed")),
        Err(e) => return ToolOutcome::err(format!("could not load skill {name}: {e}")),
    };
    let body = front_matter::split(&text).map_or(text.as_str(), |fm| fm.body).trim();
    let parts = split_parts(body, PART_CHARS);
    let count = parts.len();
    match parts.get(part - 1) {
        Some(text) if count == 1 => ToolOutcome::ok((*text).to_owned()),
        Some(text) => {
            let header = if part < count {
                format!(
                    "[Skill {name}, part {part} of {count}. Call load_skill with {{\"name\": \"{name}\", \"part\": {}}} for the next part.]",
                    part + 1
                )
            } else {
                format!("[Skill {name}, part {part} of {count}: the last.]")
            };
            ToolOutcome::ok(format!("{header}\n\n{text}"))
        }
        None => ToolOutcome::err(format!("skill {name} has {count} part(s); ask for part 1 to {count}")),
    }
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
