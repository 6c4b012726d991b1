//! `{:.N}` of a float, from its exact binary value, in integer arithmetic;
//! `{}`, from the shortest digits serde_json's float writer finds.

use std::fmt;

/// `format!("{}", x)` of `x`, byte for byte: the shortest digits that read
/// back as `x` (as std's), laid out as std does (no exponent: `0.0000001`,
/// `100000000000000000000`, `12`, `-0`), `inf`, `-inf`, `NaN`. (Not for an
/// `f32`: its shortest digits are not its widened `f64`'s.)
#[derive(Clone, Copy, Debug)]
pub struct Shortest(pub f64);

impl fmt::Display for Shortest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.is_finite() {
            return non_finite(self.0, f);
        }
        plain(self.0, zmij::Buffer::new().format_finite(self.0), f)
    }
}

fn non_finite(x: f64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(match (x.is_nan(), x < 0.0) {
        (true, _) => "NaN",
        (false, true) => "-inf",
        (false, false) => "inf",
    })
}

/// zmij's text of `x` (`-1.5e-7`, `12.0`, `1e16`, `0.001`) as std lays it out.
fn plain(x: f64, text: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (neg, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().map_err(|_| fmt::Error)?),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The digits d1 d2 … dn and k: the value is 0.d1…dn × 10^k.
    let all = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let mut digits = all.trim_matches('0').to_owned();
    if neg {
        f.write_str("-")?;
    }
    if digits.is_empty() {
        return f.write_str("0");
    }
    let mut k = int.len() as i32 - lead as i32 + exp;
    // Two shortest candidates equally near: zmij takes the even one, std the
    // one above. Only the lower one can differ from std's.
    if halfway_above(x, &digits, k) {
        let mut up = digits.into_bytes();
        let mut i = up.len();
        loop {
            if i == 0 {
                up.insert(0, b'1');
                k += 1;
                break;
            }
            i -= 1;
            if up[i] == b'9' {
                up[i] = b'0';
            } else {
                up[i] += 1;
                break;
            }
        }
        digits = String::from_utf8(up).map_err(|_| fmt::Error)?.trim_end_matches('0').to_owned();
    }
    let digits = digits.as_str();
    let n = digits.len() as i32;
    if k <= 0 {
        f.write_str("0.")?;
        zeros(-k, f)?;
        f.write_str(digits)
    } else if k < n {
        f.write_str(&digits[..k as usize])?;
        f.write_str(".")?;
        f.write_str(&digits[k as usize..])
    } else {
        f.write_str(digits)?;
        zeros(k - n, f)
    }
}

/// Whether |x| is exactly (D + ½) × 10^(k - n), D being the n `digits` (the
/// value 0.D × 10^k): a tie between D and D + 1 in the last place.
fn halfway_above(x: f64, digits: &str, k: i32) -> bool {
    let Ok(d) = digits.parse::<u64>() else { return false };
    // The 5 sits at 10^-places; a tie needs 10^(k - n) below an ulp, so a
    // fraction (places ≥ 2), and 10D + 5 < 2^64 needs 5^places to be small.
    let places = 1 - (k - digits.len() as i32);
    if !(2..=27).contains(&places) || d >= u64::MAX / 10 {
        return false;
    }
    let bits = x.abs().to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if exp == 0 { (frac, -1074) } else { (frac | 1 << 52, exp - 1075) };
    // |x| × 10^places = m × 5^places × 2^(places + e), which must be 10D + 5.
    let n = u128::from(m) * 5u128.pow(places as u32);
    let shift = places + e;
    let scaled = if shift >= 0 {
        if n.leading_zeros() < shift as u32 + 64 {
            return false;
        }
        n << shift
    } else {
        let s = shift.unsigned_abs();
        if s >= 128 || n & ((1u128 << s) - 1) != 0 {
            return false;
        }
        n >> s
    };
    scaled == u128::from(d) * 10 + 5
}

fn zeros(n: i32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for _ in 0..n {
        f.write_str("0")?;
    }
    Ok(())
}

/// `format!("{:.N}", x)` of `x` with `N` = the second field (at most 20),
/// byte for byte: the exact value rounded half to even, `-` for any negative
/// value (`-0.00` too), `inf`, `-inf` and `NaN` as std writes them. An `f32`
/// prints the same through `f64::from(x)` (its exact value is the same).
/// Width, fill and sign flags are not read: write `{}` only.
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub f64, pub usize);

/// The most decimals [`Fixed`] writes: 2^53 × 10^20 < 2^128.
const MAX_DECIMALS: usize = 20;

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fixed(x, decimals) = *self;
        let decimals = decimals.min(MAX_DECIMALS);
        if x.is_nan() {
            return f.write_str("NaN");
        }
        if x.is_sign_negative() {
            f.write_str("-")?;
        }
        if x.is_infinite() {
            return f.write_str("inf");
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        // |x| = m × 2^e exactly.
        let (m, e) = if exp == 0 { (frac, -1074) } else { (frac | 1 << 52, exp - 1075) };
        let mut digits = [0u8; 330];
        let mut len = 0;
        let mut push = |d: u8| {
            digits[len] = d;
            len += 1;
        };
        if e >= 0 {
            // An integer: its digits, then zeros.
            big_digits(m, e as u32, &mut push);
        } else {
            // round(m × 10^d / 2^k), ties to even: m × 10^d < 2^53 × 10^20 < 2^128.
            let k = e.unsigned_abs();
            let n = u128::from(m) * 10u128.pow(decimals as u32);
            let r = if k >= 128 {
                // n < 2^127 < half of 2^k: rounds to 0.
                0
            } else {
                let (q, rest) = (n >> k, n & ((1u128 << k) - 1));
                let half = 1u128 << (k - 1);
                q + u128::from(rest > half || (rest == half && q & 1 == 1))
            };
            // At least decimals + 1 digits (a 0 before the point).
            let mut n = r;
            let mut count = 0;
            while n > 0 || count <= decimals {
                push((n % 10) as u8);
                n /= 10;
                count += 1;
            }
            let mut out = [0u8; 64];
            let mut at = 0;
            for i in (0..len).rev() {
                out[at] = b'0' + digits[i];
                at += 1;
                if i == decimals && decimals > 0 {
                    out[at] = b'.';
                    at += 1;
                }
            }
            return f.write_str(std::str::from_utf8(&out[..at]).map_err(|_| fmt::Error)?);
        }
        // Integer case: `digits` holds the integer's digits, lowest first.
        let mut out = [0u8; 330];
        for (i, d) in digits[..len].iter().rev().enumerate() {
            out[i] = b'0' + d;
        }
        f.write_str(std::str::from_utf8(&out[..len]).map_err(|_| fmt::Error)?)?;
        if decimals > 0 {
            f.write_str(".")?;
            f.write_str(&"00000000000000000000"[..decimals])?;
        }
        Ok(())
    }
}

/// The decimal digits of m × 2^e (lowest first), through limbs of base 10^9:
/// a float's integer part has at most 309 digits.
fn big_digits(m: u64, e: u32, push: &mut impl FnMut(u8)) {
    const BASE: u64 = 1_000_000_000;
    // Little-endian base-2^32 limbs: 2^1024 needs 32.
    let mut limbs = [0u32; 34];
    let (word, bit) = ((e / 32) as usize, e % 32);
    let wide = u128::from(m) << bit;
    limbs[word] = wide as u32;
    limbs[word + 1] = (wide >> 32) as u32;
    limbs[word + 2] = (wide >> 64) as u32;
    let mut top = word + 3;
    loop {
        while top > 0 && limbs[top - 1] == 0 {
            top -= 1;
        }
        // Divide by 10^9; the remainder is the next nine digits.
        let mut rest = 0u64;
        for limb in limbs[..top].iter_mut().rev() {
            let cur = rest << 32 | u64::from(*limb);
            *limb = (cur / BASE) as u32;
            rest = cur % BASE;
        }
        let last = top == 0 || limbs[..top].iter().all(|&l| l == 0);
        for _ in 0..9 {
            push((rest % 10) as u8);
            rest /= 10;
            if last && rest == 0 {
                break;
            }
        }
        if last {
            return;
        }
    }
}
