//! The roster in the Agent object (see `crate::people`): the door the
//! Worker asks about senders it does not know, the owner's commands, and
//! the audit. Each change is written to the `people_events` table and to
//! the workspace history's log (as changes of [`PEOPLE_LOG_PATH`], with
//! who, when and from where), and the Session objects of whoever is let in
//! or out are opened or closed, so a copy of the roster an isolate still
//! holds cannot bring a revoked person back.

use super::host::{AgentHost, AgentRuntime, Refusal};
use super::registry::Registry;
use crate::inbound::{ChannelKind, ReplyTarget, SessionKey};
use crate::people::commands::{door_command, DoorCommand};
use crate::people::roster::{OwnerOutcome, RosterStore, LINK_TTL_MS};
use crate::people::texts;
use crate::ports::LogLevel;
use crate::protocol::agent::StrangerNoticeRequest;
use crate::protocol::people::{
    Acting, Door, DoorReply, PeopleCall, PeopleEvent, PeopleList, PeopleReply, Person, Standing, Tell,
};
use crate::scheduled::SessionQueue;
use crate::settings::{AgentConfig, Principal};
use crate::workspace::history::{self, Actor};
use r2_layout::AgentId;
use std::rc::Rc;

/// The audit's entries in the workspace history: changes of this path (no
/// file of the workspace; its versions are the roster as text).
pub const PEOPLE_LOG_PATH: &str = "PEOPLE.md";

/// What a people call answers.
pub enum PeopleAnswer {
    Door(DoorReply),
    Reply(Box<PeopleReply>),
}

fn reply(ok: bool, text: impl Into<String>) -> PeopleReply {
    PeopleReply { ok, text: text.into(), ..Default::default() }
}

impl<R: AgentRuntime + 'static> AgentHost<R> {
    fn people_config(&self, agent: &str) -> Result<Rc<AgentConfig>, Refusal> {
        self.runtime().agent_config(agent).map_err(|e| match e {
            crate::settings::ConfigError::UnknownAgent(..) => Refusal { status: 404, message: e.to_string() },
            _ => Refusal { status: 500, message: e.to_string() },
        })
    }

    fn random_hex(&self) -> String {
        self.runtime().new_uuid()
    }

    /// A people call (`POST /people/call`).
    pub async fn people(&self, call: &PeopleCall) -> Result<PeopleAnswer, Refusal> {
        let agent = match call {
            PeopleCall::Door(d) => &d.agent,
            PeopleCall::Approve { agent, .. }
            | PeopleCall::Deny { agent, .. }
            | PeopleCall::Revoke { agent, .. }
            | PeopleCall::List { agent }
            | PeopleCall::Link { agent, .. } => agent,
        };
        let cfg = self.people_config(agent)?;
        let now = self.runtime().now_ms();
        Ok(match call {
            PeopleCall::Door(d) => PeopleAnswer::Door(self.door(&cfg, d, now).await?),
            PeopleCall::Approve { code, acting, .. } => {
                PeopleAnswer::Reply(Box::new(self.approve(&cfg, code, acting, now).await?))
            }
            PeopleCall::Deny { code, acting, .. } => {
                PeopleAnswer::Reply(Box::new(self.deny(&cfg, code, acting, now).await?))
            }
            PeopleCall::Revoke { who, acting, .. } => {
                PeopleAnswer::Reply(Box::new(self.revoke(&cfg, who, acting, now).await?))
            }
            PeopleCall::List { .. } => {
                let list = self.people_list(&cfg, now)?;
                PeopleAnswer::Reply(Box::new(PeopleReply {
                    ok: true,
                    text: texts::list(&list, &cfg.timezone),
                    list: Some(list),
                    tell: None,
                }))
            }
            PeopleCall::Link { owner, acting, .. } => {
                let roster = RosterStore::new(&**self.runtime().sql())?;
                let code = roster.link_code(owner, now, &|| self.random_hex())?;
                self.runtime()
                    .log(LogLevel::Info, &format!("people: {} asked for a link code in {}", acting.by, acting.place));
                PeopleAnswer::Reply(Box::new(reply(true, texts::link_code(&code, LINK_TTL_MS / 60_000))))
            }
        })
    }

    /// Someone the settings and the Worker's copy do not know.
    async fn door(&self, cfg: &AgentConfig, d: &Door, now: i64) -> Result<DoorReply, Refusal> {
        let sql = &**self.runtime().sql();
        let roster = RosterStore::new(sql)?;
        let who = Principal::new(d.channel, d.sender.clone());
        let configured = !cfg.owners.is_empty();
        if let Some(cmd) = d.command.as_deref().and_then(door_command) {
            let acting = Acting { by: who.to_string(), place: format!("{} chat {}", d.channel, d.chat) };
            let before = self.roster_text(cfg, &roster)?;
            let notice = match cmd {
                DoorCommand::Claim(code) if code.trim().is_empty() && !configured && !roster.has_owner()? => {
                    texts::CLAIM_USAGE.to_owned()
                }
                DoorCommand::Claim(code) => match roster.claim(&code, &who, &d.sender_name, configured, now)? {
                    OwnerOutcome::Done => {
                        self.audit(cfg, &roster, before, "claimed", &who, &acting, "", now).await?;
                        texts::CLAIMED.to_owned()
                    }
                    OwnerOutcome::HasOwner => texts::HAS_OWNER.to_owned(),
                    OwnerOutcome::Problem(p) => texts::claim_problem(&p),
                },
                DoorCommand::Link(code) => match roster.link(&code, &who, &d.sender_name, now)? {
                    Ok(asked) => {
                        let note = format!("the same person as {asked}");
                        self.audit(cfg, &roster, before, "linked", &who, &acting, &note, now).await?;
                        texts::linked(&asked)
                    }
                    Err(p) => texts::link_problem(&p),
                },
            };
            let view = roster.view(configured)?;
            let standing = roster.standing(&view, &who, None);
            return Ok(DoorReply { standing, notice: Some(notice), roster: view });
        }
        let view = roster.view(configured)?;
        let standing = roster.standing(&view, &who, d.group.as_deref());
        if standing != Standing::Stranger {
            return Ok(DoorReply { standing, notice: None, roster: view });
        }
        let subject = match &d.group {
            Some(chat) => Principal::new(d.channel, chat.clone()),
            None => who.clone(),
        };
        let req = StrangerNoticeRequest { channel: d.channel, sender: subject.id.clone(), cooldown_ms: d.cooldown_ms };
        if !super::strangers::claim(sql, &req, now)?.notify {
            return Ok(DoorReply { standing, notice: None, roster: view });
        }
        let has_owner = configured || !view.owners.is_empty();
        let notice = match (&d.group, has_owner) {
            // Nobody could approve a group yet: it hears nothing.
            (Some(_), false) => None,
            (None, false) => Some(texts::stranger(d.channel, &d.sender, false, None)),
            (group, true) => {
                let name = match group {
                    Some(_) => format!("asked by {}", d.sender_name),
                    None => d.sender_name.clone(),
                };
                let code =
                    roster.pairing_code(&subject, group.is_some(), &name, &d.chat, now, &|| self.random_hex())?;
                self.runtime().log(
                    LogLevel::Info,
                    &format!(
                        "people: {subject} asked to talk to agent {} (code valid until {})",
                        cfg.agent, code.expires_at
                    ),
                );
                Some(match group {
                    Some(_) => texts::group(&code),
                    None => texts::stranger(d.channel, &d.sender, true, Some(&code)),
                })
            }
        };
        Ok(DoorReply { standing, notice, roster: view })
    }

    async fn approve(&self, cfg: &AgentConfig, code: &str, acting: &Acting, now: i64) -> Result<PeopleReply, Refusal> {
        if code.trim().is_empty() {
            return Ok(reply(false, texts::APPROVE_USAGE));
        }
        let roster = RosterStore::new(&**self.runtime().sql())?;
        let before = self.roster_text(cfg, &roster)?;
        let admitted = match roster.approve(code, &acting.by, now)? {
            Ok(a) => a,
            Err(p) => return Ok(reply(false, texts::approve_problem(&p))),
        };
        let note = if admitted.name.is_empty() { String::new() } else { admitted.name.clone() };
        self.audit(cfg, &roster, before, "approved", &admitted.who, acting, &note, now).await?;
        self.admission(&cfg.agent, &admitted.who, admitted.group, true).await;
        let target =
            ReplyTarget { channel: admitted.who.channel, chat_id: admitted.chat.clone(), ..Default::default() };
        Ok(PeopleReply {
            ok: true,
            text: texts::approved(&admitted.who, &admitted.name, admitted.group),
            tell: (!admitted.chat.is_empty()).then(|| Tell { target, text: texts::welcome(admitted.group) }),
            list: None,
        })
    }

    async fn deny(&self, cfg: &AgentConfig, code: &str, acting: &Acting, now: i64) -> Result<PeopleReply, Refusal> {
        let roster = RosterStore::new(&**self.runtime().sql())?;
        let before = self.roster_text(cfg, &roster)?;
        match roster.deny(code, now)? {
            Ok(p) => {
                self.audit(cfg, &roster, before, "denied", &p.who, acting, &p.name, now).await?;
                Ok(reply(true, texts::denied(&p)))
            }
            Err(p) => Ok(reply(false, texts::approve_problem(&p))),
        }
    }

    async fn revoke(
        &self,
        cfg: &AgentConfig,
        who: &Principal,
        acting: &Acting,
        now: i64,
    ) -> Result<PeopleReply, Refusal> {
        let roster = RosterStore::new(&**self.runtime().sql())?;
        let before = self.roster_text(cfg, &roster)?;
        match roster.revoke(who)? {
            Some(p) => {
                self.audit(cfg, &roster, before, "revoked", who, acting, &p.name, now).await?;
                self.admission(&cfg.agent, who, p.group, false).await;
                Ok(reply(true, texts::revoked(&p)))
            }
            None => {
                let setting = if cfg.is_owner(who.channel, &who.id) {
                    Some("OWNER_IDS")
                } else if cfg.is_allowed(who.channel, &who.id) {
                    Some("ALLOW_FROM")
                } else {
                    None
                };
                Ok(reply(false, texts::not_revocable(who, setting)))
            }
        }
    }

    /// Everyone, the settings' people first, then the roster's; the live
    /// requests; the claim code while there is no owner; the audit lines.
    pub fn people_list(&self, cfg: &AgentConfig, now: i64) -> Result<PeopleList, Refusal> {
        let roster = RosterStore::new(&**self.runtime().sql())?;
        let configured = !cfg.owners.is_empty();
        let settings = |p: &Principal| Person {
            who: p.clone(),
            group: p.id.starts_with('-') || (p.channel == ChannelKind::Slack && p.id.starts_with('C')),
            name: String::new(),
            via: "settings".into(),
            added_at: None,
            added_by: String::new(),
        };
        let mut list = PeopleList {
            owners: cfg.owners.iter().map(settings).collect(),
            guests: cfg.allow_from.iter().map(settings).collect(),
            pending: roster.pending(now)?,
            claim: None,
            events: roster.events(50)?,
        };
        for (p, role) in roster.people()? {
            match role.as_str() {
                "owner" if configured && p.via == "claim" => {}
                "owner" => list.owners.push(p),
                _ => list.guests.push(p),
            }
        }
        if list.owners.is_empty() {
            list.claim = Some(roster.claim_code(now, &|| self.random_hex())?);
        }
        Ok(list)
    }

    /// The roster as the history keeps it: one line per person.
    fn roster_text<S: crate::ports::Sql + ?Sized>(
        &self,
        cfg: &AgentConfig,
        roster: &RosterStore<'_, S>,
    ) -> Result<String, Refusal> {
        let mut out = String::from(
            "# People\n\nWho may talk to the agent, kept by Hearth (change it with /approve, /revoke, /link or the \
console's People page; OWNER_IDS and ALLOW_FROM add to it).\n\n",
        );
        for p in &cfg.owners {
            out.push_str(&format!("- owner {p} (OWNER_IDS)\n"));
        }
        for p in &cfg.allow_from {
            out.push_str(&format!("- allowed {p} (ALLOW_FROM)\n"));
        }
        for (p, role) in roster.people()? {
            let role = if role == "owner" {
                "owner"
            } else if p.group {
                "allowed group"
            } else {
                "allowed"
            };
            let name = if p.name.is_empty() { String::new() } else { format!(" {}", p.name) };
            out.push_str(&format!("- {role} {}{name} ({}, by {})\n", p.who, p.via, p.added_by));
        }
        Ok(out)
    }

    /// Records a change: the audit table, then the workspace history's log
    /// (best effort: the change stands if R2 fails; it is logged).
    #[allow(clippy::too_many_arguments)]
    async fn audit<S: crate::ports::Sql + ?Sized>(
        &self,
        cfg: &AgentConfig,
        roster: &RosterStore<'_, S>,
        before: String,
        action: &str,
        subject: &Principal,
        acting: &Acting,
        note: &str,
        now: i64,
    ) -> Result<(), Refusal> {
        let event = PeopleEvent {
            at: now,
            action: action.to_owned(),
            subject: subject.to_string(),
            by: acting.by.clone(),
            place: acting.place.clone(),
            note: note.to_owned(),
        };
        roster.record_event(&event)?;
        let after = self.roster_text(cfg, roster)?;
        let why = format!(
            "{action} {subject}{} — by {} in {}",
            if note.is_empty() { String::new() } else { format!(" ({note})") },
            acting.by,
            acting.place
        );
        self.runtime().log(LogLevel::Info, &format!("people of agent {}: {why}", cfg.agent));
        let recorded = match self.runtime().store() {
            Ok(store) => history::record(
                &store,
                &cfg.agent,
                PEOPLE_LOG_PATH,
                Some(before.as_bytes()),
                Some(after.as_bytes()),
                Actor::Owner,
                &why,
                None,
                now,
                cfg.history_keep,
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = recorded {
            self.runtime().log(LogLevel::Warn, &format!("people: {why} is not in the workspace history: {e}"));
        }
        Ok(())
    }

    /// Opens (or closes) the Session objects of someone let in (or out):
    /// their direct chat, or a group's sessions (one per topic). Trouble is
    /// logged: a closed session the call missed stays refused by the roster
    /// at the door of every isolate that asks.
    async fn admission(&self, agent: &AgentId, who: &Principal, group: bool, open: bool) {
        let mut keys = Vec::new();
        if group {
            keys.push(SessionKey::Group {
                agent: agent.clone(),
                channel: who.channel,
                chat: who.id.clone(),
                topic: None,
            });
            let prefix = format!("agent:{agent}:{}:group:{}:topic:", who.channel, who.id);
            let registry = Registry::new(&**self.runtime().sql());
            if registry.init().is_ok() {
                for e in registry.list().unwrap_or_default() {
                    if e.session_key.starts_with(&prefix) {
                        keys.extend(e.key());
                    }
                }
            }
        } else {
            keys.push(SessionKey::Direct { agent: agent.clone(), channel: who.channel, peer: who.id.clone() });
        }
        for key in keys {
            if let Err(e) = self.runtime().queue().admit(&key, open).await {
                let what = if open { "opened" } else { "closed" };
                self.runtime().log(LogLevel::Warn, &format!("people: session {key} not {what}: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests;
