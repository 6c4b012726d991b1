//! IDENTITY.md: five optional persona fields in a bullet list (seed 000).
//!
//! ```text
//! - **Name:** Kate
//! - **Emoji:** 🐙
//! ```
//! Template placeholders in parentheses (`_(pick something)_`) are skipped,
//! so an unedited template never leaks into the persona; the file itself
//! reaches the prompt through the rule of every file
//! ([`strip_template_placeholders`]).

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vibe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
}

fn is_placeholder(v: &str) -> bool {
    let v = v.trim_matches(|c| c == '_' || c == '*').trim();
    v.is_empty() || (v.starts_with('(') && v.ends_with(')'))
}

/// Parses `- **Key:** value` (also `- Key: value`, `**Key**: value`).
pub fn parse_identity(text: &str) -> Identity {
    let mut id = Identity::default();
    for line in text.lines() {
        let line = line.trim().trim_start_matches(['-', '*', '+']).trim();
        let plain = line.replace("**", "");
        let Some((key, value)) = plain.split_once(':') else { continue };
        let value = value.trim();
        if is_placeholder(value) {
            continue;
        }
        let slot = match key.trim().to_ascii_lowercase().as_str() {
            "name" => &mut id.name,
            "creature" => &mut id.creature,
            "vibe" => &mut id.vibe,
            "emoji" => &mut id.emoji,
            "avatar" => &mut id.avatar,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(value.to_owned());
        }
    }
    id
}

/// `_(…)_` or `*(…)*` (any number of `_`/`*` on each side): the fill-in hint
/// of a template, as opposed to text in parentheses a person wrote.
fn is_wrapped_placeholder(v: &str) -> bool {
    let v = v.trim();
    let inner = v.trim_start_matches(['_', '*']);
    let core = inner.trim_end_matches(['_', '*']);
    inner.len() < v.len() && core.len() < inner.len() && core.starts_with('(') && core.ends_with(')')
}

/// Whether a line is only an unfilled template hint: `_(…)_` alone, or
/// `- **Key:** _(…)_`.
fn is_hint_line(line: &str) -> bool {
    if !line.contains('(') {
        return false;
    }
    let l = line.trim();
    let l = ["- ", "+ ", "* "].iter().find_map(|b| l.strip_prefix(b)).unwrap_or(l).trim();
    if is_wrapped_placeholder(l) {
        return true;
    }
    let plain = l.replace("**", "");
    matches!(plain.split_once(':'), Some((key, v)) if !key.trim().is_empty() && is_wrapped_placeholder(v))
}

/// Any workspace file without the lines that are only unfilled template
/// hints (`- **Name:** _(your name)_`, `_(Edit this file: …)_`), so a starter
/// or template file never puts its fill-in hints into the prompt. Borrowed
/// when there are none.
pub fn strip_template_placeholders(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.lines().any(is_hint_line) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.lines().filter(|l| !is_hint_line(l)).collect::<Vec<_>>().join("\n"))
}

impl Identity {
    /// The one-line persona: `name=Kate, creature=octopus, vibe=warm, emoji=🐙`.
    pub fn persona_line(&self) -> Option<String> {
        let parts: Vec<String> =
            [("name", &self.name), ("creature", &self.creature), ("vibe", &self.vibe), ("emoji", &self.emoji)]
                .iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
                .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_placeholders() {
        let id = parse_identity(
            "# Identity\n- **Name:** Kate\n- **Creature:** octopus\n- **Vibe:** warm but sharp\n- **Emoji:** 🐙\n- **Avatar:** _(pick something)_\n",
        );
        assert_eq!(id.name.as_deref(), Some("Kate"));
        assert_eq!(id.avatar, None);
        assert_eq!(id.persona_line().unwrap(), "name=Kate, creature=octopus, vibe=warm but sharp, emoji=🐙");
        let plain = parse_identity("Name: Bo\n* Emoji: 🔥\nVibe: (your vibe)");
        assert_eq!((plain.name.as_deref(), plain.emoji.as_deref(), plain.vibe), (Some("Bo"), Some("🔥"), None));
        assert_eq!(parse_identity("nothing here").persona_line(), None);
        assert_eq!(parse_identity("- **Avatar:** https://x/y.png").avatar.as_deref(), Some("https://x/y.png"));
    }

    #[test]
    fn template_hints_are_stripped_from_any_file() {
        let user = "# About your human\n\n_(Edit this file: who you are.)_\n\n- **Name:** _(your name)_\n- **Time zone:** Europe/Paris\n* *(e.g. metric)*";
        assert_eq!(strip_template_placeholders(user), "# About your human\n\n\n- **Time zone:** Europe/Paris");
        // Parentheses a person wrote stay, and text without hints is borrowed.
        let prose = "I like tea (green).\n- Note: (see below)\n(an aside)";
        assert!(matches!(strip_template_placeholders(prose), std::borrow::Cow::Borrowed(_)));
    }
}
