//! A button, as every platform's folder draws it and reads a tap on it
//! (the dispatch to the owner's platform is `crate::channels::buttons`).

use crate::inbound::ChannelKind;

/// A button: what it says and what a tap on it sends back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub data: String,
}

impl Button {
    pub fn approve(data: impl Into<String>) -> Self {
        Button { label: "✅ Approve".into(), data: data.into() }
    }

    pub fn deny(data: impl Into<String>) -> Self {
        Button { label: "❌ Deny".into(), data: data.into() }
    }

    /// Whether this is the affirmative button (some platforms colour it).
    pub fn is_yes(&self) -> bool {
        self.data.ends_with(":a")
    }
}

/// A message with buttons, where it is: `(channel, chat, message id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub channel: ChannelKind,
    pub chat: String,
    pub message: String,
}
