//! MEMORY.md and DREAMS.md as text: where promoted facts go (seed 000's
//! `## Dreamed YYYY-MM-DD HH:MM UTC` sections, one `- fact _(score=…,
//! hits=…, days=…)_` bullet each), the rules a write must keep, and the
//! diary entry of a sweep.
//!
//! The rules, checked on the final text before anything is written:
//! - **Append only.** Every line of MEMORY.md as it was is still there, in
//!   order and unchanged ([`check_append_only`]); a write that would remove
//!   or rewrite one is refused whole.
//! - **Within the prompt budget.** MEMORY.md stays within
//!   [`crate::prompt::MAX_FILE_CHARS`] (12,000 characters, where the prompt
//!   would cut it): facts that do not fit wait ([`room`]).

use crate::prompt::MAX_FILE_CHARS;
use crate::workspace::history::diff;

pub const MEMORY_FILE: &str = "MEMORY.md";
pub const DREAMS_FILE: &str = "DREAMS.md";
/// DREAMS.md keeps its newest entries within this size (older ones stay in the history).
pub const DREAMS_MAX_BYTES: usize = 64 * 1024;
/// Longest fact kept (characters); the model is asked for 200.
pub const MAX_FACT_CHARS: usize = 300;

const DREAMS_HEADER: &str = "# Dreams\n\nWhat the nightly memory sweep considered, promoted and rejected, and why \
(newest last). MEMORY.md only ever grows by `## Dreamed` sections; nothing there is removed or rewritten.\n";

/// `YYYY-MM-DD HH:MM UTC`.
pub fn utc_minute(ms: i64) -> String {
    format!("{} {} UTC", crate::clock::date_string(ms, "UTC"), crate::clock::time_string(ms, "UTC"))
}

/// `## Dreamed YYYY-MM-DD HH:MM UTC`.
pub fn heading(ms: i64) -> String {
    format!("## Dreamed {}", utc_minute(ms))
}

/// `- {fact} _(score=0.42, hits=5, days=3)_`.
pub fn fact_line(fact: &str, score: f32, hits: u32, days: u32) -> String {
    format!("- {fact} _(score={score:.2}, hits={hits}, days={days})_")
}

/// A fact as the model wrote it, made one clean line: whitespace collapsed,
/// a leading bullet or trailing evidence note dropped, cut to
/// [`MAX_FACT_CHARS`]. None when nothing is left, or it would be a heading.
pub fn sanitize_fact(raw: &str) -> Option<String> {
    let mut s = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    for bullet in ["- ", "* ", "+ ", "• "] {
        if let Some(rest) = s.strip_prefix(bullet) {
            s = rest.to_owned();
        }
    }
    if let Some(at) = s.find(" _(score=") {
        s.truncate(at);
    }
    let s = s.trim().trim_matches('"').trim().to_owned();
    if s.is_empty() || s.starts_with('#') {
        return None;
    }
    Some(crate::text::truncate_chars(&s, MAX_FACT_CHARS))
}

/// Characters of a text (the prompt's budget counts characters).
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Characters MEMORY.md may still grow by.
pub fn room(text: &str) -> usize {
    MAX_FILE_CHARS.saturating_sub(chars(text))
}

/// `base` with a new section of `lines` at the end.
pub fn append_section(base: &str, heading: &str, lines: &[String]) -> String {
    let mut out = base.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(heading);
    out.push('\n');
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// What appending `lines` under `heading` costs in characters.
pub fn section_cost(base: &str, heading: &str, lines: &[String]) -> usize {
    chars(&append_section(base, heading, lines)) - chars(base)
}

/// `current` with `line` added at the end of the section `heading` (a fact
/// approved later than its sweep); a new section at the end when the
/// heading is gone.
pub fn insert_under(current: &str, heading: &str, line: &str) -> String {
    let lines: Vec<&str> = current.lines().collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == heading) else {
        return append_section(current, heading, &[line.to_owned()]);
    };
    // The section ends before the next heading; the line goes after its last non-empty line.
    let end = lines[start + 1..].iter().position(|l| l.starts_with('#')).map_or(lines.len(), |i| start + 1 + i);
    let mut at = end;
    while at > start + 1 && lines[at - 1].trim().is_empty() {
        at -= 1;
    }
    let mut out: Vec<&str> = Vec::with_capacity(lines.len() + 1);
    out.extend(&lines[..at]);
    out.push(line);
    out.extend(&lines[at..]);
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// Whether `after` keeps every line of `before`, in order and unchanged. Err:
/// the lines it would remove or rewrite.
pub fn check_append_only(before: &str, after: &str) -> Result<(), Vec<String>> {
    let removed: Vec<String> = diff::removed_lines(before, after).into_iter().map(str::to_owned).collect();
    if removed.is_empty() {
        Ok(())
    } else {
        Err(removed)
    }
}

/// DREAMS.md with `entry` added (the header first when it is new), its
/// oldest entries dropped while it is over [`DREAMS_MAX_BYTES`].
pub fn dreams_with(existing: Option<&str>, entry: &str) -> String {
    let mut text = match existing {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ => DREAMS_HEADER.to_owned(),
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(entry.trim_end());
    text.push('\n');
    while text.len() > DREAMS_MAX_BYTES {
        // Drop the oldest `## ` entry (the header before it stays).
        let Some(first) = text.find("\n## ") else { break };
        let Some(next) = text[first + 4..].find("\n## ").map(|i| first + 4 + i) else { break };
        text.replace_range(first + 1..next + 1, "");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_one_clean_line() {
        assert_eq!(sanitize_fact("- Olga's  time zone\n is Bogota").as_deref(), Some("Olga's time zone is Bogota"));
        assert_eq!(sanitize_fact("x _(score=0.9, hits=1, days=1)_").as_deref(), Some("x"));
        assert_eq!(sanitize_fact("## People"), None);
        assert_eq!(sanitize_fact("  "), None);
        assert_eq!(chars(&sanitize_fact(&"é".repeat(1000)).unwrap()), MAX_FACT_CHARS, "cut");
        assert_eq!(fact_line("Tea", 0.4234, 5, 3), "- Tea _(score=0.42, hits=5, days=3)_");
        assert_eq!(heading(1_776_913_200_000), "## Dreamed 2026-04-23 03:00 UTC");
    }

    #[test]
    fn sections_are_appended_and_facts_inserted_under_their_heading() {
        let base = "## People\n- Luis prefers Spanish.";
        let h = "## Dreamed 2026-04-23 03:00 UTC";
        let one = append_section(base, h, &["- a".into()]);
        assert_eq!(one, "## People\n- Luis prefers Spanish.\n\n## Dreamed 2026-04-23 03:00 UTC\n- a\n");
        assert!(check_append_only(base, &one).is_ok());
        let two = insert_under(&format!("{one}\n## Open questions\n- ?\n"), h, "- b");
        assert!(two.contains("- a\n- b\n\n## Open questions"), "{two}");
        let elsewhere = insert_under(base, h, "- c");
        assert!(elsewhere.ends_with("\n\n## Dreamed 2026-04-23 03:00 UTC\n- c\n"));
        assert_eq!(section_cost("", h, &["- a".into()]), chars(h) + 5);
    }

    #[test]
    fn a_text_that_loses_or_rewrites_a_line_is_not_append_only() {
        let before = "# M\n- Ana uses a Samsung\n- tea\n";
        assert_eq!(check_append_only(before, "# M\n- tea\n- new\n"), Err(vec!["- Ana uses a Samsung".to_owned()]));
        assert_eq!(check_append_only(before, "# M\n- Ana uses an iPhone\n- tea\n").unwrap_err().len(), 1);
        assert!(check_append_only(before, "# M\n- Ana uses a Samsung\n- new\n- tea\n").is_ok());
    }

    #[test]
    fn the_diary_keeps_its_newest_entries_within_its_size() {
        let mut d = dreams_with(None, "## 2026-04-01 03:00 UTC\nfirst");
        assert!(d.starts_with("# Dreams\n"));
        for i in 0..200 {
            d = dreams_with(Some(&d), &format!("## entry {i}\n{}", "x".repeat(1000)));
        }
        assert!(d.len() <= DREAMS_MAX_BYTES, "{}", d.len());
        assert!(d.starts_with("# Dreams\n") && d.contains("## entry 199") && !d.contains("first"));
    }
}
