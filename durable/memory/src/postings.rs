//! Posting lists: one posting per (term, document), and the decoder of the
//! checkpoint's delta-coded lists (`(slot_delta << 1 | tf == 1):varint [tf:varint]`,
//! see [`crate::snapshot`]).
//!
//! Below both the index (which reads checkpointed lists as it searches) and the
//! checkpoint format (which writes them), so neither imports the other for it.

use crate::codec::Reader;

/// A document's occurrences of a term: its slot in the index and how often.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Posting {
    pub slot: u32,
    pub tf: u32,
}

/// Decodes a posting list (see the format above) as it is read: checkpointed lists are
/// only ever read this way, long after the load, so a malformed posting cannot be
/// reported as an error: the list ends there.
pub(crate) struct PostingDecoder<'a> {
    r: Reader<'a>,
    slot: u32,
    started: bool,
}

impl<'a> PostingDecoder<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        PostingDecoder { r: Reader::new(bytes), slot: 0, started: false }
    }

    fn read(&mut self) -> Option<Posting> {
        let code = self.r.varint().ok()?;
        let delta = u32::try_from(code >> 1).ok()?;
        let tf = if code & 1 == 1 { 1 } else { self.r.varint_u32().ok().filter(|&tf| tf > 0)? };
        if self.started && delta == 0 {
            return None;
        }
        self.started = true;
        self.slot = self.slot.checked_add(delta)?;
        Some(Posting { slot: self.slot, tf })
    }
}

impl Iterator for PostingDecoder<'_> {
    type Item = Posting;

    #[inline]
    fn next(&mut self) -> Option<Posting> {
        if self.r.is_at_end() {
            return None;
        }
        let posting = self.read();
        if posting.is_none() {
            // Stop for good after a malformed posting.
            self.r = Reader::new(&[]);
        }
        posting
    }
}
