//! HEARTBEAT.md content rules and the `HEARTBEAT_OK` reply rule.
//!
//! * [`is_meaningful`]: seed 003's "empty" rule. A file holding only whitespace, headers,
//!   HTML comments, horizontal rules (or empty list items / empty checkboxes) is empty; the
//!   prompt loader leaves it out and the heartbeat makes no LLM call.
//! * [`has_open_items`] / [`should_run`]: issue 6 skips the heartbeat when HEARTBEAT.md has "no
//!   meaningful content or no unchecked item", and seed 004 skips it when there is no actionable
//!   item. So the default ([`ProseRule::Skip`]) runs only for an unchecked item (`- [ ] ...`): a
//!   ticked-off checklist and prose without any checkbox both cost nothing. An owner who writes
//!   standing instructions in prose ("tell me if it will rain") can opt in to running them every
//!   interval with [`ProseRule::Run`] (the Worker's `HEARTBEAT_RUN_PROSE=true`).
//! * [`Checklist`]: what the rules need from a file, small enough to cache next to its etag so
//!   an unchanged file is not read again.
//! * [`is_heartbeat_ok`]: a reply meaning "nothing to report" sends nothing to the owner.
//!
//! Everything here is a total function over `&str`: no input can make it panic.

use serde::Serialize;

/// The token the model answers with when a heartbeat found nothing to report.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

/// A reply at most this many characters long (after trimming) may carry the token at its very
/// start or very end and still count as `HEARTBEAT_OK` ("All good. HEARTBEAT_OK"). Longer replies
/// are treated as reports: a real report that happens to end with the token still reaches the
/// owner rather than being silently dropped.
pub const SHORT_REPLY_MAX_CHARS: usize = 300;

/// Whether prose without any checkbox is worth a heartbeat run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProseRule {
    /// Only an unchecked item runs the heartbeat (the default: no tokens without an open item).
    #[default]
    Skip,
    /// Prose with no checkbox at all is a standing instruction and runs every interval.
    Run,
}

/// What the heartbeat rules need to know about one HEARTBEAT.md.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checklist {
    /// Anything besides headers, comments, rules and empty items (see [`is_meaningful`]).
    pub meaningful: bool,
    /// Unchecked checkbox items with text (`- [ ] do this`).
    pub open_items: u32,
    /// Checked checkbox items with text (`- [x] done`).
    pub done_items: u32,
}

impl Checklist {
    /// Reads the rules' view of `markdown` (comments and code fences do not count).
    pub fn of(markdown: &str) -> Self {
        let text = strip_html_comments(markdown);
        let mut c = Checklist::default();
        for line in classify(&text) {
            match line {
                Line::Noise => {}
                Line::Text(_) => c.meaningful = true,
                Line::Checkbox { checked } => {
                    c.meaningful = true;
                    if checked {
                        c.done_items = c.done_items.saturating_add(1);
                    } else {
                        c.open_items = c.open_items.saturating_add(1);
                    }
                }
            }
        }
        c
    }
}

/// What the heartbeat should do with the current HEARTBEAT.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeartbeatDecision {
    /// Make the LLM call.
    Run,
    /// Make no LLM call, for this reason.
    Skip(SkipReason),
}

/// Why a heartbeat was skipped without calling the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// There is no HEARTBEAT.md.
    Absent,
    /// HEARTBEAT.md has no meaningful content (see [`is_meaningful`]).
    Empty,
    /// HEARTBEAT.md is a checklist and every item is ticked.
    AllDone,
    /// HEARTBEAT.md has text but no checkbox item at all (and prose does not run).
    NoOpenItem,
}

impl SkipReason {
    /// A short stable label for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Absent => "absent",
            SkipReason::Empty => "empty",
            SkipReason::AllDone => "all_done",
            SkipReason::NoOpenItem => "no_open_item",
        }
    }
}

/// One line of the file as the rules see it.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    /// Nothing that counts: blank, header, rule, fence marker, empty list item.
    Noise,
    /// A checkbox list item with text after the box.
    Checkbox { checked: bool },
    /// Any other text (prose, list item with text, code inside a fence).
    Text(&'a str),
}

/// True when `markdown` has something in it besides whitespace, markdown headers, HTML
/// comments (single- or multi-line, an unterminated `<!--` hides the rest of the file),
/// horizontal rules (`---`, `***`, `___`, with optional spaces), setext underlines, code-fence
/// markers with nothing between them, and empty list items (`-`, `- [ ]`, `1.`).
pub fn is_meaningful(markdown: &str) -> bool {
    let text = strip_html_comments(markdown);
    let found = classify(&text).any(|l| !matches!(l, Line::Noise));
    found
}

/// True when the file has at least one unticked checkbox item with text (`- [ ] do this`).
/// Items inside HTML comments and code fences do not count.
pub fn has_open_items(markdown: &str) -> bool {
    let text = strip_html_comments(markdown);
    let found = classify(&text).any(|l| l == Line::Checkbox { checked: false });
    found
}

/// Whether a heartbeat should call the model.
///
/// * `None` (no file) → `Skip(Absent)`;
/// * no meaningful content → `Skip(Empty)`;
/// * an unchecked item with text → `Run`;
/// * checkbox items, all ticked → `Skip(AllDone)`, even when the file also has prose (the prose
///   is taken to introduce the checklist, which is done);
/// * prose with no checkbox at all → `Skip(NoOpenItem)`, or `Run` under [`ProseRule::Run`].
pub fn should_run(markdown: Option<&str>, prose: ProseRule) -> HeartbeatDecision {
    decide(markdown.map(Checklist::of), prose)
}

/// [`should_run`] over an already read [`Checklist`] (`None`: no file).
pub fn decide(checklist: Option<Checklist>, prose: ProseRule) -> HeartbeatDecision {
    let Some(c) = checklist else {
        return HeartbeatDecision::Skip(SkipReason::Absent);
    };
    if !c.meaningful {
        HeartbeatDecision::Skip(SkipReason::Empty)
    } else if c.open_items > 0 {
        HeartbeatDecision::Run
    } else if c.done_items > 0 {
        HeartbeatDecision::Skip(SkipReason::AllDone)
    } else if prose == ProseRule::Run {
        HeartbeatDecision::Run
    } else {
        HeartbeatDecision::Skip(SkipReason::NoOpenItem)
    }
}

/// True when a heartbeat reply means "nothing to report".
///
/// Accepted: the token `HEARTBEAT_OK` alone, with surrounding whitespace, markdown emphasis or
/// backticks (`**HEARTBEAT_OK**`, `` `HEARTBEAT_OK` ``) and trailing punctuation
/// (`HEARTBEAT_OK.`); or, in a reply of at most [`SHORT_REPLY_MAX_CHARS`] characters, the token
/// as the very first or very last word ("All good. HEARTBEAT_OK", "HEARTBEAT_OK - nothing new").
///
/// Case: only the exact uppercase token counts. It is a protocol marker the prompt spells out;
/// "heartbeat ok" in prose is more likely a sentence about heartbeats than the marker, and a
/// false "OK" silently drops a message, which is worse than sending one extra.
pub fn is_heartbeat_ok(reply: &str) -> bool {
    let trimmed = reply.trim();
    let core =
        trimmed.trim_start_matches(is_decoration).trim_end_matches(|c: char| is_decoration(c) || is_trailing_punct(c));
    if core == HEARTBEAT_OK {
        return true;
    }
    if trimmed.chars().count() > SHORT_REPLY_MAX_CHARS {
        return false;
    }
    // Token as the first word.
    if let Some(rest) = core.strip_prefix(HEARTBEAT_OK) {
        if rest.chars().next().is_some_and(is_boundary) {
            return true;
        }
    }
    // Token as the last word.
    if let Some(before) = core.strip_suffix(HEARTBEAT_OK) {
        if before.chars().next_back().is_some_and(is_boundary) {
            return true;
        }
    }
    false
}

fn is_decoration(c: char) -> bool {
    c.is_whitespace() || matches!(c, '*' | '_' | '`' | '~' | '"' | '\'' | '“' | '”')
}

fn is_trailing_punct(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | ',' | ';' | ':' | '…' | ')')
}

/// A character that can end or start a word next to the token (so `XHEARTBEAT_OK` and
/// `HEARTBEAT_OKAY` are not the token).
fn is_boundary(c: char) -> bool {
    !(c.is_alphanumeric() || c == '_')
}

/// Removes `<!-- ... -->` comments; an unterminated comment runs to the end of the text.
fn strip_html_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 4..];
        match after.find("-->") {
            Some(end) => rest = &after[end + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Classifies each line of comment-free markdown, tracking fenced code blocks.
fn classify(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut fence: Option<(char, usize)> = None;
    let mut lines = text.lines().peekable();
    std::iter::from_fn(move || {
        let line = lines.next()?.trim();
        let next_is_underline = lines.peek().is_some_and(|n| is_setext_underline(n.trim()));
        Some(classify_in_context(line, next_is_underline, &mut fence))
    })
}

fn classify_in_context<'a>(line: &'a str, next_is_underline: bool, fence: &mut Option<(char, usize)>) -> Line<'a> {
    {
        if let Some((ch, len)) = *fence {
            if fence_marker(line).is_some_and(|(c, n)| c == ch && n >= len)
                && line.trim_start_matches(ch).trim().is_empty()
            {
                *fence = None;
                return Line::Noise;
            }
            return if line.is_empty() { Line::Noise } else { Line::Text(line) };
        }
        if let Some(marker) = fence_marker(line) {
            *fence = Some(marker);
            return Line::Noise;
        }
        match classify_line(line) {
            // "Title" over "=====" or "-----" is a (setext) header, not body text.
            Line::Text(_) if next_is_underline && !is_list_line(line) => Line::Noise,
            other => other,
        }
    }
}

fn is_list_line(line: &str) -> bool {
    strip_list_marker(line).is_some()
}

/// `` ``` `` or `~~~` (3 or more) at the start of a line: the fence char and its length.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let n = line.chars().take_while(|&c| c == ch).count();
    (n >= 3).then_some((ch, n))
}

fn classify_line(line: &str) -> Line<'_> {
    // Block quotes: look inside.
    let mut line = line.trim();
    while let Some(rest) = line.strip_prefix('>') {
        line = rest.trim();
    }
    if line.is_empty() || is_header(line) || is_rule(line) || is_setext_underline(line) {
        return Line::Noise;
    }
    let Some(item) = strip_list_marker(line) else {
        return Line::Text(line);
    };
    match strip_checkbox(item) {
        Some((checked, text)) => {
            if text.is_empty() {
                Line::Noise
            } else {
                Line::Checkbox { checked }
            }
        }
        None if item.is_empty() => Line::Noise,
        None => Line::Text(item),
    }
}

/// ATX header: 1 to 6 `#` then a space, a tab or the end of the line (`#tag` is text).
fn is_header(line: &str) -> bool {
    let n = line.chars().take_while(|&c| c == '#').count();
    if n == 0 || n > 6 {
        return false;
    }
    line[n..].chars().next().is_none_or(|c| c == ' ' || c == '\t')
}

/// Thematic break: three or more of the same `-`, `*` or `_`, spaces allowed between.
fn is_rule(line: &str) -> bool {
    let Some(first) = line.chars().next() else {
        return false;
    };
    if !matches!(first, '-' | '*' | '_') {
        return false;
    }
    let mut count = 0;
    for c in line.chars() {
        if c == first {
            count += 1;
        } else if c != ' ' && c != '\t' {
            return false;
        }
    }
    count >= 3
}

/// A line of only `=` or only `-` (setext header underline).
fn is_setext_underline(line: &str) -> bool {
    !line.is_empty() && (line.chars().all(|c| c == '=') || line.chars().all(|c| c == '-'))
}

/// `- `, `* `, `+ `, `1. `, `1) ` (or the bare marker): returns the text after it.
fn strip_list_marker(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let marker_len = match bytes.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || !matches!(bytes.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    // All marker bytes are ASCII, so `marker_len` is a char boundary.
    let rest = &line[marker_len..];
    match rest.chars().next() {
        None => Some(""),
        Some(c) if c == ' ' || c == '\t' => Some(rest.trim()),
        Some(_) => None,
    }
}

/// `[ ]`, `[x]`, `[X]` at the start of a list item: (checked, text after the box).
fn strip_checkbox(item: &str) -> Option<(bool, &str)> {
    let checked = if item.starts_with("[ ]") {
        false
    } else if item.starts_with("[x]") || item.starts_with("[X]") {
        true
    } else {
        return None;
    };
    // "[ ]" is 3 ASCII bytes.
    let rest = &item[3..];
    if rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None; // "[x]abc" is not a checkbox
    }
    Some((checked, rest.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_files_are_not_meaningful() {
        let cases = [
            "",
            "   \n\t\n  ",
            "# Heartbeat",
            "# Heartbeat\n\n## Periodic tasks\n\n###\n",
            "<!-- add tasks here -->",
            "# Tasks\n<!--\nmulti-line\ncomment with - [ ] item\n-->\n",
            "<!-- unterminated comment\n- [ ] do it",
            "---",
            "***",
            "___",
            "- - -",
            " * * * ",
            "_ _ _ _",
            "# Title\n---\n<!-- x -->\n***\n",
            "- [ ]",
            "- [ ]\n- [x]\n* [ ]   \n1. [ ]\n-\n2.\n",
            "Title\n=====\n",
            "Sub title\n---------\n",
            "```\n```",
            "> ",
            "> # quoted header",
        ];
        for c in cases {
            assert!(!is_meaningful(c), "should be empty: {c:?}");
            for prose in [ProseRule::Skip, ProseRule::Run] {
                assert_eq!(should_run(Some(c), prose), HeartbeatDecision::Skip(SkipReason::Empty), "{c:?}");
            }
        }
    }

    #[test]
    fn meaningful_files() {
        let cases = [
            "Check my email.",
            "# Tasks\n- [ ] Check for new emails",
            "# Tasks\n- check the weather",
            "<!-- c --> real text",
            "<!-- a -->\nafter comment\n",
            "#hashtag is text",
            "1. call mom",
            "- [x] done already",
            "```\necho hi\n```",
            "> quoted instruction",
            "--- not a rule",
            "[ ] bare checkbox text",
        ];
        for c in cases {
            assert!(is_meaningful(c), "should be meaningful: {c:?}");
        }
    }

    #[test]
    fn open_items() {
        assert!(has_open_items("## Periodic\n- [ ] Check email\n- [x] Done"));
        assert!(has_open_items("  * [ ] nested item"));
        assert!(has_open_items("3) [ ] numbered"));
        assert!(!has_open_items("- [x] done\n- [X] done too"));
        assert!(!has_open_items("- [ ]\n- [ ]   "));
        assert!(!has_open_items("<!-- - [ ] hidden -->"));
        assert!(!has_open_items("```\n- [ ] in code\n```"));
        assert!(!has_open_items("plain prose"));
        assert!(!has_open_items("- [ ]x no space"));
    }

    #[test]
    fn should_run_rules() {
        use HeartbeatDecision::*;
        let skip = ProseRule::Skip;
        assert_eq!(should_run(None, skip), Skip(SkipReason::Absent));
        assert_eq!(should_run(Some(""), skip), Skip(SkipReason::Empty));
        assert_eq!(should_run(Some("# T\n- [x] a\n- [x] b"), skip), Skip(SkipReason::AllDone));
        assert_eq!(should_run(Some("Do these:\n- [x] a\n- [X] b"), ProseRule::Run), Skip(SkipReason::AllDone));
        assert_eq!(should_run(Some("# T\n- [x] a\n- [ ] b"), skip), Run);
        // An empty box next to done ones is not an open item.
        assert_eq!(should_run(Some("- [x] a\n- [ ]"), skip), Skip(SkipReason::AllDone));
        assert_eq!(SkipReason::AllDone.as_str(), "all_done");
    }

    #[test]
    fn prose_without_a_checkbox_costs_nothing_unless_opted_in() {
        use HeartbeatDecision::*;
        let prose = [
            "Tell me if it will rain tomorrow.",
            "# Heartbeat\n\nCheck my inbox and summarise anything urgent.",
            "- check the weather",
            "> quoted instruction",
        ];
        for p in prose {
            assert_eq!(should_run(Some(p), ProseRule::Skip), Skip(SkipReason::NoOpenItem), "{p:?}");
            assert_eq!(should_run(Some(p), ProseRule::Run), Run, "{p:?}");
        }
        // Prose around an open item runs either way.
        assert_eq!(should_run(Some("Every morning:\n- [ ] water the plants"), ProseRule::Skip), Run);
        assert_eq!(SkipReason::NoOpenItem.as_str(), "no_open_item");
        assert_eq!(ProseRule::default(), ProseRule::Skip);
    }

    #[test]
    fn checklist_counts_items_outside_comments_and_code() {
        let c = Checklist::of("# T\n- [ ] a\n- [x] b\n- [X] c\n<!-- - [ ] hidden -->\n```\n- [ ] code\n```\n- [ ]\n");
        assert_eq!(c, Checklist { meaningful: true, open_items: 1, done_items: 2 });
        assert_eq!(decide(Some(c), ProseRule::Skip), HeartbeatDecision::Run);
        assert_eq!(Checklist::of("<!-- x -->"), Checklist::default());
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(hearth_json::from_str::<Checklist>(&json).unwrap(), c);
    }

    #[test]
    fn heartbeat_ok_positive() {
        let cases = [
            "HEARTBEAT_OK",
            "HEARTBEAT_OK.",
            "HEARTBEAT_OK!",
            "  **HEARTBEAT_OK**  ",
            "`HEARTBEAT_OK`",
            "_HEARTBEAT_OK_",
            "\n\nHEARTBEAT_OK\n",
            "All good. HEARTBEAT_OK",
            "Nothing needs attention.\n\n**HEARTBEAT_OK**.",
            "HEARTBEAT_OK - nothing new since last check.",
            "HEARTBEAT_OK\nInbox is empty.",
        ];
        for c in cases {
            assert!(is_heartbeat_ok(c), "should be OK: {c:?}");
        }
    }

    #[test]
    fn heartbeat_ok_negative() {
        let long_report = format!(
            "Your flight tomorrow was cancelled. {} I checked: HEARTBEAT_OK would be wrong \
             here. {}",
            "Details follow. ".repeat(20),
            "Please rebook soon."
        );
        let long_ending = format!("{} HEARTBEAT_OK", "Important news. ".repeat(25));
        let cases = [
            "",
            "heartbeat_ok",
            "Heartbeat_Ok",
            "HEARTBEAT_OKAY",
            "XHEARTBEAT_OK",
            "HEARTBEAT_OK_NOT",
            "I would say HEARTBEAT_OK but your server is down.",
            "HEARTBEAT",
            long_report.as_str(),
            long_ending.as_str(),
        ];
        for c in cases {
            assert!(!is_heartbeat_ok(c), "should not be OK: {c:?}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        let odd = [
            "<!--",
            "-->",
            "<!---->",
            "#",
            "######",
            "#######",
            "[",
            "- [",
            "- [x",
            "1",
            "1.",
            "99999999999999999999. x",
            "é",
            "- é",
            "```",
            "~~~~\n~~~",
            "> > >",
            "\u{feff}",
            "HEARTBEAT_OKé",
            "éHEARTBEAT_OK",
            "* ",
            "+\t[ ]\t",
            "**",
            "__",
            "``",
        ];
        for c in odd {
            let _ = is_meaningful(c);
            let _ = has_open_items(c);
            let _ = should_run(Some(c), ProseRule::Run);
            let _ = is_heartbeat_ok(c);
        }
    }
}
