//! The persisted formats: the checkpoint stream and the per-entry log records.
//!
//! Checkpoint stream (cut into chunks of [`SNAPSHOT_CHUNK_BYTES`]):
//!
//! ```text
//! "HMEM" version:u8 tokenizer:u8 next_id:varint
//! entry_count:varint  entry*                       (ascending id)
//! slot_count:varint   (doc:varint len:varint)*      (live documents, index order)
//! term_count:varint   (text:str df:varint bytes:varint posting*df)* (terms with df > 0)
//! posting = (slot_delta << 1 | tf == 1):varint [tf:varint if tf != 1]
//! entry   = id:varint created_at:zigzag kind:u8 name:str alias_count:varint alias:str* content:str
//! ```
//!
//! The index section is term-major and each posting list is length-prefixed, which is
//! what makes a cold load cheap: the load reads the term dictionary and skips over the
//! posting lists, which stay encoded in the (shared) checkpoint buffer until a search or
//! a purge first needs them. Nothing is re-tokenized, no per-document term vector is
//! rebuilt, and terms nobody searches for are never decoded.
//!
//! Log record: `0` (tombstone) or `1 entry`.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::codec::{CorruptData, Reader, Writer};
use crate::entry::{Entry, EntryId, Kind};
use crate::index::{Bm25Index, FrozenPostings, Posting, Slot, Term};
use crate::norms::length_to_norm;
use crate::tokenize::Tokenizer;

const MAGIC: &[u8; 4] = b"HMEM";
const FORMAT_VERSION: u8 = 1;
/// Well under the Durable Object limit of 2 MB per value, with room for row overhead.
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

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

pub(crate) fn decode_entry(r: &mut Reader<'_>) -> Result<Entry, CorruptData> {
    let id = r.varint()?;
    let created_at = r.signed()?;
    let kind = Kind::from_code(r.u8()?).ok_or(CorruptData("unknown entry kind"))?;
    let name = r.str()?.to_owned();
    let alias_count = r.count()?;
    let mut aliases = Vec::with_capacity(alias_count);
    for _ in 0..alias_count {
        aliases.push(r.str()?.to_owned());
    }
    let content = r.str()?.to_owned();
    Ok(Entry { id, name, aliases, content, kind, created_at })
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

/// Encodes the whole state and cuts it into chunks.
pub(crate) fn encode_snapshot(entries: &BTreeMap<EntryId, Entry>, index: &Bm25Index, next_id: EntryId) -> Vec<Vec<u8>> {
    let content_bytes: usize = entries.values().map(|e| e.content.len() + e.name.len() + 16).sum();
    let mut w = Writer::with_capacity(content_bytes * 2 + 1024);
    w.bytes(MAGIC);
    w.u8(FORMAT_VERSION);
    w.u8(index.tokenizer.code());
    w.varint(next_id);
    w.varint(entries.len() as u64);
    for entry in entries.values() {
        encode_entry(&mut w, entry);
    }
    encode_index(&mut w, index);
    w.buf.chunks(SNAPSHOT_CHUNK_BYTES).map(<[u8]>::to_vec).collect()
}

fn encode_index(w: &mut Writer, index: &Bm25Index) {
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
    let mut text_of: Vec<&str> = vec![""; index.terms.len()];
    for (text, &id) in &index.dict {
        if let Some(slot) = text_of.get_mut(id as usize) {
            *slot = text;
        }
    }
    let used = index.terms.iter().zip(&text_of).filter(|(t, text)| t.df > 0 && !text.is_empty()).count();
    w.varint(used as u64);
    for (term, text) in index.terms.iter().zip(&text_of) {
        if term.df == 0 || text.is_empty() {
            continue;
        }
        w.str(text);
        w.varint(u64::from(term.df));
        scratch.buf.clear();
        let mut previous = 0u32;
        let mut written = 0u32;
        for posting in term.all_postings() {
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

/// Decodes one posting list (see the format above). Lazily called long after the load,
/// so it cannot report an error: it stops at the first malformed posting.
pub(crate) fn decode_postings(bytes: &[u8]) -> Vec<Posting> {
    let mut r = Reader::new(bytes);
    let mut postings = Vec::with_capacity(bytes.len() / 2 + 1);
    let mut slot = 0u32;
    while !r.is_at_end() {
        let Ok(code) = r.varint() else { break };
        let Ok(delta) = u32::try_from(code >> 1) else { break };
        let tf = if code & 1 == 1 {
            1
        } else {
            match r.varint_u32() {
                Ok(tf) if tf > 0 => tf,
                _ => break,
            }
        };
        if !postings.is_empty() && delta == 0 {
            break;
        }
        let Some(next) = slot.checked_add(delta) else { break };
        slot = next;
        postings.push(Posting { slot, tf });
    }
    postings
}

/// A decoded checkpoint.
pub(crate) struct DecodedSnapshot {
    pub next_id: EntryId,
    pub entries: BTreeMap<EntryId, Entry>,
    /// None when the snapshot was built with another tokenizer: the caller re-indexes.
    pub index: Option<Bm25Index>,
}

/// Decodes a checkpoint. The posting lists stay in `buffer`, decoded on first use.
pub(crate) fn decode_snapshot(buffer: Rc<Vec<u8>>, tokenizer: Tokenizer) -> Result<DecodedSnapshot, CorruptData> {
    let bytes: &[u8] = &buffer;
    let mut r = Reader::new(bytes);
    if r.bytes(4)? != MAGIC {
        return Err(CorruptData("not a memory snapshot"));
    }
    if r.u8()? != FORMAT_VERSION {
        return Err(CorruptData("unsupported memory snapshot version"));
    }
    let snapshot_tokenizer = Tokenizer::from_code(r.u8()?).ok_or(CorruptData("unknown tokenizer"))?;
    let next_id = r.varint()?;
    let entry_count = r.count()?;
    let mut previous_id = None;
    let mut sorted = Vec::with_capacity(entry_count);
    for _ in 0..entry_count {
        let entry = decode_entry(&mut r)?;
        if previous_id.is_some_and(|p| p >= entry.id) {
            return Err(CorruptData("snapshot entries out of order"));
        }
        previous_id = Some(entry.id);
        sorted.push((entry.id, entry));
    }
    let entries: BTreeMap<EntryId, Entry> = sorted.into_iter().collect();
    let index = if snapshot_tokenizer == tokenizer {
        Some(decode_index(&mut r, &buffer, tokenizer, &entries)?)
    } else {
        None
    };
    Ok(DecodedSnapshot { next_id, entries, index })
}

fn decode_index(
    r: &mut Reader<'_>,
    buffer: &Rc<Vec<u8>>,
    tokenizer: Tokenizer,
    entries: &BTreeMap<EntryId, Entry>,
) -> Result<Bm25Index, CorruptData> {
    let mut index = Bm25Index::new(tokenizer);
    let slot_count = r.count()?;
    if slot_count >= u32::MAX as usize {
        return Err(CorruptData("too many documents"));
    }
    index.slots.reserve_exact(slot_count);
    index.slot_of.reserve(slot_count);
    for _ in 0..slot_count {
        let doc = r.varint()?;
        let len = r.varint_u32()?;
        if !entries.contains_key(&doc) {
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
    index.dict.reserve(term_count);
    for _ in 0..term_count {
        let text = r.str()?;
        let df = r.varint_u32()?;
        let byte_len = r.count()?;
        let start = buffer.len() - r.remaining();
        r.bytes(byte_len)?;
        if df == 0 || df as usize > slot_count || byte_len < df as usize {
            return Err(CorruptData("invalid posting list"));
        }
        let id = index.terms.len() as u32;
        index.live_postings += u64::from(df);
        index.terms.push(Term { df, frozen: FrozenPostings::new(Rc::clone(buffer), start..start + byte_len), postings: Vec::new() });
        if text.is_empty() || index.dict.insert(text.into(), id).is_some() {
            return Err(CorruptData("invalid or repeated term"));
        }
    }
    if !r.is_at_end() {
        return Err(CorruptData("trailing bytes after the snapshot"));
    }
    Ok(index)
}
