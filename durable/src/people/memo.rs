//! Each Worker isolate's copy of the roster, so a message from someone the
//! owner let in costs no call to the Agent object: only a sender neither
//! the settings nor this copy know is asked about at the door, and the
//! door's answer carries the whole roster with its generation, which
//! replaces an older copy. So an approval counts at once everywhere (the
//! newly approved are unknown here, hence asked about), and a revocation
//! is enforced by the person's Session object, which the Agent object
//! closes (a copy that still lists them only gets their messages refused
//! there). A copy older than [`MEMO_TTL_MS`] is asked again, bounding how
//! long an unlinked account still reaches the main session.

use crate::protocol::people::{Roster, Standing};
use crate::settings::Principal;
use std::collections::{HashMap, HashSet};

/// How long an isolate trusts its copy without hearing from the door.
pub const MEMO_TTL_MS: i64 = 10 * 60_000;

#[derive(Debug, Default)]
struct Copy {
    generation: i64,
    owners: HashSet<Principal>,
    guests: HashSet<Principal>,
    fetched_at: i64,
}

/// The copies of one isolate, per agent.
#[derive(Debug, Default)]
pub struct RosterMemo {
    agents: HashMap<String, Copy>,
}

impl RosterMemo {
    /// Where `who` (or, in a group, the group) stands by this copy: `None`
    /// when the copy does not know them (or is stale), so the door decides.
    pub fn standing(&self, agent: &str, who: &Principal, group: Option<&str>, now: i64) -> Option<Standing> {
        let copy = self.agents.get(agent).filter(|c| now - c.fetched_at < MEMO_TTL_MS)?;
        match group {
            Some(chat) => {
                let g = Principal::new(who.channel, chat);
                (copy.guests.contains(&g) || copy.owners.contains(who)).then_some(Standing::Guest)
            }
            None if copy.owners.contains(who) => Some(Standing::Owner),
            None if copy.guests.contains(who) => Some(Standing::Guest),
            None => None,
        }
    }

    /// The door's roster, unless this copy is newer.
    pub fn update(&mut self, agent: &str, roster: &Roster, now: i64) {
        if let Some(c) = self.agents.get_mut(agent) {
            if c.generation > roster.generation {
                return;
            }
        }
        self.agents.insert(
            agent.to_owned(),
            Copy {
                generation: roster.generation,
                owners: roster.owners.iter().cloned().collect(),
                guests: roster.guests.iter().cloned().collect(),
                fetched_at: now,
            },
        );
    }

    /// The generation this copy holds (`None`: none yet).
    pub fn generation(&self, agent: &str) -> Option<i64> {
        self.agents.get(agent).map(|c| c.generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;

    fn tg(id: &str) -> Principal {
        Principal::new(ChannelKind::Telegram, id)
    }

    #[test]
    fn known_people_are_answered_from_the_copy_until_it_is_stale_and_newer_rosters_win() {
        let mut m = RosterMemo::default();
        assert_eq!(m.standing("main", &tg("9"), None, 0), None, "nothing copied yet");
        let r1 = Roster { generation: 3, owners: vec![tg("1")], guests: vec![tg("9"), tg("-100")] };
        m.update("main", &r1, 1_000);
        assert_eq!(m.standing("main", &tg("9"), None, 2_000), Some(Standing::Guest));
        assert_eq!(m.standing("main", &tg("1"), None, 2_000), Some(Standing::Owner));
        assert_eq!(m.standing("main", &tg("5"), Some("-100"), 2_000), Some(Standing::Guest), "an allowed group");
        assert_eq!(m.standing("main", &tg("5"), None, 2_000), None, "a stranger is always asked about");
        assert_eq!(m.standing("work", &tg("9"), None, 2_000), None, "per agent");
        assert_eq!(m.standing("main", &tg("9"), None, 1_000 + MEMO_TTL_MS), None, "stale");
        // An older roster (a slow reply) does not undo a newer one.
        m.update("main", &Roster { generation: 2, ..Default::default() }, 3_000);
        assert_eq!(m.generation("main"), Some(3));
        m.update("main", &Roster { generation: 4, guests: vec![tg("5")], ..Default::default() }, 3_000);
        assert_eq!(m.standing("main", &tg("9"), None, 3_000), None, "revoked in the newer one");
        assert_eq!(m.standing("main", &tg("5"), None, 3_000), Some(Standing::Guest));
    }
}
