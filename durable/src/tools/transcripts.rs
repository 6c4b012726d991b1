//! `session_logs` (seed 000): the agent reads its own transcripts, the live
//! session and the archives in R2 (`agents/{id}/sessions/`), scoped to its
//! own agent. Offered only in the owner's main session: archives hold every
//! conversation, and a group must not read the owner's.
//!
//! Defaults and caps per the seed: 50 entries per call (max 500), 200
//! characters per preview (max 4,000); `recent` without `session_id` is the
//! current session. `search` is ranked by the conversation memory over every
//! archived conversation (`crate::memory::tools::search_transcripts`; the session's
//! toolbox sends it there), not scanned here.

use super::{ToolContext, ToolOutcome};
use crate::ports::ObjectStore;
use crate::storage::list_all;
use r2_layout::{archive, keys, Message};
use serde_json::{json, Value};

pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;
pub const DEFAULT_PREVIEW: usize = 200;
pub const MAX_PREVIEW: usize = 4_000;
/// Archives scanned by one `search`, newest first (bounds the call's cost).
pub const SEARCH_ARCHIVES: usize = 20;
/// Largest archive the tool decodes (uncompressed). The object runs in a
/// 128 MB isolate next to a 50 MB media cache: one transcript must stay small.
pub const MAX_ARCHIVE_BYTES: usize = 8 * 1024 * 1024;

pub fn spec() -> crate::toolkit::ToolSpec {
    crate::toolkit::ToolSpec {
        name: "session_logs".into(),
        description:
            "Read your own conversation transcripts: action list_sessions, read_session (session_id, offset), \
search (query, ranked over every archived conversation; optional since/until as in memory_search, limit up to 10), \
or recent (session_id optional: defaults to this session). Optional limit (default 50, max 500) and max_chars per \
entry preview (default 200, max 4000)."
                .into(),
        input_schema: crate::toolkit::schema(
            r#"{"type": "object", "properties": {
                "action": {"type": "string", "enum": ["list_sessions", "read_session", "search", "recent"]},
                "session_id": {"type": "string"}, "query": {"type": "string"},
                "since": {"type": "string"}, "until": {"type": "string"},
                "offset": {"type": "integer"}, "limit": {"type": "integer"}, "max_chars": {"type": "integer"}},
                "required": ["action"]}"#,
        ),
        native: None,
    }
}

fn preview(m: &Message, max: usize) -> String {
    let t = m.text();
    crate::text::truncate_chars(t.trim(), max)
}

fn entry(i: usize, m: &Message, max: usize) -> Value {
    let role = match m {
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::ToolResult { .. } => "toolResult",
    };
    json!({"i": i, "role": role, "timestamp": m.timestamp(), "content": preview(m, max)})
}

/// Archive session ids (file names without `.jsonl.gz`), newest first.
async fn archive_ids<S: ObjectStore>(ctx: &ToolContext<'_, S>) -> Result<Vec<(String, u64, i64)>, String> {
    let prefix = keys::sessions_prefix(ctx.agent);
    let (objects, _) = list_all(ctx.store, &prefix, None).await.map_err(|e| e.to_string())?;
    let mut out: Vec<(String, u64, i64)> = objects
        .into_iter()
        .filter_map(|o| {
            let id = o.key.strip_prefix(&prefix)?.strip_suffix(".jsonl.gz")?;
            Some((id.to_owned(), o.size, o.uploaded_ms))
        })
        .collect();
    crate::order::sort_by(&mut out, |a, b| b.2.cmp(&a.2).then(b.0.cmp(&a.0)));
    Ok(out)
}

async fn messages_of<S: ObjectStore>(ctx: &ToolContext<'_, S>, id: &str) -> Result<Vec<Message>, String> {
    if id == ctx.session_id {
        return Ok(ctx.live.to_vec());
    }
    r2_layout::keys::check_segment("session id", id).map_err(|e| e.to_string())?;
    let key = format!("{}{id}.jsonl.gz", keys::sessions_prefix(ctx.agent));
    match ctx.store.get(&key).await.map_err(|e| e.to_string())? {
        Some(o) => {
            let lines = ctx.store.gunzip(&o.body, MAX_ARCHIVE_BYTES).await.map_err(|e| e.to_string())?;
            archive::decode_lines(&lines).map_err(|e| e.to_string())
        }
        None => Err(format!("no session {id:?} (see list_sessions)")),
    }
}

pub async fn session_logs<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let limit =
        args.get("limit").and_then(Value::as_u64).map(|n| n as usize).unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let max = args
        .get("max_chars")
        .and_then(Value::as_u64)
        .map(|n| n as usize)
        .unwrap_or(DEFAULT_PREVIEW)
        .clamp(1, MAX_PREVIEW);
    let result = match args.get("action").and_then(Value::as_str) {
        Some("list_sessions") => archive_ids(ctx).await.map(|ids| {
            let mut sessions = vec![json!({"session_id": ctx.session_id, "live": true, "messages": ctx.live.len()})];
            sessions.extend(
                ids.into_iter()
                    .take(limit)
                    .map(|(id, size, at)| json!({"session_id": id, "live": false, "bytes": size, "archived_at": at})),
            );
            json!({"ok": true, "sessions": sessions})
        }),
        Some(action @ ("read_session" | "recent")) => {
            let id = args.get("session_id").and_then(Value::as_str).unwrap_or(ctx.session_id);
            match messages_of(ctx, id).await {
                Ok(msgs) => {
                    let start = if action == "recent" {
                        msgs.len().saturating_sub(limit)
                    } else {
                        args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize
                    };
                    let entries: Vec<Value> =
                        msgs.iter().enumerate().skip(start).take(limit).map(|(i, m)| entry(i, m, max)).collect();
                    Ok(json!({"ok": true, "session_id": id, "total": msgs.len(), "entries": entries}))
                }
                Err(e) => Err(e),
            }
        }
        Some("search") => Err("search is answered by the conversation memory (ask again through the session)".into()),
        _ => Err("action must be list_sessions, read_session, search or recent".into()),
    };
    match result {
        Ok(v) => ToolOutcome::ok(v.to_string()),
        Err(e) => ToolOutcome::err(json!({"ok": false, "error": e}).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::PutOptions;
    use crate::testing::MemStore;
    use futures::executor::block_on;
    use r2_layout::{AgentId, Scope};

    fn run(store: &MemStore, live: &[Message], args: Value) -> Value {
        let agent = AgentId::parse("main").unwrap();
        let workspace = crate::workspace::Workspace::default();
        let ctx = ToolContext {
            store,
            agent: &agent,
            scope: Scope::Main,
            workspace: &workspace,
            tool_names: &[],
            session_id: "live",
            live,
            now_ms: 0,
            history_keep: 50,
        };
        let out = block_on(session_logs(&ctx, &args));
        hearth_json::from_str(&out.text).unwrap_or(Value::String(out.text))
    }

    fn put_archive(store: &MemStore, id: &str, messages: &[Message]) {
        let key = format!("agents/main/sessions/{id}.jsonl.gz");
        block_on(store.put(&key, archive::encode(messages), PutOptions::default())).unwrap();
    }

    #[test]
    fn list_sessions_follows_every_page_of_the_listing() {
        let store = MemStore::default();
        for i in 0..5 {
            put_archive(&store, &format!("s{i}"), &[Message::user_text("hi", i)]);
        }
        store.page_size.set(2);
        let v = run(&store, &[], json!({"action": "list_sessions"}));
        let ids: Vec<&str> =
            v["sessions"].as_array().unwrap().iter().filter_map(|s| s["session_id"].as_str()).collect();
        assert_eq!(ids, ["live", "s4", "s3", "s2", "s1", "s0"], "{v}");
        assert_eq!(store.ops_matching("list agents/main/sessions/"), 3);
    }

    #[test]
    fn archives_over_the_cap_are_not_decoded() {
        let store = MemStore::default();
        put_archive(&store, "big", &[Message::user_text("a".repeat(MAX_ARCHIVE_BYTES + 10), 1)]);
        let v = run(&store, &[], json!({"action": "read_session", "session_id": "big"}));
        assert!(v.to_string().contains("larger than"), "{v}");
    }

    #[test]
    fn search_is_not_a_scan_of_the_archives() {
        let store = MemStore::default();
        put_archive(&store, "s1", &[Message::user_text("needle", 2)]);
        let v = run(&store, &[], json!({"action": "search", "query": "needle"}));
        assert!(v.to_string().contains("conversation memory"), "{v}");
        assert_eq!(
            store.ops_matching("get agents/main/sessions/"),
            0,
            "the session's toolbox sends search to the memory"
        );
    }
}
