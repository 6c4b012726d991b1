//! Messages answered in the order their person sent them, not the order
//! their webhooks arrived in. Telegram delivers a webhook's updates over up
//! to 40 parallel connections (Slack, WhatsApp and the Discord Gateway's
//! relays overlap too), so a message sent 15 ms after another can reach the
//! session first.
//!
//! Three rules, on the platform's own position of each message
//! ([`crate::inbound::SendOrder`]):
//!
//! - **Take by position.** Of the messages waiting, the session takes the one
//!   that arrived first, or rather the one sent first in that message's
//!   stream ([`SessionStore::next_open`]). So whatever queued up while a
//!   turn ran (or a compaction, or a reset) is answered in the order sent,
//!   and a `/reset` cuts the conversation exactly where it was sent.
//!   Streams that cannot be compared (two platforms in the owner's main
//!   session) keep the order of arrival between them.
//! - **Hold a message only when a straggler is likely** ([`wait_until`]). A
//!   message reaching an idle queue may have overtaken one sent just before
//!   it that is still on its way; it waits until `ORDER_HOLD_MS` after it
//!   arrived when that is likely: the Worker that received it saw an earlier
//!   Telegram update missing (`Earlier::Missing`, see
//!   `channels::telegram::arrivals`), or another message reached this
//!   session within [`LIKELY_MS`] of it (a burst). It starts at once when
//!   nothing can be missing: the Worker saw every earlier update arrive
//!   (`Earlier::Arrived`: a person writing after a pause, a new chat), or
//!   the delivery just before it was taken here already (`SendOrder::after`:
//!   Telegram's `update_id`, the Discord Gateway object's relay chain,
//!   `channels::discord::relay`). A hold ends when the straggler comes (its
//!   enqueue wakes the session), not at a fixed time.
//! - **Give way before the model call.** A message that started with nothing
//!   said either way ([`Start::Watching`]: a new isolate, a platform without
//!   gapless ids, after a pause) steps back if one sent before it arrives
//!   while its turn prepares (recall, the workspace, "typing…"): that one is
//!   answered first. Nothing of the turn was written yet.
//!
//! A message later than that (a platform's redelivery after a failure, a
//! minute on; the first of a burst overtaken after a pause, arriving after
//! the next one's model call went out) is answered when it comes: what was
//! answered is never answered again or reordered; it is merely the next
//! turn, after any message sent later that had already started.

use super::store::{InboxItem, SessionStore};
use crate::inbound::{Earlier, Inbound, SendOrder};
use crate::ports::{Sql, SqlValue, StorageError};
use crate::storage::{col_i64, col_string};

/// A queued message's order stream and position (`Inbound::order`), read
/// from its payload; NULL when it has none (or the payload is not JSON).
const STREAM: &str = "CASE WHEN json_valid(payload) THEN json_extract(payload, '$.order.stream') END";
const POS: &str = "CASE WHEN json_valid(payload) THEN json_extract(payload, '$.order.pos') END";

/// Which open message is next: the inbox's side of the two rules.
impl<S: Sql> SessionStore<'_, S> {
    /// The message to take next (the first rule above): one already
    /// started (a resumed turn), else of the messages waiting the one that
    /// arrived first, or, when its platform says where it was sent
    /// (`Inbound::order`), the one of its stream that was sent first.
    pub fn next_open(&self) -> Result<Option<InboxItem>, StorageError> {
        // One statement: the head (a started message, else the first to
        // arrive), and when it waits with a stream, the one of its stream
        // sent first. The order key is read from the queued message itself
        // (SQLite's JSON functions), so the table needs no column for it.
        let mut rows = self.sql.exec(
            &format!(
                "WITH head AS (SELECT seq, state = 'active' AS started, {STREAM} AS stream FROM inbox \
                 WHERE state IN ('pending','active') ORDER BY state = 'active' DESC, seq LIMIT 1) \
                 SELECT inbox.seq, payload, state, attempts, received_at FROM inbox, head \
                 WHERE state IN ('pending','active') AND (inbox.seq = head.seq OR (NOT head.started \
                 AND head.stream IS NOT NULL AND state = 'pending' AND {STREAM} = head.stream)) \
                 ORDER BY CASE WHEN head.started OR head.stream IS NULL THEN 0 ELSE {POS} END, inbox.seq LIMIT 1"
            ),
            &[],
        )?;
        Ok(rows.pop().map(|mut r| InboxItem {
            seq: col_i64(&r, 0),
            payload: col_string(&mut r, 1),
            active: r.get(2).and_then(SqlValue::as_str) == Some("active"),
            attempts: col_i64(&r, 3),
            received_at: col_i64(&r, 4),
        }))
    }

    /// Whether the delivery `dedupe_key` was taken (started or done): not
    /// merely seen, since a message still waiting may itself wait for others.
    pub fn taken(&self, dedupe_key: &str) -> Result<bool, StorageError> {
        let rows =
            self.sql.exec("SELECT 1 FROM inbox WHERE dedupe_key = ? AND state != 'pending'", &[dedupe_key.into()])?;
        Ok(!rows.is_empty())
    }

    /// Whether another message reached this session since `since` (one of
    /// the last few queued: a burst is at the end of the inbox).
    fn arrived_since(&self, seq: i64, since: i64) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            "SELECT 1 FROM inbox WHERE seq > (SELECT MAX(seq) FROM inbox) - 8 AND seq != ? AND received_at >= ? LIMIT 1",
            &[seq.into(), since.into()],
        )?;
        Ok(!rows.is_empty())
    }

    /// Whether a message of `item`'s stream sent before it is waiting (it
    /// arrived after `item` was taken).
    pub fn sent_before_waiting(&self, item: &InboxItem, order: &SendOrder) -> Result<bool, StorageError> {
        let rows = self.sql.exec(
            &format!("SELECT 1 FROM inbox WHERE state = 'pending' AND seq != ? AND {STREAM} = ? AND {POS} < ? LIMIT 1"),
            &[item.seq.into(), order.stream.as_str().into(), order.pos.into()],
        )?;
        Ok(!rows.is_empty())
    }
}

/// Another message within this long of one makes a straggler likely.
pub const LIKELY_MS: i64 = 1_000;

/// When a message not started yet may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Nothing sent before it can still come.
    Now,
    /// Nothing says either way: it starts, and gives way to one sent before
    /// it that arrives before its model call ([`SessionStore::sent_before_waiting`]).
    Watching,
    /// A straggler is likely: look again then (or when one arrives).
    At(i64),
}

/// When the message `item` may start. `hold_ms`: `ORDER_HOLD_MS`.
pub fn wait_until<S: Sql>(
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    inbound: &Inbound,
    hold_ms: i64,
    now: i64,
) -> Result<Start, StorageError> {
    let Some(order) = inbound.order.as_ref().filter(|_| !item.active) else { return Ok(Start::Now) };
    let due = item.received_at.saturating_add(hold_ms);
    if now >= due || order.earlier == Some(Earlier::Arrived) {
        return Ok(Start::Now);
    }
    if let Some(before) = &order.after {
        if store.taken(before)? {
            // Nothing sent before it can still be on its way.
            return Ok(Start::Now);
        }
    }
    if order.earlier == Some(Earlier::Missing) || store.arrived_since(item.seq, item.received_at - LIKELY_MS)? {
        return Ok(Start::At(due));
    }
    Ok(Start::Watching)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::SendOrder;
    use crate::testing::MemSql;

    fn msg(key: &str, text: &str, order: Option<SendOrder>) -> Inbound {
        crate::testing::telegram_dm(key, text, order)
    }

    /// A Telegram message of chat 1: update `u`, message id `u`.
    fn tg(u: i64) -> Inbound {
        msg(&format!("telegram:update:{u}"), &format!("K-{u}"), Some(SendOrder::telegram(1, u, u)))
    }

    fn queue(store: &SessionStore<'_, MemSql>, m: &Inbound, at: i64) {
        assert!(store.enqueue(&m.dedupe_key, &serde_json::to_string(m).unwrap(), at).unwrap());
    }

    /// Takes every open message in the order the session would (no holds).
    fn drain_texts(store: &SessionStore<'_, MemSql>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(item) = store.next_open().unwrap() {
            let m: Inbound = hearth_json::from_str(&item.payload).unwrap();
            out.push(m.text);
            store.start(item.seq, "", None).unwrap();
            store.finish(item.seq, 0).unwrap();
        }
        out
    }

    fn store_of(sql: &MemSql) -> SessionStore<'_, MemSql> {
        let store = SessionStore::new(sql);
        store.init().unwrap();
        store
    }

    #[test]
    fn what_queued_up_is_taken_in_the_order_sent_not_the_order_arrived() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        for u in [3, 1, 4, 2, 6, 5] {
            queue(&store, &tg(u), 0);
        }
        assert_eq!(drain_texts(&store), ["K-1", "K-2", "K-3", "K-4", "K-5", "K-6"]);
    }

    #[test]
    fn a_reset_in_a_burst_cuts_where_it_was_sent() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        let reset = msg("telegram:update:3", "/reset", Some(SendOrder::telegram(1, 3, 3)));
        queue(&store, &tg(4), 0);
        queue(&store, &reset, 0);
        queue(&store, &tg(2), 0);
        queue(&store, &tg(1), 0);
        assert_eq!(drain_texts(&store), ["K-1", "K-2", "/reset", "K-4"]);
    }

    #[test]
    fn streams_that_cannot_be_compared_keep_their_order_of_arrival() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        // The owner's main session: Telegram and Discord, and an HTTP message.
        let discord = |id: &str, text| msg(&format!("discord:message:{id}"), text, SendOrder::discord(id));
        queue(&store, &tg(11), 0);
        queue(&store, &discord("900", "D-900"), 0);
        queue(&store, &msg("api:1", "api", None), 0);
        queue(&store, &tg(10), 0);
        queue(&store, &discord("800", "D-800"), 0);
        // Telegram first (it arrived first), in its own order; then Discord's
        // in theirs; the HTTP message between where it arrived.
        assert_eq!(drain_texts(&store), ["K-10", "K-11", "D-800", "D-900", "api"]);
    }

    #[test]
    fn a_started_message_is_resumed_before_an_earlier_one_that_came_late() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &tg(2), 0);
        let first = store.next_open().unwrap().unwrap();
        store.start(first.seq, "", None).unwrap();
        // Evicted mid-turn; update 1 arrives late.
        queue(&store, &tg(1), 5);
        let again = store.next_open().unwrap().unwrap();
        assert_eq!((again.seq, again.active), (first.seq, true), "the interrupted turn goes on");
        store.finish(again.seq, 0).unwrap();
        assert_eq!(drain_texts(&store), ["K-1"], "the late one is the next turn, not lost");
    }

    fn with_earlier(mut m: Inbound, earlier: Option<Earlier>) -> Inbound {
        m.order.as_mut().unwrap().earlier = earlier;
        m
    }

    fn head(store: &SessionStore<'_, MemSql>) -> (InboxItem, Inbound) {
        let item = store.next_open().unwrap().unwrap();
        let m: Inbound = hearth_json::from_str(&item.payload).unwrap();
        (item, m)
    }

    #[test]
    fn a_message_after_a_pause_starts_at_once_and_waits_only_when_a_straggler_is_likely() {
        let hold = 100;
        // Update 7 at an idle queue, nothing else in the last second, the
        // Worker knowing nothing before it (a new isolate): it starts, watching.
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &tg(7), 10_000);
        let (item, m) = head(&store);
        assert_eq!(wait_until(&store, &item, &m, hold, 10_000).unwrap(), Start::Watching);
        // The Worker saw every earlier update arrive: nothing to watch for.
        let arrived = with_earlier(m.clone(), Some(Earlier::Arrived));
        assert_eq!(wait_until(&store, &item, &arrived, hold, 10_000).unwrap(), Start::Now);
        // It saw one missing: held, until the hold is over.
        let missing = with_earlier(m.clone(), Some(Earlier::Missing));
        assert_eq!(wait_until(&store, &item, &missing, hold, 10_000).unwrap(), Start::At(10_100));
        assert_eq!(wait_until(&store, &item, &missing, hold, 10_099).unwrap(), Start::At(10_100));
        assert_eq!(wait_until(&store, &item, &missing, hold, 10_100).unwrap(), Start::Now);
        assert_eq!(wait_until(&store, &item, &missing, 0, 10_000).unwrap(), Start::Now, "ORDER_HOLD_MS=0: no hold");

        // Another message of this session within a second (a burst): held.
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &msg("api:1", "before", None), 9_100);
        let done = store.next_open().unwrap().unwrap();
        store.start(done.seq, "", None).unwrap();
        store.finish(done.seq, 9_200).unwrap();
        queue(&store, &tg(7), 10_000);
        let (item, m) = head(&store);
        assert_eq!(wait_until(&store, &item, &m, hold, 10_000).unwrap(), Start::At(10_100));
        // …and one just after it, too.
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &tg(7), 10_000);
        queue(&store, &msg("api:2", "after", None), 10_004);
        let (item, m) = head(&store);
        assert_eq!(wait_until(&store, &item, &m, hold, 10_005).unwrap(), Start::At(10_100));
        // A second and more before: a pause.
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &msg("api:1", "before", None), 8_999);
        let done = store.next_open().unwrap().unwrap();
        store.finish(done.seq, 9_000).unwrap();
        queue(&store, &tg(7), 10_000);
        let (item, m) = head(&store);
        assert_eq!(wait_until(&store, &item, &m, hold, 10_000).unwrap(), Start::Watching);
    }

    #[test]
    fn a_message_whose_update_before_was_taken_starts_at_once_whatever_the_worker_saw() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        let hold = 100;
        queue(&store, &tg(7), 1_000);
        let (item, _) = head(&store);
        store.start(item.seq, "", None).unwrap();
        store.finish(item.seq, 1_010).unwrap();
        // Update 8 follows 7, taken: even a "missing" seen while 7 was being queued does not hold it.
        queue(&store, &with_earlier(tg(8), Some(Earlier::Missing)), 1_020);
        let (item, m) = head(&store);
        assert_eq!(wait_until(&store, &item, &m, hold, 1_020).unwrap(), Start::Now);

        // Update 10 while 9 is still waiting in the queue (not taken): 9 goes
        // first anyway, and 10 does not skip its own check.
        store.start(item.seq, "", None).unwrap();
        store.finish(item.seq, 1_020).unwrap();
        queue(&store, &with_earlier(tg(10), Some(Earlier::Missing)), 3_000);
        queue(&store, &tg(9), 3_001);
        let (item, m) = head(&store);
        assert_eq!(m.text, "K-9");
        assert_eq!(wait_until(&store, &item, &m, hold, 3_001).unwrap(), Start::Now, "8 was taken");
    }

    #[test]
    fn a_message_sent_before_one_that_started_watching_makes_it_give_way() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &tg(7), 1_000);
        let (item, m) = head(&store);
        let order = m.order.clone().unwrap();
        assert!(!store.sent_before_waiting(&item, &order).unwrap());
        // Later ones of its chat and earlier ones of another chat do not count.
        queue(&store, &tg(8), 1_002);
        let other = msg("telegram:update:3", "other chat", Some(SendOrder::telegram(2, 3, 3)));
        queue(&store, &other, 1_003);
        assert!(!store.sent_before_waiting(&item, &order).unwrap());
        // Update 6 of its chat comes while its turn prepares.
        queue(&store, &tg(6), 1_004);
        assert!(store.sent_before_waiting(&item, &order).unwrap());
        let (next, m) = head(&store);
        assert_eq!(m.text, "K-6", "the session takes it first");
        // It came within a second of 7: it is held for its own stragglers.
        assert_eq!(wait_until(&store, &next, &m, 100, 1_004).unwrap(), Start::At(1_104));
    }

    #[test]
    fn a_gateway_message_is_held_only_until_the_one_relayed_before_it_was_taken() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        let hold = 100;
        let relayed = |id: &str, before: Option<&str>| {
            let mut order = SendOrder::discord(id).unwrap();
            order.after = before.map(|b| format!("discord:message:{b}"));
            msg(&format!("discord:message:{id}"), id, Some(order))
        };
        // The first since the Gateway object started names nothing: it starts, watching.
        let first = relayed("1001", None);
        queue(&store, &first, 1_000);
        let item = store.next_open().unwrap().unwrap();
        assert_eq!(wait_until(&store, &item, &first, hold, 1_000).unwrap(), Start::Watching);
        // The next names it; while 1001 is not taken, 1002 (a burst) is held.
        let second = relayed("1002", Some("1001"));
        queue(&store, &second, 1_010);
        let item2 = InboxItem { seq: item.seq + 1, received_at: 1_010, ..item.clone() };
        assert_eq!(wait_until(&store, &item2, &second, hold, 1_010).unwrap(), Start::At(1_110));
        store.start(item.seq, "", None).unwrap();
        store.finish(item.seq, 1_100).unwrap();
        let next = store.next_open().unwrap().unwrap();
        assert_eq!(wait_until(&store, &next, &second, hold, 1_011).unwrap(), Start::Now, "1001 was taken");
        store.start(next.seq, "", None).unwrap();
        store.finish(next.seq, 1_200).unwrap();
        // Idle again, hours later: 1003 follows 1002, taken: at once.
        let third = relayed("1003", Some("1002"));
        queue(&store, &third, 9_000_000);
        let item3 = store.next_open().unwrap().unwrap();
        assert_eq!(wait_until(&store, &item3, &third, hold, 9_000_000).unwrap(), Start::Now);
        // An interaction over the webhook (no chain) after a pause: watching.
        let command = msg("discord:interaction:1004", "/usage", SendOrder::discord("1004"));
        assert_eq!(wait_until(&store, &item3, &command, hold, 9_000_000).unwrap(), Start::Watching);
    }

    #[test]
    fn messages_without_a_position_and_resumed_turns_never_wait() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        queue(&store, &msg("api:k", "over HTTP", None), 1_000);
        queue(&store, &msg("api:k2", "over HTTP too", None), 1_001);
        let item = store.next_open().unwrap().unwrap();
        let m: Inbound = hearth_json::from_str(&item.payload).unwrap();
        assert_eq!(wait_until(&store, &item, &m, 100, 1_001).unwrap(), Start::Now);
        let discord = msg("discord:message:5", "d", SendOrder::discord("5"));
        let resumed = InboxItem { active: true, received_at: 1_000, ..item };
        assert_eq!(wait_until(&store, &resumed, &discord, 100, 1_001).unwrap(), Start::Now);
        let fresh = InboxItem { active: false, ..resumed };
        assert_eq!(
            wait_until(&store, &fresh, &discord, 100, 1_001).unwrap(),
            Start::At(1_100),
            "no gapless ids, a burst: it waits"
        );
    }

    #[test]
    fn an_unreadable_payload_is_still_taken_and_does_not_stop_the_queue() {
        let sql = MemSql::default();
        let store = store_of(&sql);
        store.enqueue("junk", "not json", 0).unwrap();
        queue(&store, &tg(2), 0);
        queue(&store, &tg(1), 0);
        let first = store.next_open().unwrap().unwrap();
        assert_eq!(first.payload, "not json", "it arrived first and has no stream");
        store.finish(first.seq, 0).unwrap();
        assert_eq!(drain_texts(&store), ["K-1", "K-2"]);
    }
}
