//! A workspace file as the model sees it ([`shown_text`]): without its
//! front matter ([`super::front_matter`]) and without the fill-in hints of
//! the template it was made from, so an unedited template from Hearth,
//! OpenClaw, nanobot or PicoClaw never puts `(your name)` into a prompt.
//! The prompt and the heartbeat both judge a file on this text, so a file
//! the prompt leaves out never costs a heartbeat run either.
//!
//! A line is an unfilled hint (outside code fences and HTML comments) when
//! it is, after an optional list marker:
//! - a hint in emphasis: `_(pick something you like)_`, `*(…)*`;
//! - `Key: value` (`**Key:**`, `**Key**:` or plain) whose value is a hint in
//!   emphasis, a `<name>` placeholder, or `(…)` that is either a bullet's
//!   bold field (a form: `- **Language**: (preferred language)`) or reads
//!   like a hint (below);
//! - a bullet `Key:` with nothing after it and nothing but hints under it
//!   (`- **Name:**` alone, or over an indented `_(…)_`);
//! - an empty bullet (`- `);
//! - `(…)` alone on its line that reads like a hint, or that is all there
//!   is between a heading and the next heading (`## Notes` / `(Things to
//!   remember)`);
//! - in USER.md only: a run of checkbox items none of which is ticked, the
//!   multiple-choice form of nanobot's template (`- [ ] Casual`), not tasks.
//!   HEARTBEAT.md's boxes stay tasks;
//! - a heading whose section held only such hints (`## Topics of Interest`
//!   over three empty bullets).
//!
//! `(…)` reads like a hint when it speaks to the reader (`you`, `your`,
//! `you're`), gives an example (`e.g.`), says `optional`, starts with an
//! instruction (`add`, `describe`, `edit`, `enter`, `fill`, `insert`,
//! `list`, `pick`, `replace`), or offers alternatives (`casual/formal`).
//! Text a person wrote in parentheses inside a sentence, or `Note: (see
//! below)`, stays.

use super::front_matter;
use r2_layout::WorkspaceFile;
use std::borrow::Cow;

/// A workspace file's text as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown<'a> {
    pub text: Cow<'a, str>,
    /// Front matter or hints were taken out (a file left with nothing
    /// meaningful is then left out whole).
    pub trimmed: bool,
}

/// `text` of `file` without front matter and, except in the pinned
/// guardrail files (shown as accepted), without fill-in hints.
pub fn shown_text(file: WorkspaceFile, text: &str) -> Shown<'_> {
    let body = front_matter::body_for_prompt(text);
    let had_front_matter = body.len() != text.len();
    if file.is_guardrail() {
        return Shown { text: Cow::Borrowed(body), trimmed: had_front_matter };
    }
    let stripped = strip_fill_ins(body, file == WorkspaceFile::User);
    let trimmed = had_front_matter || matches!(stripped, Cow::Owned(_));
    Shown { text: stripped, trimmed }
}

/// Whether `(inner)` reads like a template's hint (see the module docs).
fn reads_like_hint(inner: &str) -> bool {
    let lower = inner.trim().to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’')).collect();
    let words: Vec<&str> = words.into_iter().filter(|w| !w.is_empty()).collect();
    let speaks_to_reader = words.iter().any(|w| matches!(*w, "you" | "your" | "you're" | "you’re" | "yours"));
    let instruction = words.first().is_some_and(|w| {
        matches!(*w, "add" | "describe" | "edit" | "enter" | "fill" | "insert" | "list" | "pick" | "replace")
    });
    let alternatives = lower.contains('/')
        && !lower.contains(char::is_whitespace)
        && lower.split('/').all(|p| !p.is_empty() && p.chars().all(char::is_alphabetic));
    speaks_to_reader || instruction || alternatives || lower.contains("e.g.") || lower == "optional"
}

/// `_(…)_` or `*(…)*` (any number of `_`/`*` on each side).
fn is_wrapped_hint(v: &str) -> bool {
    let v = v.trim();
    let inner = v.trim_start_matches(['_', '*']);
    let core = inner.trim_end_matches(['_', '*']);
    inner.len() < v.len() && core.len() < inner.len() && core.starts_with('(') && core.ends_with(')')
}

/// `(…)` with its inner text.
fn parenthesised(v: &str) -> Option<&str> {
    v.trim().strip_prefix('(')?.strip_suffix(')').filter(|i| !i.contains(['(', ')']))
}

/// `<name>`, `<your timezone>`: a placeholder, not a URL or an HTML tag
/// with attributes.
fn is_angle_placeholder(v: &str) -> bool {
    v.trim()
        .strip_prefix('<')
        .and_then(|v| v.strip_suffix('>'))
        .is_some_and(|i| !i.is_empty() && i.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_')))
}

/// The text of a list item without its marker (`- `, `* `, `+ `, `1. `).
fn without_marker(line: &str) -> (bool, &str) {
    let l = line.trim();
    for m in ["- ", "* ", "+ "] {
        if let Some(rest) = l.strip_prefix(m) {
            return (true, rest.trim());
        }
    }
    if matches!(l, "-" | "*" | "+") {
        return (true, "");
    }
    (false, l)
}

/// `Key: value` with the key's `**` removed: (key, value, key was bold).
fn key_value(item: &str) -> Option<(&str, &str, bool)> {
    let bold = item.starts_with("**");
    let plain = item.trim_start_matches("**");
    let (key, value) = plain.split_once(':')?;
    let key = key.trim_end_matches("**").trim();
    let value = value.trim_start_matches("**").trim();
    let short_key = !key.is_empty() && key.split_whitespace().count() <= 6 && !key.contains(['(', '`', '[']);
    short_key.then_some((key, value, bold))
}

/// How a line reads as a fill-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Content, kept.
    Text,
    /// An unfilled hint, left out.
    Hint,
    /// `Key:` with nothing after it: a hint unless what is under it is kept.
    EmptyKey,
    /// `(…)` alone that does not read like a hint: a hint only if it is all
    /// its section holds.
    LoneParenthesis,
    /// A checkbox item (`checked`), for USER.md's form rule.
    Checkbox(bool),
}

fn classify(line: &str) -> Kind {
    let (listed, item) = without_marker(line);
    if listed && item.is_empty() {
        return Kind::Hint;
    }
    if is_wrapped_hint(item) {
        return Kind::Hint;
    }
    if listed {
        if let Some(rest) = item.strip_prefix("[ ]") {
            return if rest.trim().is_empty() { Kind::Hint } else { Kind::Checkbox(false) };
        }
        if item.starts_with("[x]") || item.starts_with("[X]") {
            return Kind::Checkbox(true);
        }
    }
    if let Some(inner) = parenthesised(item) {
        return if reads_like_hint(inner) { Kind::Hint } else { Kind::LoneParenthesis };
    }
    if let Some((_, value, bold)) = key_value(item) {
        if value.is_empty() {
            return if listed { Kind::EmptyKey } else { Kind::Text };
        }
        let paren_hint = parenthesised(value).is_some_and(|inner| (listed && bold) || reads_like_hint(inner));
        if is_wrapped_hint(value) || is_angle_placeholder(value) || paren_hint {
            return Kind::Hint;
        }
    }
    Kind::Text
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The level of an ATX heading (`## Notes` is 2).
fn heading_level(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let n = t.chars().take_while(|&c| c == '#').count();
    ((1..=6).contains(&n) && t[n..].chars().next().is_none_or(|c| c == ' ')).then_some(n)
}

fn is_heading(line: &str) -> bool {
    heading_level(line).is_some()
}

fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3 && (t.chars().all(|c| c == '-') || t.chars().all(|c| c == '*') || t.chars().all(|c| c == '_'))
}

/// `text` without the lines that are unfilled hints (borrowed when there
/// are none). `user_form`: USER.md's unticked checkbox runs are hints too.
pub fn strip_fill_ins(text: &str, user_form: bool) -> Cow<'_, str> {
    let lines: Vec<&str> = text.lines().collect();
    // Pass 1: what each line is, outside fences and comments.
    let mut kinds = Vec::with_capacity(lines.len());
    // Lines that can be headings or rules (not in code or comments).
    let mut markdown = Vec::with_capacity(lines.len());
    let (mut fence, mut comment) = (None::<char>, false);
    for line in &lines {
        let t = line.trim_start();
        markdown.push(fence.is_none() && !comment);
        let kind = if let Some(ch) = fence {
            if t.starts_with(&String::from(ch).repeat(3)) {
                fence = None;
            }
            Kind::Text
        } else if comment {
            comment = !line.contains("-->");
            Kind::Text
        } else if t.starts_with("```") || t.starts_with("~~~") {
            fence = t.chars().next();
            Kind::Text
        } else if let Some(start) = line.find("<!--") {
            comment = !line[start..].contains("-->");
            Kind::Text
        } else {
            classify(line)
        };
        kinds.push(kind);
    }
    let blank = |i: usize| lines[i].trim().is_empty();
    // Pass 2: lone parentheses that are a whole section; empty keys with
    // nothing kept under them; USER.md's unanswered forms.
    for i in 0..lines.len() {
        match kinds[i] {
            Kind::LoneParenthesis => {
                let before = (0..i).rev().find(|&j| !blank(j));
                let after = (i + 1..lines.len()).find(|&j| !blank(j));
                let opens = before.is_none_or(|j| is_heading(lines[j]));
                let closes = after.is_none_or(|j| is_heading(lines[j]) || is_rule(lines[j]));
                kinds[i] = if opens && closes { Kind::Hint } else { Kind::Text };
            }
            Kind::Checkbox(_) if user_form && (i == 0 || !matches!(kinds[i - 1], Kind::Checkbox(_))) => {
                let run_end = (i..lines.len()).find(|&j| !matches!(kinds[j], Kind::Checkbox(_))).unwrap_or(lines.len());
                if kinds[i..run_end].iter().all(|k| *k == Kind::Checkbox(false)) {
                    kinds[i..run_end].iter_mut().for_each(|k| *k = Kind::Hint);
                }
            }
            _ => {}
        }
    }
    for i in (0..lines.len()).rev() {
        if kinds[i] == Kind::EmptyKey {
            let own = indent(lines[i]);
            let children = (i + 1..lines.len()).take_while(|&j| blank(j) || indent(lines[j]) > own);
            let kept_child = children.into_iter().any(|j| !blank(j) && kinds[j] != Kind::Hint);
            kinds[i] = if kept_child { Kind::Text } else { Kind::Hint };
        }
    }
    if !kinds.contains(&Kind::Hint) {
        return Cow::Borrowed(text);
    }
    // A heading whose section lost hints and kept nothing goes too (inner
    // sections first, so `## Preferences` over emptied `###` ones goes).
    for i in (0..lines.len()).rev() {
        let Some(level) = markdown[i].then(|| heading_level(lines[i])).flatten() else { continue };
        let end = (i + 1..lines.len())
            .find(|&j| markdown[j] && (heading_level(lines[j]).is_some_and(|l| l <= level) || is_rule(lines[j])))
            .unwrap_or(lines.len());
        let section = i + 1..end;
        let lost_hints = section.clone().any(|j| kinds[j] == Kind::Hint);
        let keeps_text = section.into_iter().any(|j| !blank(j) && kinds[j] != Kind::Hint);
        if lost_hints && !keeps_text {
            kinds[i] = Kind::Hint;
        }
    }
    // Keep the rest; a blank line left next to another by a removal goes too.
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut removed_since_text = false;
    for (line, kind) in lines.iter().zip(&kinds) {
        if *kind == Kind::Hint {
            removed_since_text = true;
        } else if line.trim().is_empty() && removed_since_text && out.last().is_none_or(|l| l.trim().is_empty()) {
            continue;
        } else {
            if !line.trim().is_empty() {
                removed_since_text = false;
            }
            out.push(line);
        }
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    Cow::Owned(out.join("\n"))
}

/// Whether a value of IDENTITY.md is an unfilled hint rather than a value.
pub fn is_hint_value(v: &str) -> bool {
    let v = v.trim();
    let bare = v.trim_matches(|c| c == '_' || c == '*').trim();
    bare.is_empty() || is_wrapped_hint(v) || is_angle_placeholder(v) || parenthesised(bare).is_some()
}

#[cfg(test)]
mod tests;
