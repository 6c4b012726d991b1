//! The stranger cooldown: someone not in `OWNER_IDS`/`ALLOW_FROM` who writes
//! to the agent on Telegram is told their id (so an owner can allow them),
//! but at most once per `STRANGER_COOLDOWN_MINUTES` per channel and sender.
//! Each notice is a `sendMessage` out of the bot's budget: 300 messages from
//! one stranger used to cost 300 sends.
//!
//! Why in the Agent object: the Worker is stateless and runs in many
//! isolates; one object per agent sees every claim, in order, so two
//! isolates never both tell the same stranger. The Worker remembers each
//! answer's `quiet_until` per isolate, so a flood costs one object call per
//! isolate and cooldown, not one per message. The table holds a row per
//! stranger told within the last cooldown: older rows are dropped on each
//! claim, so it stays as small as the number of strangers of the last hour.

use crate::ports::{Sql, StorageError};
use crate::protocol::agent::{StrangerNoticeReply, StrangerNoticeRequest};
use crate::storage::col_i64;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS stranger_notices (
    channel TEXT NOT NULL, sender TEXT NOT NULL, notified_at INTEGER NOT NULL,
    PRIMARY KEY (channel, sender))";
const INDEX: &str = "CREATE INDEX IF NOT EXISTS stranger_notices_at ON stranger_notices (notified_at)";
const TABLES: crate::storage::Schema = crate::storage::Schema { name: "strangers", statements: &[SCHEMA, INDEX] };

/// Claims the right to tell `req.sender` their id at `now`: granted when
/// they were not told within the cooldown (and then recorded), refused
/// otherwise. A cooldown of 0 or less grants every claim and keeps nothing.
pub fn claim<S: Sql>(sql: &S, req: &StrangerNoticeRequest, now: i64) -> Result<StrangerNoticeReply, StorageError> {
    if req.cooldown_ms <= 0 {
        return Ok(StrangerNoticeReply { notify: true, quiet_until: now });
    }
    crate::storage::ensure(sql, &TABLES)?;
    let since = now.saturating_sub(req.cooldown_ms);
    sql.exec("DELETE FROM stranger_notices WHERE notified_at <= ?", &[since.into()])?;
    let rows = sql.exec(
        "SELECT notified_at FROM stranger_notices WHERE channel = ? AND sender = ?",
        &[req.channel.as_str().into(), req.sender.as_str().into()],
    )?;
    if let Some(row) = rows.first() {
        let told = col_i64(row, 0);
        return Ok(StrangerNoticeReply { notify: false, quiet_until: told.saturating_add(req.cooldown_ms) });
    }
    sql.exec(
        "INSERT INTO stranger_notices (channel, sender, notified_at) VALUES (?, ?, ?)",
        &[req.channel.as_str().into(), req.sender.as_str().into(), now.into()],
    )?;
    Ok(StrangerNoticeReply { notify: true, quiet_until: now.saturating_add(req.cooldown_ms) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;
    use crate::testing::MemSql;

    fn req(channel: ChannelKind, sender: &str, cooldown_ms: i64) -> StrangerNoticeRequest {
        StrangerNoticeRequest { channel, sender: sender.into(), cooldown_ms }
    }

    #[test]
    fn a_stranger_is_told_once_per_cooldown_per_channel_and_sender() {
        let sql = MemSql::default();
        let hour = 3_600_000;
        let first = claim(&sql, &req(ChannelKind::Telegram, "9", hour), 1_000).unwrap();
        assert_eq!(first, StrangerNoticeReply { notify: true, quiet_until: 1_000 + hour });
        let told: Vec<bool> =
            (0..300).map(|i| claim(&sql, &req(ChannelKind::Telegram, "9", hour), 2_000 + i).unwrap().notify).collect();
        assert!(told.iter().all(|t| !t), "300 more messages, no more notices");
        let again = claim(&sql, &req(ChannelKind::Telegram, "9", hour), 5_000).unwrap();
        assert_eq!(again.quiet_until, 1_000 + hour, "quiet until the first notice's cooldown ends");
        // Another sender, or the same id on another channel, is told.
        assert!(claim(&sql, &req(ChannelKind::Telegram, "10", hour), 5_000).unwrap().notify);
        assert!(claim(&sql, &req(ChannelKind::Discord, "9", hour), 5_000).unwrap().notify);
        // Once the cooldown has passed, told again.
        assert!(claim(&sql, &req(ChannelKind::Telegram, "9", hour), 1_000 + hour).unwrap().notify);
    }

    #[test]
    fn rows_of_past_cooldowns_are_dropped_and_zero_means_always() {
        let sql = MemSql::default();
        for i in 0..50 {
            claim(&sql, &req(ChannelKind::Telegram, &i.to_string(), 1_000), 0).unwrap();
        }
        claim(&sql, &req(ChannelKind::Telegram, "late", 1_000), 5_000).unwrap();
        let rows = sql.exec("SELECT COUNT(*) FROM stranger_notices", &[]).unwrap();
        assert_eq!(col_i64(&rows[0], 0), 1, "only the stranger of the last cooldown is kept");
        for _ in 0..3 {
            assert!(claim(&sql, &req(ChannelKind::Telegram, "x", 0), 10).unwrap().notify);
        }
    }
}
