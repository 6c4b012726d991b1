//! The conversation index's checkpoint.
//!
//! ```text
//! "HCNV" version:u8 tokenizer:u8 last_id:varint
//! turn_count:varint (session:varint at_delta:zigzag)*   (slot order)
//! index section (as the notes checkpoint writes it: slots, then sorted terms)
//! ```
//!
//! Exchanges are never removed, so every slot is live and the turn records line up with
//! the index's slots one to one. Session lengths are not stored: the load sums them
//! from the slots. Like the notes checkpoint, a load copies nothing out of the buffer:
//! posting lists are decoded when a search reads them.

use std::rc::Rc;

use super::{ConversationIndex, TurnMeta};
use crate::codec::{CorruptData, Reader, Writer};
use crate::snapshot::{decode_index, encode_index, SNAPSHOT_CHUNK_BYTES};
use crate::tokenize::Tokenizer;

const MAGIC: &[u8; 4] = b"HCNV";
const FORMAT_VERSION: u8 = 1;

impl ConversationIndex {
    /// The whole index as checkpoint chunks (each ≤ [`SNAPSHOT_CHUNK_BYTES`]).
    pub fn checkpoint(&self) -> Vec<Vec<u8>> {
        let mut w = Writer::with_capacity(self.turns.len() * 48 + 1024);
        w.bytes(MAGIC);
        w.u8(FORMAT_VERSION);
        w.u8(self.index.tokenizer().code());
        w.varint(self.last_id);
        w.varint(self.turns.len() as u64);
        let mut previous = 0i64;
        for t in &self.turns {
            w.varint(u64::from(t.session));
            w.signed(t.at.wrapping_sub(previous));
            previous = t.at;
        }
        encode_index(&mut w, &self.index);
        w.buf.chunks(SNAPSHOT_CHUNK_BYTES).map(<[u8]>::to_vec).collect()
    }

    /// Loads a checkpoint (its chunks joined, in order). A checkpoint of another
    /// tokenizer or format is an error: the host rebuilds the index from its exchanges.
    pub fn from_checkpoint(buffer: Vec<u8>) -> Result<Self, CorruptData> {
        let buffer = Rc::new(buffer);
        let bytes: &[u8] = &buffer;
        if u32::try_from(bytes.len()).is_err() {
            return Err(CorruptData("conversation checkpoint too large"));
        }
        let mut r = Reader::new(bytes);
        if r.bytes(4)? != MAGIC {
            return Err(CorruptData("not a conversation checkpoint"));
        }
        if r.u8()? != FORMAT_VERSION {
            return Err(CorruptData("unsupported conversation checkpoint version"));
        }
        if Tokenizer::from_code(r.u8()?) != Some(Tokenizer::Prefixed) {
            return Err(CorruptData("conversation checkpoint of another tokenizer"));
        }
        let last_id = r.varint()?;
        let count = r.count()?;
        let mut turns = Vec::with_capacity(count);
        let mut at = 0i64;
        for _ in 0..count {
            let session = r.varint_u32()?;
            at = at.wrapping_add(r.signed()?);
            turns.push(TurnMeta { session, at });
        }
        let index = decode_index(&mut r, &buffer, Tokenizer::Prefixed, |id| id <= last_id, true)?;
        if index.slots.len() != turns.len() {
            return Err(CorruptData("conversation checkpoint: turns and slots differ"));
        }
        if index.slots.windows(2).any(|w| w[0].doc >= w[1].doc) {
            return Err(CorruptData("conversation checkpoint: ids out of order"));
        }
        let mut session_len: Vec<u64> = Vec::new();
        let mut window_total = 0u64;
        for (i, (t, slot)) in turns.iter().zip(&index.slots).enumerate() {
            window_total += super::window_growth(i + 1, &turns[..i], t.session, u64::from(slot.len), |x| {
                u64::from(index.slots[x].len)
            });
            let s = t.session as usize;
            if s >= session_len.len() {
                // Ordinals are dense: a gap this large is corruption, not data.
                if s > turns.len() {
                    return Err(CorruptData("conversation checkpoint: session out of range"));
                }
                session_len.resize(s + 1, 0);
            }
            session_len[s] += u64::from(slot.len);
        }
        Ok(ConversationIndex { index, turns, session_len, window_total, last_id, scratch: Default::default() })
    }
}
