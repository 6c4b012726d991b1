//! Discord's objects that interactions and Gateway messages share: the
//! `User`, the guild `Member` and the message `Attachment` (only the fields
//! Hearth reads; unknown ones are ignored). One definition for both ways in.

/// A Discord user (an interaction's invoker, a message's author or mention).
#[derive(Debug, Clone, PartialEq, Eq, hearth_json::Deserialize, Default)]
pub struct User {
    pub id: String,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub global_name: Option<String>,
    #[serde(default)]
    pub bot: bool,
}

impl User {
    /// The name people see: the display name, else the username.
    pub fn display(&self) -> String {
        self.global_name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| self.username.clone())
    }
}

/// A guild member: the user (interactions) and the server nickname (messages).
#[derive(Debug, Clone, PartialEq, Eq, hearth_json::Deserialize, Default)]
pub struct Member {
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub nick: Option<String>,
}

/// A file attached to a message (or to a command's option).
#[derive(Debug, Clone, PartialEq, Eq, hearth_json::Deserialize)]
pub struct Attachment {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub filename: String,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    pub url: String,
}
