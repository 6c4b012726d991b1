//! Who is who: a `channel:id` pair of `OWNER_IDS` and `ALLOW_FROM`, each
//! id in the form its platform's messages carry it.

use super::read::ConfigError;
use crate::inbound::ChannelKind;

/// A `channel:id` pair from `OWNER_IDS` / `ALLOW_FROM`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    pub channel: ChannelKind,
    pub id: String,
}

impl Principal {
    pub fn new(channel: ChannelKind, id: impl Into<String>) -> Self {
        Principal { channel, id: id.into() }
    }

    /// `telegram:12345` as `OWNER_IDS` takes it (`None`: not one), the id
    /// in the form messages carry it.
    pub fn parse(raw: &str) -> Option<Principal> {
        let (channel, id) = raw.trim().split_once(':')?;
        let channel = ChannelKind::parse(&channel.trim().to_ascii_lowercase()).filter(|c| c.is_platform())?;
        Some(Principal { channel, id: principal_id(channel, id.trim())? })
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.channel, self.id)
    }
}

/// A principal travels as its `channel:id` text.
impl serde::Serialize for Principal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Principal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = std::borrow::Cow::<str>::deserialize(d)?;
        Principal::parse(&raw).ok_or_else(|| serde::de::Error::custom(format!("not a channel:id: {raw:?}")))
    }
}

/// Parses `telegram:123,discord:456,slack:U012AB3CD,whatsapp:+15551234567,email:ana@example.com`.
/// Each id has its platform's form (Telegram and Discord ids are numbers, a
/// Telegram group's negative; Slack's are like `U012AB3CD` or `C0123…` for a
/// channel; a WhatsApp number in international form, the `+` optional; an
/// email address), so a username or a typo is an error naming the entry
/// rather than an id that silently never matches. A channel with nothing
/// after the colon (`telegram:`, the unfilled form people copy from
/// examples) counts as no entry: the agent then tells whoever writes to it
/// their id.
pub fn parse_principals(name: &str, raw: &str) -> Result<Vec<Principal>, ConfigError> {
    let invalid = |why: String| ConfigError::Invalid { name: name.to_owned(), why };
    let mut out = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (channel, id) =
            item.split_once(':').ok_or_else(|| invalid(format!("{item:?} is not channel:id (e.g. telegram:12345)")))?;
        let channel =
            ChannelKind::parse(&channel.trim().to_ascii_lowercase()).filter(|c| c.is_platform()).ok_or_else(|| {
                invalid(format!("{item:?}: the channel must be telegram, discord, slack, whatsapp or email"))
            })?;
        let id = id.trim();
        if id.is_empty() {
            continue;
        }
        let id = principal_id(channel, id).ok_or_else(|| {
            invalid(format!("{item:?}: {} (message the bot once: it tells you yours)", id_form(channel)))
        })?;
        out.push(Principal { channel, id });
    }
    Ok(out)
}

/// What an id on `channel` looks like, for the error about one that does not.
fn id_form(channel: ChannelKind) -> &'static str {
    match channel {
        ChannelKind::Slack => "a Slack id is letters and digits like U012AB3CD (a member) or C0123ABCD (a channel)",
        ChannelKind::Whatsapp => "a WhatsApp id is the phone number in international form, like +15551234567",
        ChannelKind::Email => "an email id is an address, like ana@example.com",
        _ => "the id must be the numeric id",
    }
}

/// An id of `channel` in the form messages carry it (`None`: not an id):
/// Slack's upper case, a WhatsApp number's digits (WhatsApp sends `wa_id`s
/// without the `+`), an email address in lower case.
pub fn principal_id(channel: ChannelKind, id: &str) -> Option<String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match channel {
        ChannelKind::Telegram => digits(id.strip_prefix('-').unwrap_or(id)).then(|| id.to_owned()),
        ChannelKind::Discord => digits(id).then(|| id.to_owned()),
        ChannelKind::Slack => {
            let up = id.to_ascii_uppercase();
            (up.len() >= 2
                && up.starts_with(|c: char| c.is_ascii_uppercase())
                && up.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then_some(up)
        }
        ChannelKind::Whatsapp => {
            let n = id.strip_prefix('+').unwrap_or(id);
            (digits(n) && (7..=15).contains(&n.len())).then(|| n.to_owned())
        }
        ChannelKind::Email => {
            let a = id.to_ascii_lowercase();
            let (local, domain) = a.split_once('@')?;
            let ok = !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !a.contains(|c: char| c.is_whitespace() || matches!(c, ',' | '<' | '>' | '"'))
                && a.matches('@').count() == 1;
            ok.then_some(a)
        }
        _ => None,
    }
}
