//! One entry's record: the bytes the checkpoint stream and the log hold for an entry
//! (`id created_at kind name aliases content`, see [`crate::snapshot`]), read in place
//! without copying ([`EntryView`]) or decoded whole.
//!
//! It sits below both the entry table (which reads records lazily out of the
//! checkpoint) and the checkpoint format (which writes and validates them), so neither
//! has to import the other for it.

use crate::codec::{CorruptData, Reader, Writer};
use crate::entry::{Entry, EntryId, Kind};

const TOMBSTONE: u8 = 0;
const UPSERT: u8 = 1;

pub(crate) fn encode_entry(w: &mut Writer, entry: &Entry) {
    w.varint(entry.id);
    w.signed(entry.created_at);
    w.u8(entry.kind.code());
    w.str(&entry.name);
    w.varint(entry.aliases.len() as u64);
    for alias in &entry.aliases {
        w.str(alias);
    }
    w.str(&entry.content);
}

/// An entry record read in place: every field validated, nothing copied.
pub(crate) struct EntryView<'a> {
    pub id: EntryId,
    pub created_at: i64,
    pub kind: Kind,
    pub name: &'a str,
    alias_count: usize,
    alias_bytes: &'a [u8],
    pub content: &'a str,
}

impl<'a> EntryView<'a> {
    /// Reads and validates a whole record.
    pub fn read(r: &mut Reader<'a>) -> Result<Self, CorruptData> {
        let (mut view, content) = Self::read_head(r)?;
        view.content = std::str::from_utf8(content).map_err(|_| CorruptData("invalid UTF-8"))?;
        Ok(view)
    }

    /// Reads a record whose content is not needed (left empty, and not validated: a
    /// record read again after the load's validation needs no second pass over it).
    pub fn read_names(r: &mut Reader<'a>) -> Result<Self, CorruptData> {
        Self::read_head(r).map(|(view, _)| view)
    }

    fn read_head(r: &mut Reader<'a>) -> Result<(Self, &'a [u8]), CorruptData> {
        let id = r.varint()?;
        let created_at = r.signed()?;
        let kind = Kind::from_code(r.u8()?).ok_or(CorruptData("unknown entry kind"))?;
        let name = r.str()?;
        let alias_count = r.count()?;
        let aliases_start = r.position();
        for _ in 0..alias_count {
            r.str()?;
        }
        let alias_bytes = r.since(aliases_start);
        let content_len = usize::try_from(r.varint()?).map_err(|_| CorruptData("length overflow"))?;
        let content = r.bytes(content_len)?;
        Ok((EntryView { id, created_at, kind, name, alias_count, alias_bytes, content: "" }, content))
    }

    pub fn aliases(&self) -> impl Iterator<Item = &'a str> {
        let mut r = Reader::new(self.alias_bytes);
        (0..self.alias_count).map_while(move |_| r.str().ok())
    }

    /// The name, then the aliases.
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        std::iter::once(self.name).chain(self.aliases())
    }

    pub fn to_entry(&self) -> Entry {
        Entry {
            id: self.id,
            name: self.name.to_owned(),
            aliases: self.aliases().map(str::to_owned).collect(),
            content: self.content.to_owned(),
            kind: self.kind,
            created_at: self.created_at,
        }
    }
}

pub(crate) fn decode_entry(r: &mut Reader<'_>) -> Result<Entry, CorruptData> {
    EntryView::read(r).map(|view| view.to_entry())
}

/// The log record of an entry's current state (`None`: removed).
pub(crate) fn encode_log_record(entry: Option<&Entry>) -> Vec<u8> {
    match entry {
        None => vec![TOMBSTONE],
        Some(entry) => {
            let mut w = Writer::with_capacity(entry.content.len() + entry.name.len() + 32);
            w.u8(UPSERT);
            encode_entry(&mut w, entry);
            w.buf
        }
    }
}

pub(crate) fn decode_log_record(entry_id: EntryId, record: &[u8]) -> Result<Option<Entry>, CorruptData> {
    let mut r = Reader::new(record);
    match r.u8()? {
        TOMBSTONE => Ok(None),
        UPSERT => {
            let entry = decode_entry(&mut r)?;
            if entry.id != entry_id {
                return Err(CorruptData("log record under the wrong entry id"));
            }
            Ok(Some(entry))
        }
        _ => Err(CorruptData("unknown log record tag")),
    }
}
