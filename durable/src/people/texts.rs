//! What people are told, in one place: the stranger's notice with their
//! pairing code, and the answers to the commands.

use super::roster::CodeProblem;
use crate::inbound::ChannelKind;
use crate::protocol::people::{Pending, PeopleList, Person};
use crate::settings::Principal;

/// What a stranger writing in a direct chat is told: a code to give the
/// owner (and their id, the form `ALLOW_FROM` takes). With no owner yet,
/// how to claim the agent: the quick start's first step.
pub fn stranger(channel: ChannelKind, user_id: &str, has_owner: bool, code: Option<&Pending>) -> String {
    if !has_owner {
        return format!(
            "Hello! I have no owner yet. Your id is {channel}:{user_id}. If this is your agent, claim it: send me \
/claim and the claim code `npm run dev` printed (also on the console's People page). Or set \
OWNER_IDS={channel}:{user_id} (in .dev.vars, or with `wrangler secret put OWNER_IDS`) and restart."
        );
    }
    match code {
        Some(p) => format!(
            "I'm a private assistant and only talk to people my owner allows. To ask them, send them this code: {} \
(valid for an hour). They let you in by sending me /approve {}. Your id is {channel}:{user_id}.",
            p.code, p.code
        ),
        None => format!(
            "I'm a private assistant and only talk to people my owner allows. Your id is {channel}:{user_id}. \
If you are my owner, add it to OWNER_IDS (or ask them to add it to ALLOW_FROM)."
        ),
    }
}

/// What a group that is not let in is told when someone mentions the agent.
pub fn group(code: &Pending) -> String {
    format!(
        "I only answer in groups my owner allows. To ask them, send them this code: {} (valid for an hour). \
They let this group in by sending me /approve {} in our private chat.",
        code.code, code.code
    )
}

fn problem(p: &CodeProblem, what: &str) -> String {
    match p {
        CodeProblem::Unknown => format!("❌ I gave out no {what} like that. Check it, or ask for a new one."),
        CodeProblem::Expired => format!("⌛ That {what} has expired. Ask for a new one: writing to me again gets it."),
        CodeProblem::Used => format!("❌ That {what} was used already."),
    }
}

pub fn approve_problem(p: &CodeProblem) -> String {
    problem(p, "code")
}

pub const APPROVE_USAGE: &str =
    "Send /approve with the code the person (or group) got from me, e.g. /approve K7M2X9QP.";
pub const REVOKE_USAGE: &str = "Send /revoke with the id /people lists, e.g. /revoke telegram:626262.";
pub const ONLY_OWNER: &str = "Only my owner can do that, in our private chat.";
pub const ALREADY_OWNER: &str = "This account is my owner already: nothing to do.";

fn who(p: &Principal, name: &str, group: bool) -> String {
    let kind = if group { "the group " } else { "" };
    if name.is_empty() {
        format!("{kind}{p}")
    } else {
        format!("{kind}{name} ({p})")
    }
}

pub fn approved(p: &Principal, name: &str, group: bool) -> String {
    if group {
        format!(
            "✅ I answer in {} now, when someone mentions me (its own conversation; none of your private files).",
            who(p, name, true)
        )
    } else {
        format!("✅ {} may talk to me now, as a guest: their own conversation, none of your private files. /revoke {p} takes them out.", who(p, name, false))
    }
}

/// The note the person (or group) let in gets.
pub fn welcome(group: bool) -> String {
    if group {
        "✅ My owner let this group in: mention me and I answer.".into()
    } else {
        "✅ My owner let you in: write to me any time.".into()
    }
}

pub fn denied(p: &Pending) -> String {
    format!("Dropped the request of {}.", who(&p.who, &p.name, p.group))
}

pub fn revoked(p: &Person) -> String {
    format!("🚫 {} can no longer talk to me.", who(&p.who, &p.name, p.group))
}

pub fn not_revocable(p: &Principal, in_settings: Option<&str>) -> String {
    match in_settings {
        Some(setting) => format!("{p} is in {setting}: remove it there (and deploy) to take them out."),
        None => format!("{p} is not among the people I talk to (/people lists them)."),
    }
}

pub fn link_code(code: &str, minutes: i64) -> String {
    format!(
        "🔗 Send me /link {code} from your other account (Discord, Slack, …) within {minutes} minutes: it becomes you, \
and we go on with our main conversation there."
    )
}

pub fn linked(asked: &Principal) -> String {
    format!("🔗 Linked: this account is you too (with {asked}). We go on with our main conversation here.")
}

pub fn link_problem(p: &CodeProblem) -> String {
    problem(p, "link code")
}

pub const CLAIMED: &str = "🔑 You are my owner now: this chat is our main conversation. /people shows who else may \
talk to me; /link joins your other accounts.";
pub const HAS_OWNER: &str = "I have an owner already, so I cannot be claimed.";
pub const CLAIM_USAGE: &str =
    "Send /claim with the claim code `npm run dev` printed (also on the console's People page).";

pub fn claim_problem(p: &CodeProblem) -> String {
    problem(p, "claim code")
}

/// `/people`.
pub fn list(l: &PeopleList, timezone: &str) -> String {
    let line = |p: &Person| {
        let via = match p.via.as_str() {
            "settings" => " (settings)".to_owned(),
            "pairing" => String::new(),
            other => format!(" ({other})"),
        };
        format!("• {}{via}", who(&p.who, &p.name, p.group))
    };
    let mut out = String::from("👥 People\nOwner:\n");
    if l.owners.is_empty() {
        out.push_str("• nobody yet\n");
    }
    for p in &l.owners {
        out.push_str(&line(p));
        out.push('\n');
    }
    out.push_str("Allowed:\n");
    if l.guests.is_empty() {
        out.push_str("• nobody yet\n");
    }
    for p in &l.guests {
        out.push_str(&line(p));
        out.push('\n');
    }
    if !l.pending.is_empty() {
        out.push_str("Asking (send /approve CODE):\n");
        for p in &l.pending {
            let until = crate::clock::datetime_string(p.expires_at, timezone);
            out.push_str(&format!("• {} — {} (until {until})\n", who(&p.who, &p.name, p.group), p.code));
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stranger_learns_a_code_and_their_id_and_with_no_owner_how_to_claim() {
        let code = Pending {
            code: "K7M2X9QP".into(),
            who: Principal::new(ChannelKind::Telegram, "31337"),
            group: false,
            name: "Pat".into(),
            created_at: 0,
            expires_at: 3_600_000,
        };
        let owned = stranger(ChannelKind::Telegram, "31337", true, Some(&code));
        assert!(owned.contains("/approve K7M2X9QP") && owned.contains("Your id is telegram:31337"), "{owned}");
        let first = stranger(ChannelKind::Discord, "42", false, None);
        assert!(first.contains("/claim") && first.contains("OWNER_IDS=discord:42"), "{first}");
        assert!(group(&code).contains("/approve K7M2X9QP in our private chat"));
    }
}
