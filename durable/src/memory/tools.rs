//! The memory tools (`memory_*`) and the self-report tools of seed 000
//! (`who_am_i`, `what_do_i_know`, `my_stats`). Every call names the session's
//! own store ([`super::store_for`]); the model cannot pick another one.

use super::{MemoryCall, MemoryCallError, MemoryHit, MemoryReply, MAX_K};
use crate::llm::ToolSpec;
use crate::ports::MemoryService;
use crate::prompt::{truncate_chars, Workspace};
use crate::tools::{ToolOutcome, MAX_RESULT_CHARS};
use hearth_memory::{Kind, Op};
use r2_layout::{keys, AgentId, Scope, WorkspaceFile};
use serde_json::{json, Value};

/// Characters of each entry's content in a search result (memory_get gives all).
pub const SEARCH_SNIPPET_CHARS: usize = 500;
pub const DEFAULT_SEARCH_K: usize = 5;
/// Seed 000: `who_am_i`'s soul excerpt.
pub const SOUL_EXCERPT_CHARS: usize = 2048;
/// Seed 000: `what_do_i_know` caps.
pub const KNOW_MAX_BYTES: usize = 6144;
pub const KNOW_MAX_BULLETS: usize = 10;

pub struct MemoryToolContext<'a> {
    pub agent: &'a AgentId,
    /// The session's store (from [`super::store_for`]).
    pub store: String,
    pub scope: Scope,
    pub model: &'a str,
    pub workspace: &'a Workspace,
    pub now_ms: i64,
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

/// The tools of this module a session of `scope` gets (unsorted; the caller sorts).
pub fn specs(scope: Scope) -> Vec<ToolSpec> {
    let name = json!({"type": "string", "description": "The entry's name or one of its aliases"});
    let content = json!({"type": "string", "description": "The note's text"});
    let mut v = vec![
        ToolSpec {
            name: "memory_search",
            description: "Search your memory (notes you stored and summaries of earlier conversations) by keywords. \
Returns the best entries with scores; content is shortened, use memory_get for a whole entry.",
            input_schema: obj(
                json!({"query": {"type": "string", "description": "Keywords"},
                       "k": {"type": "integer", "description": "How many results (default 5, max 50)"}}),
                &["query"],
            ),
        },
        ToolSpec {
            name: "memory_get",
            description: "Read one memory entry whole, by name or alias.",
            input_schema: obj(json!({"name": name}), &["name"]),
        },
        ToolSpec {
            name: "memory_add",
            description: "Store a new note in your memory under a unique, descriptive name (e.g. 'olga-coffee-order').",
            input_schema: obj(json!({"name": {"type": "string", "description": "A new unique name"}, "content": content}), &["name", "content"]),
        },
        ToolSpec {
            name: "memory_write",
            description: "Replace the content of an existing memory entry.",
            input_schema: obj(json!({"name": name, "content": content}), &["name", "content"]),
        },
        ToolSpec {
            name: "memory_rename",
            description: "Give a memory entry a new name (the old name is released; add it back with memory_alias).",
            input_schema: obj(json!({"name": name, "new_name": {"type": "string"}}), &["name", "new_name"]),
        },
        ToolSpec {
            name: "memory_alias",
            description: "Bind one more name to a memory entry.",
            input_schema: obj(json!({"name": name, "alias": {"type": "string"}}), &["name", "alias"]),
        },
        ToolSpec {
            name: "memory_remove",
            description: "Delete a memory entry with its aliases.",
            input_schema: obj(json!({"name": name}), &["name"]),
        },
        ToolSpec {
            name: "who_am_i",
            description: "Your identity: agent id, model, workspace, IDENTITY.md fields and an excerpt of SOUL.md.",
            input_schema: obj(json!({}), &[]),
        },
        ToolSpec {
            name: "my_stats",
            description: "Counts about yourself: entries in your memory, workspace files present.",
            input_schema: obj(json!({}), &[]),
        },
    ];
    if scope == Scope::Main {
        v.push(ToolSpec {
            name: "what_do_i_know",
            description: "The sections of your MEMORY.md with their bullets, optionally only sections whose heading contains `filter`.",
            input_schema: obj(json!({"filter": {"type": "string", "description": "Part of a section heading"}}), &[]),
        });
    }
    v
}

fn ok(v: Value) -> ToolOutcome {
    let text = serde_json::to_string(&v).unwrap_or_default();
    ToolOutcome { text: truncate_chars(&text, MAX_RESULT_CHARS), is_error: false }
}

fn err(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome { text: text.into(), is_error: true }
}

fn arg<'v>(args: &'v Value, name: &str) -> Result<&'v str, ToolOutcome> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| err(format!("missing string argument '{name}'")))
}

fn call_error(e: MemoryCallError) -> ToolOutcome {
    err(e.to_string())
}

/// Runs the tool `name` if it is one of this module's; None otherwise.
pub async fn run<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>, name: &str, args: &Value) -> Option<ToolOutcome> {
    let outcome = match name {
        "memory_search" => search(memory, ctx, args).await,
        "memory_get" => get(memory, ctx, args).await,
        "memory_add" | "memory_write" | "memory_rename" | "memory_alias" | "memory_remove" => {
            match op_from_args(name, args, ctx.now_ms) {
                Ok(op) => apply(memory, ctx, op).await,
                Err(e) => e,
            }
        }
        "who_am_i" => who_am_i(ctx),
        "what_do_i_know" if ctx.scope == Scope::Main => {
            what_do_i_know(ctx.workspace, args.get("filter").and_then(Value::as_str))
        }
        "what_do_i_know" => err("MEMORY.md is private to your owner's main session"),
        "my_stats" => my_stats(memory, ctx).await,
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

async fn search<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>, args: &Value) -> ToolOutcome {
    let query = match arg(args, "query") {
        Ok(q) => q.to_owned(),
        Err(e) => return e,
    };
    let k = args.get("k").and_then(Value::as_u64).map(|k| k as usize).unwrap_or(DEFAULT_SEARCH_K).clamp(1, MAX_K);
    match memory.call(&MemoryCall::Search { store: ctx.store.clone(), query, k, kind: None }).await {
        Ok(MemoryReply::Hits { hits }) => ok(json!({"hits": hits.iter().map(hit_json).collect::<Vec<_>>()})),
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}

async fn get<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>, args: &Value) -> ToolOutcome {
    let name = match arg(args, "name") {
        Ok(n) => n.to_owned(),
        Err(e) => return e,
    };
    match memory.call(&MemoryCall::Get { store: ctx.store.clone(), name: name.clone() }).await {
        Ok(MemoryReply::Entry { entry: Some(e) }) => ok(json!({
            "name": e.name, "aliases": e.aliases, "kind": e.kind, "created_at": e.created_at, "content": e.content,
        })),
        Ok(MemoryReply::Entry { entry: None }) => err(format!("no entry is named {name:?}")),
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}

fn who_am_i(ctx: &MemoryToolContext<'_>) -> ToolOutcome {
    let identity = ctx.workspace.files.get(&WorkspaceFile::Identity).map(|t| crate::identity::parse_identity(t)).unwrap_or_default();
    let soul = ctx.workspace.files.get(&WorkspaceFile::Soul).map(|t| truncate_chars(t, SOUL_EXCERPT_CHARS));
    ok(json!({
        "agent_id": ctx.agent.as_str(),
        "model": ctx.model,
        "workspace_dir": keys::agent_prefix(ctx.agent),
        "identity": identity,
        "soul_excerpt": soul,
    }))
}

/// MEMORY.md as sections of bullets, within seed 000's caps.
pub fn what_do_i_know(ws: &Workspace, filter: Option<&str>) -> ToolOutcome {
    let Some(text) = ws.files.get(&WorkspaceFile::Memory) else {
        return ok(json!({"sections": [], "truncated": false, "note": "MEMORY.md does not exist yet"}));
    };
    ok(know_sections(text, filter))
}

pub fn know_sections(text: &str, filter: Option<&str>) -> Value {
    let filter = filter.map(str::trim).filter(|f| !f.is_empty()).map(str::to_lowercase);
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            sections.push((t.trim_start_matches('#').trim().to_owned(), Vec::new()));
        } else if let Some(b) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
            if sections.is_empty() {
                sections.push((String::new(), Vec::new()));
            }
            if let Some(last) = sections.last_mut() {
                last.1.push(b.trim().to_owned());
            }
        }
    }
    let mut truncated = false;
    let mut out: Vec<Value> = Vec::new();
    let mut size = 40; // the wrapper object
    for (heading, bullets) in sections {
        if let Some(f) = &filter {
            if !heading.to_lowercase().contains(f.as_str()) {
                continue;
            }
        }
        if bullets.len() > KNOW_MAX_BULLETS {
            truncated = true;
        }
        let section = json!({"heading": heading, "bullets": bullets.into_iter().take(KNOW_MAX_BULLETS).collect::<Vec<_>>()});
        let len = serde_json::to_string(&section).map(|s| s.len()).unwrap_or(0) + 1;
        if size + len > KNOW_MAX_BYTES {
            truncated = true;
            break;
        }
        size += len;
        out.push(section);
    }
    json!({"sections": out, "truncated": truncated})
}

async fn my_stats<M: MemoryService>(memory: &M, ctx: &MemoryToolContext<'_>) -> ToolOutcome {
    let mut files: Vec<&str> = ctx.workspace.files.keys().map(|f| f.file_name()).collect();
    files.sort_unstable();
    match memory.call(&MemoryCall::Stats { store: ctx.store.clone() }).await {
        Ok(MemoryReply::Stats { stats }) => ok(json!({
            "memory_store": stats.store,
            "memories_stored": stats.entries,
            "notes": stats.notes,
            "archives": stats.archives,
            "distinct_terms": stats.vocabulary,
            "workspace_files_present": files,
        })),
        Ok(other) => err(format!("unexpected memory reply {other:?}")),
        Err(e) => call_error(e),
    }
}
