//! The roster in the Agent object's SQLite: who was let in from the chat
//! (guests by pairing code, the owner by claim, the owner's other accounts
//! by link), the live codes, and the audit log's lines.
//!
//! One object per agent sees every change in order, so a code is used once
//! and two isolates never both let the same code in. Every change adds one
//! to the roster's generation, which the Worker's isolates compare to know
//! their copy is current ([`super::memo`]).

use super::codes;
use crate::inbound::ChannelKind;
use crate::ports::{Sql, SqlValue, StorageError};
use crate::protocol::people::{Pending, PeopleEvent, Person, Roster, Standing};
use crate::settings::Principal;
use crate::storage::{col_i64, col_string};

/// A pairing code lives an hour.
pub const PAIR_TTL_MS: i64 = 3_600_000;
/// A link code lives a quarter of an hour (it makes someone the owner).
pub const LINK_TTL_MS: i64 = 15 * 60_000;
/// Used or expired codes are kept this long, so a late `/approve` is told
/// "expired" rather than "no such code".
const KEEP_SPENT_MS: i64 = 86_400_000;
/// A claim code's "expiry": none (a JavaScript-safe number, as SQLite
/// values travel through one in the Worker).
const NEVER: i64 = 1 << 52;
/// The audit lines kept in SQLite (the workspace history keeps them too).
const KEEP_EVENTS: i64 = 500;
/// At most this many people and groups (a personal agent's roster; the
/// Worker copies it whole).
pub const MAX_PEOPLE: i64 = 1000;

const PEOPLE: &str = "CREATE TABLE IF NOT EXISTS people (
    channel TEXT NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL, is_group INTEGER NOT NULL DEFAULT 0,
    name TEXT NOT NULL DEFAULT '', via TEXT NOT NULL, added_by TEXT NOT NULL DEFAULT '',
    added_at INTEGER NOT NULL, PRIMARY KEY (channel, id))";
const CODES: &str = "CREATE TABLE IF NOT EXISTS people_codes (
    code TEXT PRIMARY KEY, purpose TEXT NOT NULL, channel TEXT NOT NULL DEFAULT '',
    id TEXT NOT NULL DEFAULT '', is_group INTEGER NOT NULL DEFAULT 0, name TEXT NOT NULL DEFAULT '',
    chat TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    used_at INTEGER)";
const EVENTS: &str = "CREATE TABLE IF NOT EXISTS people_events (
    n INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, action TEXT NOT NULL,
    subject TEXT NOT NULL, by TEXT NOT NULL, place TEXT NOT NULL, note TEXT NOT NULL DEFAULT '')";
const META: &str = "CREATE TABLE IF NOT EXISTS people_meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)";
const TABLES: crate::storage::Schema =
    crate::storage::Schema { name: "people", statements: &[PEOPLE, CODES, EVENTS, META] };

/// Why a code did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeProblem {
    /// No code like it was given out (or it is a day past its time).
    Unknown,
    /// It was, and its hour is over.
    Expired,
    /// It was used already.
    Used,
}

/// A spent code's row.
struct Spent {
    channel: String,
    id: String,
    group: bool,
    name: String,
    chat: String,
}

/// Someone going into the roster.
struct Entry<'a> {
    who: &'a Principal,
    role: &'a str,
    group: bool,
    name: &'a str,
    via: &'a str,
    by: &'a str,
}

/// What a pairing code let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    pub who: Principal,
    pub group: bool,
    pub name: String,
    /// Where the person wrote from (to tell them).
    pub chat: String,
}

/// A claim or a link: the sender became (part of) the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerOutcome {
    Done,
    Problem(CodeProblem),
    /// The agent has an owner already (claims only).
    HasOwner,
}

pub struct RosterStore<'a, S: Sql + ?Sized> {
    sql: &'a S,
}

fn is_group(row: &[SqlValue], i: usize) -> bool {
    col_i64(row, i) != 0
}

impl<'a, S: Sql + ?Sized> RosterStore<'a, S> {
    pub fn new(sql: &'a S) -> Result<Self, StorageError> {
        crate::storage::ensure(sql, &TABLES)?;
        Ok(RosterStore { sql })
    }

    pub fn generation(&self) -> Result<i64, StorageError> {
        let rows = self.sql.exec("SELECT v FROM people_meta WHERE k = 'generation'", &[])?;
        Ok(rows.first().map_or(0, |r| col_i64(r, 0)))
    }

    fn bump(&self) -> Result<(), StorageError> {
        self.sql.exec(
            "INSERT INTO people_meta (k, v) VALUES ('generation', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1",
            &[],
        )?;
        Ok(())
    }

    /// Everyone let in from the chat.
    pub fn people(&self) -> Result<Vec<(Person, String)>, StorageError> {
        let rows = self.sql.exec(
            "SELECT channel, id, role, is_group, name, via, added_by, added_at FROM people ORDER BY added_at, channel, id",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                let channel = ChannelKind::parse(&col_string(&mut r, 0))?;
                let who = Principal::new(channel, col_string(&mut r, 1));
                let role = col_string(&mut r, 2);
                let person = Person {
                    who,
                    group: is_group(&r, 3),
                    name: col_string(&mut r, 4),
                    via: col_string(&mut r, 5),
                    added_by: col_string(&mut r, 6),
                    added_at: Some(col_i64(&r, 7)),
                };
                Some((person, role))
            })
            .collect())
    }

    /// The roster as the Worker copies it. Owners by claim count only while
    /// `OWNER_IDS` names nobody (`OWNER_IDS`, when set, wins).
    pub fn view(&self, configured_owner: bool) -> Result<Roster, StorageError> {
        let mut roster = Roster { generation: self.generation()?, ..Default::default() };
        for (p, role) in self.people()? {
            match role.as_str() {
                "owner" if configured_owner && p.via == "claim" => {}
                "owner" => roster.owners.push(p.who),
                _ => roster.guests.push(p.who),
            }
        }
        Ok(roster)
    }

    /// Where a sender (or, in a group, the group) stands by the roster alone.
    pub fn standing(&self, roster: &Roster, who: &Principal, group: Option<&str>) -> Standing {
        match group {
            Some(chat) => {
                let g = Principal::new(who.channel, chat);
                if roster.guests.contains(&g) || roster.owners.contains(who) {
                    Standing::Guest
                } else {
                    Standing::Stranger
                }
            }
            None if roster.owners.contains(who) => Standing::Owner,
            None if roster.guests.contains(who) => Standing::Guest,
            None => Standing::Stranger,
        }
    }

    /// Drops codes a day past their time.
    fn purge(&self, now: i64) -> Result<(), StorageError> {
        self.sql.exec(
            "DELETE FROM people_codes WHERE expires_at < ? OR used_at < ?",
            &[(now - KEEP_SPENT_MS).into(), (now - KEEP_SPENT_MS).into()],
        )?;
        Ok(())
    }

    /// A fresh code nobody holds (`random` gives random hex).
    fn fresh_code(&self, random: &dyn Fn() -> String) -> Result<String, StorageError> {
        for _ in 0..8 {
            let Some(code) = codes::from_random(&random()) else { continue };
            let taken = self.sql.exec("SELECT 1 FROM people_codes WHERE code = ?", &[code.as_str().into()])?;
            if taken.is_empty() {
                return Ok(code);
            }
        }
        Err(StorageError("no fresh code could be drawn".into()))
    }

    /// The live pairing code of a stranger (or a group), made if they have
    /// none: one live code per stranger.
    pub fn pairing_code(
        &self,
        who: &Principal,
        group: bool,
        name: &str,
        chat: &str,
        now: i64,
        random: &dyn Fn() -> String,
    ) -> Result<Pending, StorageError> {
        self.purge(now)?;
        let rows = self.sql.exec(
            "SELECT code, created_at, expires_at FROM people_codes
             WHERE purpose = 'pair' AND channel = ? AND id = ? AND used_at IS NULL AND expires_at > ?",
            &[who.channel.as_str().into(), who.id.as_str().into(), now.into()],
        )?;
        if let Some(mut r) = rows.into_iter().next() {
            return Ok(Pending {
                code: col_string(&mut r, 0),
                who: who.clone(),
                group,
                name: name.to_owned(),
                created_at: col_i64(&r, 1),
                expires_at: col_i64(&r, 2),
            });
        }
        let code = self.fresh_code(random)?;
        let expires_at = now + PAIR_TTL_MS;
        self.sql.exec(
            "INSERT INTO people_codes (code, purpose, channel, id, is_group, name, chat, created_at, expires_at)
             VALUES (?, 'pair', ?, ?, ?, ?, ?, ?, ?)",
            &[
                code.as_str().into(),
                who.channel.as_str().into(),
                who.id.as_str().into(),
                i64::from(group).into(),
                crate::text::truncate_chars(name, 64).into(),
                chat.into(),
                now.into(),
                expires_at.into(),
            ],
        )?;
        Ok(Pending { code, who: who.clone(), group, name: name.to_owned(), created_at: now, expires_at })
    }

    /// The live pairing codes, oldest first.
    pub fn pending(&self, now: i64) -> Result<Vec<Pending>, StorageError> {
        let rows = self.sql.exec(
            "SELECT code, channel, id, is_group, name, created_at, expires_at FROM people_codes
             WHERE purpose = 'pair' AND used_at IS NULL AND expires_at > ? ORDER BY created_at",
            &[now.into()],
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                let channel = ChannelKind::parse(&col_string(&mut r, 1))?;
                Some(Pending {
                    code: col_string(&mut r, 0),
                    who: Principal::new(channel, col_string(&mut r, 2)),
                    group: is_group(&r, 3),
                    name: col_string(&mut r, 4),
                    created_at: col_i64(&r, 5),
                    expires_at: col_i64(&r, 6),
                })
            })
            .collect())
    }

    /// A code of `purpose`, checked and spent (marked used), and its row.
    fn spend(&self, typed: &str, purpose: &str, now: i64) -> Result<Result<Spent, CodeProblem>, StorageError> {
        let Some(code) = codes::normalize(typed) else { return Ok(Err(CodeProblem::Unknown)) };
        let rows = self.sql.exec(
            "SELECT channel, id, is_group, name, chat, expires_at, used_at FROM people_codes WHERE code = ? AND purpose = ?",
            &[code.as_str().into(), purpose.into()],
        )?;
        let Some(mut r) = rows.into_iter().next() else { return Ok(Err(CodeProblem::Unknown)) };
        if !matches!(r.get(6), None | Some(SqlValue::Null)) {
            return Ok(Err(CodeProblem::Used));
        }
        if col_i64(&r, 5) <= now {
            return Ok(Err(CodeProblem::Expired));
        }
        self.sql.exec("UPDATE people_codes SET used_at = ? WHERE code = ?", &[now.into(), code.as_str().into()])?;
        let group = is_group(&r, 2);
        Ok(Ok(Spent {
            channel: col_string(&mut r, 0),
            id: col_string(&mut r, 1),
            group,
            name: col_string(&mut r, 3),
            chat: col_string(&mut r, 4),
        }))
    }

    fn add(&self, e: &Entry<'_>, now: i64) -> Result<(), StorageError> {
        let Entry { who, role, group, name, via, by } = *e;
        let count = self.sql.exec("SELECT COUNT(*) FROM people", &[])?;
        if count.first().map_or(0, |r| col_i64(r, 0)) >= MAX_PEOPLE {
            return Err(StorageError(format!("the roster is full ({MAX_PEOPLE}): revoke someone first")));
        }
        self.sql.exec(
            "INSERT INTO people (channel, id, role, is_group, name, via, added_by, added_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(channel, id) DO UPDATE SET role = excluded.role, is_group = excluded.is_group,
               name = excluded.name, via = excluded.via, added_by = excluded.added_by, added_at = excluded.added_at",
            &[
                who.channel.as_str().into(),
                who.id.as_str().into(),
                role.into(),
                i64::from(group).into(),
                crate::text::truncate_chars(name, 64).into(),
                via.into(),
                by.into(),
                now.into(),
            ],
        )?;
        self.bump()
    }

    /// `/approve CODE`: the stranger (or group) holding it is a guest now.
    pub fn approve(&self, typed: &str, by: &str, now: i64) -> Result<Result<Admitted, CodeProblem>, StorageError> {
        let Spent { channel, id, group, name, chat } = match self.spend(typed, "pair", now)? {
            Ok(row) => row,
            Err(p) => return Ok(Err(p)),
        };
        let Some(channel) = ChannelKind::parse(&channel) else { return Ok(Err(CodeProblem::Unknown)) };
        let who = Principal::new(channel, id);
        self.add(&Entry { who: &who, role: "guest", group, name: &name, via: "pairing", by }, now)?;
        Ok(Ok(Admitted { who, group, name, chat }))
    }

    /// The console's Deny: the request's code is spent, nobody let in.
    pub fn deny(&self, typed: &str, now: i64) -> Result<Result<Pending, CodeProblem>, StorageError> {
        let code = codes::normalize(typed).unwrap_or_default();
        let Spent { channel, id, group, name, .. } = match self.spend(typed, "pair", now)? {
            Ok(row) => row,
            Err(p) => return Ok(Err(p)),
        };
        let Some(channel) = ChannelKind::parse(&channel) else { return Ok(Err(CodeProblem::Unknown)) };
        Ok(Ok(Pending { code, who: Principal::new(channel, id), group, name, created_at: now, expires_at: now }))
    }

    /// `/revoke channel:id`: out of the roster (and their live codes gone).
    /// The person as they were, or `None` if the roster did not have them.
    pub fn revoke(&self, who: &Principal) -> Result<Option<Person>, StorageError> {
        let was = self.people()?.into_iter().map(|(p, _)| p).find(|p| p.who == *who);
        if was.is_some() {
            self.sql.exec(
                "DELETE FROM people WHERE channel = ? AND id = ?",
                &[who.channel.as_str().into(), who.id.as_str().into()],
            )?;
            self.bump()?;
        }
        Ok(was)
    }

    /// Whether someone owns the agent by claim or link (OWNER_IDS aside).
    pub fn has_owner(&self) -> Result<bool, StorageError> {
        Ok(!self.sql.exec("SELECT 1 FROM people WHERE role = 'owner' LIMIT 1", &[])?.is_empty())
    }

    /// The one-time claim code (made on first ask).
    pub fn claim_code(&self, now: i64, random: &dyn Fn() -> String) -> Result<String, StorageError> {
        let rows =
            self.sql.exec("SELECT code FROM people_codes WHERE purpose = 'claim' AND used_at IS NULL LIMIT 1", &[])?;
        if let Some(mut r) = rows.into_iter().next() {
            return Ok(col_string(&mut r, 0));
        }
        let code = self.fresh_code(random)?;
        self.sql.exec(
            "INSERT INTO people_codes (code, purpose, created_at, expires_at) VALUES (?, 'claim', ?, ?)",
            &[code.as_str().into(), now.into(), NEVER.into()],
        )?;
        Ok(code)
    }

    /// `/claim CODE` (Telegram's `/start CODE`): the sender owns the agent.
    pub fn claim(
        &self,
        typed: &str,
        who: &Principal,
        name: &str,
        configured_owner: bool,
        now: i64,
    ) -> Result<OwnerOutcome, StorageError> {
        if configured_owner || self.has_owner()? {
            return Ok(OwnerOutcome::HasOwner);
        }
        match self.spend(typed, "claim", now)? {
            Ok(_) => {
                let by = who.to_string();
                self.add(&Entry { who, role: "owner", group: false, name, via: "claim", by: &by }, now)?;
                Ok(OwnerOutcome::Done)
            }
            Err(p) => Ok(OwnerOutcome::Problem(p)),
        }
    }

    /// `/link`: a code the owner sends from another account.
    pub fn link_code(&self, owner: &Principal, now: i64, random: &dyn Fn() -> String) -> Result<String, StorageError> {
        self.purge(now)?;
        let code = self.fresh_code(random)?;
        self.sql.exec(
            "INSERT INTO people_codes (code, purpose, channel, id, created_at, expires_at) VALUES (?, 'link', ?, ?, ?, ?)",
            &[code.as_str().into(), owner.channel.as_str().into(), owner.id.as_str().into(), now.into(), (now + LINK_TTL_MS).into()],
        )?;
        Ok(code)
    }

    /// `/link CODE` from another account: it is the owner too. Returns who
    /// asked for the code.
    pub fn link(
        &self,
        typed: &str,
        who: &Principal,
        name: &str,
        now: i64,
    ) -> Result<Result<Principal, CodeProblem>, StorageError> {
        let Spent { channel, id, .. } = match self.spend(typed, "link", now)? {
            Ok(row) => row,
            Err(p) => return Ok(Err(p)),
        };
        let Some(channel) = ChannelKind::parse(&channel) else { return Ok(Err(CodeProblem::Unknown)) };
        let asked = Principal::new(channel, id);
        let by = asked.to_string();
        self.add(&Entry { who, role: "owner", group: false, name, via: "link", by: &by }, now)?;
        Ok(Ok(asked))
    }

    pub fn record_event(&self, e: &PeopleEvent) -> Result<(), StorageError> {
        self.sql.exec(
            "INSERT INTO people_events (at, action, subject, by, place, note) VALUES (?, ?, ?, ?, ?, ?)",
            &[
                e.at.into(),
                e.action.as_str().into(),
                e.subject.as_str().into(),
                e.by.as_str().into(),
                e.place.as_str().into(),
                e.note.as_str().into(),
            ],
        )?;
        self.sql.exec(
            "DELETE FROM people_events WHERE n <= (SELECT MAX(n) FROM people_events) - ?",
            &[KEEP_EVENTS.into()],
        )?;
        Ok(())
    }

    /// The audit lines, newest first.
    pub fn events(&self, limit: i64) -> Result<Vec<PeopleEvent>, StorageError> {
        let rows = self.sql.exec(
            "SELECT at, action, subject, by, place, note FROM people_events ORDER BY n DESC LIMIT ?",
            &[limit.into()],
        )?;
        Ok(rows
            .into_iter()
            .map(|mut r| PeopleEvent {
                at: col_i64(&r, 0),
                action: col_string(&mut r, 1),
                subject: col_string(&mut r, 2),
                by: col_string(&mut r, 3),
                place: col_string(&mut r, 4),
                note: col_string(&mut r, 5),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemSql;
    use std::cell::Cell;

    fn random() -> impl Fn() -> String {
        let n = Cell::new(0u64);
        move || {
            n.set(n.get() + 1);
            format!("{:016x}{:016x}", n.get().wrapping_mul(0x9E37_79B9_7F4A_7C15), n.get())
        }
    }

    fn tg(id: &str) -> Principal {
        Principal::new(ChannelKind::Telegram, id)
    }

    #[test]
    fn one_live_code_per_stranger_single_use_and_valid_an_hour() {
        let sql = MemSql::default();
        let r = RosterStore::new(&sql).unwrap();
        let rnd = random();
        let a = r.pairing_code(&tg("9"), false, "Pat", "9", 1_000, &rnd).unwrap();
        let again = r.pairing_code(&tg("9"), false, "Pat", "9", 2_000, &rnd).unwrap();
        assert_eq!(a.code, again.code, "one live code per stranger");
        assert_eq!(a.expires_at, 1_000 + PAIR_TTL_MS);
        let other = r.pairing_code(&tg("10"), false, "Sam", "10", 2_000, &rnd).unwrap();
        assert_ne!(other.code, a.code);
        assert_eq!(r.pending(2_000).unwrap().len(), 2);
        assert_eq!(r.generation().unwrap(), 0, "asking changes nobody's standing");

        let admitted = r.approve(&a.code.to_lowercase(), "telegram:1", 3_000).unwrap().unwrap();
        assert_eq!((admitted.who.clone(), admitted.chat.as_str()), (tg("9"), "9"));
        assert_eq!(r.generation().unwrap(), 1);
        assert_eq!(r.approve(&a.code, "telegram:1", 3_001).unwrap(), Err(CodeProblem::Used), "single use");
        assert_eq!(r.approve("ZZZZZZZZ", "telegram:1", 3_001).unwrap(), Err(CodeProblem::Unknown));
        assert_eq!(r.approve("not a code", "telegram:1", 3_001).unwrap(), Err(CodeProblem::Unknown));
        let late = 2_000 + PAIR_TTL_MS;
        assert_eq!(r.approve(&other.code, "telegram:1", late).unwrap(), Err(CodeProblem::Expired));
        let view = r.view(true).unwrap();
        assert_eq!((view.guests.clone(), view.generation), (vec![tg("9")], 1));
        assert_eq!(r.standing(&view, &tg("9"), None), Standing::Guest);
        assert_eq!(r.standing(&view, &tg("10"), None), Standing::Stranger);
        // After the hour a stranger gets a new code.
        let renewed = r.pairing_code(&tg("10"), false, "Sam", "10", late, &rnd).unwrap();
        assert_ne!(renewed.code, other.code);

        assert_eq!(r.revoke(&tg("9")).unwrap().map(|p| p.via), Some("pairing".into()));
        assert_eq!(r.revoke(&tg("9")).unwrap(), None, "only once");
        assert_eq!(r.generation().unwrap(), 2);
        assert!(r.view(true).unwrap().guests.is_empty());
    }

    #[test]
    fn a_group_is_let_in_as_a_whole() {
        let sql = MemSql::default();
        let r = RosterStore::new(&sql).unwrap();
        let rnd = random();
        let g = r.pairing_code(&tg("-100500"), true, "Book club", "-100500", 0, &rnd).unwrap();
        r.approve(&g.code, "telegram:1", 1).unwrap().unwrap();
        let view = r.view(false).unwrap();
        assert_eq!(r.standing(&view, &tg("77"), Some("-100500")), Standing::Guest, "anyone in it");
        assert_eq!(r.standing(&view, &tg("77"), Some("-100999")), Standing::Stranger);
        assert_eq!(r.standing(&view, &tg("77"), None), Standing::Stranger, "not their DMs");
    }

    #[test]
    fn a_claim_is_one_time_and_owner_ids_win() {
        let sql = MemSql::default();
        let r = RosterStore::new(&sql).unwrap();
        let rnd = random();
        let code = r.claim_code(0, &rnd).unwrap();
        assert_eq!(r.claim_code(5, &rnd).unwrap(), code, "the same code until used");
        assert_eq!(r.claim(&code, &tg("5"), "Olga", true, 10).unwrap(), OwnerOutcome::HasOwner, "OWNER_IDS set");
        assert_eq!(
            r.claim("AAAAAAAA", &tg("5"), "Olga", false, 10).unwrap(),
            OwnerOutcome::Problem(CodeProblem::Unknown)
        );
        assert_eq!(r.claim(&code, &tg("5"), "Olga", false, 10).unwrap(), OwnerOutcome::Done);
        assert_eq!(r.claim(&code, &tg("6"), "Eve", false, 11).unwrap(), OwnerOutcome::HasOwner);
        let view = r.view(false).unwrap();
        assert_eq!(r.standing(&view, &tg("5"), None), Standing::Owner);
        assert!(r.view(true).unwrap().owners.is_empty(), "a claimed owner does not count once OWNER_IDS is set");
        // A link joins another account to the owner, within its quarter hour.
        let link = r.link_code(&tg("5"), 100, &rnd).unwrap();
        let dc = Principal::new(ChannelKind::Discord, "42");
        assert_eq!(r.link(&link, &dc, "olga", 100 + LINK_TTL_MS).unwrap(), Err(CodeProblem::Expired));
        let link = r.link_code(&tg("5"), 200, &rnd).unwrap();
        assert_eq!(r.link(&link, &dc, "olga", 300).unwrap(), Ok(tg("5")));
        assert!(r.view(true).unwrap().owners.contains(&dc), "a linked account stays linked under OWNER_IDS");
    }

    #[test]
    fn the_audit_lines_come_newest_first() {
        let sql = MemSql::default();
        let r = RosterStore::new(&sql).unwrap();
        for (i, action) in ["approved", "revoked"].iter().enumerate() {
            r.record_event(&PeopleEvent {
                at: i as i64,
                action: (*action).into(),
                subject: "telegram:9".into(),
                by: "telegram:1".into(),
                place: "telegram chat 1".into(),
                note: String::new(),
            })
            .unwrap();
        }
        let events = r.events(10).unwrap();
        assert_eq!(events.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["revoked", "approved"]);
    }
}
