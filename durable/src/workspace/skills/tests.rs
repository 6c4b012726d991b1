use super::*;

const HEARTH: [&str; 3] = ["read_file", "load_skill", "write_file"];

fn parse(dir: &str, text: &str) -> Result<Skill, SkillError> {
    parse_skill(dir, &format!("skills/{dir}/SKILL.md"), false, text).map(|(s, _)| s)
}

const GOOD: &str = "---\nname: web-scraping\ndescription: >\n  Scrape and parse\n  web pages.\ncompatibility: Requires web search tool\nallowed-tools: WebSearch WebFetch\n---\n\n# Web Scraping\n";

#[test]
fn front_matter_fields() {
    let s = parse("web-scraping", GOOD).unwrap();
    assert_eq!(s.description, "Scrape and parse web pages.");
    assert_eq!(s.allowed_tools, ["WebSearch", "WebFetch"]);
    assert_eq!(s.compatibility.as_deref(), Some("Requires web search tool"));
    let list = "---\ndescription: d\nallowed-tools: [read_file, write_file]\n---\nbody";
    assert_eq!(parse("x", list).unwrap().allowed_tools, ["read_file", "write_file"]);
    let block = "---\ndescription: 'It''s: quoted' # note\nallowed-tools:\n  - read_file\n  - \"load_skill\"\ncompatibility: |\n  line one\n  line two\n---\n";
    let s = parse("x", block).unwrap();
    assert_eq!(s.description, "It's: quoted");
    assert_eq!(s.allowed_tools, ["read_file", "load_skill"]);
    assert_eq!(s.compatibility.as_deref(), Some("line one\nline two"));
    let cont = "---\ndescription: a long\n  description here\n---\n";
    assert_eq!(parse("x", cont).unwrap().description, "a long description here");
    let listed = "---\ndescription: d\ncompatibility:\n  - needs a plan\n  - and patience\n---\n";
    assert_eq!(parse("x", listed).unwrap().compatibility.as_deref(), Some("needs a plan; and patience"));
}

#[test]
fn metadata_is_kept_as_a_tree() {
    let text = "---\ndescription:\n  On the next line.\nmetadata:\n  author: me\n  openclaw: { \"emoji\": \"🔐\", \"tags\": [a, b], }\n---\n";
    let s = parse("x", text).unwrap();
    assert_eq!(s.description, "On the next line.");
    assert_eq!(s.metadata.get("author"), Some(&Yaml::Str("me".into())));
    let tags = s.metadata.get("openclaw").and_then(|o| o.get("tags")).map(Yaml::strings);
    assert_eq!(tags, Some(vec!["a".to_owned(), "b".to_owned()]));
    assert_eq!(parse("x", "---\ndescription: d\n---\n").unwrap().metadata, Yaml::Null);
}

#[test]
fn malformed_skills_are_errors_that_name_the_problem() {
    for (text, want) in [
        ("# no front matter", "no YAML front matter: SKILL.md must start with a '---' line"),
        ("---\ndescription: [unclosed\n---\n", "not valid YAML: line 3, column 1 of SKILL.md"),
        ("---\nname: x\n---\n", "front matter has no description"),
        ("---\ndescription: d\n", "no YAML front matter"),
        ("---\n: : :\n\t- ]\n---\n", "not valid YAML: line 3, column 2 of SKILL.md: tabs disallowed"),
        ("---\ndescription: d\ndescription: e\n---\n", "line 3, column 1 of SKILL.md: duplicate key \"description\""),
        (
            "---\ndescription: \"bad \\q\"\n---\n",
            "line 2, column 14 of SKILL.md: while parsing a quoted scalar, found unknown escape character",
        ),
        ("---\ndescription: [a, b]\n---\n", "`description` in the front matter must be text"),
        (
            "---\ndescription: d\n<<<<<<< HEAD\nx: 1\n=======\n>>>>>>> other\n---\n",
            "line 3 of SKILL.md is a merge-conflict marker",
        ),
    ] {
        let e = parse("x", text).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?} gave {e}");
    }
    let e = parse("x", &"a".repeat(MAX_SKILL_BYTES + 1)).unwrap_err().to_string();
    assert_eq!(e, "SKILL.md is 262145 bytes; skills up to 262144 bytes (256 KiB) are read");
    let e = parse("My_Skill", "---\ndescription: d\n---\n").unwrap_err().to_string();
    assert_eq!(e, "folder name \"My_Skill\" is not a skill name: use 1-64 characters of a-z, 0-9 and '-'");
}

#[test]
fn a_name_that_differs_from_its_folder_is_listed_under_the_folder_with_a_warning() {
    let (s, warnings) = parse_skill(
        "react-best-practices",
        "k",
        false,
        "---\nname: vercel-react-best-practices\ndescription: d\n---\n",
    )
    .unwrap();
    assert_eq!(s.name, "react-best-practices");
    assert_eq!(
        warnings,
        ["its name \"vercel-react-best-practices\" differs from its folder \"react-best-practices\" (the Agent Skills format wants them equal): listed as \"react-best-practices\""]
    );
    assert_eq!(parse_skill("x", "k", false, "---\nname: x\ndescription: d\n---\n").unwrap().1, Vec::<String>::new());
}

#[test]
fn an_unquoted_colon_in_a_one_line_value_is_read_as_text_with_a_warning() {
    let text = "---\nname: discord\ndescription: Use when you need Discord: send messages, react\nmetadata: {\"clawdbot\": {\"requires\": {\"bins\": [\"x\"]}}}\n---\n";
    let (s, warnings) = parse_skill("discord", "k", false, text).unwrap();
    assert_eq!(s.description, "Use when you need Discord: send messages, react");
    assert_eq!(s.needs.0[0].names, ["x"], "the metadata is still read strictly");
    assert_eq!(
        warnings,
        ["front matter is not valid YAML (line 3, column 39 of SKILL.md: mapping values are not allowed in this context); read with the value of `description` as plain text: quote it in the file"]
    );
}

#[test]
fn local_shadows_global_sorted_and_rendered_within_the_budget() {
    let mk = |n: &str, local: bool, tools: &[&str]| Skill {
        name: n.into(),
        description: format!("{n} {local}"),
        allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
        key: n.into(),
        local,
        ..Skill::default()
    };
    let merged = merge(
        vec![mk("zeta", true, &[]), mk("alpha", true, &[])],
        vec![mk("alpha", false, &[]), mk("beta", false, &["WebSearch"])],
    );
    assert_eq!(
        merged.iter().map(|s| (s.name.as_str(), s.local)).collect::<Vec<_>>(),
        [("alpha", true), ("beta", false), ("zeta", true)]
    );
    let all: Vec<&Skill> = merged.iter().collect();
    let xml = render(&all, 12_000);
    assert!(xml.find("<name>alpha</name>").unwrap() < xml.find("<name>beta</name>").unwrap());
    assert!(xml.find("<name>beta</name>").unwrap() < xml.find("<name>zeta</name>").unwrap());
    let short = render(&all, 230);
    assert!(short.contains("<name>alpha</name>") && !short.contains("beta"), "{short}");
    assert!(short.ends_with("</available_skills>\n(2 more skills are not listed: the list is full.)"), "{short}");
}

/// What reading a real SKILL.md should give.
enum Want {
    /// Listed, with this text in its description.
    Listed(&'static str),
    /// Listed, with a warning containing this.
    Warned(&'static str),
    /// Listed although its `allowed-tools` names tools Hearth lacks (this text in the hint).
    Hinted(&'static str),
    /// Read, but left out for this reason.
    LeftOut(&'static str),
    /// Not readable, with this error.
    Refused(&'static str),
}

/// Every SKILL.md of `tests/fixtures/real-world/skills/` (see SOURCES.md
/// there for where each comes from), each with what Hearth should make of it.
#[test]
fn every_real_world_skill_is_read_or_refused_for_the_right_reason() {
    use Want::*;
    let table: &[(&str, Want)] = &[
        (
            "1password",
            LeftOut("needs the programs op (metadata.openclaw.requires.bins), and a Worker runs no programs"),
        ),
        ("better-auth", Hinted("allowed-tools names tools Hearth does not have: Read, Write, Edit, Bash, Glob, Grep")),
        ("brainstorming", Listed("You MUST use this before any creative work")),
        ("brainstorming-studio", Refused("no YAML front matter")),
        ("claude-api", Listed("Reference for the Claude API / Anthropic SDK")),
        ("clawdbot-jira-skill", LeftOut("needs the programs curl, jq, bc, python3 (metadata.clawdbot.requires.bins)")),
        (
            "coding-agent",
            LeftOut("needs one of the programs claude, codex, opencode (metadata.openclaw.requires.anyBins)"),
        ),
        ("composition-patterns", Warned("its name \"vercel-composition-patterns\" differs from its folder")),
        ("cron", Listed("Schedule reminders and recurring tasks.")),
        ("diagram-maker", Listed("Create SVG/HTML or Excalidraw diagrams")),
        ("discord", Warned("not valid YAML (line 3, column 85 of SKILL.md: mapping values are not allowed")),
        ("evilcalc", Refused("line 5, column 62 of SKILL.md: a key must be a plain value, not a list or a map")),
        ("fast-browser-use", Refused("front matter has no description")),
        ("frontend-design", Listed("Guidance for distinctive, intentional visual design")),
        ("gh-fix-ci", Listed("Inspect GitHub PR checks with gh")),
        ("gh-issues", LeftOut("needs the programs git, gh (metadata.openclaw.requires.bins)")),
        ("github", LeftOut("needs the programs gh (metadata.nanobot.requires.bins)")),
        ("healthcheck", Listed("Audit/harden OpenClaw hosts")),
        ("mcp-builder", Listed("Guide for creating high-quality MCP")),
        ("novafon", Refused("line 7, column 70 of SKILL.md: while parsing a flow mapping")),
        ("obsidian", LeftOut("needs the programs obsidian (metadata.openclaw.requires.bins)")),
        ("obsidian-daily", Refused("line 4 of SKILL.md is a merge-conflict marker")),
        ("openai-whisper-api", LeftOut("needs the programs curl, node (metadata.openclaw.requires.bins)")),
        ("openclaw-serper", LeftOut("compatibility needs \"python\", which Hearth cannot provide")),
        ("plaid", LeftOut("needs the programs plaid-cli (metadata.clawdis.requires.bins)")),
        ("plan-executor", Hinted("allowed-tools names tools Hearth does not have: system-io")),
        ("planning-with-files", Hinted("allowed-tools names tools Hearth does not have: Read, Write, Edit, Bash")),
        ("pump-fun", LeftOut("needs the environment variables SOLANA_PRIVATE_KEY (metadata.moltbot.requires.env)")),
        ("react-best-practices", Warned("its name \"vercel-react-best-practices\" differs from its folder")),
        ("read-github", Listed("Read GitHub repos the RIGHT way")),
        ("reddit-read-only", LeftOut("needs the programs node (metadata.clawdbot.requires.bins)")),
        ("sherpa-onnx-tts", LeftOut("environment variables SHERPA_ONNX_RUNTIME_DIR, SHERPA_ONNX_MODEL_DIR")),
        ("skill-creator", Listed("Create new skills, modify and improve existing skills")),
        ("spotify", LeftOut("needs the programs spotify (metadata.clawdbot.requires.bins)")),
        ("spotify-player", LeftOut("needs one of the programs spogo, spotify_player")),
        ("task", LeftOut("command-tool names a tool Hearth does not have: tasker_cmd")),
        ("test-driven-development", Listed("Use when implementing any feature or bugfix")),
        ("timesheet", LeftOut("needs the programs timesheet (metadata.requires.bins)")),
        ("webapp-testing", Listed("Toolkit for interacting with and testing local web applications")),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/skills");
    let mut on_disk: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    on_disk.sort();
    assert_eq!(on_disk, table.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>(), "one row per fixture");
    for (folder, want) in table {
        let bytes = std::fs::read(dir.join(folder).join("SKILL.md")).unwrap();
        let got = parse_skill(folder, "k", false, &String::from_utf8_lossy(&bytes));
        match (want, got) {
            (Listed(desc), Ok((s, warnings))) => {
                assert_eq!(unavailable(&s, &HEARTH), None, "{folder}");
                assert!(s.description.starts_with(desc), "{folder}: {}", s.description);
                assert!(warnings.is_empty(), "{folder}: {warnings:?}");
            }
            (Warned(warning), Ok((s, warnings))) => {
                assert_eq!(unavailable(&s, &HEARTH), None, "{folder}");
                assert!(warnings.iter().any(|w| w.contains(warning)), "{folder}: {warnings:?}");
            }
            (Hinted(hint), Ok((s, _))) => {
                assert_eq!(unavailable(&s, &HEARTH), None, "{folder}");
                let got = allowed_tools_hint(&s, &HEARTH);
                assert!(got.as_deref().is_some_and(|h| h.contains(hint)), "{folder}: {got:?}");
            }
            (LeftOut(reason), Ok((s, _))) => {
                let why = unavailable(&s, &HEARTH);
                assert!(why.as_deref().is_some_and(|w| w.contains(reason)), "{folder}: {why:?}");
            }
            (Refused(error), Err(e)) => assert!(e.to_string().contains(error), "{folder}: {e}"),
            (_, got) => panic!("{folder}: got {got:?}"),
        }
    }
}

#[test]
fn real_world_front_matter_shapes_read_as_their_authors_meant() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/skills");
    let read = |folder: &str| {
        let text = std::fs::read_to_string(dir.join(folder).join("SKILL.md")).unwrap();
        parse_skill(folder, "k", false, &text).unwrap().0
    };
    // The 74 KB skill of anthropics/skills: larger than the old 64 KiB limit; `|-` description.
    let big = read("claude-api");
    assert!(std::fs::metadata(dir.join("claude-api/SKILL.md")).unwrap().len() > 64 * 1024);
    assert!(big.description.contains("TRIGGER — read BEFORE opening the target file"), "{}", big.description);
    // `description:` with its text on the next line, and a nested metadata map.
    let comp = read("composition-patterns");
    assert!(comp.description.starts_with("React composition patterns that scale."), "{}", comp.description);
    assert_eq!(comp.metadata.get("author").and_then(Yaml::as_str), Some("vercel"));
    assert_eq!(
        read("gh-fix-ci").metadata.get("short-description").and_then(Yaml::as_str),
        Some("Fix failing Github CI actions")
    );
    // A flow map over several lines, with trailing commas.
    let op = read("1password");
    let install = op.metadata.get("openclaw").and_then(|o| o.get("install"));
    assert!(matches!(install, Some(Yaml::List(items)) if items.len() == 1), "{install:?}");
    // CRLF line endings; a UTF-8 BOM is no front matter problem either.
    assert_eq!(read("pump-fun").description, "Buy, sell, and launch tokens on Pump.fun using the PumpPortal API");
    // Folded and literal block scalars.
    assert!(read("read-github").description.starts_with("Read GitHub repos the RIGHT way"));
    assert!(!read("reddit-read-only").description.contains('\n'));
}

#[test]
fn the_built_in_skills_read_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let folder = entry.unwrap().file_name().into_string().unwrap();
        let text = std::fs::read_to_string(dir.join(&folder).join("SKILL.md")).unwrap();
        let (skill, warnings) = parse_skill(&folder, "k", false, &text).unwrap();
        assert!(warnings.is_empty(), "{folder}: {warnings:?}");
        assert_eq!(unavailable(&skill, &crate::session::toolbox::all_tool_names()), None, "{folder}");
        seen += 1;
    }
    assert!(seen >= 3);
}

#[test]
fn cut_and_mangled_real_front_matters_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/skills");
    let mut tried = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let folder = entry.unwrap().file_name().into_string().unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(dir.join(&folder).join("SKILL.md")).unwrap()).into_owned();
        let head_end = front_matter::split(&text).map_or(text.len().min(4096), |fm| fm.yaml.len() + 8).min(text.len());
        for cut in (0..head_end).filter(|i| text.is_char_boundary(*i)).step_by(17) {
            // Cut short, then closed again so the front matter is read.
            let _ = parse_skill(&folder, "k", false, &format!("{}\n---\n", &text[..cut]));
            // A character dropped, one doubled, brackets swapped.
            let mangled: String = text[..cut].chars().chain(text[cut..].chars().skip(1)).collect();
            let _ = parse_skill(&folder, "k", false, &mangled);
            let swapped = text[..head_end].replace('{', "[").replacen(']', "}", cut % 5);
            let _ = parse_skill(&folder, "k", false, &swapped);
            tried += 3;
        }
    }
    assert!(tried > 1_000, "{tried}");
}
