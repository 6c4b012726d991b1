//! A second reading for the commonest invalid front matter.
//!
//! About 2 % of published front matters are not valid YAML, and nearly all
//! of those for one reason: a one-line plain value with `: ` inside
//! (`description: Use when you need to control Discord: send messages, …`),
//! which YAML reads as a second key. Every other agent reads such a line as
//! plain text, so its author never noticed. When the strict parse fails,
//! [`quote_plain_values`] rewrites each top-level one-line plain value that
//! has `: ` in it as a double-quoted string and the result is parsed again,
//! strictly. If that works, the skill is used and a warning names the
//! original error and the keys read this way; anything else (merge-conflict
//! markers, bad escapes, a list used as a key) stays an error.

/// `yaml` with each top-level `key: value` line whose plain value holds
/// `: ` rewritten as `key: "value"`, and the keys rewritten; `None` if no
/// line qualifies.
pub fn quote_plain_values(yaml: &str) -> Option<(String, Vec<String>)> {
    let lines: Vec<&str> = yaml.split_inclusive('\n').collect();
    let mut out = String::with_capacity(yaml.len() + 16);
    let mut keys = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let (line, eol) = match raw.strip_suffix("\r\n") {
            Some(l) => (l, "\r\n"),
            None => raw.strip_suffix('\n').map_or((*raw, ""), |l| (l, "\n")),
        };
        // A value continued on indented lines is not a one-line value.
        let continued =
            lines[i + 1..].iter().find(|l| !l.trim().is_empty()).is_some_and(|next| next.starts_with([' ', '\t']));
        match quotable(line) {
            Some((key, value)) if !continued => {
                out.push_str(key);
                out.push_str(": \"");
                for c in value.chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '"' => out.push_str("\\\""),
                        '\t' => out.push_str("\\t"),
                        c => out.push(c),
                    }
                }
                out.push('"');
                out.push_str(eol);
                keys.push(key.to_owned());
            }
            _ => out.push_str(raw),
        }
    }
    (!keys.is_empty()).then_some((out, keys))
}

/// `(key, value)` of a top-level line with a plain one-line value that
/// holds `: ` (a trailing ` # comment` is left inside: it was text).
fn quotable(line: &str) -> Option<(&str, &str)> {
    if line.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    let (key, value) = line.split_once(": ")?;
    let value = value.trim();
    let key_ok = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let plain = !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!', '%', '@', '`']);
    (key_ok && plain && value.contains(": ")).then_some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_one_line_plain_values_with_a_colon_are_quoted() {
        let (fixed, keys) =
            quote_plain_values("name: d\ndescription: Use when: you \"need\" it\r\nok: plain\nmetadata:\n  a: b: c\n")
                .unwrap();
        assert_eq!(
            fixed,
            "name: d\ndescription: \"Use when: you \\\"need\\\" it\"\r\nok: plain\nmetadata:\n  a: b: c\n"
        );
        assert_eq!(keys, ["description"]);
        for untouched in [
            "description: 'quoted: already'\n",
            "description: [a: b]\n",
            "description: fine\n",
            "description: starts here: and\n  continues\n",
            "  nested: a: b\n",
        ] {
            assert_eq!(quote_plain_values(untouched), None, "{untouched:?}");
        }
    }
}
