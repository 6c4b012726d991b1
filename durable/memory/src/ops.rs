//! The closed set of write operations of seed 002.

use crate::entry::Kind;

/// Every change to a memory goes through [`crate::MemoryStore::apply`] with one of these.
/// `name` fields accept the canonical name or any alias.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Create an entry. The caller supplies the time so the store stays deterministic.
    Add { name: String, content: String, kind: Kind, created_at: i64 },
    /// Make `new_name` the canonical name. The old canonical name is released (bind it
    /// with `Alias` to keep it); if `new_name` was an alias of the same entry it is
    /// promoted.
    Rename { name: String, new_name: String },
    /// Bind one more name to the entry. Binding a name the entry already has is a no-op.
    Alias { name: String, alias: String },
    /// Replace the content.
    Write { name: String, content: String },
    /// Delete the entry with its aliases. Its id is never reused.
    Remove { name: String },
}

impl Op {
    pub fn kind_name(&self) -> &'static str {
        match self {
            Op::Add { .. } => "add",
            Op::Rename { .. } => "rename",
            Op::Alias { .. } => "alias",
            Op::Write { .. } => "write",
            Op::Remove { .. } => "remove",
        }
    }
}
