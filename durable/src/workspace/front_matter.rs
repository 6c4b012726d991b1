//! YAML front matter: the `---` block some markdown files start with.
//!
//! Skills carry their name and description there (Agent Skills format), and
//! other agents' published workspace templates carry documentation for
//! their docs site (`title:`, `summary:`, `read_when:`). Both are read by
//! [`split`]; skills parse the YAML ([`super::yaml`]), and workspace files
//! leave it out of what the model sees ([`body_for_prompt`]).
//!
//! The block: the file's first line is `---` (after an optional byte-order
//! mark), and it ends at the next line that is `---` or `...`. Line endings
//! may be `\n` or `\r\n`.

/// A file split at its front matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontMatter<'a> {
    /// The YAML between the fences.
    pub yaml: &'a str,
    /// Everything after the closing fence line.
    pub body: &'a str,
}

/// The front matter of `text` and the body after it, if `text` has one.
pub fn split(text: &str) -> Option<FrontMatter<'_>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').map_or(text.len(), |i| i + 1);
    if text[..first_end].trim_end() != "---" {
        return None;
    }
    let rest = &text[first_end..];
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let t = line.trim_end();
        if t == "---" || t == "..." {
            return Some(FrontMatter { yaml: &rest[..offset], body: &rest[offset + line.len()..] });
        }
        offset += line.len();
    }
    None
}

/// Whether a fenced block is front matter rather than markdown that happens
/// to start with a `---` rule: its first line that is not blank or a `#`
/// comment is a `key:` line (a bare word, possibly quoted, then a colon and
/// a space or the end of the line). An empty block counts too.
fn looks_like_front_matter(yaml: &str) -> bool {
    let Some(first) = yaml.lines().map(str::trim_end).find(|l| !l.trim().is_empty() && !l.starts_with('#')) else {
        return true;
    };
    if first.starts_with([' ', '\t']) {
        return false;
    }
    let Some((key, rest)) = first.split_once(':') else {
        return false;
    };
    let key = key.trim_matches(|c| c == '"' || c == '\'');
    !key.is_empty()
        && key.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && (rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// A workspace file as the model should see it: without its front matter,
/// which documents the file for people and tools (a docs site's title,
/// summary, when to read it) and is no instruction to the agent. Text that
/// starts with a `---` rule but no `key:` line under it is left whole.
pub fn body_for_prompt(text: &str) -> &str {
    match split(text) {
        Some(fm) if looks_like_front_matter(fm.yaml) => fm.body,
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_finds_the_block_with_any_line_ending() {
        let fm = split("---\nname: x\n---\n# Body\n").unwrap();
        assert_eq!((fm.yaml, fm.body), ("name: x\n", "# Body\n"));
        let crlf = split("\u{feff}---\r\nname: x\r\n---\r\nbody").unwrap();
        assert_eq!((crlf.yaml, crlf.body), ("name: x\r\n", "body"));
        assert_eq!(split("---\na: b\n...\nrest").unwrap().body, "rest");
        assert_eq!(split("---\n---").unwrap(), FrontMatter { yaml: "", body: "" });
        for none in
            ["# no front matter", "---\nunclosed: yes\n", "--- \n", "text\n---\na: b\n---\n", "----\na: b\n---\n"]
        {
            assert_eq!(split(none), None, "{none:?}");
        }
    }

    #[test]
    fn the_prompt_never_sees_front_matter_but_keeps_markdown_rules() {
        let openclaw = "---\ntitle: \"HEARTBEAT.md Template\"\nsummary: \"x\"\nread_when:\n  - Bootstrapping\n---\n\n# HEARTBEAT.md\n";
        assert_eq!(body_for_prompt(openclaw), "\n# HEARTBEAT.md\n");
        let pico = "---\nname: pico\ndescription: >\n  The default\n---\n\nYou are Pico.";
        assert_eq!(body_for_prompt(pico), "\nYou are Pico.");
        // A markdown rule, then prose, then a rule: not front matter.
        for whole in
            ["---\nSome words here.\n---\nmore", "---\n- a list\n---\n", "---\n  indented: x\n---\n", "no fence"]
        {
            assert_eq!(body_for_prompt(whole), whole);
        }
    }
}
