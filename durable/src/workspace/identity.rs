//! IDENTITY.md: five optional persona fields in a bullet list (seed 000).
//!
//! ```text
//! - **Name:** Kate
//! - **Emoji:** 🐙
//! ```
//! Template placeholders (`_(pick something)_`, `(your name)`, `<name>`)
//! are skipped, so an unedited template never leaks into the persona; the
//! file itself reaches the prompt through the rule of every file
//! ([`super::fill_ins::shown_text`]).

use super::fill_ins::is_hint_value;

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

/// Parses `- **Key:** value` (also `- Key: value`, `**Key**: value`, and
/// OpenClaw's form with the value on the indented line under `- **Key:**`).
pub fn parse_identity(text: &str) -> Identity {
    let mut id = Identity::default();
    let lines: Vec<&str> = text.lines().collect();
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim().trim_start_matches(['-', '*', '+']).trim();
        let plain = line.replace("**", "");
        let Some((key, value)) = plain.split_once(':') else { continue };
        let mut value = value.trim();
        if value.is_empty() {
            // `- **Name:**` then `  Kate` on the next, more indented line.
            let own = raw.len() - raw.trim_start().len();
            if let Some(next) = lines.get(i + 1).filter(|n| n.len() - n.trim_start().len() > own) {
                let next = next.trim();
                if !next.starts_with(['-', '*', '+']) {
                    value = next;
                }
            }
        }
        if is_hint_value(value) {
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
    fn openclaw_puts_the_value_on_the_line_under_the_key() {
        let id = parse_identity("- **Name:**\n  Kate\n- **Creature:**\n  _(AI? robot?)_\n- **Vibe:**\n- **Emoji:** 🐙");
        assert_eq!(id.persona_line().unwrap(), "name=Kate, emoji=🐙");
        assert_eq!(parse_identity("- Avatar: <path>").avatar, None);
    }
}
