//! Skills: `SKILL.md` files with YAML front matter (Agent Skills format),
//! listed in the prompt and loaded on demand with the `load_skill` tool.
//!
//! Agent-local skills (`agents/{id}/skills/{name}/SKILL.md`) shadow global
//! ones (`skills/{name}/SKILL.md`) of the same name. The list is sorted by
//! name so the prompt is byte-stable. A skill is left out when it names
//! `allowed-tools` this session does not have (its `compatibility` text is
//! shown to the model but cannot be checked mechanically). A malformed skill
//! is skipped with a warning; it never breaks the prompt.
//!
//! Why no YAML crate: front matter here is four string keys. A full YAML
//! parser (serde-saphyr, the panic-free choice) adds ~168 kB gzip to a
//! Worker whose whole upload is a few hundred kB, paid on every cold start.
//! [`parse_front_matter`] reads the strict subset skills use (plain, quoted
//! and block scalars, flow and block lists) and rejects everything else with
//! an error, so a skill it cannot read is skipped, never misread.

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

/// A front-matter value: a string or a list of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Yaml {
    Str(String),
    List(Vec<String>),
}

fn unquote(v: &str, line: usize) -> Result<String, SkillError> {
    let err = |why: &str| SkillError::Yaml(format!("line {line}: {why}"));
    if let Some(inner) = v.strip_prefix('"') {
        let inner = inner.strip_suffix('"').ok_or_else(|| err("unclosed double quote"))?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(c @ ('"' | '\\' | '/')) => out.push(c),
                    _ => return Err(err("unsupported escape")),
                }
            } else {
                out.push(c);
            }
        }
        Ok(out)
    } else if let Some(inner) = v.strip_prefix('\'') {
        Ok(inner.strip_suffix('\'').ok_or_else(|| err("unclosed single quote"))?.replace("''", "'"))
    } else if v.starts_with(['[', '{', '&', '*', '!', '|', '>', '%', '@', '`']) {
        Err(err("unsupported YAML construct"))
    } else {
        // A plain scalar; ` #` starts a comment.
        Ok(v.split(" #").next().unwrap_or("").trim().to_owned())
    }
}

/// Parses the front-matter subset into key → value.
pub fn parse_front_matter(yaml: &str) -> Result<Vec<(String, Yaml)>, SkillError> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut out: Vec<(String, Yaml)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let n = i + 1;
        i += 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if raw.starts_with([' ', '\t']) {
            return Err(SkillError::Yaml(format!("line {n}: unexpected indentation")));
        }
        let (key, rest) = raw.split_once(':').ok_or_else(|| SkillError::Yaml(format!("line {n}: expected 'key: value'")))?;
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(SkillError::Yaml(format!("line {n}: bad key {key:?}")));
        }
        if out.iter().any(|(k, _)| k == key) {
            return Err(SkillError::Yaml(format!("line {n}: duplicate key {key:?}")));
        }
        let rest = rest.trim();
        // Indented continuation lines belong to this key.
        let mut block = Vec::new();
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            block.push(lines[i]);
            i += 1;
        }
        while block.last().is_some_and(|l| l.trim().is_empty()) {
            block.pop();
        }
        let value = match rest.split(" #").next().unwrap_or("").trim() {
            ">" | ">-" | "|" | "|-" => {
                let folded = rest.starts_with('>');
                let body: Vec<&str> = block.iter().map(|l| l.trim()).collect();
                Yaml::Str(if folded { body.join(" ").split_whitespace().collect::<Vec<_>>().join(" ") } else { body.join("\n") })
            }
            "" => {
                let items: Result<Vec<String>, SkillError> = block
                    .iter()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| match l.trim().strip_prefix("- ") {
                        Some(item) => unquote(item.trim(), n),
                        None => Err(SkillError::Yaml(format!("line {n}: expected '- item' under {key:?}"))),
                    })
                    .collect();
                Yaml::List(items?)
            }
            v if v.starts_with('[') => {
                if !block.is_empty() {
                    return Err(SkillError::Yaml(format!("line {n}: multi-line flow lists are not supported")));
                }
                let inner = v.strip_prefix('[').and_then(|v| v.strip_suffix(']')).ok_or_else(|| SkillError::Yaml(format!("line {n}: unclosed '['")))?;
                Yaml::List(inner.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| unquote(s, n)).collect::<Result<_, _>>()?)
            }
            v => {
                let mut s = unquote(v, n)?;
                // Plain scalars may continue on indented lines (folded).
                for l in &block {
                    s.push(' ');
                    s.push_str(l.trim());
                }
                Yaml::Str(s.trim().to_owned())
            }
        };
        out.push((key.to_owned(), value));
    }
    Ok(out)
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
    let fm = parse_front_matter(yaml)?;
    let get = |k: &str| fm.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let string = |k: &str| match get(k) {
        Some(Yaml::Str(s)) => Ok(Some(s.clone())),
        Some(Yaml::List(_)) => Err(SkillError::Yaml(format!("{k} must be a string"))),
        None => Ok(None),
    };
    // The folder name is the identity; a different `name:` is reported.
    let name = string("name")?.map(|n| n.trim().to_owned()).unwrap_or_else(|| dir_name.to_owned());
    if !valid_name(&name) || name != dir_name {
        return Err(SkillError::BadName(name));
    }
    let description = string("description")?.map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default();
    if description.is_empty() {
        return Err(SkillError::NoDescription);
    }
    let allowed_tools = match get("allowed-tools") {
        None => vec![],
        Some(Yaml::Str(s)) => s.split([' ', ',']).filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        Some(Yaml::List(v)) => v.clone(),
    };
    let compatibility = string("compatibility")?.filter(|c| !c.trim().is_empty());
    Ok(Skill { name, description, compatibility, allowed_tools, key: key.to_owned(), local })
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
        let block = "---\ndescription: 'It''s: quoted' # note\nallowed-tools:\n  - read_file\n  - \"load_skill\"\ncompatibility: |\n  line one\n  line two\n---\n";
        let s = parse_skill("x", "k", true, block).unwrap();
        assert_eq!(s.description, "It's: quoted");
        assert_eq!(s.allowed_tools, ["read_file", "load_skill"]);
        assert_eq!(s.compatibility.as_deref(), Some("line one\nline two"));
        let cont = "---\ndescription: a long\n  description here\n---\n";
        assert_eq!(parse_skill("x", "k", true, cont).unwrap().description, "a long description here");
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
            ("---\ndescription: &anchor x\n---\n", "YAML"),
            ("---\ndescription: d\ndescription: e\n---\n", "duplicate"),
            ("---\ndescription: \"bad \\q\"\n---\n", "escape"),
            ("---\n  description: d\n---\n", "indentation"),
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
