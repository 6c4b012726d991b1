//! Which channel a message came on and its answer goes back to: the chat
//! platforms (each one folder under [`crate::channels`]) and the channels
//! that are not platforms (heartbeats, the owner's notifications, admin
//! work, HTTP questions, relays between agents).
//!
//! One enum instead of string literals, so a typo is a compile error and a
//! new channel is a new variant the compiler walks every `match` to. It
//! travels as its lowercase name (`"telegram"`), the form the session keys,
//! `OWNER_IDS` and the stored messages have always used.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ChannelKind {
    Telegram,
    Discord,
    Slack,
    Whatsapp,
    Email,
    /// Heartbeat and job messages (nobody wrote them).
    System,
    /// Replies that go to the owner, wherever the owner is (heartbeat and job output).
    Notify,
    /// Work started from the admin API: there is no chat to answer. The
    /// default, so a reply target nobody filled in sends nothing anywhere.
    #[default]
    Admin,
    /// A question asked over HTTP (the HTTP API, Hearth's MCP server): the
    /// answer is kept in the session for the caller to collect.
    Api,
    /// An agent's reply to the other agents of its group (queued in their
    /// sessions, not sent to a platform).
    Relay,
}

impl ChannelKind {
    /// The chat platforms, in the order README lists them.
    pub const PLATFORMS: [ChannelKind; 5] =
        [ChannelKind::Telegram, ChannelKind::Discord, ChannelKind::Slack, ChannelKind::Whatsapp, ChannelKind::Email];

    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Telegram => "telegram",
            ChannelKind::Discord => "discord",
            ChannelKind::Slack => "slack",
            ChannelKind::Whatsapp => "whatsapp",
            ChannelKind::Email => "email",
            ChannelKind::System => "system",
            ChannelKind::Notify => "notify",
            ChannelKind::Admin => "admin",
            ChannelKind::Api => "api",
            ChannelKind::Relay => "relay",
        }
    }

    /// The channel named `name` (exactly its lowercase name).
    pub fn parse(name: &str) -> Option<ChannelKind> {
        Some(match name {
            "telegram" => ChannelKind::Telegram,
            "discord" => ChannelKind::Discord,
            "slack" => ChannelKind::Slack,
            "whatsapp" => ChannelKind::Whatsapp,
            "email" => ChannelKind::Email,
            "system" => ChannelKind::System,
            "notify" => ChannelKind::Notify,
            "admin" => ChannelKind::Admin,
            "api" => ChannelKind::Api,
            "relay" => ChannelKind::Relay,
            _ => return None,
        })
    }

    /// A chat platform people write on (not heartbeats, notifications, the
    /// admin API, HTTP questions or relays).
    pub fn is_platform(self) -> bool {
        Self::PLATFORMS.contains(&self)
    }
}

impl std::fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// As its name: a string, not serde's enum encoding (one `match`, no
/// derived visitor per variant in the upload).
impl Serialize for ChannelKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ChannelKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = std::borrow::Cow::<str>::deserialize(d)?;
        ChannelKind::parse(&raw).ok_or_else(|| serde::de::Error::custom(format!("unknown channel {raw:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_travel_as_their_names() {
        for name in ["telegram", "discord", "slack", "whatsapp", "email", "system", "notify", "admin", "api", "relay"] {
            let kind = ChannelKind::parse(name).unwrap();
            assert_eq!(kind.as_str(), name);
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
            assert_eq!(hearth_json::from_str::<ChannelKind>(&format!("\"{name}\"")).unwrap(), kind);
        }
        assert!(hearth_json::from_str::<ChannelKind>("\"Telegram\"").is_err());
        assert!(ChannelKind::parse("irc").is_none());
        assert!(ChannelKind::Slack.is_platform() && !ChannelKind::Notify.is_platform());
    }
}
