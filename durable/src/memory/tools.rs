//! The memory tools (`memory_*`) and the self-report tools of seed 000
//! (`who_am_i`, `what_do_i_know`, `my_stats`). Every call names the session's
//! own store ([`super::store_for`]); the model cannot pick another one.

pub use super::tool_context::MemoryToolContext;
use super::tool_context::{call_error, err, ok};
use super::MAX_K;
use crate::ports::MemoryService;
use crate::protocol::memory::{MemoryCall, MemoryHit, MemoryReply};
use crate::text::truncate_chars;
use crate::toolkit::{schema, ToolOutcome, ToolSpec};
use hearth_memory::{Kind, Op};
use r2_layout::Scope;
use serde_json::{json, Value};

/// Characters of each entry's content in a search result (memory_get gives all).
pub const SEARCH_SNIPPET_CHARS: usize = 500;
pub const DEFAULT_SEARCH_K: usize = 5;

/// The `name` argument of the tools that take an existing entry.
macro_rules! entry_name {
    () => {
        r#"{"type": "string", "description": "The entry's name or one of its aliases"}"#
    };
}

/// The `content` argument of the tools that write a note.
macro_rules! note_text {
    () => {
        r#"{"type": "string", "description": "The note's text"}"#
    };
}

/// A schema without arguments.
const NO_ARGUMENTS: &str = r#"{"type": "object", "properties": {}, "required": []}"#;

/// The tools of this module a session of `scope` gets (unsorted; the caller sorts).
pub fn specs(scope: Scope) -> Vec<ToolSpec> {
    let mut v = vec![
        ToolSpec {
            name: "memory_search".into(),
            description: "Search your memory by keywords: `hits` are notes you stored and summaries of earlier \
conversations (content shortened: memory_get gives a whole entry); `conversations` are the exchanges of earlier \
conversations that match (when, who, what was said, your answer), each with up to two exchanges before and after it. \
For a question that needs several facts, pass one phrasing per fact in `queries` too. To find what was \
said at some time, pass `since`/`until`: YYYY-MM-DD, YYYY-MM, YYYY, an ISO time, today, yesterday, \
this/last week|month|year, or N days|weeks|months|years ago (in your time zone; `until` includes its day).".into(),
            input_schema: schema(
                r#"{"type": "object", "properties": {
                    "query": {"type": "string", "description": "Keywords"},
                    "queries": {"type": "array", "items": {"type": "string"}, "description": "More phrasings or parts of the question (conversations are ranked for each and merged)"},
                    "k": {"type": "integer", "description": "How many results of each kind (default 5, max 20 conversations, 50 notes)"},
                    "since": {"type": "string", "description": "Only conversations from then on, e.g. \"last month\" or \"2026-10-01\""},
                    "until": {"type": "string", "description": "Only conversations up to then, e.g. \"yesterday\""}},
                    "required": ["query"]}"#,
            ), native: None },
        ToolSpec {
            name: "memory_get".into(),
            description: "Read one memory entry whole, by name or alias.".into(),
            input_schema: schema(concat!(r#"{"type": "object", "properties": {"name": "#, entry_name!(), r#"}, "required": ["name"]}"#)),
            native: None },
        ToolSpec {
            name: "memory_add".into(),
            description: "Store a new note in your memory under a unique, descriptive name (e.g. 'olga-coffee-order').".into(),
            input_schema: schema(concat!(
                r#"{"type": "object", "properties": {"name": {"type": "string", "description": "A new unique name"}, "content": "#,
                note_text!(),
                r#"}, "required": ["name", "content"]}"#
            )),
            native: None },
        ToolSpec {
            name: "memory_write".into(),
            description: "Replace the content of an existing memory entry.".into(),
            input_schema: schema(concat!(
                r#"{"type": "object", "properties": {"name": "#, entry_name!(), r#", "content": "#, note_text!(),
                r#"}, "required": ["name", "content"]}"#
            )),
            native: None },
        ToolSpec {
            name: "memory_rename".into(),
            description: "Give a memory entry a new name (the old name is released; add it back with memory_alias).".into(),
            input_schema: schema(concat!(
                r#"{"type": "object", "properties": {"name": "#, entry_name!(),
                r#", "new_name": {"type": "string"}}, "required": ["name", "new_name"]}"#
            )),
            native: None },
        ToolSpec {
            name: "memory_alias".into(),
            description: "Bind one more name to a memory entry.".into(),
            input_schema: schema(concat!(
                r#"{"type": "object", "properties": {"name": "#, entry_name!(),
                r#", "alias": {"type": "string"}}, "required": ["name", "alias"]}"#
            )),
            native: None },
        ToolSpec {
            name: "memory_remove".into(),
            description: "Delete a memory entry with its aliases.".into(),
            input_schema: schema(concat!(r#"{"type": "object", "properties": {"name": "#, entry_name!(), r#"}, "required": ["name"]}"#)),
            native: None },
        ToolSpec {
            name: "who_am_i".into(),
            description: "Your identity: agent id, model, workspace, IDENTITY.md fields and an excerpt of SOUL.md.".into(),
            input_schema: schema(NO_ARGUMENTS), native: None },
        ToolSpec {
            name: "my_stats".into(),
            description: "Counts about yourself: conversations, entries in your memory, facts your nightly dreaming promoted to MEMORY.md and when it last ran, recalls in the last 7 days, workspace files present.".into(),
            input_schema: schema(NO_ARGUMENTS), native: None },
    ];
    if scope == Scope::Main {
        v.push(ToolSpec {
            name: "what_do_i_know".into(),
            description: "The sections of your MEMORY.md with their bullets, optionally only sections whose heading contains `filter`.".into(),
            input_schema: schema(
                r#"{"type": "object", "properties": {"filter": {"type": "string", "description": "Part of a section heading"}}, "required": []}"#,
            ),
            native: None });
    }
    v
}

fn arg<'v>(args: &'v Value, name: &str) -> Result<&'v str, ToolOutcome> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| err(format!("missing string argument '{name}'")))
}

/// Runs the tool `name` if it is one of this module's; None otherwise.
pub async fn run<M: MemoryService>(
    memory: &M,
    ctx: &MemoryToolContext<'_>,
    name: &str,
    args: &Value,
) -> Option<ToolOutcome> {
    let outcome = match name {
        "memory_search" => search(memory, ctx, args, ctx.records_use).await,
        "memory_get" => get(memory, ctx, args).await,
        "memory_add" | "memory_write" | "memory_rename" | "memory_alias" | "memory_remove" => {
            match op_from_args(name, args, ctx.now_ms) {
                Ok(op) => apply(memory, ctx, op).await,
                Err(e) => e,
            }
        }
        "who_am_i" => super::self_report::who_am_i(ctx),
        "what_do_i_know" if ctx.scope == Scope::Main => {
            super::self_report::what_do_i_know(ctx.workspace, args.get("filter").and_then(Value::as_str))
        }
        "what_do_i_know" => err("MEMORY.md is private to your owner's main session"),
        "my_stats" => super::self_report::my_stats(memory, ctx).await,
        _ => return None,
    };
    Some(outcome)
}

/// The operation a `memory_*` write tool asks for.
pub fn op_from_args(tool: &str, args: &Value, now_ms: i64) -> Result<Op, ToolOutcome> {
    let s = |n: &str| arg(args, n).map(str::to_owned);
    Ok(match tool {
        "memory_add" => Op::Add { name: s("name")?, content: s("content")?, kind: Kind::Note, created_at: now_ms },
        "memory_write" => Op::Write { name: s("name")?, content: s("content")? },
        "memory_rename" => Op::Rename { name: s("name")?, new_name: s("new_name")? },
        "memory_alias" => Op::Alias { name: s("name")?, alias: s("alias")? },
        "memory_remove" => Op::Remove { name: s("name")? },
        other => return Err(err(format!("unknown tool {other:?}"))),
    })
}

async fn apply<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>, op: Op) -> ToolOutcome {
    let what = op.kind_name();
    match memory.call(&MemoryCall::Op { store: ctx.store.clone(), op }).await {
        Ok(MemoryReply::Applied { id, name }) => ok(json!({"ok": true, "op": what, "id": id, "name": name})),
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}

fn hit_json(h: &MemoryHit) -> Value {
    let e = &h.entry;
    let truncated = e.content.chars().count() > SEARCH_SNIPPET_CHARS;
    let mut v = json!({
        "name": e.name,
        "score": h.score,
        "kind": e.kind,
        "created_at": e.created_at,
        "content": truncate_chars(&e.content, SEARCH_SNIPPET_CHARS),
    });
    if !e.aliases.is_empty() {
        v["aliases"] = json!(e.aliases);
    }
    if truncated {
        v["truncated"] = json!(true);
    }
    v
}

/// `memory_search` (also Hearth's MCP server's `search_memory`). `record`:
/// the agent's own search, whose hits count as recall evidence (the MCP
/// server's searches are the owner's, not the agent's use of its memory).
pub async fn search<M: MemoryService>(
    memory: &M,
    ctx: &MemoryToolContext<'_>,
    args: &Value,
    record: bool,
) -> ToolOutcome {
    let query = match arg(args, "query") {
        Ok(q) => q.to_owned(),
        Err(e) => return e,
    };
    let k = args.get("k").and_then(Value::as_u64).map(|k| k as usize).unwrap_or(DEFAULT_SEARCH_K).clamp(1, MAX_K);
    let (since, until) = match time_window(ctx, args) {
        Ok(w) => w,
        Err(e) => return e,
    };
    let notes = match memory
        .call(&MemoryCall::Search { store: ctx.store.clone(), query: query.clone(), k, kind: None, record })
        .await
    {
        Ok(MemoryReply::Hits { hits }) => hits,
        Ok(other) => return err(format!("unexpected memory reply {other:?}")),
        Err(e) => return call_error(e),
    };
    let mut out = json!({"hits": notes.iter().map(hit_json).collect::<Vec<_>>()});
    let call = MemoryCall::SearchConversations {
        store: ctx.store.clone(),
        query,
        more: phrasings(args),
        k: k.min(crate::memory::conversation::shelf::MAX_K),
        since,
        until,
        every_store: false,
    };
    match memory.call(&call).await {
        Ok(MemoryReply::Conversations { hits }) => {
            out["conversations"] = json!(conversations_json(&hits, ctx.timezone));
        }
        Ok(other) => out["conversations_error"] = json!(format!("unexpected memory reply {other:?}")),
        // The notes are still an answer: say what is missing rather than fail the search.
        Err(e) => out["conversations_error"] = json!(e.to_string()),
    }
    ok(out)
}

/// A search's `since` and `until` (ms), resolved in the agent's zone.
fn time_window(ctx: &MemoryToolContext<'_>, args: &Value) -> Result<(Option<i64>, Option<i64>), ToolOutcome> {
    let bound = |name: &str, end: bool| -> Result<Option<i64>, ToolOutcome> {
        let Some(value) = args.get(name).and_then(Value::as_str).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let r =
            crate::clock::resolve_range(value, ctx.now_ms, ctx.timezone).map_err(|e| err(format!("{name}: {e}")))?;
        Ok(Some(if end { r.end } else { r.start }))
    };
    Ok((bound("since", false)?, bound("until", true)?))
}

/// Results `session_logs` `search` gives by default, and at most.
pub const TRANSCRIPT_HITS: usize = 10;

/// `session_logs` `search` (seed 000), ranked over every archived conversation of the
/// agent: the conversation memory of every store, not a scan of transcript files. Only
/// the owner's main session has `session_logs` (it reads every transcript already).
pub async fn search_transcripts<M: MemoryService>(
    memory: &M,
    ctx: &MemoryToolContext<'_>,
    args: &Value,
) -> ToolOutcome {
    if ctx.scope != Scope::Main {
        return err("session_logs is private to your owner's main session");
    }
    let Some(query) = args.get("query").and_then(Value::as_str).filter(|q| !q.trim().is_empty()) else {
        return err("search needs a non-empty 'query'");
    };
    let k = args.get("limit").and_then(Value::as_u64).map_or(TRANSCRIPT_HITS, |n| n as usize).clamp(1, TRANSCRIPT_HITS);
    let (since, until) = match time_window(ctx, args) {
        Ok(w) => w,
        Err(e) => return e,
    };
    let call = MemoryCall::SearchConversations {
        store: ctx.store.clone(),
        query: query.to_owned(),
        more: phrasings(args),
        k,
        since,
        until,
        every_store: true,
    };
    match memory.call(&call).await {
        Ok(MemoryReply::Conversations { hits }) => {
            let mut listed = conversations_json(&hits, ctx.timezone);
            for (v, h) in listed.iter_mut().zip(&hits) {
                v["session_key"] = json!(h.session_key);
            }
            let hits = listed;
            ok(json!({"ok": true, "hits": hits}))
        }
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}

/// One exchange as the model reads it: when (in the agent's zone), who, what was said,
/// the answer.
fn exchange_json(e: &crate::protocol::memory::Exchange, tz: &str) -> Value {
    let mut v = json!({"when": crate::clock::datetime_string(e.at, tz), "speaker": e.speaker, "said": e.text});
    if !e.reply.is_empty() {
        v["reply"] = json!(e.reply);
    }
    v
}

/// Most extra phrasings a search takes (`queries`).
pub const MAX_PHRASINGS: usize = 4;

/// The `queries` of a search: non-empty strings, at most [`MAX_PHRASINGS`].
fn phrasings(args: &Value) -> Vec<String> {
    let Some(list) = args.get("queries").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .filter_map(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .take(MAX_PHRASINGS)
        .map(str::to_owned)
        .collect()
}

/// Conversation hits as the model reads them: each exchange (when, who, what was
/// said, the answer), where it was said, and the exchanges around it. An exchange is
/// shown once: a later hit's context leaves out what an earlier hit already showed.
pub fn conversations_json(hits: &[crate::protocol::memory::ConversationHitView], tz: &str) -> Vec<Value> {
    use crate::protocol::memory::Exchange;
    // (session, when, what was said) of every exchange shown so far.
    let mut shown: Vec<(&str, i64, &str)> = Vec::new();
    let mut out = Vec::with_capacity(hits.len());
    for h in hits {
        let session = h.session_id.as_str();
        let mut v = exchange_json(&h.exchange, tz);
        let channel = if h.exchange.channel.is_empty() { &h.channel } else { &h.exchange.channel };
        v["channel"] = json!(channel);
        v["session"] = json!(h.session_id);
        v["score"] = json!(h.score);
        shown.push((session, h.exchange.at, h.exchange.text.as_str()));
        for (name, context) in [("before", &h.before), ("after", &h.after)] {
            let is_new = |e: &Exchange, shown: &[(&str, i64, &str)]| !shown.contains(&(session, e.at, e.text.as_str()));
            let fresh: Vec<Value> =
                context.iter().filter(|e| is_new(e, &shown)).map(|e| exchange_json(e, tz)).collect();
            shown.extend(context.iter().map(|e| (session, e.at, e.text.as_str())));
            if !fresh.is_empty() {
                v[name] = json!(fresh);
            }
        }
        out.push(v);
    }
    out
}

async fn get<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>, args: &Value) -> ToolOutcome {
    let name = match arg(args, "name") {
        Ok(n) => n.to_owned(),
        Err(e) => return e,
    };
    match memory.call(&MemoryCall::Get { store: ctx.store.clone(), name: name.clone(), record: ctx.records_use }).await
    {
        Ok(MemoryReply::Entry { entry: Some(e) }) => ok(json!({
            "name": e.name, "aliases": e.aliases, "kind": e.kind, "created_at": e.created_at, "content": e.content,
        })),
        Ok(MemoryReply::Entry { entry: None }) => err(format!("no entry is named {name:?}")),
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}
