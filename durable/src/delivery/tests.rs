//! The outbox against the recording channel: what a user (and the owner)
//! would notice when a platform misbehaves.

use super::flush::Policy;
use super::outbox::Outbox;
use super::status::status;
use super::*;
use crate::inbound::ChannelKind;
use crate::ports::SendOutcome;
use crate::settings::delivery::DeliveryConfig;
use crate::testing::TestPlatform;
use futures::executor::block_on;

const DAY: i64 = 86_400_000;

fn settings(give_up_ms: i64, max_wait_ms: Option<u64>) -> DeliveryConfig {
    DeliveryConfig { give_up_ms, retry_base_ms: 1000, max_wait_ms }
}

fn tg(chat: &str) -> ReplyTarget {
    ReplyTarget { channel: ChannelKind::Telegram, chat_id: chat.into(), ..Default::default() }
}

fn discord(token: &str) -> ReplyTarget {
    ReplyTarget {
        channel: ChannelKind::Discord,
        chat_id: "600".into(),
        extra: Some(format!(r#"{{"token":"{token}","created":0}}"#)),
        ..Default::default()
    }
}

struct Fix {
    p: TestPlatform,
    settings: DeliveryConfig,
}

impl Fix {
    fn new(settings: DeliveryConfig) -> Self {
        Fix { p: TestPlatform::default(), settings }
    }
    fn queue(&self, id: &str, target: &ReplyTarget, text: &str) -> bool {
        enqueue(&self.p.sql, id, Kind::Reply, target, text, self.p.now.get()).unwrap()
    }
    fn flush(&self) -> FlushReport {
        let policy = Policy { settings: &self.settings, owners: vec![tg("1")], session: "agent:main:telegram:dm:7" };
        block_on(flush(&self.p, &policy)).unwrap()
    }
    fn at(&self, now: i64) -> &Self {
        self.p.now.set(now);
        self
    }
    fn next_due(&self) -> Option<i64> {
        next_due(&self.p.sql).unwrap()
    }
    fn attempts_to(&self, chat: &str) -> usize {
        self.p.channel.attempts.borrow().iter().filter(|(t, _)| t.chat_id == chat).count()
    }
}

fn retry(after_ms: Option<u64>) -> SendOutcome {
    SendOutcome::Retry { after_ms, why: "telegram 502: Bad Gateway".into() }
}

/// Three pieces at Telegram's limit.
fn long_reply() -> (String, Vec<String>) {
    let parts: Vec<String> = (1..=3).map(|i| format!("Part {i}: {}", "lorem ipsum ".repeat(300).trim())).collect();
    (parts.join("\n\n"), parts)
}

#[test]
fn pieces_go_in_order_each_once_and_a_failed_one_waits_for_its_retry() {
    let f = Fix::new(settings(DAY, None));
    let (text, parts) = long_reply();
    assert!(f.queue("r1", &tg("7"), &text));
    f.p.channel.fail_next(SendOutcome::Delivered);
    f.p.channel.fail_next(retry(None));
    let done = f.flush();
    assert_eq!((done.sent, done.deferred), (1, 1));
    assert_eq!(f.p.channel.texts(), parts[..1], "the third piece does not overtake the second");
    assert_eq!(f.next_due(), Some(1000), "retried after RETRY_BASE_MS");
    f.at(999).flush();
    assert_eq!(f.attempts_to("7"), 2, "nothing before it is due");
    f.at(1000).flush();
    assert_eq!(f.p.channel.texts(), parts);
    assert_eq!(f.next_due(), None);
    // Later alarms, or a fresh object over the same storage, send nothing again.
    f.at(5000).flush();
    let policy = Policy { settings: &f.settings, owners: vec![], session: "s" };
    block_on(flush(&f.p, &policy)).unwrap();
    assert_eq!(f.attempts_to("7"), 4);
    assert_eq!(f.p.channel.texts(), parts);
}

#[test]
fn a_wait_the_platform_asks_for_is_honoured_and_later_replies_to_the_chat_queue_behind() {
    let f = Fix::new(settings(DAY, None));
    f.p.channel.fail_next(retry(Some(120_000)));
    f.queue("r1", &tg("7"), "first");
    f.flush();
    f.at(10).queue("r2", &tg("7"), "second");
    f.queue("r3", &tg("8"), "elsewhere");
    f.flush();
    assert_eq!(f.p.channel.texts(), ["elsewhere"], "another chat goes on; this one keeps its order");
    assert_eq!(f.attempts_to("7"), 1);
    assert_eq!(f.next_due(), Some(120_000));
    f.at(119_999).flush();
    assert_eq!(f.attempts_to("7"), 1);
    f.at(120_000).flush();
    assert_eq!(f.p.channel.texts_to("7"), ["first", "second"]);
}

#[test]
fn waits_back_off_and_the_test_cap_shortens_them() {
    let f = Fix::new(settings(DAY, None));
    let policy = Policy { settings: &f.settings, owners: vec![], session: "s" };
    assert_eq!([1, 2, 3, 20].map(|a| policy.wait_ms(a, None)), [1000, 2000, 4000, MAX_BACKOFF_MS]);
    assert_eq!(policy.wait_ms(1, Some(120_000)), 120_000);
    assert_eq!(policy.wait_ms(1, Some(0)), 10, "never a tight loop");
    let capped = settings(DAY, Some(500));
    let policy = Policy { settings: &capped, owners: vec![], session: "s" };
    assert_eq!(policy.wait_ms(1, Some(120_000)), 500);
    assert_eq!(policy.wait_ms(20, None), 500);
}

#[test]
fn a_reply_still_failing_when_its_time_is_up_is_given_up_and_reported_to_the_owner() {
    let f = Fix::new(settings(10_000, None));
    f.p.channel.take_down("7", retry(None));
    f.queue("r1", &tg("7"), "the answer you waited for");
    f.flush();
    while let Some(due) = f.next_due() {
        assert!(due <= 10_000, "no attempt is planned past the give-up time");
        f.at(due).flush();
    }
    let report = f.p.channel.texts_to("1");
    assert_eq!(report.len(), 1, "{report:?}");
    for want in
        ["Telegram chat 7", "agent:main:telegram:dm:7", "still failing after 10 s", "502", "the answer you waited for"]
    {
        assert!(report[0].contains(want), "{want:?} in {}", report[0]);
    }
    let s = status(&f.p.sql).unwrap();
    assert!(s.waiting.is_empty());
    let gone = &s.undelivered[0];
    assert_eq!((gone.outcome.as_deref(), gone.chat_id.as_str(), gone.gave_up_at), (Some("expired"), "7", Some(10_000)));
    assert_eq!(gone.last_error.as_deref(), Some("telegram 502: Bad Gateway"));
    // Recovered later: a reply given up stays given up.
    let tried = f.attempts_to("7");
    f.p.channel.recover();
    f.at(20_000).flush();
    assert_eq!(f.attempts_to("7"), tried);
}

#[test]
fn an_unreachable_chat_is_tried_once_and_everything_queued_for_it_goes_in_one_report() {
    let f = Fix::new(settings(DAY, None));
    let blocked = SendOutcome::Unreachable("telegram 403: Forbidden: bot was blocked by the user".into());
    f.p.channel.take_down("7", blocked);
    f.queue("r1", &tg("7"), "one");
    f.queue("r2", &tg("7"), "two");
    let done = f.flush();
    assert_eq!(done.gave_up, 2);
    assert_eq!(f.attempts_to("7"), 1, "not retried");
    let report = f.p.channel.texts_to("1");
    assert_eq!(report.len(), 1);
    assert!(report[0].contains("bot was blocked by the user") && report[0].contains("1 more"), "{}", report[0]);
    let s = status(&f.p.sql).unwrap();
    assert_eq!(s.undelivered.len(), 2);
    assert!(s.undelivered.iter().all(|r| r.outcome.as_deref() == Some("unreachable")));
    assert_eq!(f.next_due(), None);
}

#[test]
fn refused_markup_goes_again_as_plain_text() {
    let f = Fix::new(settings(DAY, None));
    f.p.channel.fail_next(SendOutcome::Rejected("telegram 400: Bad Request: can't parse entities".into()));
    f.queue("r1", &tg("7"), "**bold** and <x>");
    f.flush();
    let attempts = f.p.channel.attempts.borrow().clone();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].1.formatted.as_deref(), Some("<b>bold</b> and &lt;x&gt;"));
    assert_eq!(attempts[1].1.formatted, None);
    assert_eq!(f.p.channel.texts(), ["**bold** and <x>"]);
}

#[test]
fn a_refused_piece_is_skipped_the_chat_is_told_and_the_owner_too() {
    let f = Fix::new(settings(DAY, None));
    let text = format!("{}\n\n{}", "a".repeat(1500), "b".repeat(1500));
    f.p.channel.fail_next(SendOutcome::Rejected("discord 400: Invalid Form Body".into()));
    f.queue("r1", &discord("tok"), &text);
    f.flush();
    let to_chat = f.p.channel.texts_to("600");
    assert_eq!(to_chat.len(), 2, "{to_chat:?}");
    assert_eq!(to_chat[0], "b".repeat(1500), "the rest of the reply still goes");
    assert!(to_chat[1].contains("could not deliver") && to_chat[1].contains("Invalid Form Body"));
    let report = f.p.channel.texts_to("1");
    assert!(report.len() == 1 && report[0].contains("Part 1 of 2") && report[0].contains("Discord refused it"));
}

#[test]
fn a_report_that_cannot_be_delivered_is_not_reported_again() {
    let f = Fix::new(settings(DAY, None));
    let gone = SendOutcome::Unreachable("telegram 403: Forbidden: bot was blocked by the user".into());
    f.p.channel.take_down("7", gone.clone());
    f.p.channel.take_down("1", gone);
    f.queue("r1", &tg("7"), "hello");
    f.flush();
    assert_eq!((f.attempts_to("7"), f.attempts_to("1")), (1, 1));
    let s = status(&f.p.sql).unwrap();
    assert_eq!(s.undelivered.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>().len(), 2);
    assert!(s.undelivered.iter().any(|r| r.kind == "report"));
    assert_eq!(f.next_due(), None);
}

#[test]
fn a_reply_id_is_queued_once_and_only_the_first_piece_for_a_message_opens() {
    let f = Fix::new(settings(DAY, None));
    assert!(f.queue("answer:1", &tg("7"), "hi"));
    assert!(!f.queue("answer:1", &tg("7"), "hi"), "a resumed turn queues its answer once");
    assert!(!f.queue("empty", &tg("7"), "   "), "nothing to send");
    let text = format!("{}\n\n{}", "a".repeat(1500), "b".repeat(1500));
    f.queue("d1", &discord("tok-a"), &text);
    f.queue("d2", &discord("tok-a"), "second reply to the same /ask");
    f.queue("d3", &discord("tok-b"), "another /ask");
    f.flush();
    let opens: Vec<(String, bool)> =
        f.p.channel
            .attempts
            .borrow()
            .iter()
            .filter(|(t, _)| t.channel == ChannelKind::Discord)
            .map(|(t, c)| (t.extra.clone().unwrap_or_default(), c.opens))
            .map(|(e, o)| (if e.contains("tok-a") { "a" } else { "b" }.to_owned(), o))
            .collect();
    let want: Vec<(String, bool)> =
        [("a", true), ("a", false), ("a", false), ("b", true)].iter().map(|(t, o)| (t.to_string(), *o)).collect();
    assert_eq!(opens, want);
    assert_eq!(f.p.channel.texts_to("7"), ["hi"]);
}

#[test]
fn a_retried_alarm_does_not_send_a_delivered_piece_again() {
    let f = Fix::new(settings(DAY, None));
    let (text, parts) = long_reply();
    f.queue("r1", &tg("7"), &text);
    f.p.channel.fail_next(SendOutcome::Delivered);
    f.p.channel.fail_next(retry(None));
    // The write that records the second piece's failure fails: the flush
    // stops with a storage error (the runtime retries the alarm).
    *f.p.sql.fail_writes_containing.borrow_mut() = Some("next_at = ?".into());
    let policy = Policy { settings: &f.settings, owners: vec![], session: "s" };
    assert!(block_on(flush(&f.p, &policy)).is_err());
    *f.p.sql.fail_writes_containing.borrow_mut() = None;
    f.flush();
    assert_eq!(f.p.channel.texts(), parts, "each piece once, in order");
    let first_piece_attempts = f.p.channel.attempts.borrow().iter().filter(|(_, c)| c.text == parts[0]).count();
    assert_eq!(first_piece_attempts, 1);
}

#[test]
fn delivered_pieces_are_forgotten_after_a_day_and_failures_after_a_week() {
    let f = Fix::new(settings(DAY, None));
    f.queue("r1", &tg("7"), "sent");
    f.p.channel.take_down("8", SendOutcome::Unreachable("gone".into()));
    f.queue("r2", &tg("8"), "lost");
    f.flush();
    let count = |f: &Fix| f.p.sql.exec("SELECT COUNT(*) FROM outbox", &[]).unwrap()[0][0].as_i64().unwrap();
    assert_eq!(count(&f), 3, "the reply, the failure and its report");
    f.at(DAY + 1).queue("r3", &tg("9"), "later");
    assert_eq!(count(&f), 2, "the delivered ones are gone, the failure is listed");
    assert_eq!(status(&f.p.sql).unwrap().undelivered.len(), 1);
    f.at(8 * DAY).queue("r4", &tg("9"), "much later");
    assert!(status(&f.p.sql).unwrap().undelivered.is_empty());
    assert!(Outbox::open(&f.p.sql).unwrap().has_reply("r4").unwrap());
}
