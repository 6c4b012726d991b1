//! The sessions over the admin API:
//! - `GET /api/agents/{id}/sessions`: the live sessions (the Agent object's
//!   registry) and the archives in the bucket, each with its metadata;
//! - `GET /api/agents/{id}/archives/{sessionId}`: one archive decoded:
//!   `{sessionId}` (the reset archive) or `{sessionId}-part{ts}` (a
//!   compaction part), with its metadata and messages in order (the lines
//!   of the `.jsonl.gz`, gunzipped by the bucket's port).

use super::front::{error, ApiFront, WebReply};
use crate::ports::{GunzipError, ObjectStore};
use crate::protocol::agent::SessionsRequest;
use crate::serving::decode_component as percent_decode;
use r2_layout::AgentId;
use serde_json::{json, Map, Value};

/// Largest archive the API decodes (uncompressed), well inside the isolate's memory.
const MAX_ARCHIVE_BYTES: usize = 32 * 1024 * 1024;

fn text(status: u16, message: String) -> WebReply {
    WebReply::bytes(status, "text/plain; charset=utf-8", message.into_bytes())
}

fn metadata(pairs: Vec<(String, String)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect::<Map<_, _>>())
}

/// `{"live": [...], "archives": [{key, size, uploaded, metadata}]}`.
pub async fn list<F: ApiFront>(front: &F, agent: &str) -> WebReply {
    let id = match AgentId::parse(agent) {
        Ok(id) => id,
        Err(e) => return error(404, e.to_string()),
    };
    let live = match front.call(&SessionsRequest { agent: agent.to_owned() }).await {
        Ok(live) => live,
        Err(e) => return error(503, format!("the agent's object could not be reached: {e}")),
    };
    let store = match front.store() {
        Ok(s) => s,
        Err(e) => return error(503, e),
    };
    let prefix = r2_layout::keys::sessions_prefix(&id);
    let mut archives = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = match store.list_with_metadata(&prefix, cursor.as_deref()).await {
            Ok(p) => p,
            Err(e) => return error(503, e.to_string()),
        };
        for (o, meta) in page.objects {
            archives.push(json!({"key": o.key, "size": o.size, "uploaded": o.uploaded_ms, "metadata": metadata(meta)}));
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    WebReply::json(200, &json!({"live": live, "archives": archives}))
}

/// One archived session, decoded (`id` as it came in the URL).
pub async fn read<F: ApiFront>(front: &F, agent: &str, id: &str) -> WebReply {
    let agent_id = match AgentId::parse(agent) {
        Ok(a) => a,
        Err(e) => return error(404, e.to_string()),
    };
    let id = percent_decode(id);
    let id = id.strip_suffix(".jsonl.gz").unwrap_or(&id);
    let key = match r2_layout::keys::session_archive(&agent_id, id) {
        Ok(k) => k,
        Err(e) => return text(400, e.to_string()),
    };
    let store = match front.store() {
        Ok(s) => s,
        Err(e) => return error(503, e),
    };
    let obj = match store.get(&key).await {
        Ok(Some(o)) => o,
        Ok(None) => return text(404, format!("no archive {id:?} (see GET /api/agents/{agent}/sessions)")),
        Err(e) => return error(503, e.to_string()),
    };
    let lines = match store.gunzip(&obj.body, MAX_ARCHIVE_BYTES).await {
        Ok(lines) => lines,
        Err(e @ GunzipError::TooLarge(_)) => return text(413, format!("{key}: archive {e}; download it from R2")),
        Err(e) => return text(422, format!("{key} is not a readable archive: {e}")),
    };
    match r2_layout::archive::decode_lines(&lines) {
        Ok(messages) => WebReply::json(
            200,
            &json!({"sessionId": id, "key": key, "metadata": metadata(obj.custom_metadata), "messages": messages}),
        ),
        Err(e) => text(422, format!("{key} is not a readable archive: {e}")),
    }
}

#[cfg(test)]
mod tests;
