//! Decimal text to `f64` / `f32`, correctly rounded, in integer arithmetic.

/// `s` as `s.parse::<f64>()` reads it, or `None` where that gives `Err`, and
/// also `None` for a number this reader cannot round exactly (see below).
///
/// The syntax is std's: an optional sign, digits with at most one `.` (at
/// least one digit), an optional exponent (`e` or `E`, an optional sign,
/// digits); or `inf`, `infinity`, `nan` in any case. No spaces, no `_`.
///
/// The value is exact (the nearest float, ties to even, as std) for zero,
/// infinity, NaN and every number written with at most 19 significant digits
/// (more where the rest do not change the nearest float), none of them past the
/// 27th decimal place, below 10^46 (in `f32`, infinity from 3.4e38 as std):
/// every number a setting or a `retry-after` header means. Anything else
/// (1e-30, 1e50, a 25-digit number on a rounding boundary) is `None`, as for
/// text that is not a number: callers answer with the error they give for that.
pub fn read_f64(s: &str) -> Option<f64> {
    read(s, F64).map(f64::from_bits)
}

/// `s` as `s.parse::<f32>()` reads it (rounded once, from the decimal), with
/// [`read_f64`]'s syntax and limits.
pub fn read_f32(s: &str) -> Option<f32> {
    read(s, F32).map(|bits| f32::from_bits(bits as u32))
}

/// An IEEE binary format: significand bits (the leading 1 included), exponent
/// bits, and the largest exponent (also the bias).
#[derive(Clone, Copy)]
struct Format {
    precision: u32,
    exp_bits: u32,
    max_exp: i32,
}

const F64: Format = Format { precision: 53, exp_bits: 11, max_exp: 1023 };
const F32: Format = Format { precision: 24, exp_bits: 8, max_exp: 127 };

impl Format {
    /// The bits of ±m × 2^(e - precision + 1), m's leading 1 at 2^(precision - 1)
    /// (m = 0: zero; e past the largest exponent: infinity); NaN when `nan`.
    fn bits(self, neg: bool, m: u64, e: i32, nan: bool) -> u64 {
        let fraction = self.precision - 1;
        let all_ones = ((1u64 << self.exp_bits) - 1) << fraction;
        let magnitude = if nan {
            // The quiet NaN of std's constants.
            all_ones | 1 << (fraction - 1)
        } else if m == 0 {
            0
        } else if e > self.max_exp {
            all_ones
        } else {
            ((e + self.max_exp) as u64) << fraction | (m & ((1 << fraction) - 1))
        };
        u64::from(neg) << (fraction + self.exp_bits) | magnitude
    }
}

/// The most significant digits kept: 10^19 < 2^64.
const KEPT: u32 = 19;

/// The largest power of five below 2^64 is 5^27: the smallest exponent read.
const MAX_FIFTHS: u32 = 27;

fn read(s: &str, format: Format) -> Option<u64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Some(format.bits(neg, 1, i32::MAX, false));
    }
    if body.eq_ignore_ascii_case("nan") {
        return Some(format.bits(neg, 0, 0, true));
    }
    let bytes = body.as_bytes();
    let mut i = 0;
    // The significant digits as an integer `w` times 10^`q`; `cut`: a nonzero
    // digit past the 19 kept (the value is then between w and w + 1, times 10^q).
    let (mut w, mut q, mut kept, mut cut, mut digits) = (0u64, 0i64, 0u32, false, 0u32);
    let mut point = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'.' && !point {
            point = true;
        } else if b.is_ascii_digit() {
            digits += 1;
            let d = u64::from(b - b'0');
            if kept < KEPT && (kept > 0 || d > 0) {
                w = w * 10 + d;
                kept += 1;
                q -= i64::from(point);
            } else if kept == 0 {
                // A leading zero.
                q -= i64::from(point);
            } else {
                cut |= d > 0;
                q += i64::from(!point);
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < bytes.len() {
        if bytes[i] | 0x20 != b'e' {
            return None;
        }
        i += 1;
        let exp_neg = match bytes.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut exp = 0i64;
        while let Some(b) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
            // Saturates far past any float's range: 1e99999999999 is infinity, and
            // still beyond what this reader rounds.
            exp = (exp * 10 + i64::from(b - b'0')).min(1 << 40);
            i += 1;
        }
        if i == start || i < bytes.len() {
            return None;
        }
        q += if exp_neg { -exp } else { exp };
    }
    if w == 0 {
        return Some(format.bits(neg, 0, 0, false));
    }
    // Past 10^-27 the division below has too few bits: give up digits of `w`
    // (into `cut`) while that keeps some.
    while q < -i64::from(MAX_FIFTHS) && w >= 10 {
        cut |= w % 10 > 0;
        w /= 10;
        q += 1;
    }
    let q = i32::try_from(q).ok()?;
    let precision = format.precision;
    let low = nearest(w, q, precision)?;
    // The value lies in [w, w + 1) × 10^q: rounding is monotonic, so if both ends
    // round to the same float, so does the value.
    if cut && nearest(w + 1, q, precision)? != low {
        return None;
    }
    Some(format.bits(neg, low.0, low.1, false))
}

/// The float of `precision` bits nearest `w` × 10^`q` (ties to even), as its
/// significand (leading 1 included) and binary exponent; `None` for q < -27 or
/// w × 5^q ≥ 2^128. 10^q is 5^q × 2^q: only the power of five is arithmetic.
fn nearest(w: u64, q: i32, precision: u32) -> Option<(u64, i32)> {
    let (n, sticky, scale) = if q >= 0 {
        // An integer below 2^128: exact.
        let n = 5u128.checked_pow(q as u32)?.checked_mul(u128::from(w))?;
        (n, false, q)
    } else {
        let k = q.unsigned_abs();
        if k > MAX_FIFTHS {
            return None;
        }
        // (w × 2^(a + 64)) / 5^k with w × 2^a normalised to 64 bits and 5^k < 2^64:
        // a quotient of at least 64 bits, the remainder only telling whether
        // anything is left.
        let a = w.leading_zeros();
        let num = u128::from(w << a) << 64;
        let den = 5u128.pow(k);
        (num / den, num % den != 0, q - a as i32 - 64)
    };
    // n × 2^scale (+ a little if sticky): keep its top 64 bits.
    let lz = n.leading_zeros();
    let top = ((n << lz) >> 64) as u64;
    let sticky = sticky || (n << lz) as u64 != 0;
    // top's leading bit is 2^63 × 2^(64 - lz) × 2^scale.
    let mut exp = 63 + 64 - lz as i32 + scale;
    let shift = 64 - precision;
    let mut m = top >> shift;
    let rest = top & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && (sticky || m & 1 == 1)) {
        m += 1;
        if m >> precision != 0 {
            m >>= 1;
            exp += 1;
        }
    }
    Some((m, exp))
}
