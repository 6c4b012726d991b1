//! The persisted formats: the checkpoint stream and the per-entry log records.
//!
//! Checkpoint stream (cut into chunks of [`SNAPSHOT_CHUNK_BYTES`]):
//!
//! ```text
//! "HMEM" version:u8 tokenizer:u8 next_id:varint
//! entry_count:varint  entry*                       (ascending id)
//! slot_count:varint   (doc:varint len:varint)*      (live documents, index order)
//! term_count:varint   (text:str df:varint bytes:varint posting*df)* (terms with df > 0,
//!                                                    by ascending text bytes since version 2)
//! posting = (slot_delta << 1 | tf == 1):varint [tf:varint if tf != 1]
//! entry   = id:varint created_at:zigzag kind:u8 name:str alias_count:varint alias:str* content:str
//! ```
//!
//! What makes a cold load cheap is that it copies nothing out of the checkpoint buffer:
//! it validates each entry record in place (lengths, UTF-8, id order) and remembers where
//! it is ([`crate::entry_table`] decodes it on first read); it records where each term's
//! text and posting list are (the index section is term-major and each posting list is
//! length-prefixed, so the load skips over them) and hashes the term into the dictionary.
//! Nothing is re-tokenized, no per-document term vector is rebuilt, no string is
//! allocated per entry or per term, and posting lists nobody searches are never decoded.
//!
//! Log record: `0` (tombstone) or `1 entry`.

use std::rc::Rc;

use crate::codec::{CorruptData, Reader, Writer};
use crate::entry::EntryId;
use crate::entry_record::{encode_entry, EntryView};
use crate::entry_table::{EntryTable, FrozenEntry, Record};
use crate::index::{Bm25Index, Slot, Term, TermText};
use crate::keys::KeyIndex;
use crate::norms::length_to_norm;
use crate::tokenize::Tokenizer;

const MAGIC: &[u8; 4] = b"HMEM";
/// Version 2 sorts the terms (a load then needs no hashing); version 1 is still read.
const FORMAT_VERSION: u8 = 2;
const FORMAT_VERSION_UNSORTED_TERMS: u8 = 1;
/// Well under the Durable Object limit of 2 MB per value, with room for row overhead.
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// Encodes the whole state and cuts it into chunks. Entries still encoded in the
/// checkpoint they were loaded from are copied as they are.
pub(crate) fn encode_snapshot(entries: &EntryTable, index: &Bm25Index, next_id: EntryId) -> Vec<Vec<u8>> {
    let mut w = Writer::with_capacity(entries.text_bytes_estimate() * 2 + 1024);
    w.bytes(MAGIC);
    w.u8(FORMAT_VERSION);
    w.u8(index.tokenizer.code());
    w.varint(next_id);
    w.varint(entries.len() as u64);
    for record in entries.records() {
        match record {
            Record::Encoded(bytes) => w.bytes(bytes),
            Record::Decoded(entry) => encode_entry(&mut w, entry),
        }
    }
    encode_index(&mut w, index);
    w.buf.chunks(SNAPSHOT_CHUNK_BYTES).map(<[u8]>::to_vec).collect()
}

pub(crate) fn encode_index(w: &mut Writer, index: &Bm25Index) {
    // Only live slots and used terms are written: the snapshot is also a purge.
    let mut slot_remap = vec![u32::MAX; index.slots.len()];
    let live = index.slots.iter().filter(|s| s.live).count();
    w.varint(live as u64);
    let mut next = 0u32;
    for (old, slot) in index.slots.iter().enumerate() {
        if slot.live {
            slot_remap[old] = next;
            next += 1;
            w.varint(slot.doc);
            w.varint(u64::from(slot.len));
        }
    }
    let mut scratch = Writer::default();
    let mut used: Vec<(&str, &Term)> = index
        .terms
        .iter()
        .enumerate()
        .filter(|(_, t)| t.df > 0)
        .map(|(id, t)| (index.term_text(id as u32), t))
        .collect();
    // Sorted, so the next load can binary-search them in place.
    used.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    w.varint(used.len() as u64);
    for (text, term) in used {
        w.str(text);
        w.varint(u64::from(term.df));
        scratch.buf.clear();
        let mut previous = 0u32;
        let mut written = 0u32;
        for posting in index.postings(term) {
            let Some(&slot) = slot_remap.get(posting.slot as usize) else { continue };
            if slot == u32::MAX {
                continue;
            }
            // Slots are increasing, so deltas are positive (the first is the slot itself).
            let delta = u64::from(slot - previous);
            previous = slot;
            written += 1;
            if posting.tf == 1 {
                scratch.varint(delta << 1 | 1);
            } else {
                scratch.varint(delta << 1);
                scratch.varint(u64::from(posting.tf));
            }
            if written == term.df {
                break;
            }
        }
        w.varint(scratch.buf.len() as u64);
        w.bytes(&scratch.buf);
    }
}

/// A decoded checkpoint.
pub(crate) struct DecodedSnapshot {
    pub next_id: EntryId,
    pub entries: EntryTable,
    /// Every name and alias of `entries` → its entry.
    pub names: KeyIndex<EntryId>,
    /// None when the snapshot was built with another tokenizer: the caller re-indexes.
    pub index: Option<Bm25Index>,
}

/// Decodes a checkpoint: validates it whole, and leaves entries and posting lists
/// encoded in `buffer`, decoded on first use.
pub(crate) fn decode_snapshot(buffer: Rc<Vec<u8>>, tokenizer: Tokenizer) -> Result<DecodedSnapshot, CorruptData> {
    let bytes: &[u8] = &buffer;
    if u32::try_from(bytes.len()).is_err() {
        return Err(CorruptData("memory snapshot too large"));
    }
    let mut r = Reader::new(bytes);
    if r.bytes(4)? != MAGIC {
        return Err(CorruptData("not a memory snapshot"));
    }
    let sorted_terms = match r.u8()? {
        FORMAT_VERSION => true,
        FORMAT_VERSION_UNSORTED_TERMS => false,
        _ => return Err(CorruptData("unsupported memory snapshot version")),
    };
    let snapshot_tokenizer = Tokenizer::from_code(r.u8()?).ok_or(CorruptData("unknown tokenizer"))?;
    let next_id = r.varint()?;
    let entry_count = r.count()?;
    let mut frozen: Vec<FrozenEntry> = Vec::with_capacity(entry_count);
    let mut names: KeyIndex<EntryId> = KeyIndex::with_capacity(entry_count);
    let mut clash = None;
    for _ in 0..entry_count {
        let start = r.position();
        let view = EntryView::read(&mut r)?;
        if frozen.last().is_some_and(|previous| previous.id >= view.id) {
            return Err(CorruptData("snapshot entries out of order"));
        }
        // The buffer is < 4 GiB (checked above), so positions fit a u32.
        frozen.push(FrozenEntry::new(view.id, view.kind, start as u32, r.position() as u32));
        for name in view.names() {
            let hash = names.hash(name.as_bytes());
            // Compared only when two names hash alike: practically never.
            let bound_to = |other: EntryId| entry_has_name(bytes, &frozen, other, name);
            if names.insert_hashed(hash, view.id, bound_to).is_err() {
                clash = Some(name);
            }
        }
    }
    if clash.is_some() {
        return Err(CorruptData("a name is bound twice"));
    }
    let index = if snapshot_tokenizer == tokenizer {
        let is_entry = |doc: EntryId| frozen.binary_search_by_key(&doc, |f| f.id).is_ok();
        Some(decode_index(&mut r, &buffer, tokenizer, is_entry, sorted_terms)?)
    } else {
        None
    };
    Ok(DecodedSnapshot { next_id, entries: EntryTable::from_checkpoint(Rc::clone(&buffer), frozen), names, index })
}

/// Whether the checkpointed entry `id` (among `frozen`, in `bytes`) is bound to `name`.
fn entry_has_name(bytes: &[u8], frozen: &[FrozenEntry], id: EntryId, name: &str) -> bool {
    let Ok(at) = frozen.binary_search_by_key(&id, |f| f.id) else { return false };
    let Some(record) = frozen.get(at).and_then(|f| bytes.get(f.range())) else { return false };
    EntryView::read_names(&mut Reader::new(record)).is_ok_and(|view| view.names().any(|n| n == name))
}

pub(crate) fn decode_index(
    r: &mut Reader<'_>,
    buffer: &Rc<Vec<u8>>,
    tokenizer: Tokenizer,
    is_entry: impl Fn(EntryId) -> bool,
    sorted_terms: bool,
) -> Result<Bm25Index, CorruptData> {
    let mut index = Bm25Index::over_checkpoint(tokenizer, Rc::clone(buffer));
    let slot_count = r.count()?;
    if slot_count >= u32::MAX as usize {
        return Err(CorruptData("too many documents"));
    }
    index.slots.reserve_exact(slot_count);
    index.slot_of.reserve(slot_count);
    for _ in 0..slot_count {
        let doc = r.varint()?;
        let len = r.varint_u32()?;
        if !is_entry(doc) {
            return Err(CorruptData("indexed document without an entry"));
        }
        let slot = index.slots.len() as u32;
        index.slots.push(Slot { doc, len, norm: length_to_norm(len), live: true });
        if index.slot_of.insert(doc, slot).is_some() {
            return Err(CorruptData("document indexed twice"));
        }
        if len > 0 {
            index.doc_count += 1;
            index.sum_total_term_freq += u64::from(len);
        }
    }
    let term_count = r.count()?;
    index.terms.reserve_exact(term_count);
    if !sorted_terms {
        index.dict.reserve(term_count);
    }
    let checkpoint: &[u8] = buffer;
    let mut previous: &[u8] = &[];
    for _ in 0..term_count {
        let text = r.str()?;
        let text_at =
            TermText::in_checkpoint(r.position() - text.len(), text.len()).ok_or(CorruptData("term out of range"))?;
        let df = r.varint_u32()?;
        let byte_len = r.count()?;
        let start = r.position();
        r.bytes(byte_len)?;
        if df == 0 || df as usize > slot_count || byte_len < df as usize {
            return Err(CorruptData("invalid posting list"));
        }
        if text.is_empty() {
            return Err(CorruptData("empty term"));
        }
        if sorted_terms {
            // Strictly ascending: sorted, and no term twice.
            if !index.terms.is_empty() && previous >= text.as_bytes() {
                return Err(CorruptData("terms out of order"));
            }
            previous = text.as_bytes();
        } else {
            let id = index.terms.len() as u32;
            let hash = index.dict.hash(text.as_bytes());
            let terms = &index.terms;
            let is_text =
                |other: u32| terms.get(other as usize).is_some_and(|t| t.text.bytes(checkpoint, "") == text.as_bytes());
            if index.dict.insert_hashed(hash, id, is_text).is_err() {
                return Err(CorruptData("repeated term"));
            }
        }
        index.live_postings += u64::from(df);
        index.terms.push(Term::frozen(text_at, df, (start as u32, byte_len as u32)));
    }
    if !r.is_at_end() {
        return Err(CorruptData("trailing bytes after the snapshot"));
    }
    if sorted_terms {
        index.sorted_only = index.terms.len() as u32;
        index.sorted_lookups_left = index.sorted_only / 4;
    }
    Ok(index)
}
