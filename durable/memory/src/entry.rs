//! What the store holds: entries of seed 002.

/// Monotonic, assigned on insert, never reused (also after a removal or a restart).
pub type EntryId = u64;

/// Notes are written deliberately by the agent; archives are compaction summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Note,
    Archive,
}

impl Kind {
    pub(crate) fn code(self) -> u8 {
        match self {
            Kind::Note => 0,
            Kind::Archive => 1,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Kind> {
        match code {
            0 => Some(Kind::Note),
            1 => Some(Kind::Archive),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub id: EntryId,
    /// The canonical name: unique among all names and aliases of the store.
    pub name: String,
    /// Other names that resolve to this entry, in the order they were bound.
    pub aliases: Vec<String>,
    pub content: String,
    pub kind: Kind,
    /// Creation time, milliseconds since the Unix epoch (as given to [`crate::Op::Add`]).
    pub created_at: i64,
}

impl Entry {
    /// The text the index sees: name and content form one field (aliases add no tokens).
    pub(crate) fn indexed_parts(&self) -> [&str; 2] {
        [&self.name, &self.content]
    }
}

/// A search result: the entry and its BM25 score.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SearchHit<'a> {
    pub entry: &'a Entry,
    pub score: f32,
}
