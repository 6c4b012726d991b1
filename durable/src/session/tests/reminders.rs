//! The `remind` tool and `/reminders` in a turn, with the Agent object's
//! side in process (`TestPlatform::reminders`): a reminder set by the model
//! is kept, fired by the alarm's code at its time into the chat where it
//! was set, once; bad input is a tool error that changes nothing.

use super::*;
use crate::protocol::reminders::ReminderCall;
use crate::protocol::session::{PostMode, PostReply, PostRequest};
use crate::reminders::fire;
use crate::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};

/// 2026-06-03 10:00 UTC (12:00 in Paris).
const NOW: i64 = 1_780_480_800_000;
const HOUR: i64 = 3_600_000;

fn tool_call(id: &str, input: serde_json::Value) -> serde_json::Value {
    json!({"content": [{"type": "tool_use", "id": id, "name": "remind", "input": input}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}})
}

/// A fixture whose clock says NOW, in Paris.
fn fixture() -> Fixture {
    let mut f = Fixture::new();
    f.p.now.set(NOW);
    f.cfg.timezone = "Europe/Paris".into();
    // The clock crosses 04:00: no daily reset in the middle of these tests.
    f.cfg.lifecycle.daily_at = None;
    f
}

/// The model calls `remind` with `input` for message `n`, then says `then`;
/// returns the tool's result (text, is_error).
fn remind(f: &Fixture, n: u32, input: serde_json::Value, then: &str) -> (serde_json::Value, bool) {
    remind_in(f, inbound(n, "please remind me"), input, then)
}

fn remind_in(f: &Fixture, msg: Inbound, input: serde_json::Value, then: &str) -> (serde_json::Value, bool) {
    let before = f.requests();
    f.p.http.push_json(200, tool_call("t1", input));
    f.p.http.push_json(200, anthropic_text(then));
    f.enqueue(&msg);
    f.drain();
    let results = f.p.http.request_json(before + 1)["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let result = &results[0];
    let text = result["content"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| result["content"][0]["text"].as_str().unwrap().to_owned());
    let value = hearth_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (value, result["is_error"].as_bool().unwrap_or(false))
}

fn group_message(n: u32, text: &str) -> Inbound {
    let mut m = inbound(n, text);
    m.kind = crate::inbound::ChatKind::Group;
    m.chat_id = "-100123".into();
    m.sender_name = "Pat".into();
    m.reply_target.chat_id = "-100123".into();
    m.reply_target.reply_to = Some("77".into());
    m
}

/// What the Agent object's alarm posts, recorded.
#[derive(Default)]
struct Posts(RefCell<Vec<PostRequest>>);

impl SessionQueue for Posts {
    async fn enqueue(
        &self,
        _: &SessionKey,
        _: &Inbound,
        _: EnqueueOptions,
    ) -> Result<EnqueueOutcome, crate::ports::StorageError> {
        Ok(EnqueueOutcome::Queued)
    }
    async fn usage(&self, _: &SessionKey) -> Result<SessionCounters, crate::ports::StorageError> {
        Ok(SessionCounters::default())
    }
    async fn post(&self, req: &PostRequest) -> Result<PostReply, crate::ports::StorageError> {
        self.0.borrow_mut().push(req.clone());
        Ok(PostReply { queued: true, target: req.target.clone() })
    }
}

/// The alarm at `at`: what it posted.
fn alarm(f: &Fixture, at: i64) -> Vec<PostRequest> {
    let posts = Posts::default();
    block_on(fire::fire(&f.p.reminders.sql, &posts, at, &|_, _| {})).unwrap();
    posts.0.into_inner()
}

/// A post delivered into the fixture's session, as `SessionHost::post` does.
fn deliver(f: &Fixture, req: &PostRequest) {
    use crate::session::post;
    post::check(req).unwrap();
    let store = SessionStore::new(&f.p.sql);
    let target = post::resolve(req, None, &req.session_key, Some(&f.cfg)).unwrap();
    let msg = post::inbound(req, &target, f.p.now.get());
    post::queue(&store, req, &msg, f.p.now.get()).unwrap();
    f.drain();
}

fn pending(f: &Fixture, scope: Option<&str>) -> Vec<String> {
    let call = ReminderCall::list("main", scope.map(|k| SessionKey::parse(k).unwrap()));
    let reply = block_on(crate::ports::Platform::reminders(&f.p, &call)).unwrap();
    reply.reminders.into_iter().map(|r| format!("{} {}", r.id, r.text)).collect()
}

#[test]
fn a_reminder_set_in_a_dm_fires_in_that_chat_once_at_its_time() {
    let f = fixture();
    let (result, error) = remind(&f, 1, json!({"in": "2h", "text": "Call the dentist"}), "I'll remind you at 14:00.");
    assert!(!error, "{result}");
    assert_eq!(result["id"], "r1");
    assert_eq!(result["fires"], "today 14:00 (2026-06-03 14:00 (Wednesday) CEST), in 2 hours");
    assert_eq!(f.p.reminders.wake_ats.borrow().as_slice(), [NOW + 2 * HOUR], "the alarm is set for it");
    assert_eq!(f.p.channel.texts_to("1"), ["I'll remind you at 14:00."]);

    // Not yet: nothing. At its time: one post, to the chat it was set in.
    assert!(alarm(&f, NOW + 2 * HOUR - 1).is_empty());
    f.p.now.set(NOW + 2 * HOUR);
    let posts = alarm(&f, NOW + 2 * HOUR);
    assert_eq!(posts.len(), 1);
    let post = &posts[0];
    assert_eq!(post.id, format!("reminder:r1:{}", NOW + 2 * HOUR));
    assert_eq!((post.session_key.render().as_str(), post.mode), ("agent:main:main", PostMode::Say));
    assert_eq!(post.target.as_ref().map(|t| t.chat_id.as_str()), Some("1"));
    assert_eq!(post.text, "⏰ Call the dentist");
    assert!(alarm(&f, NOW + 2 * HOUR + 5).is_empty(), "never twice");
    assert!(pending(&f, None).is_empty(), "a one-off is done once it fired");

    // The session says it without a model call.
    let calls = f.requests();
    deliver(&f, post);
    assert_eq!(f.requests(), calls);
    assert_eq!(f.p.channel.texts_to("1").last().map(String::as_str), Some("⏰ Call the dentist"));
}

#[test]
fn a_task_reminder_runs_as_a_turn_and_a_missed_one_says_when_it_was_due() {
    let f = fixture();
    let (result, error) = remind(
        &f,
        1,
        json!({"at": "2026-06-04 08:00", "text": "Check the weather; tell me if I need an umbrella", "run": "task"}),
        "Will do.",
    );
    assert!(!error, "{result}");
    assert_eq!(result["run"], "task");
    // Hearth was down until 09:30 (local): it fires once, late, saying so.
    let late = NOW + 21 * HOUR + 30 * 60_000;
    f.p.now.set(late);
    let posts = alarm(&f, late);
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].mode, PostMode::Turn);
    assert!(posts[0].text.contains("due 2026-06-04 08:00 (Thursday) CEST; it runs late"), "{}", posts[0].text);
    assert!(posts[0].text.ends_with("Check the weather; tell me if I need an umbrella"));
    f.p.http.push_json(200, anthropic_text("No umbrella today."));
    deliver(&f, &posts[0]);
    assert_eq!(f.p.channel.texts_to("1").last().map(String::as_str), Some("No umbrella today."));
    let prompt = f.p.http.request_json(f.requests() - 1)["messages"].to_string();
    assert!(prompt.contains("Check the weather"), "the task is the turn's prompt");
}

#[test]
fn recurring_reminders_fire_once_for_missed_times_and_stop_at_their_end() {
    let f = fixture();
    let (result, _) = remind(&f, 1, json!({"every": "1h", "text": "Stretch", "until": "2026-06-03 17:30"}), "ok");
    assert_eq!(result["repeats"], "every 1 hour");
    let first = NOW + HOUR;
    assert_eq!(alarm(&f, first).len(), 1);
    // 13:00 fired; down from 14:00 to 16:30 local: one fire, then on from 17:00.
    let back = first + 3 * HOUR + 30 * 60_000;
    let posts = alarm(&f, back);
    assert_eq!(posts.len(), 1, "missed times fire once, not each");
    assert!(posts[0].text.contains("(This was due 2026-06-03 14:00"), "{}", posts[0].text);
    let listed = block_on(crate::ports::Platform::reminders(&f.p, &ReminderCall::list("main", None)));
    assert_eq!(listed.unwrap().reminders[0].next_at, Some(first + 4 * HOUR));
    assert_eq!(alarm(&f, first + 4 * HOUR).len(), 1, "17:00");
    assert!(pending(&f, None).is_empty(), "17:30 is its end: 18:00 never comes");
    // A recurring task comes with when it comes again, for the cache rule.
    remind(&f, 2, json!({"cron": "*/30 * * * *", "text": "check the inbox", "run": "task"}), "ok");
    let posts = alarm(&f, NOW + 5 * HOUR);
    assert_eq!(posts[0].next_run_in_ms, Some(30 * 60_000));
}

#[test]
fn bad_input_is_a_tool_error_and_sets_nothing() {
    let f = fixture();
    let cases = [
        (json!({"at": "2026-06-03 09:00", "text": "x"}), "has passed"),
        (json!({"in": "2h", "text": "x", "timezone": "Mars/Olympus"}), "Mars/Olympus"),
        (json!({"cron": "61 * * * *", "text": "x"}), "61"),
        (json!({"in": "2h", "text": "x".repeat(4001)}), "at most 4000"),
        (json!({"in": "2000d", "text": "x"}), "5 years"),
        (json!({"in": "2h"}), "needs a `text`"),
        (json!({"at": "someday", "text": "x"}), "not a time"),
        (json!({"in": "2h", "text": "x", "run": "maybe"}), "send or task"),
        (json!({"action": "cancel", "id": "r99"}), "no pending reminder r99"),
    ];
    for (n, (input, want)) in cases.iter().enumerate() {
        let (result, error) = remind(&f, n as u32 + 1, input.clone(), "sorry");
        assert!(error, "{input}: {result}");
        assert!(result.to_string().contains(want), "{input}: {result}");
    }
    assert!(pending(&f, None).is_empty());
    assert!(f.p.reminders.wake_ats.borrow().is_empty(), "no alarm for what was refused");
    // Over REMINDERS_MAX.
    f.p.reminders.max.set(Some(1));
    assert!(!remind(&f, 20, json!({"in": "1h", "text": "one"}), "ok").1);
    let (result, error) = remind(&f, 21, json!({"in": "1h", "text": "two"}), "no");
    assert!(error && result.to_string().contains("REMINDERS_MAX=1"), "{result}");
    assert_eq!(pending(&f, None), ["r1 one"]);
}

#[test]
fn a_chat_sees_and_cancels_its_own_and_the_owners_main_session_all() {
    let mut f = fixture();
    remind(&f, 1, json!({"in": "1h", "text": "owner's"}), "ok");
    f.key = SessionKey::parse("agent:main:telegram:group:-100123").unwrap();
    let (set, _) = remind_in(&f, group_message(2, "@bot remind us"), json!({"in": "2h", "text": "picnic"}), "ok");
    assert_eq!(set["id"], "r2");
    let (listed, _) = remind_in(&f, group_message(3, "list"), json!({"action": "list"}), "ok");
    assert_eq!(listed["pending"], 1);
    assert_eq!(listed["reminders"][0]["text"], "picnic");
    let (refused, error) = remind_in(&f, group_message(4, "cancel"), json!({"action": "cancel", "id": "r1"}), "no");
    assert!(error && refused.to_string().contains("in this chat"), "a group cannot cancel the owner's: {refused}");
    // `/reminders` there: the group's only, no LLM call.
    let calls = f.requests();
    f.enqueue(&group_message(5, "/reminders@hearth_bot"));
    f.drain();
    assert_eq!(f.requests(), calls);
    let said = f.p.channel.texts_to("-100123").last().cloned().unwrap();
    assert!(said.contains("r2") && said.contains("picnic") && !said.contains("owner's"), "{said}");

    f.key = SessionKey::parse("agent:main:main").unwrap();
    let (all, _) = remind(&f, 6, json!({"action": "list"}), "ok");
    assert_eq!(all["pending"], 2);
    assert_eq!(all["reminders"][1]["chat"], "Telegram group -100123");
    let (cancelled, error) = remind(&f, 7, json!({"action": "cancel", "id": "r2"}), "done");
    assert!(!error, "{cancelled}");
    assert_eq!(pending(&f, None), ["r1 owner's"]);
    f.enqueue(&inbound(8, "/reminders cancel r1"));
    f.drain();
    assert_eq!(f.p.channel.texts_to("1").last().map(String::as_str), Some("🗑️ Cancelled r1."));
    assert!(pending(&f, None).is_empty());
    f.enqueue(&inbound(9, "/reminders"));
    f.drain();
    assert!(f.p.channel.texts_to("1").last().unwrap().starts_with("No reminders pending"));
}

#[test]
fn a_group_reminder_fires_in_the_group_quoting_the_message_that_set_it() {
    let mut f = fixture();
    f.key = SessionKey::parse("agent:main:telegram:group:-100123").unwrap();
    remind_in(&f, group_message(1, "@bot remind us"), json!({"in": "30m", "text": "Pizza is here"}), "ok");
    let posts = alarm(&f, NOW + 30 * 60_000);
    let target = posts[0].target.clone().unwrap();
    assert_eq!((target.chat_id.as_str(), target.reply_to.as_deref()), ("-100123", Some("77")));
    assert_eq!(posts[0].session_key.render(), "agent:main:telegram:group:-100123");
}

#[test]
fn my_stats_counts_the_chats_reminders_and_unreachable_reminders_change_nothing() {
    let f = fixture();
    remind(&f, 1, json!({"in": "3h", "text": "a"}), "ok");
    f.p.http.push_json(
        200,
        json!({"content": [{"type": "tool_use", "id": "s1", "name": "my_stats", "input": {}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    );
    f.p.http.push_json(200, anthropic_text("stats"));
    f.enqueue(&inbound(2, "stats?"));
    f.drain();
    let sent = f.p.http.request_json(f.requests() - 1)["messages"].to_string();
    assert!(sent.contains("reminders_pending\\\":1") && sent.contains("in 3 hours"), "{sent}");
    f.p.reminders.unavailable.set(true);
    let (result, error) = remind(&f, 3, json!({"in": "1h", "text": "b"}), "hmm");
    assert!(error && result.to_string().contains("unavailable"), "{result}");
}
