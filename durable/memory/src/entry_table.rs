//! The store's entries, loaded lazily.
//!
//! After a cold load the checkpoint's entries stay encoded in its buffer (validated, not
//! copied): a [`FrozenEntry`] is an id, a kind and a byte range, and the entry is decoded
//! into an [`Entry`] the first time something reads it whole (a `get`, a search hit).
//! Names and indexed text are read in place, without decoding. An entry changed or added
//! since the checkpoint is an owned [`Entry`]; its frozen version, if any, is marked dead.
//! Ids are unique across both sets.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::rc::Rc;

use crate::codec::Reader;
use crate::entry::{Entry, EntryId, Kind};
use crate::entry_record::EntryView;

/// An entry still encoded in the checkpoint buffer.
#[derive(Debug)]
pub(crate) struct FrozenEntry {
    pub id: EntryId,
    start: u32,
    end: u32,
    kind: Kind,
    live: bool,
    /// Boxed: the struct stays at 32 bytes, and only entries read since the load pay.
    decoded: OnceCell<Box<Entry>>,
}

impl FrozenEntry {
    /// `start..end`: the record's bytes, already validated by [`EntryView::read`].
    pub fn new(id: EntryId, kind: Kind, start: u32, end: u32) -> Self {
        FrozenEntry { id, start, end, kind, live: true, decoded: OnceCell::new() }
    }

    /// The record's bytes in the checkpoint buffer.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One stored entry, as the checkpoint writer wants it.
pub(crate) enum Record<'a> {
    /// Still the checkpoint's bytes: copied as they are.
    Encoded(&'a [u8]),
    Decoded(&'a Entry),
}

#[derive(Clone, Copy)]
enum Slot<'a> {
    Frozen(&'a FrozenEntry),
    Owned(&'a Entry),
}

#[derive(Debug, Default)]
pub(crate) struct EntryTable {
    buffer: Rc<Vec<u8>>,
    /// Ascending ids.
    frozen: Vec<FrozenEntry>,
    owned: BTreeMap<EntryId, Entry>,
    len: usize,
    archives: usize,
}

impl EntryTable {
    /// The entries of a checkpoint (`frozen` in ascending id order).
    pub fn from_checkpoint(buffer: Rc<Vec<u8>>, frozen: Vec<FrozenEntry>) -> Self {
        let archives = frozen.iter().filter(|f| f.kind == Kind::Archive).count();
        EntryTable { buffer, len: frozen.len(), frozen, owned: BTreeMap::new(), archives }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn archives(&self) -> usize {
        self.archives
    }

    fn frozen_live(&self, id: EntryId) -> Option<&FrozenEntry> {
        let at = self.frozen.binary_search_by_key(&id, |f| f.id).ok()?;
        self.frozen.get(at).filter(|f| f.live)
    }

    fn slot(&self, id: EntryId) -> Option<Slot<'_>> {
        match self.owned.get(&id) {
            Some(entry) => Some(Slot::Owned(entry)),
            None => self.frozen_live(id).map(Slot::Frozen),
        }
    }

    fn view<'a>(&'a self, frozen: &FrozenEntry) -> Option<EntryView<'a>> {
        view(&self.buffer, frozen)
    }

    fn decoded<'a>(&'a self, frozen: &'a FrozenEntry) -> &'a Entry {
        frozen.decoded.get_or_init(|| Box::new(decode(&self.buffer, frozen)))
    }

    fn entry_of<'a>(&'a self, slot: Slot<'a>) -> &'a Entry {
        match slot {
            Slot::Owned(entry) => entry,
            Slot::Frozen(frozen) => self.decoded(frozen),
        }
    }

    /// The entry, decoded on first use.
    pub fn get(&self, id: EntryId) -> Option<&Entry> {
        self.slot(id).map(|slot| self.entry_of(slot))
    }

    pub fn kind(&self, id: EntryId) -> Option<Kind> {
        match self.slot(id)? {
            Slot::Owned(entry) => Some(entry.kind),
            Slot::Frozen(frozen) => Some(frozen.kind),
        }
    }

    /// Whether `name` is the entry's name or one of its aliases (read in place).
    pub fn has_name(&self, id: EntryId, name: &str) -> bool {
        let mut found = false;
        if let Some(slot) = self.slot(id) {
            self.for_each_name_of(slot, &mut |n| found |= n == name);
        }
        found
    }

    fn for_each_name_of(&self, slot: Slot<'_>, f: &mut dyn FnMut(&str)) {
        let entry = match slot {
            Slot::Owned(entry) => entry,
            Slot::Frozen(frozen) => match frozen.decoded.get() {
                Some(entry) => entry,
                None => {
                    let bytes = self.buffer.get(frozen.range()).unwrap_or_default();
                    if let Ok(view) = EntryView::read_names(&mut Reader::new(bytes)) {
                        view.names().for_each(f);
                    }
                    return;
                }
            },
        };
        std::iter::once(&entry.name).chain(&entry.aliases).for_each(|n| f(n));
    }

    /// The text the index saw for the entry (name and content), read in place.
    pub fn indexed_parts(&self, id: EntryId) -> Option<[&str; 2]> {
        self.slot(id).and_then(|slot| self.parts_of(slot))
    }

    fn parts_of<'a>(&'a self, slot: Slot<'a>) -> Option<[&'a str; 2]> {
        match slot {
            Slot::Owned(entry) => Some(entry.indexed_parts()),
            Slot::Frozen(frozen) => match frozen.decoded.get() {
                Some(entry) => Some(entry.indexed_parts()),
                None => self.view(frozen).map(|v| [v.name, v.content]),
            },
        }
    }

    /// Calls `f` with every entry's id and indexed text (to rebuild an index).
    pub fn for_each_indexed_parts(&self, mut f: impl FnMut(EntryId, [&str; 2])) {
        for (id, slot) in self.slots() {
            if let Some(parts) = self.parts_of(slot) {
                f(id, parts);
            }
        }
    }

    /// Adds `entry`, or replaces the entry with its id.
    pub fn insert(&mut self, entry: Entry) {
        self.remove_slot(entry.id);
        self.len += 1;
        if entry.kind == Kind::Archive {
            self.archives += 1;
        }
        self.owned.insert(entry.id, entry);
    }

    /// Removes the entry and returns it (decoded if it was still encoded).
    pub fn remove(&mut self, id: EntryId) -> Option<Entry> {
        self.remove_slot(id)
    }

    fn remove_slot(&mut self, id: EntryId) -> Option<Entry> {
        let removed = match self.owned.remove(&id) {
            Some(entry) => entry,
            None => {
                let at = self.frozen.binary_search_by_key(&id, |f| f.id).ok()?;
                let frozen = self.frozen.get_mut(at).filter(|f| f.live)?;
                frozen.live = false;
                match frozen.decoded.take() {
                    Some(entry) => *entry,
                    None => decode(&self.buffer, frozen),
                }
            }
        };
        self.len -= 1;
        if removed.kind == Kind::Archive {
            self.archives -= 1;
        }
        Some(removed)
    }

    /// Live entries by ascending id, without decoding.
    fn slots(&self) -> impl Iterator<Item = (EntryId, Slot<'_>)> {
        let frozen = self.frozen.iter().filter(|f| f.live).map(|f| (f.id, Slot::Frozen(f)));
        let owned = self.owned.values().map(|e| (e.id, Slot::Owned(e)));
        MergeById { a: frozen.peekable(), b: owned.peekable() }
    }

    /// All entries by ascending id (decodes each on first use).
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.slots().map(|(_, slot)| self.entry_of(slot))
    }

    /// `limit` live entries newest first (descending id) after skipping the
    /// `offset` newest; only the page is decoded.
    pub fn newest(&self, offset: usize, limit: usize) -> Vec<&Entry> {
        let end = self.len.saturating_sub(offset);
        let start = end.saturating_sub(limit);
        let mut page: Vec<&Entry> = self.slots().skip(start).take(end - start).map(|(_, s)| self.entry_of(s)).collect();
        page.reverse();
        page
    }

    /// All entries by ascending id, as the checkpoint writer wants them.
    pub fn records(&self) -> impl Iterator<Item = Record<'_>> {
        self.slots().map(|(_, slot)| match slot {
            Slot::Owned(entry) => Record::Decoded(entry),
            Slot::Frozen(frozen) => match self.buffer.get(frozen.range()) {
                Some(bytes) if frozen.decoded.get().is_none() => Record::Encoded(bytes),
                _ => Record::Decoded(self.decoded(frozen)),
            },
        })
    }

    /// Bytes of names and contents (an estimate of the checkpoint's size).
    pub fn text_bytes_estimate(&self) -> usize {
        let frozen: usize = self.frozen.iter().filter(|f| f.live).map(|f| (f.end - f.start) as usize).sum();
        frozen + self.owned.values().map(|e| e.content.len() + e.name.len() + 16).sum::<usize>()
    }

    pub fn last_id(&self) -> Option<EntryId> {
        let frozen = self.frozen.iter().rev().find(|f| f.live).map(|f| f.id);
        let owned = self.owned.last_key_value().map(|(&id, _)| id);
        frozen.max(owned)
    }
}

fn view<'a>(buffer: &'a [u8], frozen: &FrozenEntry) -> Option<EntryView<'a>> {
    let bytes = buffer.get(frozen.range())?;
    EntryView::read(&mut Reader::new(bytes)).ok()
}

fn decode(buffer: &[u8], frozen: &FrozenEntry) -> Entry {
    match view(buffer, frozen) {
        Some(view) => view.to_entry(),
        // Unreachable: the record was validated at load. Never panic on stored data.
        None => Entry {
            id: frozen.id,
            name: String::new(),
            aliases: Vec::new(),
            content: String::new(),
            kind: frozen.kind,
            created_at: 0,
        },
    }
}

/// Merges two id-ordered sequences with disjoint ids.
struct MergeById<A: Iterator, B: Iterator> {
    a: Peekable<A>,
    b: Peekable<B>,
}

impl<'t, A, B> Iterator for MergeById<A, B>
where
    A: Iterator<Item = (EntryId, Slot<'t>)>,
    B: Iterator<Item = (EntryId, Slot<'t>)>,
{
    type Item = (EntryId, Slot<'t>);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some(a), Some(b)) if b.0 < a.0 => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}
