//! Why an operation or a load failed. Every failure is a value: the store never panics.

use crate::backend::BackendError;
use crate::codec::CorruptData;
use crate::entry::EntryId;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("a name must not be empty")]
    EmptyName,
    #[error("name is {len} bytes; the limit is {max}")]
    NameTooLong { len: usize, max: usize },
    #[error("a name must not contain control characters or line breaks")]
    InvalidName,
    #[error("the name {name:?} is already used by entry {entry}")]
    DuplicateName { name: String, entry: EntryId },
    #[error("no entry is named {0:?}")]
    UnknownName(String),
    #[error("the alias {alias:?} is already bound to entry {entry}")]
    AliasAlreadyBound { alias: String, entry: EntryId },
    #[error("an entry can have at most {max} aliases")]
    TooManyAliases { max: usize },
    #[error("content is {len} bytes; the limit is {max}")]
    ContentTooLarge { len: usize, max: usize },
    #[error("invalid memory configuration: {0}")]
    InvalidConfig(&'static str),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Corrupt(#[from] CorruptData),
}
