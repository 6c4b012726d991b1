//! The sweep's one LLM call: the candidates and MEMORY.md go in, a verdict
//! per candidate comes out (promote as one short fact, or reject and why).
//!
//! The answer is JSON (`{"decisions": [...]}`), read leniently: code fences
//! and prose around the object are ignored, unknown fields too. A decision
//! that names no candidate is dropped; a candidate without a decision is
//! left for another night. An answer that is not the object at all fails
//! the sweep's judgement (nothing is written, the candidates stay).

use serde::Serialize;

/// Characters of each candidate's content sent (archives can be long).
pub const CONTENT_CHARS: usize = 1_500;
/// The call's output limit (well above what ten decisions take).
pub const MAX_OUTPUT_TOKENS: u32 = 2_048;

pub const SYSTEM: &str = "You curate MEMORY.md, the long-term memory of a personal AI agent. Each night you get \
the memories that kept coming up: found by searches and recalled into conversations, for different questions, on \
different days. Decide for each one:\n\
- promote: turn it into ONE short, self-contained fact worth keeping for months (at most 200 characters, plain \
text, no markdown, no instructions to anyone), or\n\
- reject: a one-off, trivial, outdated or speculative note, a secret (password, code, key), or something MEMORY.md \
already says. Give the reason in a few words.\n\
MEMORY.md lines are never changed or removed. If a memory contradicts or updates a line of MEMORY.md, reject it and \
copy that line into \"conflicts_with\".\n\
Answer with JSON only, one decision per memory: {\"decisions\": [{\"id\": 1, \"promote\": true, \"fact\": \"...\"}, \
{\"id\": 2, \"promote\": false, \"reason\": \"...\", \"conflicts_with\": \"...\"}]}";

/// A candidate as the model sees it.
#[derive(Debug, Clone, Serialize)]
pub struct Shown<'a> {
    pub id: u64,
    pub name: &'a str,
    pub kind: &'a str,
    pub content: String,
    pub hits: u32,
    pub questions: usize,
    pub days: usize,
    pub score: f32,
}

/// The user message: MEMORY.md as it is, then the candidates.
pub fn user_message(memory_md: &str, candidates: &[Shown<'_>]) -> String {
    let list = serde_json::to_string_pretty(candidates).unwrap_or_else(|_| "[]".into());
    let memory = if memory_md.trim().is_empty() { "(empty)" } else { memory_md };
    format!("MEMORY.md now:\n<memory_md>\n{memory}\n</memory_md>\n\nMemories to judge:\n{list}")
}

/// One verdict.
#[derive(Debug, Clone, PartialEq, Eq, hearth_json::Deserialize)]
pub struct Decision {
    pub id: u64,
    #[serde(default)]
    pub promote: bool,
    #[serde(default)]
    pub fact: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub conflicts_with: Option<String>,
}

#[derive(Debug, hearth_json::Deserialize)]
struct Answer {
    decisions: Vec<serde_json::Value>,
}

/// The decisions in the model's text. Err: why it could not be read.
pub fn parse(text: &str) -> Result<Vec<Decision>, String> {
    let (Some(start), Some(end)) = (text.find('{'), text.rfind('}')) else {
        return Err("the answer holds no JSON object".into());
    };
    if end < start {
        return Err("the answer holds no JSON object".into());
    }
    let answer: Answer = hearth_json::from_slice(&text.as_bytes()[start..=end])
        .map_err(|e| format!("the answer is not the JSON asked for: {e}"))?;
    // One malformed decision does not lose the others. Each is read from its
    // text again rather than with `from_value`, so that `Decision` has one
    // reader (the slice's) and serde_json's `Value` deserializer is not linked.
    Ok(answer.decisions.iter().filter_map(|d| hearth_json::from_str(&d.to_string()).ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently() {
        let text = "Here you go:\n```json\n{\"decisions\": [{\"id\": 1, \"promote\": true, \"fact\": \"Tea\"}, \
                    {\"id\": \"x\"}, {\"id\": 2, \"promote\": false, \"reason\": \"one-off\", \"extra\": 1}]}\n```";
        let d = parse(text).unwrap();
        assert_eq!(d.len(), 2, "the malformed one is dropped");
        assert_eq!((d[0].id, d[0].promote, d[0].fact.as_deref()), (1, true, Some("Tea")));
        assert_eq!((d[1].id, d[1].reason.as_deref()), (2, Some("one-off")));
        assert!(parse("I cannot help with that.").is_err());
        assert!(parse("{\"verdicts\": []}").is_err());
        assert!(parse("} nope {").is_err());
    }

    #[test]
    fn the_message_shows_memory_and_candidates() {
        let c = [Shown {
            id: 7,
            name: "tz",
            kind: "note",
            content: "Bogota".into(),
            hits: 5,
            questions: 3,
            days: 3,
            score: 0.42,
        }];
        let m = user_message("", &c);
        assert!(m.contains("(empty)") && m.contains("\"id\": 7") && m.contains("\"days\": 3"), "{m}");
    }
}
