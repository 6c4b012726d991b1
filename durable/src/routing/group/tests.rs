//! Group routing decisions: mentions, moderator, broadcast, hand-overs and
//! the turn limit.

use super::*;
use crate::inbound::ChannelKind;
use crate::settings::groups;
use std::collections::HashMap;

fn group(json: &str) -> AgentGroup {
    let vars: HashMap<String, String> = [("GROUPS".to_owned(), json.to_owned())].into_iter().collect();
    let agents: Vec<String> = ["mod", "perf", "sec", "main"].iter().map(|s| s.to_string()).collect();
    groups::load(&vars, &agents).unwrap().remove(0)
}

fn team() -> (AgentGroup, Vec<Member>) {
    let g = group(r#"{"telegram:-100": {"agents": ["mod", "perf", "sec"], "moderator": "mod", "maxAgentTurns": 3}}"#);
    let m = members(&g, &|a| if a == "perf" { vec!["PerfBot".into()] } else { vec![] });
    (g, m)
}

fn turns(routes: &[(String, Delivery)]) -> Vec<&str> {
    routes.iter().filter(|(_, d)| *d == Delivery::Turn).map(|(a, _)| a.as_str()).collect()
}

#[test]
fn a_mention_goes_to_the_named_agent_and_the_rest_listen() {
    let (g, m) = team();
    let r = route_human(&g, &m, "@sec what's the risk of exposing /metrics?", &[]);
    assert_eq!(turns(&r), vec!["sec"]);
    assert_eq!(r.len(), 3, "everyone gets the message");
    assert_eq!(turns(&route_human(&g, &m, "@perfbot and @SEC, thoughts?", &[])), vec!["perf", "sec"]);
    assert_eq!(turns(&route_human(&g, &m, "<@perfbot> hi", &[])), vec!["perf"], "Discord's form");
    assert_eq!(turns(&route_human(&g, &m, "/reset@perfbot", &[])), vec!["perf"], "a command for one bot");
    // An e-mail address is no mention: the moderator decides.
    assert_eq!(turns(&route_human(&g, &m, "write to ops@sec.example", &[])), vec!["mod"]);
}

#[test]
fn without_a_mention_the_moderator_decides_else_everyone_answers() {
    let (g, m) = team();
    assert_eq!(turns(&route_human(&g, &m, "How do we scale this API?", &[])), vec!["mod"]);
    let b = group(r#"{"discord:55": {"agents": ["perf", "sec"]}}"#);
    assert_eq!(b.mode, groups::Mode::Broadcast);
    let bm = members(&b, &|_| vec![]);
    assert_eq!(turns(&route_human(&b, &bm, "hello all", &[])), vec!["perf", "sec"]);
    let q = group(r#"{"discord:55": {"agents": ["perf", "sec"], "mode": "mention"}}"#);
    assert!(turns(&route_human(&q, &bm, "hello all", &[])).is_empty());
}

#[test]
fn a_reply_that_mentions_an_agent_hands_over_and_bare_mentions_do_not_count() {
    let (g, m) = team();
    let start = GroupHop { origin: "o".into(), ..Default::default() };
    let (r, hop) = route_reply(&g, &m, "mod", "@perf", &start);
    assert_eq!(turns(&r), vec!["perf"]);
    assert_eq!((hop.turns, hop.hops), (0, 1), "only a mention: not a turn");
    assert!(r.iter().all(|(a, _)| a != "mod"), "not back to its author");
    let (r, hop) = route_reply(&g, &m, "perf", "Use Redis. @sec, anything on security?", &hop);
    assert_eq!(turns(&r), vec!["sec"]);
    assert_eq!((hop.turns, hop.hops), (1, 2));
    assert_eq!(hop.from_agent.as_deref(), Some("perf"));
    // A reply mentioning nobody: everyone listens.
    let (r, _) = route_reply(&g, &m, "sec", "Lock down the endpoint.", &hop);
    assert!(turns(&r).is_empty());
}

#[test]
fn the_turn_limit_stops_a_ping_pong() {
    let (g, m) = team();
    let mut hop = GroupHop { origin: "o".into(), ..Default::default() };
    let mut from = "perf".to_owned();
    let mut agent_turns = 1; // perf answered the human
    for _ in 0..20 {
        let to = if from == "perf" { "sec" } else { "perf" };
        let (r, next) = route_reply(&g, &m, &from, &format!("I disagree, @{to}"), &hop);
        hop = next;
        if turns(&r).is_empty() {
            break;
        }
        agent_turns += 1;
        from = to.to_owned();
    }
    assert_eq!(agent_turns, 3, "maxAgentTurns = 3");
    // Bare mentions alone cannot loop either: the hard bound stops them.
    let mut hop = GroupHop { origin: "o".into(), ..Default::default() };
    let mut relays = 0;
    loop {
        let (r, next) = route_reply(&g, &m, "mod", "@perf", &hop);
        hop = next;
        if turns(&r).is_empty() {
            break;
        }
        relays += 1;
        assert!(relays < 100);
    }
    assert_eq!(relays, max_hops(&g) - 1);
}

#[test]
fn only_mentions_means_nothing_else_was_said() {
    let (_, m) = team();
    assert!(only_mentions("@perf", &m));
    assert!(only_mentions("@perf, @sec.", &m));
    assert!(!only_mentions("@perf please look", &m));
    assert!(!only_mentions("@nobody", &m));
    assert!(!only_mentions("", &m));
}

#[test]
fn relays_travel_through_the_outbox_and_come_back_whole() {
    let like = Inbound {
        dedupe_key: "telegram:-100:msg:5".into(),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Group,
        chat_id: "-100".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: "hi".into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Telegram,
            chat_id: "-100".into(),
            reply_to: Some("5".into()),
            ..Default::default()
        },
        received_at: 1,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    };
    let from_key = SessionKey::parse("agent:mod:telegram:group:-100").unwrap();
    let to = session_of("perf", &from_key).unwrap();
    assert_eq!(to.render(), "agent:perf:telegram:group:-100");
    let hop =
        GroupHop { origin: like.dedupe_key.clone(), hops: 1, from_agent: Some("mod".into()), ..Default::default() };
    let target = relay_target(&to, "mod", &like, &hop, false);
    let (key, msg) = relay_message(&target, "@perf", 9).unwrap();
    assert_eq!(key, to);
    assert_eq!(msg.user_text(), "[mod (agent)]: @perf");
    assert_eq!(msg.dedupe_key, "telegram:-100:msg:5:reply:mod:1");
    assert!(!msg.group.as_ref().unwrap().listen);
    assert_eq!(msg.reply_target.reply_to, None, "the receiving bot does not reply to another bot's message id");
    assert!(relay_message(&ReplyTarget::default(), "x", 0).is_none());
}

#[test]
fn bad_groups_are_clear_errors() {
    let agents: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
    for (json, needle) in [
        ("{", "not the JSON"),
        (r#"{"x": {"agents": ["a", "b"]}}"#, "channel:chatId"),
        (r#"{"telegram:1": {"agents": ["a"]}}"#, "at least two"),
        (r#"{"telegram:1": {"agents": ["a", "z"]}}"#, "\"z\" is not one of AGENTS"),
        (r#"{"telegram:1": {"agents": ["a", "b"], "moderator": "z"}}"#, "not one of AGENTS"),
        (r#"{"telegram:1": {"agents": ["a", "b"], "mode": "moderator"}}"#, "needs a moderator"),
        (r#"{"telegram:1": {"agents": ["a", "b"], "modrator": "a"}}"#, "unknown field"),
    ] {
        let vars: HashMap<String, String> = [("GROUPS".to_owned(), json.to_owned())].into_iter().collect();
        let e = groups::load(&vars, &agents).unwrap_err().to_string();
        assert!(e.contains("GROUPS") && e.contains(needle), "{json}: {e}");
    }
}

/// Runs the whole exchange one person's message starts, every agent
/// answering `answer(agent)`: the LLM calls it costs, in order.
fn exchange(g: &AgentGroup, m: &[Member], human: &str, answer: &dyn Fn(&str) -> String) -> Vec<String> {
    let like = Inbound {
        dedupe_key: "telegram:update:1".into(),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Group,
        chat_id: g.chat.clone(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: human.into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget::default(),
        received_at: 1,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    };
    let mut queue: std::collections::VecDeque<(String, GroupHop)> = human_deliveries(g, m, &like)
        .into_iter()
        .filter(|(_, i)| i.addressed)
        .map(|(k, i)| (k.agent().as_str().to_owned(), i.group.unwrap()))
        .collect();
    let mut calls = Vec::new();
    while let Some((agent, hop)) = queue.pop_front() {
        calls.push(agent.clone());
        assert!(calls.len() < 1000, "runaway exchange");
        let (routes, next) = route_reply(g, m, &agent, &answer(&agent), &hop);
        for (to, d) in routes {
            if d == Delivery::Turn {
                queue.push_back((to, next.clone()));
            }
        }
    }
    calls
}

#[test]
fn the_turn_limit_bounds_the_whole_exchange_not_each_branch() {
    let (g, m) = team();
    let bound = max_hops(&g) as usize;
    assert_eq!(bound, 2 * 3 + 2);
    // A model that always hands over to both others, with nothing else to say.
    let both = |me: &str| {
        let others: Vec<String> =
            ["mod", "perf", "sec"].iter().filter(|a| **a != me).map(|a| format!("@{a}")).collect();
        others.join(" ")
    };
    let calls = exchange(&g, &m, "@perf caching or security first?", &both);
    assert_eq!(calls.len(), bound, "{calls:?}");
    assert_eq!(calls[..3], ["perf", "mod", "perf"], "the turn goes to the first mentioned only");
    // With content, maxAgentTurns replies in all.
    let talk = |me: &str| format!("My view as {me}. {}", both(me));
    assert_eq!(exchange(&g, &m, "@perf caching or security first?", &talk).len(), 3);
    // A message for two agents: both answer, and the budget is shared.
    assert_eq!(exchange(&g, &m, "@perf @sec thoughts?", &talk).len(), 3);
    assert!(exchange(&g, &m, "@perf @sec thoughts?", &both).len() <= bound);
    // Broadcast: every agent answers once, then one chain within the same bound.
    let b = group(r#"{"discord:55": {"agents": ["mod", "perf", "sec"], "maxAgentTurns": 2}}"#);
    let bm = members(&b, &|_| vec![]);
    let calls = exchange(&b, &bm, "hello all", &both);
    assert!(calls.len() <= max_hops(&b) as usize, "{calls:?}");
    assert_eq!(exchange(&b, &bm, "hello all", &talk).len(), 3, "three addressed, each answers once");
}

#[test]
fn a_copy_that_could_not_be_queued_is_an_error_naming_its_session() {
    let (g, m) = team();
    let like = Inbound {
        dedupe_key: "telegram:update:1".into(),
        channel: ChannelKind::Telegram,
        kind: ChatKind::Group,
        chat_id: "-100".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: "How do we scale?".into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget::default(),
        received_at: 1,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    };
    let tried = std::cell::RefCell::new(Vec::new());
    let enqueue = |key: SessionKey, _msg: Inbound| {
        tried.borrow_mut().push(key.agent().as_str().to_owned());
        let fails = key.agent().as_str() == "sec";
        async move {
            if fails {
                Err("Session object unreachable")
            } else {
                Ok(true)
            }
        }
    };
    let out = futures::executor::block_on(deliver(human_deliveries(&g, &m, &like), enqueue));
    let err = out.unwrap_err();
    assert!(err.contains("agent:sec:telegram:group:-100") && err.contains("unreachable"), "{err}");
    assert_eq!(*tried.borrow(), vec!["mod", "perf", "sec"], "every agent's copy was tried");
    let ok = |_: SessionKey, _: Inbound| async { Ok::<bool, String>(false) };
    assert_eq!(futures::executor::block_on(deliver(human_deliveries(&g, &m, &like), ok)), Ok(()), "repeats are fine");
}

#[test]
fn a_reply_that_names_an_agent_by_its_bot_hands_over_too() {
    let g = group(
        r#"{"discord:300": {"agents": ["mod", "perf", "sec"], "moderator": "mod", "handles": {"sec": ["security"]}}}"#,
    );
    let m = members(&g, &|a| if a == "perf" { vec!["2222222222222222222".into()] } else { vec![] });
    let like = Inbound {
        dedupe_key: "discord:message:9".into(),
        channel: ChannelKind::Discord,
        kind: ChatKind::Group,
        chat_id: "300".into(),
        sender_id: "1".into(),
        sender_name: "Ana".into(),
        text: "how do we scale?".into(),
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget::default(),
        received_at: 1,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        order: None,
    };
    let d = human_deliveries(&g, &m, &like);
    let (_, to_mod) = d.iter().find(|(k, _)| k.agent().as_str() == "mod").unwrap();
    let hop = to_mod.group.clone().unwrap();
    assert_eq!(hop.bot_handles.get("perf"), Some(&vec!["2222222222222222222".to_owned()]));
    assert!(!hop.bot_handles.contains_key("sec"), "the group's own handles are in GROUPS already");
    // The moderator's session knows only GROUPS; the hop brings the bot's id.
    let seen = reply_members(&g, &hop);
    let (r, _) = route_reply(&g, &seen, "mod", "<@2222222222222222222> over to you", &hop);
    assert_eq!(turns(&r), vec!["perf"]);
    let (r, _) = route_reply(&g, &seen, "mod", "@security your call", &hop);
    assert_eq!(turns(&r), vec!["sec"]);
}
