//! A tiny, bounds-checked binary encoding for persisted records: LEB128 varints and
//! length-prefixed UTF-8. Decoding never panics: bad bytes are a [`CorruptData`] error.

/// Persisted bytes that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt memory data: {0}")]
pub struct CorruptData(pub &'static str);

#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(capacity: usize) -> Self {
        Writer { buf: Vec::with_capacity(capacity) }
    }

    #[inline]
    pub fn u8(&mut self, value: u8) {
        self.buf.push(value);
    }

    #[inline]
    pub fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    /// Zigzag, so small negative numbers stay short.
    pub fn signed(&mut self, value: i64) {
        self.varint(((value << 1) ^ (value >> 63)) as u64);
    }

    pub fn str(&mut self, value: &str) {
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value.as_bytes());
    }

    pub fn bytes(&mut self, value: &[u8]) {
        self.buf.extend_from_slice(value);
    }
}

pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    pub fn is_at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes read since `start` (a former [`Reader::position`]).
    pub fn since(&self, start: usize) -> &'a [u8] {
        self.data.get(start..self.pos).unwrap_or_default()
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, CorruptData> {
        let value = *self.data.get(self.pos).ok_or(CorruptData("truncated"))?;
        self.pos += 1;
        Ok(value)
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64, CorruptData> {
        // Most varints (lengths, deltas, ids, counts) are one or two bytes.
        if let Some(&low) = self.data.get(self.pos) {
            if low < 0x80 {
                self.pos += 1;
                return Ok(u64::from(low));
            }
            if let Some(&high) = self.data.get(self.pos + 1) {
                if high < 0x80 {
                    self.pos += 2;
                    return Ok(u64::from(low & 0x7f) | u64::from(high) << 7);
                }
            }
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Result<u64, CorruptData> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = self.u8()?;
            if shift == 63 && byte > 1 {
                return Err(CorruptData("varint overflow"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(CorruptData("varint overflow"));
            }
        }
    }

    /// A varint that must fit a `u32` (counts, lengths, frequencies).
    #[inline]
    pub fn varint_u32(&mut self) -> Result<u32, CorruptData> {
        u32::try_from(self.varint()?).map_err(|_| CorruptData("value out of range"))
    }

    pub fn signed(&mut self) -> Result<i64, CorruptData> {
        let raw = self.varint()?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    pub fn bytes(&mut self, len: usize) -> Result<&'a [u8], CorruptData> {
        let end = self.pos.checked_add(len).ok_or(CorruptData("length overflow"))?;
        let slice = self.data.get(self.pos..end).ok_or(CorruptData("truncated"))?;
        self.pos = end;
        Ok(slice)
    }

    pub fn str(&mut self) -> Result<&'a str, CorruptData> {
        let len = usize::try_from(self.varint()?).map_err(|_| CorruptData("length overflow"))?;
        std::str::from_utf8(self.bytes(len)?).map_err(|_| CorruptData("invalid UTF-8"))
    }

    /// A count of items that each take at least one byte: bounded by what is left, so a
    /// corrupt count cannot make us reserve gigabytes.
    pub fn count(&mut self) -> Result<usize, CorruptData> {
        let count = self.varint()?;
        if count > (self.data.len() - self.pos.min(self.data.len())) as u64 {
            return Err(CorruptData("count larger than the data"));
        }
        Ok(count as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut w = Writer::default();
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            w.varint(v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, 1_700_000_000_000] {
            w.signed(v);
        }
        w.str("Müller 東京");
        let mut r = Reader::new(&w.buf);
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            assert_eq!(r.varint().unwrap(), v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, 1_700_000_000_000] {
            assert_eq!(r.signed().unwrap(), v);
        }
        assert_eq!(r.str().unwrap(), "Müller 東京");
        assert!(r.is_at_end());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        assert!(Reader::new(&[5, b'a']).str().is_err());
        assert!(Reader::new(&[2, 0xff, 0xfe]).str().is_err());
        assert!(Reader::new(&[0xff, 0xff, 0xff, 0x0f]).count().is_err());
        assert!(Reader::new(&[]).u8().is_err());
    }
}
