//! What a skill needs that Hearth, a Worker with the tools of
//! [`crate::tools`], can never give it; such a skill is left out of every
//! list with the reason ([`unavailable`]).
//!
//! Three places say what a skill needs:
//!
//! 1. `command-tool` (the tool an OpenClaw skill routes its work to) must be
//!    one of Hearth's. `allowed-tools` is not a requirement: in the Agent
//!    Skills format (and Claude Code, which most skills are written for) it
//!    lists tools the skill may use without asking, named as that agent
//!    names them (`Bash`, `Read`, `WebFetch`). A skill naming tools Hearth
//!    lacks is still listed, with one log line per version
//!    ([`allowed_tools_hint`]); `load_skill` tells the model which of them
//!    it does not have in that session.
//! 2. Requirements in the metadata other agents' skills carry
//!    ([`Needs::read`]): a `requires` map under any namespace of `metadata`
//!    (seen: `clawdbot`, `openclaw`, `moltbot`, `clawdis`, `nanobot`,
//!    `clawdhub`), straight under `metadata`, or at the top level; and
//!    beside it `primaryEnv` and `os`. In `requires`: `bins`/`bin` and
//!    `anyBins` (programs), `env`/`envs` (environment variables), `config`
//!    (settings of the agent the skill was written for), `os`. A Worker runs
//!    no programs and has no operating system to offer, and Hearth hands no
//!    environment variable or secret to anything (none ever reaches the
//!    model, and no tool takes one), so each of these leaves the skill out.
//!    `install` recipes, `optional*` and other keys are ignored: they add
//!    nothing a required program does not already say.
//! 3. `compatibility` text asking for what a Worker cannot offer (a shell,
//!    a local binary such as python or git, a browser, a local file system,
//!    internet or web access: the words in [`UNAVAILABLE_NEEDS`]). Text that
//!    names Hearth is taken at its word; other text is shown to the model.
//!
//! A skill whose front matter says `disable-model-invocation: true` is meant
//! to be started only by a person (a slash command elsewhere); Hearth has no
//! such command, so listing it would let the model start it against its
//! author's wish: it is left out too.

use super::super::yaml::Yaml;

/// One kind of requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedKind {
    /// Every program listed (`requires.bins`).
    Bins,
    /// At least one of the programs listed (`requires.anyBins`).
    AnyBins,
    /// Environment variables (`requires.env`, `primaryEnv`).
    Env,
    /// Settings of the agent the skill was written for (`requires.config`).
    Config,
    /// Operating systems it runs on (`os`).
    Os,
}

/// A requirement as declared, with where (`metadata.openclaw.requires.bins`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub kind: NeedKind,
    pub names: Vec<String>,
    pub at: String,
}

/// Every requirement a skill's front matter declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs(pub Vec<Need>);

impl Needs {
    /// Reads the requirements of the front matter `fm` (the whole map).
    pub fn read(fm: &Yaml) -> Needs {
        let mut needs = Vec::new();
        collect(fm, "", &mut needs);
        if let Some(meta @ Yaml::Map(entries)) = fm.get("metadata") {
            collect(meta, "metadata.", &mut needs);
            for (ns, value) in entries {
                if matches!(value, Yaml::Map(_)) {
                    collect(value, &format!("metadata.{ns}."), &mut needs);
                }
            }
        }
        Needs(needs)
    }
}

/// The `requires`, `primaryEnv` and `os` keys of one map, at `path`.
fn collect(map: &Yaml, path: &str, out: &mut Vec<Need>) {
    let mut add = |kind: NeedKind, value: &Yaml, at: String| {
        let names: Vec<String> =
            value.strings().into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
        if !names.is_empty() {
            out.push(Need { kind, names, at });
        }
    };
    if let Some(Yaml::Map(requires)) = map.get("requires") {
        for (key, value) in requires {
            let kind = match key.as_str() {
                "bins" | "bin" => NeedKind::Bins,
                "anyBins" => NeedKind::AnyBins,
                "env" | "envs" => NeedKind::Env,
                "config" => NeedKind::Config,
                "os" => NeedKind::Os,
                _ => continue,
            };
            add(kind, value, format!("{path}requires.{key}"));
        }
    }
    if let Some(v) = map.get("primaryEnv") {
        add(NeedKind::Env, v, format!("{path}primaryEnv"));
    }
    if let Some(v) = map.get("os") {
        add(NeedKind::Os, v, format!("{path}os"));
    }
}

/// What a skill's `compatibility` text may ask for that Hearth can never
/// provide. Matched as whole words (or word pairs), case-insensitively.
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

/// The tools of `allowed-tools` that are not among `tools` (compared
/// case-insensitively), as written.
pub fn tools_missing<'a>(skill: &'a super::Skill, tools: &[&str]) -> Vec<&'a str> {
    skill
        .allowed_tools
        .iter()
        .filter(|t| !tools.iter().any(|h| h.eq_ignore_ascii_case(t)))
        .map(String::as_str)
        .collect()
}

/// A log line when `allowed-tools` names tools Hearth does not have: a hint
/// from the skill's author, so the skill is listed all the same.
pub fn allowed_tools_hint(skill: &super::Skill, hearth_tools: &[&str]) -> Option<String> {
    let missing = tools_missing(skill, hearth_tools);
    (!missing.is_empty()).then(|| {
        format!(
            "allowed-tools names tools Hearth does not have: {} (a hint for other agents, not a requirement: listed all the same)",
            missing.join(", ")
        )
    })
}

/// Why Hearth can never run `skill`, if it cannot (see the module docs).
pub fn unavailable(skill: &super::Skill, hearth_tools: &[&str]) -> Option<String> {
    if let Some(tool) =
        skill.command_tool.as_deref().filter(|t| !hearth_tools.iter().any(|h| h.eq_ignore_ascii_case(t)))
    {
        return Some(format!("command-tool names a tool Hearth does not have: {tool}"));
    }
    if skill.model_may_not_invoke {
        return Some(
            "disable-model-invocation is true: only a person may start it, and Hearth has no command for that".into(),
        );
    }
    if let Some(need) = skill.needs.0.first() {
        let names = need.names.join(", ");
        let at = &need.at;
        return Some(match need.kind {
            NeedKind::Bins => format!("needs the programs {names} ({at}), and a Worker runs no programs"),
            NeedKind::AnyBins => format!("needs one of the programs {names} ({at}), and a Worker runs no programs"),
            NeedKind::Env => format!(
                "needs the environment variables {names} ({at}), and Hearth passes no environment variable or secret to a skill"
            ),
            NeedKind::Config => {
                format!("needs settings of the agent it was written for: {names} ({at}), which Hearth does not have")
            }
            NeedKind::Os => {
                format!("runs only on the operating systems {names} ({at}), and a Worker offers none")
            }
        });
    }
    compatibility_gap(skill.compatibility.as_deref()?)
}

/// A need from [`UNAVAILABLE_NEEDS`] in a `compatibility` text.
fn compatibility_gap(text: &str) -> Option<String> {
    let text = text.to_lowercase();
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

#[cfg(test)]
mod tests {
    use super::super::Skill;
    use super::*;
    use crate::workspace::yaml::parse_map;

    const HEARTH: [&str; 3] = ["read_file", "load_skill", "write_file"];

    fn with(tools: &[&str], compat: Option<&str>) -> Skill {
        Skill {
            name: "x".into(),
            description: "d".into(),
            compatibility: compat.map(str::to_owned),
            allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
            key: "k".into(),
            ..Skill::default()
        }
    }

    #[test]
    fn allowed_tools_is_a_hint_never_a_reason_to_leave_a_skill_out() {
        let claude_code = with(&["Bash", "Read", "read_file"], None);
        assert_eq!(unavailable(&claude_code, &HEARTH), None);
        let hint = allowed_tools_hint(&claude_code, &HEARTH).unwrap();
        assert!(hint.starts_with("allowed-tools names tools Hearth does not have: Bash, Read ("), "{hint}");
        assert_eq!(allowed_tools_hint(&with(&["READ_FILE"], None), &HEARTH), None, "case does not matter");
        assert_eq!(tools_missing(&with(&["write_file", "read_file"], None), &["read_file"]), ["write_file"]);
    }

    #[test]
    fn skills_hearth_can_never_run_are_named() {
        assert_eq!(unavailable(&with(&["read_file"], None), &HEARTH), None);
        for needs in [
            "Requires Python 3.11",
            "Needs a shell and git.",
            "requires internet access",
            "Requires web search tool",
            "Node.js 20+",
        ] {
            assert!(unavailable(&with(&[], Some(needs)), &HEARTH).is_some(), "{needs}");
        }
        for fine in [
            "Works with any chat app",
            "Designed for Hearth; uses git-style notes",
            "digital notes, nodes and shells-free",
            "Best with metric units",
        ] {
            assert_eq!(unavailable(&with(&[], Some(fine)), &HEARTH), None, "{fine}");
        }
    }

    #[test]
    fn requirements_are_read_from_every_place_real_skills_put_them() {
        let needs = |yaml: &str| Needs::read(&parse_map(yaml).unwrap()).0;
        let n = needs("metadata: {\"clawdbot\":{\"requires\":{\"bins\":[\"bc\"],\"env\":[\"API_KEY\"]},\"primaryEnv\":\"API_KEY\"}}");
        assert_eq!(
            n.iter().map(|n| (n.kind, n.names.join(","), n.at.as_str())).collect::<Vec<_>>(),
            [
                (NeedKind::Bins, "bc".into(), "metadata.clawdbot.requires.bins"),
                (NeedKind::Env, "API_KEY".into(), "metadata.clawdbot.requires.env"),
                (NeedKind::Env, "API_KEY".into(), "metadata.clawdbot.primaryEnv"),
            ]
        );
        assert_eq!(needs("metadata: {\"requires\": {\"bins\": [\"timesheet\"]}}")[0].at, "metadata.requires.bins");
        let top = needs("requires:\n  bins:\n    - chrome\nos:\n  - darwin\n");
        assert_eq!((top[0].kind, top[0].at.as_str()), (NeedKind::Bins, "requires.bins"));
        assert_eq!((top[1].kind, top[1].names.join(",")), (NeedKind::Os, "darwin".into()));
        let any = needs("metadata:\n  openclaw:\n    requires: { anyBins: [claude, codex], config: [a.b] }\n");
        assert_eq!(any.iter().map(|n| n.kind).collect::<Vec<_>>(), [NeedKind::AnyBins, NeedKind::Config]);
        // Nothing declared, or only what does not count.
        for none in [
            "metadata:\n  author: me\n  version: \"1\"\n",
            "metadata: {\"clawdbot\":{\"emoji\":\"x\",\"requires\":{\"bins\":[],\"optional_env\":[\"X\"]}}}",
            "metadata: {\"openclaw\":{\"install\":[{\"kind\":\"brew\",\"bins\":[\"op\"]}]}}",
        ] {
            assert_eq!(needs(none), vec![], "{none}");
        }
    }

    #[test]
    fn each_requirement_gives_its_reason() {
        let reason = |yaml: &str| {
            let s = Skill { needs: Needs::read(&parse_map(yaml).unwrap()), ..with(&[], None) };
            unavailable(&s, &HEARTH).unwrap()
        };
        assert_eq!(
            reason("metadata: {\"openclaw\":{\"requires\":{\"bins\":[\"op\"]}}}"),
            "needs the programs op (metadata.openclaw.requires.bins), and a Worker runs no programs"
        );
        assert!(
            reason("metadata: {\"moltbot\":{\"requires\":{\"env\":[\"KEY\"]}}}").contains("environment variables KEY")
        );
        assert!(reason("os: [darwin]").contains("operating systems darwin (os)"));
        assert!(reason("metadata: {\"openclaw\":{\"requires\":{\"config\":[\"x.y\"]}}}").contains("settings"));
        let manual = Skill { model_may_not_invoke: true, ..with(&[], None) };
        assert!(unavailable(&manual, &HEARTH).unwrap().contains("disable-model-invocation"));
    }
}
