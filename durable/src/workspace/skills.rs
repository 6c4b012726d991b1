//! Skills: `SKILL.md` files with YAML front matter (Agent Skills format),
//! listed in the prompt and loaded on demand with the `load_skill` tool.
//!
//! Agent-local skills (`agents/{id}/skills/{name}/SKILL.md`) shadow global
//! ones (`skills/{name}/SKILL.md`) of the same name. The list is sorted by
//! name so the prompt is byte-stable. A malformed skill is skipped with a
//! warning; it never breaks the prompt.
//!
//! Compatibility, in two steps:
//!
//! 1. When a SKILL.md is read ([`unavailable`]), a skill Hearth can never
//!    run is left out, with one warning per version of the file: its
//!    `allowed-tools` names a tool Hearth does not have (e.g. `WebSearch`),
//!    or its `compatibility` text asks for something a Worker cannot offer
//!    (a shell, a local binary such as python or git, a browser, a local
//!    file system, internet or web access: the words in
//!    [`UNAVAILABLE_NEEDS`]). A `compatibility` text that names Hearth is
//!    taken at its word. Other `compatibility` text is shown to the model.
//! 2. Per session ([`eligible`]): a skill whose `allowed-tools` this
//!    session lacks (e.g. `write_file` in a group) is not listed there, and
//!    `load_skill` refuses it there too.
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
        let (key, rest) =
            raw.split_once(':').ok_or_else(|| SkillError::Yaml(format!("line {n}: expected 'key: value'")))?;
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
                Yaml::Str(if folded {
                    body.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
                } else {
                    body.join("\n")
                })
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
                let inner = v
                    .strip_prefix('[')
                    .and_then(|v| v.strip_suffix(']'))
                    .ok_or_else(|| SkillError::Yaml(format!("line {n}: unclosed '['")))?;
                Yaml::List(
                    inner
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| unquote(s, n))
                        .collect::<Result<_, _>>()?,
                )
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
    let description =
        string("description")?.map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default();
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

/// What a skill's `compatibility` text may ask for that Hearth, a Worker
/// with the tools of [`crate::tools`], can never provide. Matched as whole
/// words (or word pairs), case-insensitively.
pub const UNAVAILABLE_NEEDS: &[&str] = &[
    "shell",
    "bash",
    "zsh",
    "terminal",
    "command line",
    "subprocess",
    "python",
    "python3",
    "node",
    "nodejs",
    "node.js",
    "npm",
    "docker",
    "git",
    "curl",
    "browser",
    "chrome",
    "playwright",
    "gpu",
    "filesystem",
    "file system",
    "internet",
    "web search",
    "web access",
    "network access",
];

/// Why Hearth can never run `skill`, if it cannot: a tool in
/// `allowed-tools` that is none of `hearth_tools`, or a need in its
/// `compatibility` text from [`UNAVAILABLE_NEEDS`].
pub fn unavailable(skill: &Skill, hearth_tools: &[&str]) -> Option<String> {
    let missing: Vec<&str> = skill
        .allowed_tools
        .iter()
        .filter(|t| !hearth_tools.iter().any(|h| h.eq_ignore_ascii_case(t)))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Some(format!("allowed-tools names tools Hearth does not have: {}", missing.join(", ")));
    }
    let text = skill.compatibility.as_deref()?.to_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.contains(&"hearth") {
        return None;
    }
    let has = |need: &str| match need.split_once(' ') {
        Some((a, b)) => words.windows(2).any(|w| w[0] == a && w[1] == b),
        None => words.contains(&need),
    };
    UNAVAILABLE_NEEDS.iter().find(|n| has(n)).map(|n| format!("compatibility needs {n:?}, which Hearth cannot provide"))
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

/// The "Skills (Mandatory Scan)" section body, at most about `max_chars`
/// characters: skills that do not fit are left out whole (never cut
/// mid-entry), and a line says how many.
pub fn render(skills: &[&Skill], max_chars: usize) -> String {
    let mut out = String::from(
        "Before you answer, scan these skills. If one fits the request, call `load_skill` with its name and follow it.\n<available_skills>\n",
    );
    let mut used = out.chars().count();
    let mut left_out = 0;
    for s in skills {
        let mut entry = String::from("  <skill>\n    <name>");
        entry.push_str(&xml_escape(&s.name));
        entry.push_str("</name>\n    <description>");
        entry.push_str(&xml_escape(&s.description));
        entry.push_str("</description>\n");
        if let Some(c) = &s.compatibility {
            entry.push_str("    <compatibility>");
            entry.push_str(&xml_escape(c));
            entry.push_str("</compatibility>\n");
        }
        entry.push_str("  </skill>\n");
        let n = entry.chars().count();
        if left_out > 0 || used + n > max_chars {
            left_out += 1;
            continue;
        }
        used += n;
        out.push_str(&entry);
    }
    out.push_str("</available_skills>");
    if left_out > 0 {
        out.push_str(&format!("\n({left_out} more skills are not listed: the list is full.)"));
    }
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
        let merged = merge(
            vec![mk("zeta", true, &[]), mk("alpha", true, &[])],
            vec![mk("alpha", false, &[]), mk("beta", false, &["WebSearch"])],
        );
        assert_eq!(
            merged.iter().map(|s| (s.name.as_str(), s.local)).collect::<Vec<_>>(),
            [("alpha", true), ("beta", false), ("zeta", true)]
        );
        let ok = eligible(&merged, &["read_file"]);
        assert_eq!(ok.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["alpha", "zeta"]);
        let xml = render(&ok, 12_000);
        assert!(xml.find("<name>alpha</name>").unwrap() < xml.find("<name>zeta</name>").unwrap());
        let short = render(&ok, 230);
        assert!(short.contains("<name>alpha</name>") && !short.contains("zeta"), "{short}");
        assert!(short.ends_with("</available_skills>\n(1 more skills are not listed: the list is full.)"), "{short}");
    }

    #[test]
    fn skills_hearth_can_never_run_are_named() {
        let hearth = ["read_file", "load_skill", "write_file"];
        let with = |tools: &[&str], compat: Option<&str>| Skill {
            name: "x".into(),
            description: "d".into(),
            compatibility: compat.map(str::to_owned),
            allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
            key: "k".into(),
            local: false,
        };
        assert_eq!(unavailable(&with(&["read_file"], None), &hearth), None);
        assert!(unavailable(&with(&["WebSearch", "read_file"], None), &hearth).unwrap().contains("WebSearch"));
        for needs in [
            "Requires Python 3.11",
            "Needs a shell and git.",
            "requires internet access",
            "Requires web search tool",
            "Node.js 20+",
        ] {
            assert!(unavailable(&with(&[], Some(needs)), &hearth).is_some(), "{needs}");
        }
        for fine in [
            "Works with any chat app",
            "Designed for Hearth; uses git-style notes",
            "digital notes, nodes and shells-free",
            "Best with metric units",
        ] {
            assert_eq!(unavailable(&with(&[], Some(fine)), &hearth), None, "{fine}");
        }
    }
}
