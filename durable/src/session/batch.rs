//! Messages that belong together answered in one turn: the photos of a
//! Telegram album arrive as one update each (with one `media_group_id`, and
//! the caption on one of them), and a person who sends five photos expects
//! one answer about them, not five.
//!
//! A message with a `batch` waits [`BATCH_WAIT_MS`] after it was received
//! (the rest arrives meanwhile, over Telegram's parallel connections, in any
//! order); then every open message of its batch is merged into the first
//! one queued (texts and attachments in the order they were sent) and the
//! others are done without a turn. The merge is one SQLite change, so a turn
//! resumed after an eviction finds the merged message.

use super::store::SessionStore;
use crate::inbound::Inbound;
use crate::ports::{Sql, StorageError};

/// How long the first message of a batch waits for the rest.
pub const BATCH_WAIT_MS: i64 = 1_500;

/// When `inbound`, not started yet, may start: `None` now, `Some(at)` later.
pub fn wait_until(inbound: &Inbound, now: i64) -> Option<i64> {
    inbound.batch.as_ref()?;
    let due = inbound.received_at.saturating_add(BATCH_WAIT_MS);
    (now < due).then_some(due)
}

/// Merges the other open messages of `head`'s batch into it (queue row
/// `head_seq`) and returns the merged message.
pub fn gather<S: Sql>(
    store: &SessionStore<'_, S>,
    head_seq: i64,
    head: Inbound,
    now: i64,
) -> Result<Inbound, StorageError> {
    let Some(batch) = head.batch.clone() else { return Ok(head) };
    let mut members = Vec::new();
    for (seq, payload) in store.pending()? {
        if seq == head_seq {
            continue;
        }
        if let Ok(m) = hearth_json::from_slice::<Inbound>(payload.as_bytes()) {
            if m.batch.as_deref() == Some(batch.as_str()) {
                members.push((seq, m));
            }
        }
    }
    if members.is_empty() {
        return Ok(head);
    }
    let seqs: Vec<i64> = members.iter().map(|(s, _)| *s).collect();
    let merged = merge(head, members.into_iter().map(|(_, m)| m).collect());
    let payload = serde_json::to_string(&merged).map_err(|e| StorageError(e.to_string()))?;
    store.absorb(head_seq, &payload, &seqs, now)?;
    Ok(merged)
}

/// The position of a message in the order sent (the platform's, see
/// [`crate::inbound::SendOrder`]); unknown ones last.
fn position(m: &Inbound) -> i64 {
    m.order.as_ref().map_or(i64::MAX, |o| o.pos)
}

/// `head` with the texts and attachments of `rest`, all in the order sent.
pub fn merge(head: Inbound, rest: Vec<Inbound>) -> Inbound {
    // The head first: without positions, the order queued stands.
    let mut all = vec![head.clone()];
    all.extend(rest);
    crate::order::sort_by_key(&mut all, position);
    let mut merged = head;
    merged.text = all.iter().map(|m| m.text.trim()).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n");
    merged.media = all.iter().flat_map(|m| m.media.iter().cloned()).collect();
    merged.addressed = all.iter().any(|m| m.addressed);
    if merged.context.is_empty() {
        merged.context = all.iter().find(|m| !m.context.is_empty()).map(|m| m.context.clone()).unwrap_or_default();
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::{ChannelKind, ChatKind, InboundMedia, ReplyTarget, SendOrder};

    fn photo(update: i64, caption: &str, received_at: i64) -> Inbound {
        Inbound {
            dedupe_key: format!("telegram:update:{update}"),
            channel: ChannelKind::Telegram,
            kind: ChatKind::Direct,
            chat_id: "1".into(),
            sender_id: "1".into(),
            sender_name: "Ana".into(),
            text: caption.into(),
            addressed: true,
            thread_id: None,
            reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
            received_at,
            media: vec![InboundMedia {
                handle: format!("file-{update}"),
                mime_type: "image/jpeg".into(),
                filename: None,
                size: Some(10),
                kind: "photo".into(),
            }],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: Some("telegram:album:77".into()),
            order: Some(SendOrder::telegram(1, update, update)),
        }
    }

    #[test]
    fn the_first_of_a_batch_waits_for_the_rest() {
        let m = photo(10, "", 1_000);
        assert_eq!(wait_until(&m, 1_000), Some(1_000 + BATCH_WAIT_MS));
        assert_eq!(wait_until(&m, 1_000 + BATCH_WAIT_MS), None);
        let plain = Inbound { batch: None, ..m };
        assert_eq!(wait_until(&plain, 1_000), None, "an ordinary message starts at once");
    }

    #[test]
    fn an_album_merges_in_the_order_sent_whatever_order_it_arrived_in() {
        // Queued 12 first (parallel connections), the caption on 11.
        let merged = merge(photo(12, "", 5), vec![photo(11, "two pictures from today", 6), photo(13, "", 7)]);
        assert_eq!(merged.text, "two pictures from today");
        let handles: Vec<&str> = merged.media.iter().map(|m| m.handle.as_str()).collect();
        assert_eq!(handles, ["file-11", "file-12", "file-13"]);
        assert_eq!(merged.dedupe_key, "telegram:update:12", "the first queued keeps its row");
    }

    #[test]
    fn the_merge_is_one_change_in_the_queue() {
        let sql = crate::testing::MemSql::default();
        let store = SessionStore::new(&sql);
        store.init().unwrap();
        for (update, caption) in [(21, "look"), (22, ""), (23, "")] {
            let m = photo(update, caption, 0);
            store.enqueue(&m.dedupe_key, &serde_json::to_string(&m).unwrap(), 0).unwrap();
        }
        let other = Inbound { batch: None, dedupe_key: "telegram:update:24".into(), ..photo(24, "hi", 0) };
        store.enqueue(&other.dedupe_key, &serde_json::to_string(&other).unwrap(), 0).unwrap();
        let head = store.next_open().unwrap().unwrap();
        let first: Inbound = hearth_json::from_str(&head.payload).unwrap();
        let merged = gather(&store, head.seq, first, 2_000).unwrap();
        assert_eq!(merged.media.len(), 3);
        // The batch is one open message now, the next message after it.
        assert_eq!(store.open_count().unwrap(), 2);
        let again: Inbound = hearth_json::from_str(&store.next_open().unwrap().unwrap().payload).unwrap();
        assert_eq!(again.media.len(), 3, "the merged message is what a resumed turn reads");
    }
}
