//! Who may use the HTTP API: `ADMIN_TOKEN` (the owner, every agent, the
//! admin routes) and the keys of `API_TOKENS`.
//!
//! `API_TOKENS` is a comma-separated list of `name:token:agents[:owner]`:
//! - `name`: lower-case letters, digits and `_` (up to 32), shown in logs
//!   and naming the key's threads;
//! - `token`: the bearer token, at least 16 characters, no `:`, `,` or spaces;
//! - `agents`: `*` or agent ids separated by `|`;
//! - `owner` (optional): the key speaks for the owner: it may use the thread
//!   `main` (the owner's main session, with MEMORY.md and USER.md) and see
//!   every thread and the notifications. Without it a key has threads of its
//!   own in the shared scope and never reaches the owner's private files.
//!
//! Example: `API_TOKENS=phone:8c1f…e2:*:owner,site:41d9…07:main|support`.

use super::read::ConfigError;

/// One key of `API_TOKENS`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub name: String,
    pub token: String,
    /// `None`: every agent.
    pub agents: Option<Vec<String>>,
    pub owner: bool,
}

impl std::fmt::Debug for ApiKey {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("name", &self.name)
            .field("agents", &self.agents)
            .field("owner", &self.owner)
            .finish()
    }
}

impl ApiKey {
    pub fn allows(&self, agent: &str) -> bool {
        self.agents.as_ref().is_none_or(|list| list.iter().any(|a| a == agent))
    }
}

/// Who is calling the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// `ADMIN_TOKEN`.
    Admin,
    Key(ApiKey),
}

impl Caller {
    /// The owner's credentials: the main thread, every thread, notifications.
    pub fn is_owner(&self) -> bool {
        match self {
            Caller::Admin => true,
            Caller::Key(k) => k.owner,
        }
    }

    /// For logs and the messages' sender.
    pub fn name(&self) -> &str {
        match self {
            Caller::Admin => "admin",
            Caller::Key(k) => &k.name,
        }
    }

    pub fn allows(&self, agent: &str) -> bool {
        match self {
            Caller::Admin => true,
            Caller::Key(k) => k.allows(agent),
        }
    }
}

const MIN_TOKEN_LEN: usize = 16;

/// Parses `API_TOKENS` (see the module docs). Errors name the entry by its
/// position and name, never its token.
pub fn parse_api_keys(raw: &str) -> Result<Vec<ApiKey>, ConfigError> {
    let invalid = |why: String| ConfigError::Invalid { name: "API_TOKENS".into(), why };
    let mut keys: Vec<ApiKey> = Vec::new();
    for (n, entry) in raw.split(',').map(str::trim).filter(|e| !e.is_empty()).enumerate() {
        let at = n + 1;
        let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
        let (name, token, agents, owner) = match parts.as_slice() {
            [name, token, agents] => (*name, *token, *agents, false),
            [name, token, agents, "owner"] => (*name, *token, *agents, true),
            [name, _, _, other] => {
                return Err(invalid(format!("entry {at} ({name}): the fourth part may only be `owner`, not {other:?}")))
            }
            _ => return Err(invalid(format!("entry {at} is not name:token:agents[:owner]"))),
        };
        let name_ok = !name.is_empty()
            && name.len() <= 32
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !name_ok {
            return Err(invalid(format!("entry {at}: the name {name:?} must be 1-32 of a-z, 0-9 and _")));
        }
        if token.len() < MIN_TOKEN_LEN || token.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(invalid(format!(
                "entry {at} ({name}): the token must be at least {MIN_TOKEN_LEN} characters without spaces"
            )));
        }
        let agents = match agents {
            "*" => None,
            "" => return Err(invalid(format!("entry {at} ({name}): name its agents (a|b) or * for all"))),
            list => Some(list.split('|').map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect()),
        };
        if keys.iter().any(|k| k.name == name) {
            return Err(invalid(format!("entry {at}: the name {name:?} is used twice")));
        }
        if keys.iter().any(|k| k.token == token) {
            return Err(invalid(format!("entry {at} ({name}): its token is another entry's")));
        }
        keys.push(ApiKey { name: name.to_owned(), token: token.to_owned(), agents, owner });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_agents_and_owner() {
        let keys = parse_api_keys(" phone:0123456789abcdef:*:owner , site:fedcba9876543210:main|support ").unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys[0].owner && keys[0].allows("anything"));
        assert!(!keys[1].owner && keys[1].allows("support") && !keys[1].allows("work"));
        assert!(parse_api_keys("").unwrap().is_empty());
        assert!(!format!("{:?}", keys[0]).contains("0123456789abcdef"), "the token never shows in logs");
    }

    #[test]
    fn bad_entries_are_named_without_their_tokens() {
        for (raw, says) in [
            ("site:short:*", "at least 16"),
            ("Site:0123456789abcdef:*", "a-z"),
            ("site:0123456789abcdef", "name:token:agents"),
            ("site:0123456789abcdef:", "name its agents"),
            ("site:0123456789abcdef:*:admin", "only be `owner`"),
            ("a:0123456789abcdef:*,a:fedcba9876543210:*", "used twice"),
            ("a:0123456789abcdef:*,b:0123456789abcdef:*", "another entry's"),
        ] {
            let e = parse_api_keys(raw).unwrap_err().to_string();
            assert!(e.contains("API_TOKENS") && e.contains(says), "{raw}: {e}");
            assert!(!e.contains("0123456789abcdef") && !e.contains("fedcba9876543210"), "{e}");
        }
    }
}
