//! Several agents in one group chat (seed 004 §12): who answers a message,
//! and how one agent's reply reaches the others.
//!
//! Each agent keeps its own Session per group (its persona, its memory
//! scope, its bot). Every message of the thread reaches every agent's
//! session, marked with its author, so each reads the whole thread; only
//! some of them take a turn, the rest only listen ([`GroupHop::listen`]):
//! - a human message that @mentions agents goes to them; with no mention the
//!   moderator answers (`moderator` mode), or every agent (`broadcast`), or
//!   nobody (`mention`);
//! - an agent's reply is relayed to the others as `[perf (agent)]: …`; the
//!   first agent it @mentions takes the next turn (one: the exchange is a
//!   chain, never a tree);
//! - `maxAgentTurns` bounds the agent replies after one human message, all
//!   of them together: the agents the person addressed answer first, and
//!   hand-overs go on while the replies with content stay under the limit;
//!   a reply that is only @mentions ("@perf") does not count, but every
//!   reply counts toward a hard bound of twice that plus two, so one person's
//!   message costs at most `2 × maxAgentTurns + 2` LLM calls (or one per
//!   agent it addresses, when it addresses more).
//!
//! Bots do not see each other's messages on Telegram, and Hearth ignores
//! bots' messages on Discord: the relay is how agents hear each other.

use crate::inbound::{ChannelKind, ChatKind, GroupHop, Inbound, ReplyTarget, SessionKey};
use crate::settings::groups::{AgentGroup, Mode};
use r2_layout::AgentId;
use std::collections::BTreeMap;

/// The outbox channel of relays: a "chat" per target session.
pub const RELAY_CHANNEL: ChannelKind = ChannelKind::Relay;

/// An agent and the names it is @mentioned by (lower case, no `@`; a
/// Discord mention `<@id>` is given as its id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub agent: String,
    pub handles: Vec<String>,
}

/// Whether an agent takes a turn or only listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Turn,
    Listen,
}

/// The members of `group` with their handles: the agent id, the configured
/// handles, and what the caller knows besides (`extra`: bot usernames, a
/// Discord bot's user id).
pub fn members(group: &AgentGroup, extra: &dyn Fn(&str) -> Vec<String>) -> Vec<Member> {
    group
        .agents
        .iter()
        .map(|a| {
            let mut handles = vec![a.to_lowercase()];
            handles.extend(group.handles.get(a).cloned().unwrap_or_default());
            handles.extend(extra(a).into_iter().map(|h| h.to_lowercase()));
            handles.dedup();
            Member { agent: a.clone(), handles }
        })
        .collect()
}

fn handle_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// The @mentions in `text`: `@name` (not inside a word, so an e-mail
/// address is none; `/cmd@bot` is one) and Discord's `<@id>` / `<@!id>`,
/// lower-cased, in order.
fn mentions_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (pos, c) in text.char_indices() {
        if c != '@' {
            continue;
        }
        let before = text[..pos].chars().next_back();
        if before.is_some_and(handle_char) {
            // Inside a word: only a command's `/cmd@bot` counts.
            let start = text[..pos].rfind(|ch: char| !handle_char(ch));
            if !start.is_some_and(|k| text[k..].starts_with('/')) {
                continue;
            }
        }
        let rest = &text[pos + 1..];
        let rest = rest.strip_prefix('!').unwrap_or(rest);
        let end = rest.find(|ch: char| !handle_char(ch)).unwrap_or(rest.len());
        if end > 0 {
            out.push(rest[..end].to_lowercase());
        }
    }
    out
}

/// The agents `text` @mentions, each once, in order of first mention.
pub fn mentioned(text: &str, members: &[Member]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in mentions_in(text) {
        if let Some(member) = members.iter().find(|x| x.handles.contains(&m)) {
            if !out.contains(&member.agent) {
                out.push(member.agent.clone());
            }
        }
    }
    out
}

/// Whether `text` says nothing but @mentions of agents (a hand-over, not
/// an answer).
pub fn only_mentions(text: &str, members: &[Member]) -> bool {
    let mut saw = false;
    for word in text.split_whitespace() {
        let w = word.trim_matches(|c: char| c.is_ascii_punctuation() && !matches!(c, '@' | '<' | '>' | '_' | '-'));
        if w.is_empty() {
            continue;
        }
        if (w.starts_with('@') || w.starts_with("<@")) && !mentioned(w, members).is_empty() {
            saw = true;
        } else {
            return false;
        }
    }
    saw
}

/// The agent with the handle `handle` (lower case), if any.
fn member_by_handle<'a>(members: &'a [Member], handle: &str) -> Option<&'a Member> {
    members.iter().find(|m| m.handles.iter().any(|h| h == handle))
}

/// Who takes a turn on a human message: the agents its text @mentions and
/// the ones among `mention_ids` (the user ids the platform says it
/// mentions, e.g. Discord's `mentions`: a bot's user id is its agent's
/// handle); with none, the group's mode decides.
pub fn route_human(
    group: &AgentGroup,
    members: &[Member],
    text: &str,
    mention_ids: &[String],
) -> Vec<(String, Delivery)> {
    let mut named = mentioned(text, members);
    for id in mention_ids {
        if let Some(m) = member_by_handle(members, &id.to_lowercase()) {
            if !named.contains(&m.agent) {
                named.push(m.agent.clone());
            }
        }
    }
    group
        .agents
        .iter()
        .map(|a| {
            let turn = if !named.is_empty() {
                named.contains(a)
            } else {
                match group.mode {
                    Mode::Moderator => group.moderator.as_deref() == Some(a.as_str()),
                    Mode::Broadcast => true,
                    Mode::Mention => false,
                }
            };
            (a.clone(), if turn { Delivery::Turn } else { Delivery::Listen })
        })
        .collect()
}

/// `text` with Discord's mentions of the group's bots (`<@id>`, `<@!id>`)
/// written as `@agent`: every agent reads the same words, whichever bot
/// received the message, and sees who it was for.
pub fn spell_mentions(text: &str, members: &[Member]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("<@") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let body = tail.strip_prefix('!').unwrap_or(tail);
        let end = body.find('>');
        let agent = end.and_then(|e| member_by_handle(members, &body[..e].to_lowercase()).map(|m| (e, m)));
        match agent {
            Some((e, m)) => {
                out.push('@');
                out.push_str(&m.agent);
                rest = &body[e + 1..];
            }
            None => {
                out.push_str("<@");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out.trim().to_owned()
}

/// A human message as each agent's session of the group gets it: the same
/// words and the same dedupe key (the chat's message id) whichever bot
/// received it, a turn for the agents it is for, and the rest listen.
pub fn human_deliveries(group: &AgentGroup, members: &[Member], inbound: &Inbound) -> Vec<(SessionKey, Inbound)> {
    // One key per message of the chat, the same whichever bot received it.
    let origin = match (&inbound.reply_target.reply_to, inbound.channel) {
        (Some(id), ChannelKind::Telegram) => format!("telegram:{}:msg:{id}", inbound.chat_id),
        _ => inbound.dedupe_key.clone(),
    };
    let text = spell_mentions(&inbound.text, members);
    let routes = route_human(group, members, &inbound.text, &inbound.mentions);
    // What the Worker learned besides the group's own handles travels on.
    let bot_handles: BTreeMap<String, Vec<String>> = members
        .iter()
        .map(|m| {
            let own = group.handles.get(&m.agent);
            let extra: Vec<String> = m
                .handles
                .iter()
                .filter(|h| **h != m.agent.to_lowercase() && !own.is_some_and(|o| o.contains(h)))
                .cloned()
                .collect();
            (m.agent.clone(), extra)
        })
        .filter(|(_, extra)| !extra.is_empty())
        .collect();
    let hops = human_hops(group, &routes, &origin, &bot_handles);
    routes
        .into_iter()
        .zip(hops)
        .filter_map(|((agent, delivery), hop)| {
            let key = SessionKey::Group {
                agent: AgentId::parse(&agent).ok()?,
                channel: inbound.channel,
                chat: inbound.chat_id.clone(),
                topic: inbound.thread_id.clone(),
            };
            let mut msg = inbound.clone();
            msg.text = text.clone();
            msg.dedupe_key = origin.clone();
            msg.addressed = delivery == Delivery::Turn;
            msg.group = Some(hop);
            if delivery == Delivery::Listen {
                // Only words join another agent's thread; its media stay with whoever answers.
                msg.media.clear();
            }
            Some((key, msg))
        })
        .collect()
}

/// Queues each agent's copy with `enqueue` (all at once). `Err` names every
/// session that did not get its copy, so the caller can have the platform
/// deliver the message again (the sessions dedupe, so the ones that have it
/// are not asked twice): one failed enqueue must not lose the message.
pub async fn deliver<F, Fut, E>(deliveries: Vec<(SessionKey, Inbound)>, enqueue: F) -> Result<(), String>
where
    F: Fn(SessionKey, Inbound) -> Fut,
    Fut: std::future::Future<Output = Result<bool, E>>,
    E: std::fmt::Display,
{
    let calls = deliveries.into_iter().map(|(key, msg)| {
        let name = key.render();
        let call = enqueue(key, msg);
        async move { call.await.err().map(|e| format!("{name}: {e}")) }
    });
    let failed: Vec<String> = futures::future::join_all(calls).await.into_iter().flatten().collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("not queued for {}", failed.join("; ")))
    }
}

/// The hop each agent's copy of a human message starts from. The budget
/// of one person's message is shared: the agents it is for answer first
/// (each reply counts), then only the first of them may hand over, so the
/// exchange goes on as one chain, never as a tree. The others start with the
/// budget spent: their @mentions are relayed, but start no turn.
fn human_hops(
    group: &AgentGroup,
    routes: &[(String, Delivery)],
    origin: &str,
    bot_handles: &BTreeMap<String, Vec<String>>,
) -> Vec<GroupHop> {
    let answering = routes.iter().filter(|(_, d)| *d == Delivery::Turn).count() as u32;
    let spent = answering.saturating_sub(1);
    let mut first = true;
    routes
        .iter()
        .map(|(_, delivery)| {
            let listen = *delivery == Delivery::Listen;
            let (turns, hops) = if listen {
                (0, 0)
            } else if std::mem::take(&mut first) {
                (spent, spent)
            } else {
                (group.max_agent_turns, max_hops(group))
            };
            GroupHop {
                listen,
                origin: origin.to_owned(),
                turns,
                hops,
                from_agent: None,
                bot_handles: bot_handles.clone(),
            }
        })
        .collect()
}

/// The members as a session of the group sees them when relaying a reply
/// at `hop`: the group's handles and the bots' ones the exchange carries.
pub fn reply_members(group: &AgentGroup, hop: &GroupHop) -> Vec<Member> {
    members(group, &|a| hop.bot_handles.get(a).cloned().unwrap_or_default())
}

/// The hard bound on agent replies (LLM calls) after one human message:
/// every reply, bare @mentions included, is one hop of a single chain.
pub fn max_hops(group: &AgentGroup) -> u32 {
    group.max_agent_turns.saturating_mul(2).saturating_add(2)
}

/// Who gets agent `from`'s reply `text` to a message at `hop`, and the hop
/// the relays carry: the first agent it @mentions takes the turn while the
/// turn limit allows, everyone else listens. One turn per reply keeps the
/// exchange a single chain, so the limits bound the whole exchange after a
/// person's message (a reply naming two agents cannot start two branches,
/// each counting on its own).
pub fn route_reply(
    group: &AgentGroup,
    members: &[Member],
    from: &str,
    text: &str,
    hop: &GroupHop,
) -> (Vec<(String, Delivery)>, GroupHop) {
    let counts = !only_mentions(text, members);
    let next = GroupHop {
        listen: false,
        origin: hop.origin.clone(),
        turns: hop.turns + counts as u32,
        hops: hop.hops + 1,
        from_agent: Some(from.to_owned()),
        bot_handles: hop.bot_handles.clone(),
    };
    let may_turn = next.turns < group.max_agent_turns && next.hops < max_hops(group);
    let next_agent = mentioned(text, members).into_iter().find(|a| a != from);
    let out = group
        .agents
        .iter()
        .filter(|a| a.as_str() != from)
        .map(|a| {
            let turn = may_turn && next_agent.as_deref() == Some(a.as_str());
            (a.clone(), if turn { Delivery::Turn } else { Delivery::Listen })
        })
        .collect();
    (out, next)
}

/// The session of `agent` in the group chat of `like` (same channel, chat, topic).
pub fn session_of(agent: &str, like: &SessionKey) -> Option<SessionKey> {
    let SessionKey::Group { channel, chat, topic, .. } = like else { return None };
    Some(SessionKey::Group {
        agent: AgentId::parse(agent).ok()?,
        channel: *channel,
        chat: chat.clone(),
        topic: topic.clone(),
    })
}

/// How an agent's reply is written in the others' histories.
pub fn agent_name(agent: &str) -> String {
    format!("{agent} (agent)")
}

/// The relay of `from`'s reply to session `to`, as an outbox target: the
/// chat is the session key, the extra the message without its text (the
/// piece's text fills it in).
pub fn relay_target(to: &SessionKey, from: &str, like: &Inbound, hop: &GroupHop, listen: bool) -> ReplyTarget {
    let msg = Inbound {
        dedupe_key: format!("{}:reply:{from}:{}", hop.origin, hop.hops),
        channel: like.channel,
        kind: ChatKind::Group,
        chat_id: like.chat_id.clone(),
        sender_id: format!("agent:{from}"),
        sender_name: agent_name(from),
        text: String::new(),
        addressed: !listen,
        thread_id: like.thread_id.clone(),
        // The receiving agent's own bot answers, in the same chat and topic.
        reply_target: ReplyTarget {
            channel: like.reply_target.channel,
            chat_id: like.reply_target.chat_id.clone(),
            thread_id: like.reply_target.thread_id.clone(),
            ..Default::default()
        },
        received_at: like.received_at,
        media: vec![],
        context: vec![],
        group: Some(GroupHop { listen, ..hop.clone() }),
        mentions: vec![],
        batch: None,
        order: None,
    };
    ReplyTarget {
        channel: RELAY_CHANNEL,
        chat_id: to.render(),
        extra: serde_json::to_string(&msg).ok(),
        ..Default::default()
    }
}

/// A relay piece back into the session and the message it is for.
pub fn relay_message(target: &ReplyTarget, text: &str, now_ms: i64) -> Option<(SessionKey, Inbound)> {
    let key = SessionKey::parse(&target.chat_id)?;
    let mut msg: Inbound = hearth_json::from_slice(target.extra.as_deref()?.as_bytes()).ok()?;
    msg.text = text.to_owned();
    msg.received_at = now_ms;
    Some((key, msg))
}

/// What a group session's system prompt adds: who else is in the group and
/// how to hand over. Stable for the group (the prompt cache holds).
pub fn roster(group: &AgentGroup, me: &str) -> String {
    let others: Vec<String> =
        group
            .agents
            .iter()
            .filter(|a| a.as_str() != me)
            .map(|a| {
                if group.moderator.as_deref() == Some(a.as_str()) {
                    format!("@{a} (moderator)")
                } else {
                    format!("@{a}")
                }
            })
            .collect();
    let role = if group.moderator.as_deref() == Some(me) {
        " You are the moderator: when a question is for a specialist, hand it over by @mentioning them, \
         or answer yourself."
    } else {
        ""
    };
    format!(
        "## Group of agents\nYou are @{me}, one of several AI agents in this group chat, with {}. People's \
         messages appear as `[Name]: …`, other agents' as `[name (agent)]: …`. To hand the turn to another agent, \
         @mention it; answer only what is yours to answer. At most {} agent replies follow one person's message.{role}",
        others.join(", "),
        group.max_agent_turns
    )
}

#[cfg(test)]
mod tests;
