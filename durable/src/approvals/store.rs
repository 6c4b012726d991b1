//! The requests in the Agent object's SQLite. A request is made once per
//! session, message and call (a turn resumed after an eviction asks again
//! and finds it), decided once (the first answer wins: a tap after the
//! timeout, or a second tap, changes nothing).

use crate::inbound::ChannelKind;
use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::approvals::{ApprovalAsk, ApprovalRow, Decision, Origin};
use crate::storage::{col_i64, col_string};

const TABLE: &str = "CREATE TABLE IF NOT EXISTS approvals (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_key TEXT NOT NULL, seq INTEGER NOT NULL,
    call_id TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL, origin TEXT NOT NULL,
    asked_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'waiting',
    decided_by TEXT, decided_at INTEGER, prompt TEXT NOT NULL DEFAULT '',
    asked_channel TEXT, asked_chat TEXT, asked_message TEXT,
    UNIQUE (session_key, seq, call_id))";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "approvals", statements: &[TABLE] };
/// Settled requests are kept this long for the console (a week).
const KEEP_MS: i64 = 7 * 86_400_000;

/// One request with what the Agent object needs to settle it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub row: ApprovalRow,
    /// What the owner was shown.
    pub prompt: String,
    /// Where: `(channel, chat, message)`.
    pub asked: Option<(ChannelKind, String, String)>,
}

pub struct ApprovalStore<'a, S: Sql + ?Sized> {
    sql: &'a S,
}

const COLUMNS: &str = "id, session_key, tool, args, origin, asked_at, expires_at, state, decided_by, decided_at, \
    prompt, asked_channel, asked_chat, asked_message";

fn text_or_none(row: &mut [SqlValue], i: usize) -> Option<String> {
    match row.get(i) {
        None | Some(SqlValue::Null) => None,
        _ => Some(col_string(row, i)),
    }
}

fn read(mut r: Vec<SqlValue>) -> Option<Request> {
    let origin: Origin = hearth_json::from_str(&col_string(&mut r, 4)).ok()?;
    let decided_at = match r.get(9) {
        None | Some(SqlValue::Null) => None,
        _ => Some(col_i64(&r, 9)),
    };
    let row = ApprovalRow {
        id: col_i64(&r, 0),
        session_key: col_string(&mut r, 1),
        tool: col_string(&mut r, 2),
        args: col_string(&mut r, 3),
        origin,
        asked_at: col_i64(&r, 5),
        expires_at: col_i64(&r, 6),
        decision: Decision::parse(&col_string(&mut r, 7)).unwrap_or(Decision::Waiting),
        decided_by: text_or_none(&mut r, 8),
        decided_at,
    };
    let prompt = col_string(&mut r, 10);
    let asked = match (text_or_none(&mut r, 11), text_or_none(&mut r, 12), text_or_none(&mut r, 13)) {
        (Some(c), Some(chat), Some(m)) => ChannelKind::parse(&c).map(|c| (c, chat, m)),
        _ => None,
    };
    Some(Request { row, prompt, asked })
}

impl<'a, S: Sql + ?Sized> ApprovalStore<'a, S> {
    pub fn new(sql: &'a S) -> Result<Self, StorageError> {
        crate::storage::ensure(sql, &TABLES)?;
        Ok(ApprovalStore { sql })
    }

    /// The request for `ask`, made now unless it exists. `true`: made now.
    pub fn open(&self, ask: &ApprovalAsk, prompt: &str, now: i64) -> Result<(Request, bool), StorageError> {
        let key = ask.session_key.render();
        if let Some(r) = self.find(&key, ask.seq, &ask.call_id)? {
            return Ok((r, false));
        }
        self.sql.exec("DELETE FROM approvals WHERE state != 'waiting' AND asked_at < ?", &[(now - KEEP_MS).into()])?;
        let origin = serde_json::to_string(&ask.origin).map_err(|e| StorageError(e.to_string()))?;
        self.sql.exec(
            "INSERT INTO approvals (session_key, seq, call_id, tool, args, origin, asked_at, expires_at, prompt)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            &[
                key.as_str().into(),
                ask.seq.into(),
                ask.call_id.as_str().into(),
                ask.tool.as_str().into(),
                ask.args.as_str().into(),
                origin.into(),
                now.into(),
                now.saturating_add(ask.timeout_ms).into(),
                prompt.into(),
            ],
        )?;
        let made = self.find(&key, ask.seq, &ask.call_id)?.ok_or_else(|| StorageError("approval not stored".into()))?;
        Ok((made, true))
    }

    fn find(&self, key: &str, seq: i64, call_id: &str) -> Result<Option<Request>, StorageError> {
        let rows = self.sql.exec(
            &format!("SELECT {COLUMNS} FROM approvals WHERE session_key = ? AND seq = ? AND call_id = ?"),
            &[key.into(), seq.into(), call_id.into()],
        )?;
        Ok(rows.into_iter().next().and_then(read))
    }

    pub fn get(&self, id: i64) -> Result<Option<Request>, StorageError> {
        let rows = self.sql.exec(&format!("SELECT {COLUMNS} FROM approvals WHERE id = ?"), &[id.into()])?;
        Ok(rows.into_iter().next().and_then(read))
    }

    /// Where the owner was asked.
    pub fn asked_in(&self, id: i64, channel: ChannelKind, chat: &str, message: &str) -> Result<(), StorageError> {
        self.sql.exec(
            "UPDATE approvals SET asked_channel = ?, asked_chat = ?, asked_message = ? WHERE id = ?",
            &[channel.as_str().into(), chat.into(), message.into(), id.into()],
        )?;
        Ok(())
    }

    /// Settles a waiting request. `false`: it was settled already (the
    /// first answer stands).
    pub fn decide(&self, id: i64, decision: Decision, by: &str, now: i64) -> Result<bool, StorageError> {
        let open = self.sql.exec("SELECT 1 FROM approvals WHERE id = ? AND state = 'waiting'", &[id.into()])?;
        if open.is_empty() {
            return Ok(false);
        }
        self.sql.exec(
            "UPDATE approvals SET state = ?, decided_by = ?, decided_at = ? WHERE id = ? AND state = 'waiting'",
            &[decision.as_str().into(), by.into(), now.into(), id.into()],
        )?;
        Ok(true)
    }

    /// The requests, newest first.
    pub fn list(&self, limit: i64) -> Result<Vec<ApprovalRow>, StorageError> {
        let rows =
            self.sql.exec(&format!("SELECT {COLUMNS} FROM approvals ORDER BY id DESC LIMIT ?"), &[limit.into()])?;
        Ok(rows.into_iter().filter_map(read).map(|r| r.row).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::SessionKey;
    use crate::testing::MemSql;

    fn ask(call: &str) -> ApprovalAsk {
        ApprovalAsk {
            agent: "main".into(),
            session_key: SessionKey::parse("agent:main:telegram:group:-100").unwrap(),
            seq: 7,
            call_id: call.into(),
            tool: "web_fetch".into(),
            args: r#"{"url":"https://example.com"}"#.into(),
            origin: Origin { channel: ChannelKind::Telegram, chat: "-100".into(), group: true, sender: "Pat".into() },
            timeout_ms: 1_000,
        }
    }

    #[test]
    fn a_request_is_made_once_and_decided_once() {
        let sql = MemSql::default();
        let s = ApprovalStore::new(&sql).unwrap();
        let (r, made) = s.open(&ask("c1"), "May I?", 100).unwrap();
        assert!(made);
        assert_eq!((r.row.decision, r.row.expires_at, r.prompt.as_str()), (Decision::Waiting, 1_100, "May I?"));
        let (again, made) = s.open(&ask("c1"), "May I?", 200).unwrap();
        assert!(!made, "a resumed turn finds its request");
        assert_eq!(again.row.id, r.row.id);
        let (other, _) = s.open(&ask("c2"), "May I?", 200).unwrap();
        assert_ne!(other.row.id, r.row.id);
        s.asked_in(r.row.id, ChannelKind::Telegram, "4242", "1001").unwrap();
        assert!(s.decide(r.row.id, Decision::Approved, "telegram:4242", 300).unwrap());
        assert!(!s.decide(r.row.id, Decision::Denied, "telegram:4242", 301).unwrap(), "the first answer stands");
        let got = s.get(r.row.id).unwrap().unwrap();
        assert_eq!(got.row.decision, Decision::Approved);
        assert_eq!(got.row.decided_by.as_deref(), Some("telegram:4242"));
        assert_eq!(got.asked, Some((ChannelKind::Telegram, "4242".into(), "1001".into())));
        assert_eq!(s.list(10).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), vec![other.row.id, r.row.id]);
    }
}
