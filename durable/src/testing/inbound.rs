//! The message most session tests start from.

/// A direct Telegram message from Ana in chat 1, as the session queues it:
/// the one message most session tests need (`order`: its send position).
pub fn telegram_dm(
    dedupe_key: impl Into<String>,
    text: &str,
    order: Option<crate::inbound::SendOrder>,
) -> crate::inbound::Inbound {
    use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget};
    Inbound {
        dedupe_key: dedupe_key.into(),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Direct,
        chat_id: "1".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: text.into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
        received_at: 0,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order,
    }
}
