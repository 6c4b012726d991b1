//! Lucene's one-byte document-length norms (`org.apache.lucene.util.SmallFloat`).
//!
//! Lucene 8 does not store a document's exact length: `BM25Similarity.computeNorm` keeps
//! it in one byte with `SmallFloat.intToByte4`, which is exact below 24 and keeps 4
//! significant bits (an implicit leading one and 3 mantissa bits) above. Scoring then uses
//! the decoded, approximate length. To rank exactly like Lucene we must quantise the same
//! way, so this file is a line-by-line port, evaluated at compile time into a table.

/// Values below this are stored exactly: `255 - longToInt4(Integer.MAX_VALUE)`.
pub const NUM_FREE_VALUES: u32 = 24;

/// Lucene lengths are Java `int`s; longer documents saturate at the largest code (255).
const MAX_LENGTH: u32 = i32::MAX as u32;

/// `SmallFloat.longToInt4`: a 4-bit float with 3 mantissa bits and an implicit leading one.
const fn long_to_int4(i: u32) -> u32 {
    let num_bits = 32 - i.leading_zeros();
    if num_bits < 4 {
        // Subnormal value: stored as is.
        i
    } else {
        let shift = num_bits - 4;
        // Keep the 4 most significant bits, drop the implicit leading one...
        let mantissa = (i >> shift) & 0x07;
        // ...and store the shift plus one (0 is reserved for subnormals).
        mantissa | ((shift + 1) << 3)
    }
}

/// `SmallFloat.int4ToLong`, the inverse of [`long_to_int4`] (rounding down).
const fn int4_to_long(i: u32) -> u32 {
    let bits = i & 0x07;
    let shift = i >> 3;
    if shift == 0 {
        bits
    } else {
        (bits | 0x08) << (shift - 1)
    }
}

/// `SmallFloat.intToByte4`: encodes a document length (number of tokens) into one byte.
pub const fn length_to_norm(length: u32) -> u8 {
    let length = if length > MAX_LENGTH { MAX_LENGTH } else { length };
    if length < NUM_FREE_VALUES {
        length as u8
    } else {
        (NUM_FREE_VALUES + long_to_int4(length - NUM_FREE_VALUES)) as u8
    }
}

/// `SmallFloat.byte4ToInt`: the approximate length a norm byte stands for.
pub const fn norm_to_length(norm: u8) -> u32 {
    let code = norm as u32;
    if code < NUM_FREE_VALUES {
        code
    } else {
        NUM_FREE_VALUES + int4_to_long(code - NUM_FREE_VALUES)
    }
}

/// `BM25Similarity.LENGTH_TABLE`: the decoded length of every norm byte, as the `float`
/// Lucene divides by avgdl (every value has at most 4 significant bits, so it is exact).
pub const LENGTH_TABLE: [f32; 256] = {
    let mut table = [0.0f32; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = norm_to_length(i as u8) as f32;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_24_then_three_mantissa_bits() {
        for len in 0..24 {
            assert_eq!(norm_to_length(length_to_norm(len)), len);
        }
        // Values checked against Lucene 8's SmallFloat.
        assert_eq!(length_to_norm(24), 24);
        assert_eq!(length_to_norm(25), 25);
        assert_eq!(norm_to_length(length_to_norm(40)), 40);
        assert_eq!(norm_to_length(length_to_norm(41)), 40);
        assert_eq!(norm_to_length(length_to_norm(100)), 96);
        assert_eq!(norm_to_length(length_to_norm(1000)), 984);
        assert_eq!(length_to_norm(i32::MAX as u32), 255);
        assert_eq!(length_to_norm(u32::MAX), 255);
        assert_eq!(norm_to_length(255), 2_013_265_944);
    }

    #[test]
    fn encoding_is_monotonic_and_decoding_rounds_down() {
        let mut previous = 0u8;
        for len in 0..100_000u32 {
            let norm = length_to_norm(len);
            assert!(norm >= previous);
            assert!(norm_to_length(norm) <= len);
            previous = norm;
        }
    }
}
