//! Workspace writes for the agent: write, edit (exact replacement with
//! near-miss feedback) and delete. Only the owner's main session gets these
//! tools: nobody in a group can talk the agent into rewriting its soul.
//! Pinned guardrail files and the session archives are never writable.

use super::{check_path, ToolContext, ToolOutcome};
use crate::ports::{ObjectStore, PutOptions};
use r2_layout::keys;
use serde_json::{json, Value};

/// Largest file the agent may write.
pub const MAX_WRITE_BYTES: usize = 64 * 1024;

pub fn specs() -> Vec<crate::llm::ToolSpec> {
    let path = json!({"type": "string", "description": "Path relative to your workspace, e.g. MEMORY.md or memory/2026-01-31.md"});
    vec![
        crate::llm::ToolSpec {
            name: "write_file",
            description: "Create or replace a file of your workspace with the given content.",
            input_schema: json!({"type": "object", "properties": {"path": path, "content": {"type": "string"}}, "required": ["path", "content"]}),
        },
        crate::llm::ToolSpec {
            name: "edit_file",
            description: "Replace one exact occurrence of old_text with new_text in a workspace file. old_text must match exactly once; read the file first.",
            input_schema: json!({"type": "object", "properties": {"path": path, "old_text": {"type": "string"}, "new_text": {"type": "string"}}, "required": ["path", "old_text", "new_text"]}),
        },
        crate::llm::ToolSpec {
            name: "delete_file",
            description: "Delete a file of your workspace (e.g. BOOTSTRAP.md once commissioning is done).",
            input_schema: json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
        },
    ]
}

/// Paths the agent may never write: pinned guardrails and system-managed folders.
pub fn is_write_protected(path: &str) -> bool {
    crate::overlay::is_write_protected(path) || path.starts_with("sessions/") || path == "sessions"
}

fn writable_path<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> Result<String, ToolOutcome> {
    let raw = args.get("path").and_then(Value::as_str).ok_or_else(|| ToolOutcome::err("missing string argument 'path'"))?;
    let path = check_path(raw, ctx.scope).map_err(|e| ToolOutcome::err(e.to_string()))?;
    if path.is_empty() || path.ends_with('/') {
        return Err(ToolOutcome::err("path must name a file"));
    }
    if is_write_protected(&path) {
        return Err(ToolOutcome::err(format!("{path} is protected: guardrail files and session archives cannot be changed by you")));
    }
    Ok(path)
}

async fn put<S: ObjectStore>(ctx: &ToolContext<'_, S>, path: &str, content: String) -> ToolOutcome {
    if content.len() > MAX_WRITE_BYTES {
        return ToolOutcome::err(format!("content is {} bytes; the limit is {MAX_WRITE_BYTES}", content.len()));
    }
    let len = content.len();
    let opts = PutOptions { content_type: Some("text/markdown; charset=utf-8".into()), ..Default::default() };
    match ctx.store.put(&keys::workspace_key(ctx.agent, path), content.into_bytes(), opts).await {
        Ok(()) => ToolOutcome::ok(format!("wrote {path} ({len} bytes)")),
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
    put(ctx, &path, content.to_owned()).await
}

pub async fn delete_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let path = match writable_path(ctx, args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let key = keys::workspace_key(ctx.agent, &path);
    match ctx.store.head(&key).await {
        Ok(Some(_)) => {}
        Ok(None) => return ToolOutcome::err(format!("{path} does not exist")),
        Err(e) => return ToolOutcome::err(format!("could not check {path}: {e}")),
    }
    match ctx.store.delete(&[key]).await {
        Ok(()) => ToolOutcome::ok(format!("deleted {path}")),
        Err(e) => ToolOutcome::err(format!("could not delete {path}: {e}")),
    }
}

pub async fn edit_file<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let path = match writable_path(ctx, args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let (Some(old), Some(new)) = (args.get("old_text").and_then(Value::as_str), args.get("new_text").and_then(Value::as_str)) else {
        return ToolOutcome::err("missing string arguments 'old_text' and 'new_text'");
    };
    if old.is_empty() {
        return ToolOutcome::err("old_text is empty: use write_file to create a file");
    }
    let text = match ctx.store.get(&keys::workspace_key(ctx.agent, &path)).await {
        Ok(Some(o)) => String::from_utf8_lossy(&o.body).into_owned(),
        Ok(None) => return ToolOutcome::err(format!("{path} does not exist")),
        Err(e) => return ToolOutcome::err(format!("could not read {path}: {e}")),
    };
    match text.matches(old).count() {
        1 => put(ctx, &path, text.replacen(old, new, 1)).await,
        0 => ToolOutcome::err(near_miss(&text, old)),
        n => ToolOutcome::err(format!("old_text appears {n} times in {path}; include more surrounding text so it matches once")),
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Sørensen–Dice similarity over character bigrams (0..=1).
fn similarity(a: &str, b: &str) -> f32 {
    let grams = |s: &str| {
        let chars: Vec<char> = s.to_lowercase().chars().collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect::<Vec<_>>()
    };
    let (ga, mut gb) = (grams(a), grams(b));
    if ga.is_empty() || gb.is_empty() {
        return if a.trim() == b.trim() { 1.0 } else { 0.0 };
    }
    let total = ga.len() + gb.len();
    let mut common = 0;
    for g in ga {
        if let Some(i) = gb.iter().position(|x| *x == g) {
            gb.swap_remove(i);
            common += 1;
        }
    }
    2.0 * common as f32 / total as f32
}

/// Tells the model why `old` was not found and what is closest.
pub fn near_miss(text: &str, old: &str) -> String {
    if squash(text).contains(&squash(old)) {
        return "old_text was not found exactly, but matches when whitespace is ignored: copy the exact spacing and line breaks from the file (read it again)".into();
    }
    let first = old.lines().find(|l| !l.trim().is_empty()).unwrap_or(old).trim();
    let best = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i, l, similarity(l.trim(), first)))
        .max_by(|a, b| a.2.partial_cmp(&b.2).unwrap_or(std::cmp::Ordering::Equal));
    match best {
        Some((i, line, score)) if score >= 0.5 => {
            format!("old_text was not found. The closest line is line {}: {:?}. Read the file and copy the text exactly.", i + 1, line)
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
    fn protected_paths() {
        assert!(is_write_protected("GUARDRAILS.md") && is_write_protected("PLATFORM.md") && is_write_protected("CAPABILITIES.md"));
        assert!(is_write_protected("sessions/x.jsonl.gz"));
        assert!(!is_write_protected("SOUL.md") && !is_write_protected("memory/2026-01-01.md"));
    }
}
