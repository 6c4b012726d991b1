//! Calls to an Agent object about who may talk to the agent (see
//! `crate::people`): the door the Worker asks about a sender it does not
//! know, and the owner's commands and console actions.

use super::call::impl_call;
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::settings::Principal;
use serde::Serialize;

/// `POST` [`PeopleCall`] → [`DoorReply`] for a door call, else [`PeopleReply`].
pub const PEOPLE_PATH: &str = "/people/call";

/// Where a sender stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    /// The owner (on this channel): their direct messages are the main session.
    Owner,
    /// Someone (or a group) the owner let in: a session of their own, shared scope.
    Guest,
    /// Anyone else: no LLM call.
    Stranger,
}

/// The roster as a Worker isolate keeps it ([`crate::people::memo`]): who
/// was let in from the chat, beyond the settings, and its generation (it
/// grows with every change).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Roster {
    pub generation: i64,
    #[serde(default)]
    pub owners: Vec<Principal>,
    #[serde(default)]
    pub guests: Vec<Principal>,
}

/// A sender the settings and the Worker's copy of the roster do not know
/// (or a command only a stranger sends: `/claim`, `/start CODE`, `/link CODE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Door {
    pub agent: String,
    pub channel: ChannelKind,
    pub sender: String,
    #[serde(default)]
    pub sender_name: String,
    /// The chat the message came in (to tell them when they are let in).
    pub chat: String,
    /// A group chat's id when the message came in one (a group is let in as
    /// a whole); `None`: a direct chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The message, when it is `/claim …`, `/start …` or `/link …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `STRANGER_COOLDOWN_MINUTES` in ms: how often a stranger is told.
    pub cooldown_ms: i64,
    /// `OWNER_IDS` names someone: then nobody can claim the agent.
    #[serde(default)]
    pub configured_owner: bool,
}

/// What the door decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct DoorReply {
    pub standing: Standing,
    /// What to tell the chat now (a stranger's code, a claim's outcome).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    pub roster: Roster,
}

/// Who acts, and from where (for the audit log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Acting {
    /// `telegram:4242`, or `console`.
    pub by: String,
    /// `telegram chat 4242`, `the console`.
    pub place: String,
}

/// The owner's commands and the console's actions. Externally tagged
/// (`{"door": {...}}`): the reader is a fraction of an internally tagged
/// one's (no buffering of the body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PeopleCall {
    Door(Door),
    /// `/approve CODE`: the person (or group) with this pairing code is let in.
    Approve {
        agent: String,
        code: String,
        acting: Acting,
    },
    /// The console's Deny: the pending request is dropped.
    Deny {
        agent: String,
        code: String,
        acting: Acting,
    },
    /// `/revoke channel:id`.
    Revoke {
        agent: String,
        who: Principal,
        acting: Acting,
    },
    /// `/people`, and the console's People page.
    List {
        agent: String,
    },
    /// `/link`: a code to send from another platform.
    Link {
        agent: String,
        owner: Principal,
        acting: Acting,
    },
}

/// A note for someone other than the one who asked (the person let in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct Tell {
    pub target: ReplyTarget,
    pub text: String,
}

/// What a command did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct PeopleReply {
    /// It did what was asked (a wrong code is `false`).
    pub ok: bool,
    /// What to tell the one who asked.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tell: Option<Tell>,
    /// `/people`'s list (read by the console from the Agent object's JSON
    /// as it is: nothing in the Worker reads it back).
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub list: Option<PeopleList>,
}

/// Everyone the agent talks to, and who asks to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct PeopleList {
    pub owners: Vec<Person>,
    pub guests: Vec<Person>,
    pub pending: Vec<Pending>,
    /// The one-time claim code, while the agent has no owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// Approvals, revocations, claims and links, newest first.
    pub events: Vec<PeopleEvent>,
}

/// Someone (or a group) the agent talks to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Person {
    pub who: Principal,
    pub group: bool,
    pub name: String,
    /// `settings` (OWNER_IDS/ALLOW_FROM), `pairing`, `claim`, `link`.
    pub via: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_at: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub added_by: String,
}

/// A request waiting for the owner: a live pairing code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub code: String,
    pub who: Principal,
    pub group: bool,
    pub name: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct PeopleEvent {
    pub at: i64,
    /// `approved`, `denied`, `revoked`, `claimed`, `linked`.
    pub action: String,
    /// Who it is about (`telegram:626262`).
    pub subject: String,
    pub by: String,
    pub place: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The body of `POST /api/agents/{id}/people` (the console's buttons):
/// one of `{"approve": CODE}`, `{"deny": CODE}`, `{"revoke": "channel:id"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, hearth_json::Deserialize)]
pub struct PeopleAction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoke: Option<String>,
}

impl PeopleAction {
    /// The call it asks for, as the console (`by`) acting.
    pub fn call(self, agent: &str, by: &str) -> Result<PeopleCall, String> {
        let acting = Acting { by: by.to_owned(), place: "the console".into() };
        let agent = agent.to_owned();
        match (self.approve, self.deny, self.revoke) {
            (Some(code), None, None) => Ok(PeopleCall::Approve { agent, code, acting }),
            (None, Some(code), None) => Ok(PeopleCall::Deny { agent, code, acting }),
            (None, None, Some(who)) => match Principal::parse(&who) {
                Some(who) => Ok(PeopleCall::Revoke { agent, who, acting }),
                None => Err(format!("{who:?} is not channel:id (e.g. telegram:626262)")),
            },
            _ => Err("send one of {\"approve\": CODE}, {\"deny\": CODE}, {\"revoke\": \"channel:id\"}".into()),
        }
    }
}

impl PeopleCall {
    /// The agent it is for (the object's name).
    pub fn agent(&self) -> &str {
        match self {
            PeopleCall::Door(d) => &d.agent,
            PeopleCall::Approve { agent, .. }
            | PeopleCall::Deny { agent, .. }
            | PeopleCall::Revoke { agent, .. }
            | PeopleCall::List { agent }
            | PeopleCall::Link { agent, .. } => agent,
        }
    }
}
impl_call!(PeopleCall => Agent Post PEOPLE_PATH, PeopleReply, |r| r.agent().to_owned());

/// A door call ([`PeopleCall::Door`] on the wire), answered by a [`DoorReply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtDoor(pub Door);

impl Serialize for AtDoor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_variant("PeopleCall", 0, "door", &self.0)
    }
}
impl_call!(AtDoor => Agent Post PEOPLE_PATH, DoorReply, |r| r.0.agent.clone());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_actions_are_one_at_a_time() {
        let a = PeopleAction { approve: Some("K7M2X9QP".into()), ..Default::default() };
        assert!(matches!(a.call("main", "console"), Ok(PeopleCall::Approve { code, .. }) if code == "K7M2X9QP"));
        let r = PeopleAction { revoke: Some("telegram:626262".into()), ..Default::default() };
        assert!(matches!(r.call("main", "console"), Ok(PeopleCall::Revoke { .. })));
        assert!(PeopleAction { revoke: Some("pat".into()), ..Default::default() }.call("main", "console").is_err());
        assert!(PeopleAction::default().call("main", "console").is_err());
        let call = PeopleCall::Door(Door {
            agent: "main".into(),
            channel: ChannelKind::Telegram,
            sender: "9".into(),
            sender_name: "Pat".into(),
            chat: "9".into(),
            group: None,
            command: None,
            cooldown_ms: 0,
            configured_owner: true,
        });
        let json = serde_json::to_string(&call).unwrap();
        assert!(json.starts_with(r#"{"door":"#), "{json}");
        assert_eq!(hearth_json::from_str::<PeopleCall>(&json).unwrap(), call);
    }
}
