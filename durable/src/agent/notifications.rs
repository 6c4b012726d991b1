//! The agent's notification feed: what its heartbeats and jobs say to the
//! owner, as server-sent events for `GET /api/agents/{id}/notifications/stream`.
//!
//! Seed 004 drops proactive messages nobody listens to; here each is kept
//! for a day ([`REPLAY_MS`], at most [`KEEP`] of them) with an increasing
//! id, so a client that reconnects with `Last-Event-ID` gets what it missed,
//! and a new client can ask for the recent ones with `?after=0`. The same
//! text from the same session within the notify channel's repeat window is
//! one notification (as the chat gets it once).

use crate::inbound::SessionKey;
use crate::ports::{EventSink, Sql, StorageError};
use crate::protocol::api::sse_event;
use crate::storage::{col_i64, col_string};
use hearth_schedule::notify::{notification_hash, DEFAULT_DEDUPE_WINDOW_MS};
use serde_json::json;
use std::cell::{Cell, RefCell};

/// How long notifications are replayed.
pub const REPLAY_MS: i64 = 24 * 3600 * 1000;
/// The most kept.
pub const KEEP: i64 = 1000;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, source TEXT NOT NULL,
    hash TEXT NOT NULL, text TEXT NOT NULL)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "notifications", statements: &[SCHEMA] };

/// The feed's live clients and its table.
#[derive(Default)]
pub struct Feed {
    clients: RefCell<Vec<Box<dyn EventSink>>>,
    schema_ready: Cell<bool>,
    /// A keep-alive loop runs (see [`Feed::claim_pinger`]).
    pinging: Cell<bool>,
}

/// What a notification's source is called in the feed: `heartbeat`,
/// `job:{name}`, or the session key.
fn source(key: &SessionKey) -> String {
    match key {
        SessionKey::Heartbeat(_) => "heartbeat".into(),
        SessionKey::Job { job, .. } => format!("job:{job}"),
        other => other.render(),
    }
}

fn event(id: i64, at: i64, source: &str, text: &str) -> String {
    let data = json!({"id": id, "at": at, "source": source, "text": text}).to_string();
    sse_event("notification", Some(&id.to_string()), &data)
}

impl Feed {
    fn ready<S: Sql>(&self, sql: &S) -> Result<(), StorageError> {
        if !self.schema_ready.get() {
            crate::storage::ensure(sql, &TABLES)?;
            self.schema_ready.set(true);
        }
        Ok(())
    }

    /// Keeps and sends what a session said; returns how many were new.
    pub fn publish<S: Sql>(
        &self,
        sql: &S,
        key: &SessionKey,
        texts: &[String],
        now: i64,
    ) -> Result<usize, StorageError> {
        self.ready(sql)?;
        let source = source(key);
        let mut out = String::new();
        let mut added = 0;
        for text in texts {
            let hash = format!("{:016x}", notification_hash(text));
            let since = now - DEFAULT_DEDUPE_WINDOW_MS;
            let seen = sql.exec(
                "SELECT 1 FROM notifications WHERE source = ? AND hash = ? AND at >= ?",
                &[source.as_str().into(), hash.as_str().into(), since.into()],
            )?;
            if !seen.is_empty() {
                continue;
            }
            sql.exec(
                "INSERT INTO notifications (at, source, hash, text) VALUES (?, ?, ?, ?)",
                &[now.into(), source.as_str().into(), hash.into(), text.as_str().into()],
            )?;
            let id = sql.exec("SELECT last_insert_rowid()", &[])?.first().map(|r| col_i64(r, 0)).unwrap_or(0);
            out.push_str(&event(id, now, &source, text));
            added += 1;
        }
        sql.exec(
            "DELETE FROM notifications WHERE at < ? OR id <= (SELECT MAX(id) FROM notifications) - ?",
            &[(now - REPLAY_MS).into(), KEEP.into()],
        )?;
        if !out.is_empty() {
            self.clients.borrow_mut().retain(|c| c.send(out.as_bytes()));
        }
        Ok(added)
    }

    /// A new client: the kept notifications after `after` (its
    /// `Last-Event-ID`; none: only new ones), then each as it comes.
    pub fn attach<S: Sql>(
        &self,
        sql: &S,
        client: Box<dyn EventSink>,
        after: Option<i64>,
        now: i64,
    ) -> Result<(), StorageError> {
        self.ready(sql)?;
        // Reconnecting browsers wait this long (ms) before trying again.
        let mut out = String::from("retry: 3000\n\n");
        if let Some(after) = after {
            let rows = sql.exec(
                "SELECT id, at, source, text FROM notifications WHERE id > ? AND at >= ? ORDER BY id",
                &[after.into(), (now - REPLAY_MS).into()],
            )?;
            for mut r in rows {
                let (id, at) = (col_i64(&r, 0), col_i64(&r, 1));
                let (source, text) = (col_string(&mut r, 2), col_string(&mut r, 3));
                out.push_str(&event(id, at, &source, &text));
            }
        }
        if client.send(out.as_bytes()) {
            self.clients.borrow_mut().push(client);
        }
        Ok(())
    }

    /// Keeps idle connections open (proxies close silent ones); `false`
    /// once no client is left (the keep-alive loop then ends).
    pub fn ping(&self) -> bool {
        let mut clients = self.clients.borrow_mut();
        clients.retain(|c| c.send(b": ping\n\n"));
        let any = !clients.is_empty();
        if !any {
            self.pinging.set(false);
        }
        any
    }

    /// Whether the caller should start the keep-alive loop (none runs yet).
    pub fn claim_pinger(&self) -> bool {
        !self.pinging.replace(true)
    }

    /// The id of the newest notification (0: none).
    pub fn latest<S: Sql>(&self, sql: &S) -> Result<i64, StorageError> {
        self.ready(sql)?;
        let rows = sql.exec("SELECT COALESCE(MAX(id), 0) FROM notifications", &[])?;
        Ok(rows.first().map(|r| col_i64(r, 0)).unwrap_or(0))
    }
}

/// A `Last-Event-ID` or `?after=` value.
pub fn parse_after(raw: Option<&str>) -> Option<i64> {
    raw.and_then(|v| v.trim().parse::<i64>().ok()).filter(|v| *v >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemSql;
    use std::rc::Rc;

    #[derive(Default)]
    struct Client {
        written: RefCell<String>,
        gone: Cell<bool>,
    }
    struct Sink(Rc<Client>);
    impl EventSink for Sink {
        fn send(&self, bytes: &[u8]) -> bool {
            if self.0.gone.get() {
                return false;
            }
            self.0.written.borrow_mut().push_str(std::str::from_utf8(bytes).unwrap());
            true
        }
        fn close(&self) {}
    }
    fn ids(c: &Client) -> Vec<String> {
        c.written.borrow().lines().filter_map(|l| l.strip_prefix("id: ").map(str::to_owned)).collect()
    }

    #[test]
    fn live_clients_get_each_notification_and_reconnecting_ones_what_they_missed() {
        let feed = Feed::default();
        let sql = MemSql::default();
        let hb = SessionKey::parse("agent:main:heartbeat").unwrap();
        let job = SessionKey::parse("agent:main:job:brief").unwrap();
        let live = Rc::new(Client::default());
        feed.attach(&sql, Box::new(Sink(live.clone())), None, 0).unwrap();
        assert_eq!(feed.publish(&sql, &hb, &["Backup failed.".into()], 1_000).unwrap(), 1);
        assert_eq!(feed.publish(&sql, &job, &["Your briefing: rain.".into()], 2_000).unwrap(), 1);
        assert_eq!(feed.publish(&sql, &hb, &["Backup failed.".into()], 3_000).unwrap(), 0, "a repeat is one");
        assert_eq!(ids(&live), ["1", "2"]);
        assert!(live.written.borrow().contains("\"source\":\"job:brief\""));

        let back = Rc::new(Client::default());
        feed.attach(&sql, Box::new(Sink(back.clone())), parse_after(Some("1")), 4_000).unwrap();
        assert_eq!(ids(&back), ["2"], "only what came after its last event");
        let late = Rc::new(Client::default());
        feed.attach(&sql, Box::new(Sink(late.clone())), Some(0), REPLAY_MS + 1_500).unwrap();
        assert_eq!(ids(&late), ["2"], "older than a day: not replayed");

        live.gone.set(true);
        assert!(feed.ping());
        back.gone.set(true);
        late.gone.set(true);
        assert!(!feed.ping(), "everyone left");
        assert_eq!(feed.latest(&sql).unwrap(), 2);
        assert_eq!(parse_after(Some("x")), None);
    }
}
