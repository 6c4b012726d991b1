//! The structure, held by a test rather than by care.
//!
//! 1. **Floors.** Every top-level module of `durable/src` has a floor (the
//!    table below); a module's code (tests aside) may name `crate::x` only
//!    for an `x` on its own floor or below, and two modules never name each
//!    other. A new module must be given a floor here before it builds.
//! 2. **One home per platform.** A platform's folder under
//!    `durable/src/channels/` names no other platform's folder: what they
//!    share lives in `channels/` itself. So a new channel is one folder.
//! 3. **One client per platform API.** Only `channels/telegram/` names
//!    Telegram's Bot API (`api.telegram.org`), in `durable/src` and `src/`
//!    alike: anything else that talks to Telegram (dreaming's approvals,
//!    reminders, the outbox) goes through its client.
//! 4. **Thin Worker.** In `src/` only the entry points (`channels.rs`, which
//!    hands each webhook to its folder, and the Gateway object, which owns
//!    Discord's socket) name a platform's folder; nothing there parses or
//!    sends a platform's wire format.
//! 5. **Small files.** No non-test file of `durable/src` is over
//!    [`MAX_LINES`] lines (a file past that is two things), but for the
//!    files of [`TOO_LONG_FOR_NOW`].
//!
//! The scan reads `crate::…` paths in code, not in comments, and skips test
//! code (`tests.rs`, `*_tests.rs`, `tests/` folders, `testing/` and
//! `#[cfg(test)] mod tests` blocks): tests may reach anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Floors from the ground up. Within a floor, modules may use each other
/// one way (never both).
const FLOORS: &[&[&str]] = &[
    // Ground: message types, text, time, ordering.
    &["clock", "order", "text", "inbound", "apart"],
    // Settings and the typed messages objects exchange.
    &["settings", "protocol", "toolkit"],
    // The ports through which the runtime touches the world.
    &["ports"],
    // Small features on the ports.
    &["retry", "storage", "serving", "routing", "api", "console", "codemode", "people", "approvals"],
    // Features.
    &["web", "llm", "usage", "workspace", "channels"],
    // Voice asks the channels' table which chats take voice notes.
    &["delivery", "prompt", "tools", "scheduled", "memory", "tasks", "reminders", "voice"],
    &["media", "mcp", "dreaming", "http_api"],
    // The objects' logic.
    &["session", "agent"],
];

/// Test-only modules: not part of the structure.
const TEST_ONLY: &[&str] = &["testing"];

/// The platforms' folders under `channels/`.
const PLATFORMS: &[&str] = &["telegram", "discord", "slack", "whatsapp", "email"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || name == "testing.rs"
        || rel.starts_with("testing/")
        || rel.contains("/tests/")
}

/// The code of a file without its test module and its comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths `prefix…` a text names, as their segments after the prefix.
fn paths_after<'a>(text: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
        out.push(rest[..end].split("::").filter(|s| !s.is_empty()).collect());
    }
    out
}

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

/// Each non-test file of `durable/src`: its top-level module and what it names.
fn durable_files() -> Vec<(String, String, String)> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            if rel == "lib.rs" || is_test_file(&rel) {
                return None;
            }
            let top = rel.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
            Some((rel, top, code(&std::fs::read_to_string(&p).unwrap())))
        })
        .collect()
}

#[test]
fn every_module_imports_only_from_its_floor_or_below() {
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, top, code) in durable_files() {
        if TEST_ONLY.contains(&top.as_str()) {
            continue;
        }
        let Some(mine) = floor_of(&top) else {
            problems.push(format!("{rel}: module `{top}` has no floor in tests/architecture.rs"));
            continue;
        };
        for path in paths_after(&code, "crate::") {
            let Some(&used) = path.first() else { continue };
            if used == top || floor_of(used).is_none() && !TEST_ONLY.contains(&used) {
                continue;
            }
            if TEST_ONLY.contains(&used) {
                problems.push(format!("{rel}: non-test code uses the test module `{used}`"));
                continue;
            }
            let theirs = floor_of(used).unwrap_or(0);
            if theirs > mine {
                problems.push(format!(
                    "{rel}: `{top}` (floor {mine}) uses `crate::{}` from floor {theirs}, above it",
                    path.join("::")
                ));
            }
            edges.entry(top.clone()).or_default().insert(used.to_owned());
        }
    }
    for (a, used) in &edges {
        for b in used {
            if edges.get(b).is_some_and(|back| back.contains(a)) && a < b {
                problems.push(format!("`{a}` and `{b}` use each other: one of them belongs a floor higher"));
            }
        }
    }
    assert!(problems.is_empty(), "the floors do not hold:\n{}", problems.join("\n"));
}

#[test]
fn a_platform_folder_names_no_other_platform() {
    let mut problems = Vec::new();
    for (rel, _, code) in durable_files() {
        let Some(mine) = rel.strip_prefix("channels/").and_then(|r| r.split('/').next()) else { continue };
        if !PLATFORMS.contains(&mine) {
            continue;
        }
        for path in paths_after(&code, "crate::channels::").into_iter().chain(paths_after(&code, "super::super::")) {
            if let Some(other) = path.first().filter(|p| PLATFORMS.contains(p) && **p != mine) {
                problems.push(format!("{rel}: the {mine} folder uses the {other} folder ({})", path.join("::")));
            }
        }
    }
    assert!(problems.is_empty(), "platforms reach into each other:\n{}", problems.join("\n"));
}

/// Files of `src/` that may name a platform's folder: the entry points.
const WORKER_ENTRY_POINTS: &[&str] = &["channels.rs", "gateway_do.rs", "lib.rs"];

#[test]
fn the_worker_keeps_only_the_entry_points_of_the_platforms() {
    let src = root().join("../src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for p in files {
        let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let text = code(&std::fs::read_to_string(&p).unwrap());
        for platform in PLATFORMS {
            let named = text.contains(&format!("channels::{platform}")) || text.contains(&format!("mod {platform}"));
            if named && !WORKER_ENTRY_POINTS.contains(&rel.as_str()) {
                problems.push(format!(
                    "src/{rel} names the {platform} channel: its logic belongs in durable/src/channels/{platform}/"
                ));
            }
        }
        let first = rel.split('/').next().unwrap_or("").trim_end_matches(".rs");
        if PLATFORMS.contains(&first) {
            problems.push(format!("src/{rel}: a platform's module in the Worker"));
        }
    }
    assert!(problems.is_empty(), "platform glue in the Worker:\n{}", problems.join("\n"));
}

/// What names the Bot API: its host, which no other service shares.
const BOT_API_HOST: &str = "api.telegram.org";

/// The code of a file without its test module and its comments, strings
/// kept whole (`code` cuts a line at the first `//`, the one of `https://`
/// too). A comment here starts a line or follows a space.
fn code_with_strings(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| {
            let starts = l.trim_start().starts_with("//");
            match l.find(" //") {
                _ if starts => "",
                Some(i) => &l[..i],
                None => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn names_bot_api(text: &str) -> bool {
    code_with_strings(text).contains(BOT_API_HOST)
}

#[test]
fn only_the_telegram_folder_names_the_bot_api() {
    let mut problems = Vec::new();
    for (dir, shown) in [(root().join("src"), "durable/src/"), (root().join("../src"), "src/")] {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for p in files {
            let rel = p.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/");
            let home = shown == "durable/src/" && rel.starts_with("channels/telegram/");
            if !home && !is_test_file(&rel) && names_bot_api(&std::fs::read_to_string(&p).unwrap()) {
                problems.push(format!("{shown}{rel} names {BOT_API_HOST}: use channels::telegram::client"));
            }
        }
    }
    assert!(problems.is_empty(), "Telegram's Bot API outside its client:\n{}", problems.join("\n"));
}

/// The most lines a non-test file of `durable/src` may have.
const MAX_LINES: usize = 600;

/// Files over [`MAX_LINES`] that another branch is splitting (the objects'
/// logic and the typed calls): the list only shrinks.
const TOO_LONG_FOR_NOW: &[&str] = &[];

#[test]
fn no_file_is_two_things() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for p in files {
        let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        if lines > MAX_LINES && !is_test_file(&rel) && !TOO_LONG_FOR_NOW.contains(&rel.as_str()) {
            problems.push(format!("durable/src/{rel}: {lines} lines"));
        }
    }
    assert!(
        problems.is_empty(),
        "files over {MAX_LINES} lines (split each by what it is for):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_scan_sees_what_it_checks() {
    // The Bot API rule sees the host in a string, not in a comment.
    assert!(names_bot_api("let base = \"https://api.telegram.org\"; // the default"));
    assert!(!names_bot_api("// Telegram's https://api.telegram.org\nfn f() {} // or api.telegram.org"));
    assert!(!names_bot_api(
        "fn f() {}\n#[cfg(test)]\nmod tests {\n    const B: &str = \"https://api.telegram.org\";\n}"
    ));
    // The scan itself: a path in code is seen, one in a comment is not.
    let text = code("use crate::ports::Http; // crate::session::x\nfn f() { crate::text::nfc(\"\"); }");
    let seen: Vec<String> = paths_after(&text, "crate::").iter().map(|p| p.join("::")).collect();
    assert_eq!(seen, ["ports::Http", "text::nfc"]);
    assert!(paths_after("xcrate::a", "crate::").is_empty());
    assert_eq!(floor_of("session"), Some(FLOORS.len() - 1));
    assert_eq!(floor_of("inbound"), Some(0));
}

/// The objects' classes in `src/` are wrappers: their routes are the hosts'
/// (`durable::agent::serve`, `durable::session::serve`), and every call
/// between objects is a typed `objects::call::<C>()` (or its relay), so no
/// path is spelled in the Worker's object files and only `src/objects.rs`
/// reaches a stub.
#[test]
fn the_worker_objects_are_thin_and_call_each_other_by_type() {
    let src = root().join("../src");
    let mut problems = Vec::new();
    for (file, max_lines) in [("agent_do.rs", 200), ("session_do.rs", 200)] {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        if text.lines().count() >= max_lines {
            problems.push(format!("src/{file} has {} lines (under {max_lines})", text.lines().count()));
        }
        if code(&text).contains("\"/") {
            problems.push(format!("src/{file} spells a path: routes belong in durable's serve.rs"));
        }
    }
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for p in files {
        let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let text = code(&std::fs::read_to_string(&p).unwrap());
        for raw in ["call_raw", "stub_fetch"] {
            if text.contains(raw) && !matches!(rel.as_str(), "objects.rs" | "js.rs") {
                problems.push(format!("src/{rel} uses {raw}: call objects through objects::call::<C>()"));
            }
        }
    }
    assert!(problems.is_empty(), "object glue in the Worker:\n{}", problems.join("\n"));
}
