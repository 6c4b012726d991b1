//! The outbox as the session's status shows it: replies still waiting and
//! replies given up ([`OutboxStatus`]).

use super::outbox::{Outbox, Row};
use crate::ports::{Sql, StorageError};
use crate::protocol::session::{OutboxStatus, ReplyDelivery};

/// Characters of a piece shown in the status.
const PREVIEW_CHARS: usize = 120;

/// What the outbox of `sql` holds.
pub fn status<S: Sql>(sql: &S) -> Result<OutboxStatus, StorageError> {
    let rows = Outbox::open(sql)?.open_and_failed()?;
    let mut replies: Vec<(String, Vec<Row>)> = Vec::new();
    for row in rows {
        match replies.iter_mut().find(|(id, _)| *id == row.reply) {
            Some((_, pieces)) => pieces.push(row),
            None => replies.push((row.reply.clone(), vec![row])),
        }
    }
    let mut out = OutboxStatus::default();
    for (id, pieces) in &replies {
        let delivered = pieces.iter().filter(|r| r.state == "sent").count() as u32;
        let entry = |focus: &Row| ReplyDelivery {
            id: id.clone(),
            kind: focus.kind.clone(),
            channel: focus.target.channel.as_str().to_owned(),
            chat_id: focus.target.chat_id.clone(),
            parts: focus.parts.max(0) as u32,
            delivered,
            created_at: focus.created_at,
            attempts: focus.attempts.max(0) as u32,
            next_attempt_at: None,
            last_error: focus.last_error.clone(),
            outcome: None,
            gave_up_at: None,
            preview: crate::text::truncate_chars(focus.text.trim(), PREVIEW_CHARS),
        };
        if let Some(head) = pieces.iter().find(|r| r.state == "pending") {
            out.waiting.push(ReplyDelivery { next_attempt_at: Some(head.next_at), ..entry(head) });
        }
        if let Some(failed) = pieces.iter().find(|r| r.state != "pending" && r.state != "sent") {
            out.undelivered.push(ReplyDelivery {
                outcome: Some(failed.state.clone()),
                gave_up_at: failed.done_at,
                ..entry(failed)
            });
        }
    }
    crate::order::sort_by_key(&mut out.undelivered, |r| std::cmp::Reverse(r.gave_up_at));
    Ok(out)
}
