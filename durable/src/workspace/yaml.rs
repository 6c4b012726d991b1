//! YAML front matter read into a small value tree, with a real parser.
//!
//! Why this shape: skills published by other agents use the whole of YAML
//! in their front matter (nested block maps, JSON-style flow maps over
//! several lines with trailing commas, block scalars, a description on the
//! line after its key). `saphyr-parser`'s event parser reads all of it and
//! adds ~60 kB raw / ~24 kB gzip to the Worker (serde-saphyr, the serde
//! front end of the same parser, adds ~167 kB gzip); the few lines here
//! turn its events into a [`Yaml`] tree.
//!
//! Untrusted input is bounded: the text ([`MAX_YAML_BYTES`]), the number of
//! nodes ([`MAX_NODES`]) and the nesting ([`MAX_DEPTH`]) are capped, and
//! aliases (`*name`) are an error rather than expanded, so no "billion
//! laughs" can blow up memory. Every problem is an [`YamlError`] with the
//! line and column it was found at; nothing here panics on any input.

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

/// Largest front matter parsed (real ones are a few kB; the largest flow
/// maps of install recipes under 8 kB).
pub const MAX_YAML_BYTES: usize = 64 * 1024;
/// Most values (scalars, lists, maps) in one front matter.
pub const MAX_NODES: usize = 10_000;
/// Deepest nesting of lists and maps.
pub const MAX_DEPTH: usize = 32;

/// A YAML value. Plain scalars resolve as YAML's core schema does for
/// `null`/`~`/empty and `true`/`false`; everything else (numbers too) stays
/// the text it was, trimmed, so nothing is lost or misread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Yaml {
    #[default]
    Null,
    Bool(bool),
    Str(String),
    List(Vec<Yaml>),
    /// Keys in file order (duplicates are an error).
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// The value at `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a scalar (`true`/`false` as words), else `None`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(s) => Some(s),
            Yaml::Bool(true) => Some("true"),
            Yaml::Bool(false) => Some("false"),
            _ => None,
        }
    }

    /// A list of scalars as strings; a single scalar as a list of one; an
    /// empty list for null. Non-scalar items are left out.
    pub fn strings(&self) -> Vec<String> {
        match self {
            Yaml::List(items) => items.iter().filter_map(|i| i.as_str()).map(str::to_owned).collect(),
            Yaml::Null => Vec::new(),
            other => other.as_str().map(|s| vec![s.to_owned()]).unwrap_or_default(),
        }
    }
}

/// Why a front matter could not be read, and where (1-based line, column
/// of the YAML text; the caller shifts the line to the file's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

impl YamlError {
    fn at(span: &Span, message: impl Into<String>) -> Self {
        YamlError { line: span.start.line(), column: span.start.col() + 1, message: message.into() }
    }
    fn scan(e: &ScanError) -> Self {
        YamlError { line: e.marker().line(), column: e.marker().col() + 1, message: e.info().to_owned() }
    }
}

/// A collection being filled while its events arrive.
enum Open {
    List(Vec<Yaml>),
    /// Entries so far, and the key waiting for its value (with where it was).
    Map(Vec<(String, Yaml)>, Option<(String, Span)>),
}

/// Parses `text` as one YAML document whose root is a map (an empty
/// document is an empty map).
pub fn parse_map(text: &str) -> Result<Yaml, YamlError> {
    if text.len() > MAX_YAML_BYTES {
        return Err(YamlError {
            line: 1,
            column: 1,
            message: format!("front matter is larger than {} KiB", MAX_YAML_BYTES / 1024),
        });
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Yaml> = None;
    let mut nodes = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| YamlError::scan(&e))?;
        let value = match event {
            Event::StreamStart | Event::DocumentStart(_) | Event::DocumentEnd | Event::Nothing => continue,
            Event::StreamEnd => break,
            Event::Alias(_) => return Err(YamlError::at(&span, "aliases (*name) are not supported in front matter")),
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(YamlError::at(&span, format!("more than {MAX_NODES} values")));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(YamlError::at(&span, format!("nested deeper than {MAX_DEPTH} levels")));
                }
                if let Some(Open::Map(_, None)) = stack.last() {
                    return Err(YamlError::at(&span, "a key must be a plain value, not a list or a map"));
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Open::List(Vec::new())
                } else {
                    Open::Map(Vec::new(), None)
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::List(items)) => Yaml::List(items),
                Some(Open::Map(entries, _)) => Yaml::Map(entries),
                None => return Err(YamlError::at(&span, "unbalanced end of a collection")),
            },
            Event::Scalar(text, style, _, _) => {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(YamlError::at(&span, format!("more than {MAX_NODES} values")));
                }
                scalar(&text, style)
            }
        };
        match stack.last_mut() {
            None => {
                if root.is_some() {
                    return Err(YamlError::at(&span, "more than one document"));
                }
                root = Some(value);
            }
            Some(Open::List(items)) => items.push(value),
            Some(Open::Map(entries, pending)) => match pending.take() {
                None => {
                    let key = match value {
                        Yaml::Str(s) => s,
                        Yaml::Bool(b) => b.to_string(),
                        Yaml::Null => String::new(),
                        Yaml::List(_) | Yaml::Map(_) => {
                            return Err(YamlError::at(&span, "a key must be a plain value, not a list or a map"))
                        }
                    };
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(YamlError::at(&span, format!("duplicate key {key:?}")));
                    }
                    *pending = Some((key, span));
                }
                Some((key, _)) => entries.push((key, value)),
            },
        }
    }
    match root {
        None => Ok(Yaml::Map(Vec::new())),
        Some(Yaml::Null) => Ok(Yaml::Map(Vec::new())),
        Some(map @ Yaml::Map(_)) => Ok(map),
        Some(_) => Err(YamlError {
            line: 1,
            column: 1,
            message: "front matter must be `key: value` lines (a map), not a single value or a list".into(),
        }),
    }
}

fn scalar(text: &str, style: ScalarStyle) -> Yaml {
    if style == ScalarStyle::Plain {
        match text {
            "" | "~" | "null" | "Null" | "NULL" => return Yaml::Null,
            "true" | "True" | "TRUE" => return Yaml::Bool(true),
            "false" | "False" | "FALSE" => return Yaml::Bool(false),
            _ => {}
        }
    }
    Yaml::Str(text.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Yaml {
        Yaml::Str(v.into())
    }

    #[test]
    fn block_and_flow_maps_lists_and_scalars() {
        let y = parse_map(
            "name: x\ndescription:\n  on the next line\n  and the one after\nmetadata:\n  author: me\n  version: \"1.0\"\n  tags: [a, b]\nflag: true\nnone: ~\ntext: |\n  kept\n  lines\n",
        )
        .unwrap();
        assert_eq!(y.get("description"), Some(&s("on the next line and the one after")));
        assert_eq!(y.get("metadata").and_then(|m| m.get("version")), Some(&s("1.0")));
        assert_eq!(
            y.get("metadata").and_then(|m| m.get("tags")).map(Yaml::strings),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(y.get("flag"), Some(&Yaml::Bool(true)));
        assert_eq!(y.get("none"), Some(&Yaml::Null));
        assert_eq!(y.get("text"), Some(&s("kept\nlines")), "block scalars are trimmed");
        // JSON-style flow map over several lines, with trailing commas.
        let flow = parse_map("metadata:\n  {\n    \"openclaw\":\n      {\n        \"requires\": { \"bins\": [\"op\"] },\n      },\n  }\n").unwrap();
        let bins = flow
            .get("metadata")
            .and_then(|m| m.get("openclaw"))
            .and_then(|o| o.get("requires"))
            .and_then(|r| r.get("bins"));
        assert_eq!(bins.map(Yaml::strings), Some(vec!["op".to_owned()]));
        assert_eq!(parse_map("").unwrap(), Yaml::Map(vec![]));
        assert_eq!(parse_map("# only a comment\n").unwrap(), Yaml::Map(vec![]));
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse_map("name: x\ndescription: Use when: you need it\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 22), "{e}");
        assert!(e.message.contains("mapping values are not allowed"), "{e}");
        let e = parse_map("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2, column 1: duplicate key \"a\"");
        assert!(parse_map("- a\n- b\n").unwrap_err().message.contains("`key: value`"));
        assert!(parse_map("\"just text\"").unwrap_err().message.contains("`key: value`"));
        assert!(parse_map("m: {\"bins\":[\"bc\"],[\"touch\"]}")
            .unwrap_err()
            .message
            .contains("key must be a plain value"));
        assert!(parse_map("a: &x 1\nb: *x\n").unwrap_err().message.contains("aliases"));
        assert!(parse_map(&"x".repeat(MAX_YAML_BYTES + 1)).unwrap_err().message.contains("larger than"));
    }

    #[test]
    fn hostile_inputs_are_bounded() {
        // Billion laughs: the first alias is refused, nothing is expanded.
        let mut bomb =
            String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for (i, c) in ('b'..='j').enumerate() {
            let prev = (b'a' + i as u8) as char;
            bomb.push_str(&format!(
                "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
        }
        assert!(parse_map(&bomb).unwrap_err().message.contains("aliases"));
        let deep = format!("a: {}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse_map(&deep).unwrap_err().message.contains("nested deeper"));
        let unclosed = format!("a: {}", "[".repeat(60_000));
        assert!(parse_map(&unclosed).is_err());
        let block: String = (0..100).map(|i| format!("{}k{i}:\n", " ".repeat(i * 2))).collect();
        assert!(parse_map(&block).unwrap_err().message.contains("nested deeper"));
        let wide: String = (0..(MAX_NODES / 2 + 1)).map(|i| format!("k{i}: v\n")).collect();
        assert!(parse_map(&wide).unwrap_err().message.contains("more than"));
        for odd in
            ["\u{feff}a: b", ":", "? ", "- ]", "{", "a: [", "a: \"\\q\"", "---\n---\n", "a: b\n...\nc: d", "\t- x"]
        {
            let _ = parse_map(odd);
        }
    }
}
