//! Workspace writes for the agent: write, edit (exact replacement with
//! near-miss feedback) and delete. Only the owner's main session gets these
//! tools: nobody in a group can talk the agent into rewriting its soul.
//! Pinned guardrail files and the session archives are never writable.
//! Every write goes through the workspace history ([`history::apply`]): the
//! version it replaces is kept, and `/undo` can revert it.

use super::{check_path, ToolContext, ToolOutcome};
use crate::ports::ObjectStore;
use crate::workspace::history::{self, Actor, Edit};
use r2_layout::keys;
use serde_json::Value;

/// Largest file the agent may write.
pub const MAX_WRITE_BYTES: usize = 64 * 1024;

/// The `path` argument's schema, shared by the three tools.
macro_rules! path {
    () => {
        r#"{"type": "string", "description": "Path relative to your workspace, e.g. MEMORY.md or memory/2026-01-31.md"}"#
    };
}

pub fn specs() -> Vec<crate::toolkit::ToolSpec> {
    use crate::toolkit::schema;
    vec![
        crate::toolkit::ToolSpec {
            name: "write_file".into(),
            description: "Create or replace a file of your workspace with the given content.".into(),
            input_schema: schema(concat!(r#"{"type": "object", "properties": {"path": "#, path!(), r#", "content": {"type": "string"}}, "required": ["path", "content"]}"#)), native: None },
        crate::toolkit::ToolSpec {
            name: "edit_file".into(),
            description: "Replace one exact occurrence of old_text with new_text in a workspace file. old_text must match exactly once; read the file first.".into(),
            input_schema: schema(concat!(r#"{"type": "object", "properties": {"path": "#, path!(), r#", "old_text": {"type": "string"}, "new_text": {"type": "string"}}, "required": ["path", "old_text", "new_text"]}"#)), native: None },
        crate::toolkit::ToolSpec {
            name: "delete_file".into(),
            description: "Delete a file of your workspace (e.g. BOOTSTRAP.md once commissioning is done).".into(),
            input_schema: schema(concat!(r#"{"type": "object", "properties": {"path": "#, path!(), r#"}, "required": ["path"]}"#)), native: None },
    ]
}

/// Paths the agent may never write: pinned guardrails, system-managed
/// folders, and `mcp.json` (which servers get the Worker's secrets is the
/// owner's decision, never something a message can talk the agent into).
pub fn is_write_protected(path: &str) -> bool {
    crate::workspace::is_write_protected(path)
        || path.starts_with("sessions/")
        || path == "sessions"
        || path == "mcp.json"
}

fn writable_path<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> Result<String, ToolOutcome> {
    let raw =
        args.get("path").and_then(Value::as_str).ok_or_else(|| ToolOutcome::err("missing string argument 'path'"))?;
    let path = check_path(raw, ctx.agent, ctx.scope).map_err(|e| ToolOutcome::err(e.to_string()))?;
    if path.is_empty() || path.ends_with('/') {
        return Err(ToolOutcome::err("path must name a file"));
    }
    if is_write_protected(&path) {
        return Err(ToolOutcome::err(format!(
            "{path} is protected: guardrail files, session archives and mcp.json cannot be changed by you"
        )));
    }
    Ok(path)
}

async fn put<S: ObjectStore>(ctx: &ToolContext<'_, S>, path: &str, content: String, tool: &str) -> ToolOutcome {
    if content.len() > MAX_WRITE_BYTES {
        return ToolOutcome::err(format!("content is {} bytes; the limit is {MAX_WRITE_BYTES}", content.len()));
    }
    let len = content.len();
    let edit = Edit::write(path, content, Actor::Agent, tool);
    match history::apply(ctx.store, ctx.agent, edit, ctx.now_ms, ctx.history_keep).await {
        Ok(Some(_)) => ToolOutcome::ok(format!("wrote {path} ({len} bytes)")),
        Ok(None) => ToolOutcome::ok(format!("{path} already had this content ({len} bytes); nothing changed")),
        Err(e) => ToolOutcome::err(format!("could not write {path}: {e}")),
    }
}

pub async fn write_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let path = match writable_path(ctx, args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let Some(content) = args.get("content").and_then(Value::as_str) else {
        return ToolOutcome::err("missing string argument 'content'");
    };
    put(ctx, &path, content.to_owned(), "write_file").await
}

pub async fn delete_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let path = match writable_path(ctx, args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let key = keys::workspace_key(ctx.agent, &path);
    match ctx.store.head(&key).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return ToolOutcome::err(match super::inherited(ctx.workspace, &path) {
                Some((_, layer)) => format!(
                    "{path} is inherited from {}: you have no copy of your own to delete",
                    super::layer_name(layer)
                ),
                None => format!("{path} does not exist"),
            })
        }
        Err(e) => return ToolOutcome::err(format!("could not check {path}: {e}")),
    }
    match history::apply(
        ctx.store,
        ctx.agent,
        Edit::delete(&path, Actor::Agent, "delete_file"),
        ctx.now_ms,
        ctx.history_keep,
    )
    .await
    {
        Ok(_) => ToolOutcome::ok(format!("deleted {path}")),
        Err(e) => ToolOutcome::err(format!("could not delete {path}: {e}")),
    }
}

pub async fn edit_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let path = match writable_path(ctx, args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let (Some(old), Some(new)) =
        (args.get("old_text").and_then(Value::as_str), args.get("new_text").and_then(Value::as_str))
    else {
        return ToolOutcome::err("missing string arguments 'old_text' and 'new_text'");
    };
    if old.is_empty() {
        return ToolOutcome::err("old_text is empty: use write_file to create a file");
    }
    // A file inherited through the overlay is edited as the text this turn
    // resolved; the result becomes the agent's own override.
    let text = match ctx.store.get(&keys::workspace_key(ctx.agent, &path)).await {
        Ok(Some(o)) => String::from_utf8_lossy(&o.body).into_owned(),
        Ok(None) => match super::inherited(ctx.workspace, &path) {
            Some((text, _)) => text.to_owned(),
            None => return ToolOutcome::err(format!("{path} does not exist")),
        },
        Err(e) => return ToolOutcome::err(format!("could not read {path}: {e}")),
    };
    match text.matches(old).count() {
        1 => put(ctx, &path, text.replacen(old, new, 1), "edit_file").await,
        0 => ToolOutcome::err(near_miss(&text, old)),
        n => ToolOutcome::err(format!(
            "old_text appears {n} times in {path}; include more surrounding text so it matches once"
        )),
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Bounds of the near-miss search, so a huge file (or one huge line) costs a
/// few hundred microseconds at most, far within the Worker's CPU budget:
/// lines beyond [`NEAR_MISS_MAX_LINES`] are not compared, and each compared
/// line (and the searched text) counts only its first [`NEAR_MISS_MAX_LINE_CHARS`].
pub const NEAR_MISS_MAX_LINES: usize = 2_000;
pub const NEAR_MISS_MAX_LINE_CHARS: usize = 200;
/// Whitespace-insensitive matching looks at this many bytes of the file.
pub const NEAR_MISS_MAX_SQUASH_BYTES: usize = 256 * 1024;

/// The sorted character bigrams of the first [`NEAR_MISS_MAX_LINE_CHARS`]
/// characters of `s`, lowercased.
fn bigrams(s: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = s.chars().take(NEAR_MISS_MAX_LINE_CHARS).flat_map(char::to_lowercase).collect();
    let mut g: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    crate::order::sort(&mut g);
    g
}

/// Sørensen–Dice similarity (0..=1) of two sorted bigram lists: a merge,
/// linear in their lengths.
fn dice(ga: &[(char, char)], gb: &[(char, char)]) -> f32 {
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < ga.len() && j < gb.len() {
        match ga[i].cmp(&gb[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f32 / (ga.len() + gb.len()).max(1) as f32
}

/// The longest prefix of `s` of at most `max` bytes, on a character boundary.
fn head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Tells the model why `old` was not found and what is closest.
pub fn near_miss(text: &str, old: &str) -> String {
    if squash(head(text, NEAR_MISS_MAX_SQUASH_BYTES)).contains(&squash(head(old, NEAR_MISS_MAX_SQUASH_BYTES))) {
        return "old_text was not found exactly, but matches when whitespace is ignored: copy the exact spacing and line breaks from the file (read it again)".into();
    }
    let first = old.lines().find(|l| !l.trim().is_empty()).unwrap_or(old).trim();
    let wanted = bigrams(first);
    let best = text
        .lines()
        .take(NEAR_MISS_MAX_LINES)
        .enumerate()
        .map(|(i, l)| {
            let l = l.trim();
            let score = if wanted.is_empty() { f32::from(u8::from(l == first)) } else { dice(&bigrams(l), &wanted) };
            (i, l, score)
        })
        .max_by(|a, b| a.2.partial_cmp(&b.2).unwrap_or(std::cmp::Ordering::Equal));
    match best {
        Some((i, line, score)) if score >= 0.5 => {
            let shown: String = line.chars().take(NEAR_MISS_MAX_LINE_CHARS).collect();
            format!(
                "old_text was not found. The closest line is line {}: {:?}. Read the file and copy the text exactly.",
                i + 1,
                shown
            )
        }
        _ => "old_text was not found and nothing in the file is close; read the file first".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_miss_feedback() {
        let text = "# Notes\n- Olga likes green tea\n- Meeting on Friday\n";
        assert!(near_miss(text, "-  Olga likes  green tea").contains("whitespace"));
        let m = near_miss(text, "- Olga likes black tea");
        assert!(m.contains("line 2") && m.contains("green tea"), "{m}");
        assert!(near_miss(text, "zzz qqq").contains("nothing in the file is close"));
    }

    #[test]
    fn near_miss_on_a_huge_file_stays_cheap() {
        // One 4 MB line and 100,000 short lines: the search is capped, so the
        // work is linear in the capped input. The bound is loose on purpose
        // (a busy CI machine); an uncapped, quadratic search takes minutes.
        let one_line = "lorem ipsum dolor sit amet ".repeat(150_000);
        let many_lines = "- Olga likes green tea\n".repeat(100_000);
        let old = "lorem ipsum dolor sit amet, consectetur ".repeat(500);
        for text in [&one_line, &many_lines] {
            let t = std::time::Instant::now();
            let m = near_miss(text, &old);
            assert!(t.elapsed() < std::time::Duration::from_secs(2), "{:?} for {} bytes", t.elapsed(), text.len());
            assert!(m.len() < 1_000, "the feedback is short: {}", m.len());
        }
        assert!(near_miss(&one_line, &format!("{}X", "lorem ipsum dolor sit amet ".repeat(7))).contains("line 1"));
    }

    #[test]
    fn protected_paths() {
        assert!(
            is_write_protected("GUARDRAILS.md")
                && is_write_protected("PLATFORM.md")
                && is_write_protected("CAPABILITIES.md")
        );
        assert!(is_write_protected("sessions/x.jsonl.gz"));
        assert!(is_write_protected("mcp.json"), "the agent cannot add an MCP server that would get secrets");
        assert!(!is_write_protected("SOUL.md") && !is_write_protected("memory/2026-01-01.md"));
    }
}
