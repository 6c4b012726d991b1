//! The gateway state machine through connect, heartbeat, zombie, resume,
//! invalid sessions and fatal closes; messages from the real frames in
//! `tests/fixtures/real-world/discord/`.

use super::gateway::*;
use super::message::{to_inbound, Skipped};
use crate::inbound::{ChatKind, MessageContext};

const URL: &str = "wss://gateway.example/?v=10&encoding=json";
const TOKEN: &str = "bot-token";

fn fixture(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/discord");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn sent(actions: &[Action]) -> Vec<serde_json::Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(t) => Some(hearth_json::from_str(t).unwrap()),
            _ => None,
        })
        .collect()
}

/// A state that went through HELLO and READY at time 0.
fn ready() -> GatewayState {
    let mut g = GatewayState::default();
    assert_eq!(g.ensure(URL, false, 0), vec![Action::Connect(URL.into())]);
    let out = g.on_frame(&fixture("gateway-hello.json"), TOKEN, 0, 0.5);
    let frames = sent(&out);
    assert_eq!(frames[0]["op"], 2, "a new session identifies");
    assert_eq!(frames[0]["d"]["token"], TOKEN);
    assert_eq!(frames[0]["d"]["intents"], INTENTS);
    // The first heartbeat after interval × jitter.
    assert_eq!(g.next_heartbeat_at, Some(41250 / 2));
    assert!(g.on_frame(&fixture("gateway-ready.json"), TOKEN, 10, 0.5).is_empty());
    assert_eq!(g.phase, Phase::Ready);
    assert_eq!(g.bot_user_id.as_deref(), Some("1030118727418646629"));
    assert_eq!(g.session.as_ref().unwrap().session_id, "bf8eb88e4939e52df093261f3abbc638");
    assert_eq!(g.seq, Some(1));
    g
}

#[test]
fn intents_are_guild_messages_dms_and_message_content() {
    assert_eq!(INTENTS, 512 | 4096 | 32768);
}

#[test]
fn heartbeats_carry_the_sequence_and_a_missing_ack_reconnects_to_resume() {
    let mut g = ready();
    let at = g.next_heartbeat_at.unwrap();
    assert!(g.on_alarm(at - 1, URL, 0.5).is_empty(), "not due yet");
    let out = g.on_alarm(at, URL, 0.5);
    assert_eq!(sent(&out), vec![serde_json::json!({"op": 1, "d": 1})]);
    assert_eq!(g.next_heartbeat_at, Some(at + 41250));
    g.on_frame(r#"{"op":11}"#, TOKEN, at + 50, 0.5);
    assert!(!g.awaiting_ack);
    // Next heartbeat sent, never acknowledged: at the one after, a zombie.
    let at2 = g.next_heartbeat_at.unwrap();
    g.on_alarm(at2, URL, 0.5);
    let out = g.on_alarm(at2 + 41250, URL, 0.5);
    assert!(out.contains(&Action::Close(CLOSE_TO_RESUME)), "{out:?}");
    assert!(sent(&out).is_empty(), "no heartbeat on a zombie");
    assert_eq!(g.phase, Phase::Backoff);
    assert!(g.last_error.as_deref().unwrap().contains("ACK"));
    // At once (the connection had worked), to the resume URL with the query.
    let now = at2 + 41250;
    assert_eq!(g.next_wake(), Some(now));
    assert_eq!(
        g.on_alarm(now, URL, 0.5),
        vec![Action::Connect("wss://gateway-us-east1-c.discord.gg/?v=10&encoding=json".into())]
    );
    let out = g.on_frame(&fixture("gateway-hello.json"), TOKEN, now, 0.5);
    let frames = sent(&out);
    assert_eq!(frames[0]["op"], 6);
    assert_eq!(frames[0]["d"]["session_id"], "bf8eb88e4939e52df093261f3abbc638");
    assert_eq!(frames[0]["d"]["seq"], 1);
    g.on_frame(&fixture("gateway-resumed.json"), TOKEN, now + 5, 0.5);
    assert_eq!(g.phase, Phase::Ready);
    assert_eq!(g.resumes, 1);
}

#[test]
fn a_refused_resume_identifies_anew_after_one_to_five_seconds() {
    let mut g = ready();
    g.on_frame(&fixture("gateway-reconnect.json"), TOKEN, 100, 0.5);
    assert_eq!(g.reconnect_at, Some(100));
    g.on_alarm(100, URL, 0.5);
    let out = g.on_frame(&fixture("gateway-hello.json"), TOKEN, 110, 0.5);
    assert_eq!(sent(&out)[0]["op"], 6, "RECONNECT resumes");
    let out = g.on_frame(&fixture("gateway-invalid-session.json"), TOKEN, 120, 0.0);
    assert!(out.contains(&Action::Close(CLOSE_TO_RESUME)));
    assert!(g.session.is_none() && g.seq.is_none(), "d false: the session is gone");
    let wait = g.reconnect_at.unwrap() - 120;
    assert!((1000..=5000).contains(&wait), "{wait}");
    assert_eq!(g.on_alarm(120 + wait, URL, 0.5), vec![Action::Connect(URL.into())], "the default URL");
    let out = g.on_frame(&fixture("gateway-hello.json"), TOKEN, 6000, 0.5);
    assert_eq!(sent(&out)[0]["op"], 2, "identifies");
    assert_eq!(g.identifies, 2);
}

#[test]
fn invalid_session_true_resumes() {
    let mut g = ready();
    g.on_frame(r#"{"op":9,"d":true}"#, TOKEN, 100, 0.5);
    assert!(g.session.is_some() && g.seq.is_some());
}

#[test]
fn bad_token_and_missing_intents_stop_the_bot_without_a_reconnect_loop() {
    for (code, needle) in [(4004, "DISCORD_BOT_TOKEN"), (4014, "MESSAGE CONTENT")] {
        let mut g = GatewayState::default();
        g.ensure(URL, false, 0);
        g.on_frame(&fixture("gateway-hello.json"), TOKEN, 0, 0.5);
        let out = g.on_close(code, "Authentication failed.", 5, 0.5);
        assert_eq!(g.phase, Phase::Failed);
        assert!(g.fatal.as_deref().unwrap().contains(needle), "{:?}", g.fatal);
        assert!(out.iter().all(|a| matches!(a, Action::Log(_))));
        assert_eq!(g.next_wake(), None, "no alarm: nothing retries");
        assert!(g.on_alarm(1_000_000, URL, 0.5).is_empty());
        assert!(g.ensure(URL, false, 0).is_empty(), "the cron tick does not restart it");
        assert_eq!(g.ensure(URL, true, 0), vec![Action::Connect(URL.into())], "the owner may");
        assert!(g.fatal.is_none());
    }
}

#[test]
fn reconnects_back_off_with_jitter_and_reset_once_ready() {
    let mut g = GatewayState::default();
    g.ensure(URL, false, 0);
    let mut waits = vec![];
    for i in 0..9 {
        g.on_connect_failed("network down", i * 1_000_000, 1.0);
        waits.push(g.reconnect_at.unwrap() - i * 1_000_000);
        g.on_alarm(g.reconnect_at.unwrap(), URL, 1.0);
    }
    assert_eq!(waits, vec![0, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
    assert_eq!(backoff_ms(3, 0.0), 2000, "jitter scales by 0.5 to 1");
    // Closes with codes that end the session identify anew; others resume.
    let mut g = ready();
    g.on_close(4009, "", 0, 0.5);
    assert!(g.session.is_none());
    let mut g = ready();
    g.on_close(1006, "", 0, 0.5);
    assert!(g.session.is_some());
    assert_eq!(g.failures, 1);
    g.on_alarm(0, URL, 0.5);
    g.on_frame(&fixture("gateway-hello.json"), TOKEN, 0, 0.5);
    g.on_frame(&fixture("gateway-resumed.json"), TOKEN, 0, 0.5);
    assert_eq!(g.failures, 1, "not yet: the connection has not proved itself");
    g.on_frame(r#"{"op":11}"#, TOKEN, 10, 0.5);
    assert_eq!(g.failures, 0, "reset at the first ACK");
}

#[test]
fn a_connection_that_never_says_hello_or_ready_is_closed_and_retried_with_the_backoff() {
    let mut g = GatewayState::default();
    g.ensure(URL, false, 0);
    let limit = HANDSHAKE_TIMEOUT_MS as i64;
    assert_eq!(g.next_wake(), Some(limit), "a connecting bot has an alarm");
    assert!(g.on_alarm(limit - 1, URL, 1.0).is_empty());
    let out = g.on_alarm(limit, URL, 1.0);
    assert!(out.contains(&Action::Close(CLOSE_TO_RESUME)), "{out:?}");
    assert_eq!(g.phase, Phase::Backoff);
    assert!(g.last_error.as_deref().unwrap().contains("no HELLO"), "{:?}", g.last_error);
    // The retry opens a connection that says HELLO, but READY never comes.
    let at = g.reconnect_at.unwrap();
    assert_eq!(g.on_alarm(at, URL, 1.0), vec![Action::Connect(URL.into())]);
    g.on_frame(&fixture("gateway-hello.json"), TOKEN, at + 5, 1.0);
    assert_eq!(g.phase, Phase::Handshake);
    let out = g.on_alarm(at + limit, URL, 1.0);
    assert!(out.contains(&Action::Close(CLOSE_TO_RESUME)), "{out:?}");
    assert!(g.last_error.as_deref().unwrap().contains("no READY"));
    assert_eq!(g.reconnect_at, Some(at + limit + 1000), "the second failure waits longer");
    // READY in time clears the deadline.
    let g = ready();
    assert_eq!(g.handshake_deadline, None);
    assert_eq!(g.next_wake(), g.next_heartbeat_at);
}

#[test]
fn a_session_closed_right_after_ready_is_identified_again_with_the_backoff_not_in_a_loop() {
    let mut g = ready();
    let mut now = 100;
    let mut waits = vec![];
    for _ in 0..5 {
        g.on_close(4009, "Session timed out.", now, 1.0);
        assert!(g.session.is_none(), "identify anew");
        let at = g.reconnect_at.unwrap();
        waits.push(at - now);
        now = at;
        assert!(matches!(&g.on_alarm(now, URL, 1.0)[..], [Action::Connect(_)]));
        let out = g.on_frame(&fixture("gateway-hello.json"), TOKEN, now, 1.0);
        assert_eq!(sent(&out)[0]["op"], 2);
        g.on_frame(&fixture("gateway-ready.json"), TOKEN, now, 1.0);
        assert_eq!(g.phase, Phase::Ready);
    }
    assert_eq!(waits, vec![0, 1000, 2000, 4000, 8000], "each IDENTIFY waits longer");
}

#[test]
fn a_restarted_object_resumes_from_its_stored_state() {
    let g = ready();
    let stored = serde_json::to_string(&g).unwrap();
    let mut back: GatewayState = hearth_json::from_str(&stored).unwrap();
    // A new instance: nothing is connected whatever the stored phase said.
    back.phase = Phase::Idle;
    let out = back.on_alarm(0, URL, 0.5);
    assert!(matches!(&out[..], [Action::Connect(u)] if u.starts_with("wss://gateway-us-east1-c")));
}

#[test]
fn message_create_in_a_guild_is_addressed_by_a_mention_or_a_reply() {
    let mut g = ready();
    let out = g.on_frame(&fixture("gateway-message-create-guild-mention-reply.json"), TOKEN, 0, 0.5);
    let Some(Action::Message(m)) = out.first() else { panic!("{out:?}") };
    assert_eq!(g.seq, Some(131));
    let bot = "1016612301262041098";
    let inbound = to_inbound(m, Some(bot), 7).unwrap();
    assert_eq!(inbound.kind, ChatKind::Group);
    assert!(inbound.addressed);
    assert!(inbound.mentions.iter().any(|id| id == bot), "the mentions as Discord lists them");
    let said = super::message::without_mention(&inbound.text, bot);
    assert!(!said.contains(bot) && !said.is_empty(), "the mention is not part of what was said: {said}");
    assert_eq!(inbound.dedupe_key, format!("discord:message:{}", m.id));
    assert_eq!(inbound.reply_target.reply_to.as_deref(), Some(m.id.as_str()));
    assert_eq!(inbound.reply_target.chat_id, m.channel_id);
    assert!(matches!(&inbound.context[0], MessageContext::Reply { text, .. } if text.contains("deploy failed")));
    // The same message seen by another bot does not address it.
    assert!(!to_inbound(m, Some("42"), 7).unwrap().addressed);

    let out = g.on_frame(&fixture("gateway-message-create-guild.json"), TOKEN, 0, 0.5);
    let Some(Action::Message(m)) = out.first() else { panic!("{out:?}") };
    assert!(!to_inbound(m, Some(bot), 7).unwrap().addressed, "no mention, no reply");
}

#[test]
fn dms_are_direct_and_bots_are_never_answered() {
    let mut g = ready();
    let out = g.on_frame(&fixture("gateway-message-create-dm.json"), TOKEN, 0, 0.5);
    let Some(Action::Message(m)) = out.first() else { panic!("{out:?}") };
    let inbound = to_inbound(m, Some("1"), 0).unwrap();
    assert_eq!(inbound.kind, ChatKind::Direct);
    assert_eq!(inbound.sender_id, "560661188019488714");
    assert!(inbound.addressed);
    // Ordered by its snowflake, among every Discord message and command.
    let order = inbound.order.as_ref().unwrap();
    assert_eq!(
        (order.stream.as_str(), order.pos, order.after.as_deref()),
        ("discord", 1_028_030_000_000_000_001, None)
    );
    let mut own = (**m).clone();
    own.author.id = "1".into();
    assert_eq!(to_inbound(&own, Some("1"), 0), Err(Skipped::Bot));
    let mut bot = (**m).clone();
    bot.author.bot = true;
    assert_eq!(to_inbound(&bot, Some("1"), 0), Err(Skipped::Bot));
    let mut pin = (**m).clone();
    pin.kind = 6;
    assert_eq!(to_inbound(&pin, Some("1"), 0), Err(Skipped::System(6)));
}

#[test]
fn odd_frames_are_logged_not_fatal() {
    let mut g = ready();
    for bad in ["", "{", r#"{"op":0,"t":"MESSAGE_CREATE","s":5,"d":{"id":1}}"#, r#"{"op":10,"d":{}}"#] {
        let out = g.on_frame(bad, TOKEN, 0, 0.5);
        assert!(out.iter().all(|a| matches!(a, Action::Log(_))), "{bad}: {out:?}");
    }
    assert_eq!(g.phase, Phase::Ready);
    // Unknown dispatches are skipped.
    assert!(g.on_frame(r#"{"op":0,"t":"GUILD_CREATE","s":9,"d":{}}"#, TOKEN, 0, 0.5).is_empty());
    assert_eq!(g.seq, Some(9));
}

#[test]
fn bot_ids_come_from_tokens() {
    // base64("1016612301262041098") is MTAxNjYxMjMwMTI2MjA0MTA5OA.
    assert_eq!(super::bot_id_of_token("MTAxNjYxMjMwMTI2MjA0MTA5OA.GxYz.abc").as_deref(), Some("1016612301262041098"));
    assert_eq!(super::bot_id_of_token("not-a-token"), None);
    assert_eq!(super::bot_id_of_token(""), None);
}

/// A channel with a group of agents, each with its own bot and Gateway:
/// every bot gets the same `MESSAGE_CREATE`, and who answers depends only
/// on the message, not on which bot read it first.
#[test]
fn a_group_routes_on_the_mentions_whichever_bot_received_the_message() {
    use crate::routing::group::{human_deliveries, members};
    use crate::settings::groups;
    use std::collections::HashMap;
    const MOD: &str = "1111111111111111111";
    const PERF: &str = "2222222222222222222";
    let vars: HashMap<String, String> = [(
        "GROUPS".to_owned(),
        r#"{"discord:300": {"agents": ["mod", "perf", "sec"], "moderator": "mod"}}"#.to_owned(),
    )]
    .into_iter()
    .collect();
    let agents: Vec<String> = ["mod", "perf", "sec"].iter().map(|s| s.to_string()).collect();
    let g = groups::load(&vars, &agents).unwrap().remove(0);
    let bot_of = |a: &str| match a {
        "mod" => vec![MOD.to_owned()],
        "perf" => vec![PERF.to_owned()],
        _ => vec![],
    };
    let m = members(&g, &bot_of);
    let frame = |content: &str, mentions: &[&str]| -> super::message::GatewayMessage {
        let mentions: Vec<serde_json::Value> =
            mentions.iter().map(|id| serde_json::json!({"id": id, "username": "bot", "bot": true})).collect();
        hearth_json::from_value(serde_json::json!({
            "id": "900", "channel_id": "300", "guild_id": "200", "type": 0, "content": content,
            "author": {"id": "42", "username": "pat"}, "mentions": mentions,
        }))
        .unwrap()
    };
    let turns = |d: &[(crate::inbound::SessionKey, crate::inbound::Inbound)]| -> Vec<String> {
        d.iter().filter(|(_, i)| i.addressed).map(|(k, _)| k.agent().as_str().to_owned()).collect()
    };
    let to_perf = frame(&format!("<@{PERF}> is the p99 fine?"), &[PERF]);
    let mut seen = Vec::new();
    for receiver in [PERF, MOD] {
        let inbound = to_inbound(&to_perf, Some(receiver), 7).unwrap();
        let d = human_deliveries(&g, &m, &inbound);
        assert_eq!(turns(&d), vec!["perf"], "received by {receiver}");
        assert_eq!(d.len(), 3, "everyone reads it");
        assert!(d.iter().all(|(_, i)| i.text == "@perf is the p99 fine?"), "{d:?}");
        seen.push(d);
    }
    assert_eq!(seen[0], seen[1], "the same deliveries whichever bot read it");
    // Discord's `mentions` alone is enough (a `<@!id>` nickname mention).
    let nick = frame(&format!("<@!{PERF}> and you?"), &[PERF]);
    assert_eq!(turns(&human_deliveries(&g, &m, &to_inbound(&nick, Some(MOD), 7).unwrap())), vec!["perf"]);
    // No mention: the moderator, through whichever bot.
    let open = frame("how do we scale?", &[]);
    for receiver in [PERF, MOD] {
        assert_eq!(turns(&human_deliveries(&g, &m, &to_inbound(&open, Some(receiver), 7).unwrap())), vec!["mod"]);
    }
}
