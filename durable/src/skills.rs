//! Skills: `SKILL.md` files with YAML front matter (Agent Skills format),
//! listed in the prompt and loaded on demand with the `load_skill` tool.
//!
//! Agent-local skills (`agents/{id}/skills/{name}/SKILL.md`) shadow global
//! ones (`skills/{name}/SKILL.md`) of the same name. The list is sorted by
//! name so the prompt is byte-stable. A skill is left out when it names
//! `allowed-tools` this session does not have (its `compatibility` text is
//! shown to the model but cannot be checked mechanically). A malformed skill
//! is skipped with a warning; it never breaks the prompt. Front matter is
//! untrusted input, parsed with `serde-saphyr` (pure Rust, panic-free).

use serde::Deserialize;

/// Largest SKILL.md read (front matter and body).
pub const MAX_SKILL_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub compatibility: Option<String>,
    pub allowed_tools: Vec<String>,
    /// The R2 key of its SKILL.md.
    pub key: String,
    pub local: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("no YAML front matter (the file must start with a '---' line)")]
    NoFrontMatter,
    #[error("front matter is not valid YAML: {0}")]
    Yaml(String),
    #[error("front matter has no description")]
    NoDescription,
    #[error("skill name {0:?} must be 1-64 characters of a-z, 0-9 and '-'")]
    BadName(String),
    #[error("SKILL.md is larger than {MAX_SKILL_BYTES} bytes")]
    TooLarge,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolList {
    Spaced(String),
    List(Vec<String>),
}

#[derive(Deserialize)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    compatibility: Option<String>,
    #[serde(default, rename = "allowed-tools")]
    allowed_tools: Option<ToolList>,
}

/// The YAML between the opening `---` line and the next `---` line.
pub fn front_matter(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?;
    let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n'))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Parses a SKILL.md found in folder `dir_name` at `key`.
pub fn parse_skill(dir_name: &str, key: &str, local: bool, text: &str) -> Result<Skill, SkillError> {
    if text.len() > MAX_SKILL_BYTES {
        return Err(SkillError::TooLarge);
    }
    let yaml = front_matter(text).ok_or(SkillError::NoFrontMatter)?;
    let fm: FrontMatter = serde_saphyr::from_str(yaml).map_err(|e| SkillError::Yaml(e.to_string().lines().next().unwrap_or("").to_owned()))?;
    // The folder name is the identity; a different `name:` is reported.
    let name = fm.name.map(|n| n.trim().to_owned()).unwrap_or_else(|| dir_name.to_owned());
    if !valid_name(&name) || name != dir_name {
        return Err(SkillError::BadName(name));
    }
    let description = fm.description.map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default();
    if description.is_empty() {
        return Err(SkillError::NoDescription);
    }
    let allowed_tools = match fm.allowed_tools {
        None => vec![],
        Some(ToolList::Spaced(s)) => s.split([' ', ',']).filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        Some(ToolList::List(v)) => v,
    };
    Ok(Skill { name, description, compatibility: fm.compatibility.filter(|c| !c.trim().is_empty()), allowed_tools, key: key.to_owned(), local })
}

/// Local skills first, then global ones not shadowed; sorted by name.
pub fn merge(local: Vec<Skill>, global: Vec<Skill>) -> Vec<Skill> {
    let mut all = local;
    for g in global {
        if !all.iter().any(|s| s.name == g.name) {
            all.push(g);
        }
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// Skills whose `allowed-tools` this session has.
pub fn eligible<'a>(skills: &'a [Skill], tool_names: &[&str]) -> Vec<&'a Skill> {
    skills
        .iter()
        .filter(|s| s.allowed_tools.iter().all(|t| tool_names.iter().any(|n| n.eq_ignore_ascii_case(t))))
        .collect()
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The "Skills (Mandatory Scan)" section body.
pub fn render(skills: &[&Skill]) -> String {
    let mut out = String::from(
        "Before you answer, scan these skills. If one fits the request, call `load_skill` with its name and follow it.\n<available_skills>\n",
    );
    for s in skills {
        out.push_str("  <skill>\n    <name>");
        out.push_str(&xml_escape(&s.name));
        out.push_str("</name>\n    <description>");
        out.push_str(&xml_escape(&s.description));
        out.push_str("</description>\n");
        if let Some(c) = &s.compatibility {
            out.push_str("    <compatibility>");
            out.push_str(&xml_escape(c));
            out.push_str("</compatibility>\n");
        }
        out.push_str("  </skill>\n");
    }
    out.push_str("</available_skills>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nname: web-scraping\ndescription: >\n  Scrape and parse\n  web pages.\ncompatibility: Requires web search tool\nallowed-tools: WebSearch WebFetch\n---\n\n# Web Scraping\n";

    #[test]
    fn front_matter_fields() {
        let s = parse_skill("web-scraping", "skills/web-scraping/SKILL.md", false, GOOD).unwrap();
        assert_eq!(s.description, "Scrape and parse web pages.");
        assert_eq!(s.allowed_tools, ["WebSearch", "WebFetch"]);
        assert_eq!(s.compatibility.as_deref(), Some("Requires web search tool"));
        let list = "---\ndescription: d\nallowed-tools: [read_file, write_file]\n---\nbody";
        assert_eq!(parse_skill("x", "k", true, list).unwrap().allowed_tools, ["read_file", "write_file"]);
    }

    #[test]
    fn malformed_skills_are_errors_not_panics() {
        for (text, want) in [
            ("# no front matter", "front matter"),
            ("---\ndescription: [unclosed\n---\n", "YAML"),
            ("---\nname: x\n---\n", "description"),
            ("---\nname: Other\ndescription: d\n---\n", "name"),
            ("---\ndescription: d\n", "front matter"),
            ("---\n: : :\n\t- ]\n---\n", "YAML"),
        ] {
            let e = parse_skill("x", "k", false, text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?} gave {e}");
        }
        assert!(parse_skill("x", "k", false, &"a".repeat(MAX_SKILL_BYTES + 1)).is_err());
    }

    #[test]
    fn local_shadows_global_sorted_and_filtered() {
        let mk = |n: &str, local: bool, tools: &[&str]| Skill {
            name: n.into(),
            description: format!("{n} {local}"),
            compatibility: None,
            allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
            key: n.into(),
            local,
        };
        let merged = merge(vec![mk("zeta", true, &[]), mk("alpha", true, &[])], vec![mk("alpha", false, &[]), mk("beta", false, &["WebSearch"])]);
        assert_eq!(merged.iter().map(|s| (s.name.as_str(), s.local)).collect::<Vec<_>>(), [("alpha", true), ("beta", false), ("zeta", true)]);
        let ok = eligible(&merged, &["read_file"]);
        assert_eq!(ok.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["alpha", "zeta"]);
        let xml = render(&ok);
        assert!(xml.find("<name>alpha</name>").unwrap() < xml.find("<name>zeta</name>").unwrap());
    }
}
