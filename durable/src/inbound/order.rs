//! Where a message stands in the order its person sent it, read from the
//! platform's own ids: the session answers the messages of one stream by
//! that position, not by when their webhooks happened to arrive (Telegram
//! delivers over up to 40 parallel connections, so requests overlap and
//! overtake each other; see `session::sequence`).
//!
//! Positions compare only within one stream: ids of different platforms say
//! nothing about each other (the owner's main session hears several), nor do
//! Telegram's message ids of two chats. Between streams a session keeps the
//! order of arrival.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct SendOrder {
    /// Which positions this one compares with: `telegram:{chat}`,
    /// `discord`, `slack`, `whatsapp`, `email`.
    pub stream: String,
    /// Larger is sent later. Equal positions (a platform that counts whole
    /// seconds) keep their order of arrival.
    pub pos: i64,
    /// The delivery just before this one, when the platform numbers every
    /// delivery without a gap (Telegram's `update_id`): its dedupe key. Once
    /// the session has taken that one, nothing sent earlier can still come,
    /// so this message need not wait for stragglers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// What the Worker that received it saw of the deliveries numbered
    /// before it (Telegram's `update_id`s, `channels::telegram::arrivals`):
    /// none is unknown (a new isolate, a platform without such numbers).
    /// Queued as `"earlier": true` (arrived) or `false` (missing).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "earlier_as_bool")]
    pub earlier: Option<Earlier>,
}

/// [`Earlier`] as a JSON boolean (an enum's serde code is larger).
mod earlier_as_bool {
    use super::Earlier;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(e: &Option<Earlier>, s: S) -> Result<S::Ok, S::Error> {
        e.map(|e| e == Earlier::Arrived).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Earlier>, D::Error> {
        Ok(Option::<bool>::deserialize(d)?.map(|arrived| if arrived { Earlier::Arrived } else { Earlier::Missing }))
    }
}

/// What the receiving Worker knows of the deliveries before a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Earlier {
    /// Every one reached this Worker and its session (or is later than the
    /// hold, so it is merely the next turn when it comes): nothing sent
    /// before this one can still overtake it.
    Arrived,
    /// One of them is still on its way (one after it arrived, it did not
    /// yet), or still being queued by this Worker for the same chat: a
    /// straggler is likely.
    Missing,
}

impl SendOrder {
    pub fn new(stream: impl Into<String>, pos: i64) -> SendOrder {
        SendOrder { stream: stream.into(), pos, after: None, earlier: None }
    }

    /// The order of a Telegram message: its `message_id` within its chat
    /// (the same whichever bot of a group received it), and the update
    /// before it (`update_id` counts every update of the bot, one by one).
    pub fn telegram(chat_id: i64, message_id: i64, update_id: i64) -> SendOrder {
        SendOrder {
            stream: format!("telegram:{chat_id}"),
            pos: message_id,
            after: update_id.checked_sub(1).map(|u| format!("telegram:update:{u}")),
            earlier: None,
        }
    }

    /// A Discord snowflake (message or interaction id): the millisecond it
    /// was made in its top 42 bits, so ids of all channels compare.
    pub fn discord(snowflake: &str) -> Option<SendOrder> {
        let id: u64 = snowflake.parse().ok()?;
        Some(SendOrder::new("discord", i64::try_from(id).ok()?))
    }

    /// A Slack `ts` (`"1355517523.000005"`): seconds and microseconds, unique
    /// in its channel, made by Slack's clock as the message was posted.
    pub fn slack(ts: &str) -> Option<SendOrder> {
        let (secs, micros) = ts.split_once('.').unwrap_or((ts, "0"));
        if secs.is_empty() || micros.len() > 6 || !micros.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let secs: i64 = secs.parse().ok()?;
        // "5" after the point is 500,000 microseconds, not 5.
        let micros = micros.bytes().chain(std::iter::repeat(b'0')).take(6).fold(0, |n, d| n * 10 + i64::from(d - b'0'));
        Some(SendOrder::new("slack", secs.checked_mul(1_000_000)?.checked_add(micros)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telegram_orders_by_message_id_in_its_chat_and_names_the_update_before() {
        let o = SendOrder::telegram(-100123, 57, 900_001);
        assert_eq!(o.stream, "telegram:-100123");
        assert_eq!(o.pos, 57);
        assert_eq!(o.after.as_deref(), Some("telegram:update:900000"));
        assert_eq!(SendOrder::telegram(1, 1, 0).after.as_deref(), Some("telegram:update:-1"));
        assert_eq!(SendOrder::telegram(1, 1, i64::MIN).after, None);
    }

    #[test]
    fn what_the_worker_saw_before_a_message_is_queued_as_a_boolean_and_read_back() {
        let mut o = SendOrder::telegram(1, 2, 3);
        assert!(!serde_json::to_string(&o).unwrap().contains("earlier"), "nothing known: nothing written");
        for (e, json) in [(Earlier::Arrived, r#""earlier":true"#), (Earlier::Missing, r#""earlier":false"#)] {
            o.earlier = Some(e);
            let text = serde_json::to_string(&o).unwrap();
            assert!(text.contains(json), "{text}");
            assert_eq!(hearth_json::from_str::<SendOrder>(&text).unwrap(), o);
        }
        let old: SendOrder = hearth_json::from_str(r#"{"stream":"slack","pos":5}"#).unwrap();
        assert_eq!(old.earlier, None, "a message queued before this field");
    }

    #[test]
    fn discord_snowflakes_compare_as_numbers_in_time_order() {
        // From Discord's docs (Reference: snowflakes): 175928847299117063 is 2016-04-30 11:18:25.796 UTC.
        let earlier = SendOrder::discord("175928847299117063").unwrap();
        let later = SendOrder::discord("1250000000000000001").unwrap();
        assert!(earlier.pos < later.pos, "the longer id is later, which text order would get wrong");
        assert_eq!((earlier.pos >> 22) + 1_420_070_400_000, 1_462_015_105_796);
        for bad in ["", "abc", "-1", "18446744073709551615"] {
            assert_eq!(SendOrder::discord(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn slack_ts_is_microseconds() {
        assert_eq!(SendOrder::slack("1355517523.000005").unwrap().pos, 1_355_517_523_000_005);
        assert_eq!(SendOrder::slack("1355517523.5").unwrap().pos, 1_355_517_523_500_000);
        assert_eq!(SendOrder::slack("1355517523").unwrap().pos, 1_355_517_523_000_000);
        assert!(
            SendOrder::slack("1355517523.000005").unwrap().pos < SendOrder::slack("1355517523.000010").unwrap().pos
        );
        for bad in ["", ".5", "x.1", "1.1234567", "1.-5", "1.+5"] {
            assert_eq!(SendOrder::slack(bad), None, "{bad:?}");
        }
    }
}
