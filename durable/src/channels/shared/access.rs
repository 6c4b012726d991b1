//! Who a message is let in for, before it reaches a session: the settings
//! (`OWNER_IDS`, `ALLOW_FROM`) first, then this isolate's copy of the
//! roster (the people the owner let in from the chat), and only for a
//! sender neither knows, the agent's door (its Agent object), which also
//! gives a stranger their pairing code and handles `/claim` and `/link`.
//! Shared by every channel, so all of them say the same thing (the note
//! itself is sent by `crate::channels::webhook::tell`).
//!
//! Cost: someone in the settings or in the copy costs nothing beyond the
//! settings' lookup and a hash set's (no object call); a stranger costs one
//! call to the Agent object per message (which tells them at most once per
//! `STRANGER_COOLDOWN_MINUTES`), so an approval counts at once everywhere.

use crate::inbound::{ChatKind, Inbound, SessionKey};
use crate::people::commands::door_command;
use crate::people::memo::RosterMemo;
use crate::ports::{Front, LogLevel};
use crate::protocol::people::{Door, Standing};
use crate::routing::{route, Route};
use crate::settings::{AgentConfig, Principal};
use std::cell::RefCell;

thread_local! {
    /// This isolate's copy of each agent's roster.
    static ROSTERS: RefCell<RosterMemo> = RefCell::new(RosterMemo::default());
}

/// Where `msg` goes, and what to tell its chat (a stranger's code, a
/// group's, a claim's outcome): the settings, then the roster. `free`: the
/// note costs nothing to send (Discord's ephemeral answer), so a stranger
/// is told every time rather than once per cooldown. A door command
/// (`/claim`, `/start CODE`, `/link CODE`) never starts a turn: it is
/// answered at the door (`Route::Stranger` with its answer).
pub async fn admit<F: Front>(front: &F, cfg: &AgentConfig, msg: &Inbound, free: bool) -> (Route, Option<String>) {
    let settled = route(cfg, msg);
    let command = msg.kind == ChatKind::Direct
        && !matches!(settled, Route::Turn(SessionKey::Main(_)))
        && door_command(&msg.text).is_some();
    if !command && !matches!(settled, Route::Stranger | Route::GroupNotAllowed) {
        return (settled, None);
    }
    let agent = cfg.agent.as_str();
    let who = Principal::new(msg.channel, msg.sender_id.clone());
    let group = (msg.kind == ChatKind::Group).then_some(msg.chat_id.as_str());
    let now = front.now_ms();
    if !command {
        if let Some(standing) = ROSTERS.with(|m| m.borrow().standing(agent, &who, group, now)) {
            return (route_for(standing, cfg, msg), None);
        }
        if group.is_some() && !msg.addressed {
            // A group nobody let in, where nobody spoke to the agent: silence, no call.
            return (Route::GroupNotAllowed, None);
        }
    }
    let door = Door {
        agent: agent.to_owned(),
        channel: msg.channel,
        sender: msg.sender_id.clone(),
        sender_name: msg.sender_name.clone(),
        group: group.map(str::to_owned),
        command: command.then(|| msg.text.trim().to_owned()),
        cooldown_ms: if free { 0 } else { cfg.stranger_cooldown_ms },
        configured_owner: !cfg.owners.is_empty(),
        chat: msg.chat_id.clone(),
    };
    match front.door(&door).await {
        Ok(reply) => {
            ROSTERS.with(|m| m.borrow_mut().update(agent, &reply.roster, now));
            let route = if command { Route::Stranger } else { route_for(reply.standing, cfg, msg) };
            (route, reply.notice)
        }
        Err(e) => {
            front.log(LogLevel::Warn, &format!("the door of agent {agent} is unavailable ({e}): {who} not let in"));
            (settled, None)
        }
    }
}

/// The route of a sender the roster knows.
fn route_for(standing: Standing, cfg: &AgentConfig, msg: &Inbound) -> Route {
    let agent = cfg.agent.clone();
    match (standing, msg.kind) {
        (Standing::Owner, ChatKind::Direct) => Route::Turn(SessionKey::Main(agent)),
        (Standing::Guest, ChatKind::Direct) => {
            Route::Turn(SessionKey::Direct { agent, channel: msg.channel, peer: msg.sender_id.clone() })
        }
        (Standing::Stranger, ChatKind::Direct) => Route::Stranger,
        (Standing::Stranger, ChatKind::Group) => Route::GroupNotAllowed,
        (_, ChatKind::Group) if !msg.addressed => Route::NotAddressed,
        (_, ChatKind::Group) => Route::Turn(SessionKey::Group {
            agent,
            channel: msg.channel,
            chat: msg.chat_id.clone(),
            topic: msg.thread_id.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;
    use crate::protocol::people::{DoorReply, Roster};
    use crate::testing::FakeFront;
    use futures::executor::block_on;
    use std::collections::HashMap;

    fn cfg(owner: &str) -> std::rc::Rc<AgentConfig> {
        let vars: HashMap<String, String> = [("OWNER_IDS", owner), ("ALLOW_FROM", "telegram:2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        std::rc::Rc::new(AgentConfig::load(&vars, "main").unwrap())
    }

    fn msg(kind: ChatKind, chat: &str, sender: &str, text: &str, addressed: bool) -> Inbound {
        let mut m = crate::testing::telegram_dm("k", text, None);
        m.kind = kind;
        m.chat_id = chat.into();
        m.sender_id = sender.into();
        m.addressed = addressed;
        m
    }

    fn tg(id: &str) -> Principal {
        Principal::new(ChannelKind::Telegram, id)
    }

    #[test]
    fn the_settings_cost_no_call_the_copy_none_either_and_strangers_ask_the_door() {
        let f = FakeFront::default();
        let c = cfg("telegram:1");
        let agent = format!("memo-{}", line!());
        let mut c2 = (*c).clone();
        c2.agent = r2_layout::AgentId::parse(&agent).unwrap();
        let owner = block_on(admit(&f, &c2, &msg(ChatKind::Direct, "1", "1", "hi", false), false));
        assert!(matches!(owner.0, Route::Turn(SessionKey::Main(_))));
        let allowed = block_on(admit(&f, &c2, &msg(ChatKind::Direct, "2", "2", "hi", false), false));
        assert!(matches!(allowed.0, Route::Turn(SessionKey::Direct { .. })));
        assert!(f.doors.borrow().is_empty(), "the settings cost no call");

        // A stranger: the door answers with a code, and the roster (which lets in someone else).
        f.door_replies.borrow_mut().push(DoorReply {
            standing: Standing::Stranger,
            notice: Some("code K7M2X9QP".into()),
            roster: Roster { generation: 1, owners: vec![], guests: vec![tg("9")] },
        });
        let (r, notice) = block_on(admit(&f, &c2, &msg(ChatKind::Direct, "5", "5", "hi", false), false));
        assert_eq!((r, notice.as_deref()), (Route::Stranger, Some("code K7M2X9QP")));
        assert_eq!(f.doors.borrow().len(), 1);
        // Someone the copy knows: no call.
        let (r, _) = block_on(admit(&f, &c2, &msg(ChatKind::Direct, "9", "9", "hi", false), false));
        assert!(matches!(r, Route::Turn(SessionKey::Direct { ref peer, .. }) if peer == "9"), "{r:?}");
        assert_eq!(f.doors.borrow().len(), 1, "a guest the copy knows costs no call");
        // A group nobody let in, not addressed: silence, no call.
        let (r, _) = block_on(admit(&f, &c2, &msg(ChatKind::Group, "-100", "5", "hi", false), false));
        assert_eq!(r, Route::GroupNotAllowed);
        assert_eq!(f.doors.borrow().len(), 1);
    }

    #[test]
    fn door_commands_are_answered_at_the_door_and_never_start_a_turn() {
        let f = FakeFront::default();
        let mut c = (*cfg("")).clone();
        c.agent = r2_layout::AgentId::parse(&format!("claim-{}", line!())).unwrap();
        f.door_replies.borrow_mut().push(DoorReply {
            standing: Standing::Owner,
            notice: Some("You are my owner now".into()),
            roster: Roster { generation: 1, owners: vec![tg("5")], guests: vec![] },
        });
        let (r, notice) = block_on(admit(&f, &c, &msg(ChatKind::Direct, "5", "5", "/start K7M2X9QP", false), false));
        assert_eq!((r, notice.as_deref()), (Route::Stranger, Some("You are my owner now")));
        assert_eq!(f.doors.borrow()[0].command.as_deref(), Some("/start K7M2X9QP"));
        assert!(!f.doors.borrow()[0].configured_owner);
        // The claimed owner's next message is the main session, from the copy.
        let (r, _) = block_on(admit(&f, &c, &msg(ChatKind::Direct, "5", "5", "hello", false), false));
        assert!(matches!(r, Route::Turn(SessionKey::Main(_))), "{r:?}");
        assert_eq!(f.doors.borrow().len(), 1);
    }

    #[test]
    fn an_unreachable_door_lets_nobody_new_in_and_says_nothing() {
        let f = FakeFront::default();
        let mut c = (*cfg("telegram:1")).clone();
        c.agent = r2_layout::AgentId::parse(&format!("down-{}", line!())).unwrap();
        *f.door_down.borrow_mut() = true;
        let (r, notice) = block_on(admit(&f, &c, &msg(ChatKind::Direct, "5", "5", "hi", false), false));
        assert_eq!((r, notice), (Route::Stranger, None));
    }
}
