//! Differential tests: every answer against std's parser and printer.

use super::*;

/// A 64-bit LCG (Knuth's MMIX constants), high bits out: reproducible
/// inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 ^ (self.0 >> 29)
    }
    fn below(&mut self, n: u64) -> u64 {
        (self.next() >> 16) % n
    }
}

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Whether `read_*` may say `None` where std reads `v` from `s`: zero is always
/// read; below 10^-8 (a last digit may be past the 27th place), from 10^46, or
/// more than 19 significant digits.
fn outside(s: &str, v: f64) -> bool {
    let digits = s.split(['e', 'E']).next().unwrap_or("").trim_start_matches(['-', '+']);
    let significant = digits.replace('.', "").trim_start_matches('0').trim_end_matches('0').len();
    v != 0.0 && (v.abs() < 1e-8 || v.abs() >= 1e46 || significant > 19)
}

fn check(s: &str) -> bool {
    let ours = read_f64(s);
    match (ours, s.parse::<f64>()) {
        (Some(a), Ok(b)) => assert!(same64(a, b), "{s:?}: read {a:e}, std {b:e}"),
        (Some(a), Err(_)) => panic!("{s:?}: read {a:e}, std refuses it"),
        (None, Ok(b)) => assert!(outside(s, b), "{s:?}: refused, std reads {b:e}"),
        (None, Err(_)) => {}
    }
    match (read_f32(s), s.parse::<f32>()) {
        (Some(a), Ok(b)) => assert!(same32(a, b), "{s:?} as f32: read {a:e}, std {b:e}"),
        (Some(a), Err(_)) => panic!("{s:?} as f32: read {a:e}, std refuses it"),
        (None, Ok(b)) => {
            let wide = s.parse::<f64>().unwrap_or(f64::from(b));
            assert!(outside(s, wide), "{s:?} as f32: refused, std reads {b:e}")
        }
        (None, Err(_)) => {}
    }
    ours.is_some()
}

#[test]
fn the_syntax_is_std_s() {
    for s in [
        "",
        ".",
        "+",
        "-",
        "e",
        "e5",
        "1e",
        "1e+",
        "1e-",
        "1.2.3",
        " 1",
        "1 ",
        "1_000",
        "0x10",
        "1,5",
        "--1",
        "+-1",
        "1e5.5",
        "1ee5",
        ".e5",
        "infinit",
        "infinityy",
        "nan1",
        "in",
        "١",
        "1e٣",
        "$1",
        "1f",
        "1.5d",
    ] {
        assert!(read_f64(s).is_none() && s.parse::<f64>().is_err(), "{s:?}");
        assert!(read_f32(s).is_none(), "{s:?}");
    }
    for s in [
        "0",
        "-0",
        "+0",
        "00",
        "0.0",
        "-0.0",
        ".5",
        "5.",
        "-.5",
        "+5.",
        "1e0",
        "1E5",
        "1e+5",
        "1e-5",
        "1.5e-3",
        "0e999999999999999999999",
        "-0e-99999",
        "1.e5",
        "000000000000000000000000001",
        "0.000000000000000000001e21",
        "inf",
        "-inf",
        "+INF",
        "Infinity",
        "-iNfInItY",
        "nan",
        "NaN",
        "-nan",
        "+NAN",
        "20",
        "0.5",
        "$0.50",
        "1.2",
        "0.75",
        "1440",
        "0.25",
        "0.9",
        "120",
        "1.5",
        "5.000000000000000000000000000000000001",
    ] {
        check(s);
    }
    assert!(same64(read_f64("-0").unwrap(), -0.0));
    assert!(read_f64("-nan").unwrap().is_nan());
    assert_eq!(read_f64("-inf"), Some(f64::NEG_INFINITY));
}

#[test]
fn halfway_and_boundary_values_round_as_std() {
    for s in [
        "9007199254740993",            // 2^53 + 1: a tie, to even
        "9007199254740995",            // 2^53 + 3: a tie, to even (up)
        "9007199254740993.0000000001", // just above the tie
        "9007199254740992.9999999999", // just below
        "16777217",                    // 2^24 + 1: f32's tie
        "16777219",
        "16777217.000000001",
        "0.1",
        "0.2",
        "0.3",
        "2.2250738585072014e-308",
        "1.7976931348623157e308",
        "340282356779733661637539395458142568447", // f32::MAX's rounding boundary, below
        "340282356779733661637539395458142568448", // at it: rounds to infinity in f32
        "340282366920938463463374607431768211455", // 2^128 - 1
        "340282366920938463463374607431768211456", // 2^128: outside
        "1e-19",
        "1.0000000000000000001e-19",
        "0.0000000000000000001",
        "0.00000000000000000001",
        "0.012345678901234567891",
        "1e38",
        "1e39",
        "1e-20",
        "123456789012345678901234567890",
        "0.1000000000000000055511151231257827021181583404541015625", // 0.1's exact value
        "0.1000000000000000055511151231257827",
        "3.4028235e38",
        "1.17549435e-38",
        "4.9e-324",
    ] {
        check(s);
    }
}

#[test]
fn generated_numbers_read_as_std() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut read = 0;
    let total = 300_000;
    for _ in 0..total {
        let mut s = String::new();
        match rng.below(4) {
            0 => s.push('-'),
            1 if rng.below(4) == 0 => s.push('+'),
            _ => {}
        }
        let int = rng.below(22) as usize;
        let frac = rng.below(22) as usize;
        for _ in 0..int {
            s.push((b'0' + rng.below(10) as u8) as char);
        }
        if frac > 0 || rng.below(3) == 0 {
            s.push('.');
        }
        for _ in 0..frac {
            // Runs of 0s and 9s: near the rounding boundaries.
            let d = match rng.below(4) {
                0 => 0,
                1 => 9,
                _ => rng.below(10),
            };
            s.push((b'0' + d as u8) as char);
        }
        if rng.below(3) == 0 {
            s.push(if rng.below(2) == 0 { 'e' } else { 'E' });
            match rng.below(3) {
                0 => s.push('-'),
                1 => s.push('+'),
                _ => {}
            }
            s.push_str(&(rng.below(45)).to_string());
        }
        read += usize::from(check(&s));
    }
    // Most are in range (the rest: too large, too small, or not numbers).
    assert!(read > total / 2, "{read} of {total}");
}

#[test]
fn std_s_own_output_reads_back() {
    // Shortest and long forms of floats of every size: exactly what std reads.
    let mut rng = Rng(7);
    for _ in 0..100_000 {
        let x = f64::from_bits(rng.next());
        let y = f32::from_bits(rng.next() as u32);
        for s in [format!("{x}"), format!("{x:e}"), format!("{:.3}", x), format!("{y}"), format!("{y:e}")] {
            check(&s);
        }
        // Everyday sizes, where every float must read.
        let v = (rng.below(10_000_000) as f64) / [1.0, 10.0, 100.0, 1e4, 1e6][rng.below(5) as usize];
        assert!(check(&format!("{v}")), "{v}");
        assert!(check(&format!("{}", v as f32)), "{v}");
    }
}
