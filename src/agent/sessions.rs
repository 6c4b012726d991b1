//! A registry of the agent's live sessions, so the admin API can list them
//! (Durable Objects cannot be enumerated). Session objects report after each
//! drain; archived sessions are listed from R2.

use super::Agent;
use crate::adapters::DoSql;
use durable::ports::{Sql, SqlValue};
use serde::Deserialize;
use serde_json::json;
use worker::{Method, Request, Response, Result};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS sessions (
    session_key TEXT PRIMARY KEY, session_id TEXT, updated_at INTEGER)";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Touch {
    session_key: String,
    session_id: Option<String>,
    updated_at: Option<i64>,
}

fn exec(sql: &DoSql, q: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>> {
    sql.exec(q, params).map_err(|e| worker::Error::RustError(e.to_string()))
}

pub async fn handle(agent: &Agent, mut req: Request) -> Result<Response> {
    let sql = agent.sql();
    exec(&sql, SCHEMA, &[])?;
    match (req.method(), req.path().as_str()) {
        (Method::Post, "/sessions/touch") => {
            let t: Touch = match req.json().await {
                Ok(t) => t,
                Err(e) => return Response::error(format!("bad touch: {e}"), 400),
            };
            let sid = t.session_id.map(SqlValue::Text).unwrap_or(SqlValue::Null);
            let at = t.updated_at.map(SqlValue::Int).unwrap_or(SqlValue::Null);
            exec(
                &sql,
                "INSERT INTO sessions (session_key, session_id, updated_at) VALUES (?, ?, ?)
                 ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
                &[t.session_key.into(), sid, at],
            )?;
            Response::from_json(&json!({"ok": true}))
        }
        (Method::Get, "/sessions/list") => {
            let rows =
                exec(&sql, "SELECT session_key, session_id, updated_at FROM sessions ORDER BY updated_at DESC", &[])?;
            let list: Vec<_> = rows
                .into_iter()
                .map(|r| {
                    json!({
                        "sessionKey": r.first().and_then(SqlValue::as_str),
                        "sessionId": r.get(1).and_then(SqlValue::as_str),
                        "updatedAt": r.get(2).and_then(SqlValue::as_i64),
                    })
                })
                .collect();
            Response::from_json(&list)
        }
        _ => Response::error("not found", 404),
    }
}
