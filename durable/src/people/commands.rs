//! The chat commands about people, read from a message's text (no LLM call
//! is spent on any of them): the owner's `/approve CODE`, `/revoke
//! channel:id`, `/people` and `/link`, answered in the owner's private chat
//! by its session; and what a stranger may send at the door: `/claim CODE`
//! (Telegram's deep link `https://t.me/<bot>?start=CODE` sends `/start
//! CODE`) and `/link CODE`.

use crate::settings::Principal;

/// A command a sender the agent does not know yet may send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoorCommand {
    /// `/claim CODE` or `/start CODE`: become the owner.
    Claim(String),
    /// `/link CODE`: this account is the owner too.
    Link(String),
}

/// What the owner asks in their private chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerCommand {
    /// `/approve CODE` (the code as typed; empty when none was given).
    Approve(String),
    /// `/revoke channel:id`; `Err(text)` when the argument is not one.
    Revoke(Result<Principal, String>),
    /// `/people`.
    People,
    /// `/link`: a code for another account.
    Link,
    /// `/link CODE` or `/claim CODE` sent by an account that is the owner
    /// already.
    AlreadyOwner,
}

/// The command word (without `/` and a `@botname`, lower case) and the rest.
fn split(text: &str) -> Option<(String, &str)> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (word, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let word = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    Some((word, args.trim()))
}

/// A door command in `text`. `/start` alone, or with a payload that is not
/// a code, is not one (it is an ordinary first message).
pub fn door_command(text: &str) -> Option<DoorCommand> {
    let (word, args) = split(text)?;
    match word.as_str() {
        "claim" => Some(DoorCommand::Claim(args.to_owned())),
        "start" => super::codes::normalize(args).map(DoorCommand::Claim),
        "link" if !args.is_empty() => Some(DoorCommand::Link(args.to_owned())),
        _ => None,
    }
}

/// An owner command in `text`.
pub fn owner_command(text: &str) -> Option<OwnerCommand> {
    let (word, args) = split(text)?;
    Some(match word.as_str() {
        "approve" => OwnerCommand::Approve(args.to_owned()),
        "revoke" => OwnerCommand::Revoke(match Principal::parse(args) {
            Some(p) => Ok(p),
            None if args.is_empty() => Err(String::new()),
            None => Err(args.to_owned()),
        }),
        "people" if args.is_empty() => OwnerCommand::People,
        "link" if args.is_empty() => OwnerCommand::Link,
        "link" | "claim" => OwnerCommand::AlreadyOwner,
        "start" if super::codes::normalize(args).is_some() => OwnerCommand::AlreadyOwner,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;

    #[test]
    fn door_commands() {
        assert_eq!(door_command("/claim ABCD2345"), Some(DoorCommand::Claim("ABCD2345".into())));
        assert_eq!(door_command("/claim@hearth_bot abcd-2345"), Some(DoorCommand::Claim("abcd-2345".into())));
        assert_eq!(door_command("/claim"), Some(DoorCommand::Claim(String::new())), "told how");
        assert_eq!(door_command("/start abcd2345"), Some(DoorCommand::Claim("ABCD2345".into())), "the deep link");
        assert_eq!(door_command("/start"), None, "an ordinary first message");
        assert_eq!(door_command("/start hello"), None);
        assert_eq!(door_command("/link XYZW2345"), Some(DoorCommand::Link("XYZW2345".into())));
        assert_eq!(door_command("/link"), None);
        assert_eq!(door_command("claim ABCD2345"), None);
        assert_eq!(door_command("/claimed ABCD2345"), None);
    }

    #[test]
    fn owner_commands() {
        assert_eq!(owner_command("/approve  k7m2 x9qp "), Some(OwnerCommand::Approve("k7m2 x9qp".into())));
        assert_eq!(owner_command("/approve"), Some(OwnerCommand::Approve(String::new())));
        assert_eq!(
            owner_command("/revoke telegram:626262"),
            Some(OwnerCommand::Revoke(Ok(Principal::new(ChannelKind::Telegram, "626262"))))
        );
        assert_eq!(owner_command("/revoke pat"), Some(OwnerCommand::Revoke(Err("pat".into()))));
        assert_eq!(owner_command("/people"), Some(OwnerCommand::People));
        assert_eq!(owner_command("/PEOPLE@hearth_bot"), Some(OwnerCommand::People));
        assert_eq!(owner_command("/link"), Some(OwnerCommand::Link));
        assert_eq!(owner_command("/link ABCD2345"), Some(OwnerCommand::AlreadyOwner));
        assert_eq!(owner_command("/start ABCD2345"), Some(OwnerCommand::AlreadyOwner));
        assert_eq!(owner_command("/start"), None);
        assert_eq!(owner_command("/peoples"), None);
        assert_eq!(owner_command("approve X"), None);
    }
}
