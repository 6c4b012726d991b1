//! The codes people send to the agent: eight characters from an alphabet
//! without the ones people confuse (no `0`/`O`, `1`/`I`/`L`), so a code
//! read off a screen and typed on a phone is the code. 31⁸ ≈ 8.5·10¹¹
//! codes: a guesser sending a message a second would need thousands of
//! years to hit one live code, and each is single use and short-lived.

/// The characters of a code.
pub const ALPHABET: &[u8; 31] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// A code's length.
pub const LEN: usize = 8;

/// A code from random hex (a UUID's, or any 32+ hex digits): each character
/// takes the remainder of the number the hex spells, base 31. `None`: not
/// enough hex digits to draw from.
pub fn from_random(hex: &str) -> Option<String> {
    let digits: Vec<u8> = hex.bytes().filter_map(|b| (b as char).to_digit(16).map(|d| d as u8)).collect::<Vec<_>>();
    if digits.len() < 24 {
        return None;
    }
    // Two 48-bit halves: 31^4 < 2^20, so four characters come from each with
    // a bias far below anything a guesser could use.
    let half = |ds: &[u8]| ds.iter().fold(0u64, |n, d| (n << 4) | u64::from(*d));
    let (mut a, mut b) = (half(&digits[..12]), half(&digits[12..24]));
    let mut out = String::with_capacity(LEN);
    for i in 0..LEN {
        let n = if i < LEN / 2 { &mut a } else { &mut b };
        out.push(ALPHABET[(*n % 31) as usize] as char);
        *n /= 31;
    }
    Some(out)
}

/// A code as someone typed it: case, spaces and dashes do not matter.
/// `None`: not a code (wrong length, or a character codes never have).
pub fn normalize(typed: &str) -> Option<String> {
    let code: String =
        typed.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_uppercase()).collect();
    (code.len() == LEN && code.bytes().all(|b| ALPHABET.contains(&b))).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_eight_unambiguous_characters_and_typing_forgives_case_and_dashes() {
        let uuids = ["9f0c2d4e-7a1b-4c3d-9e8f-0123456789ab", "00000000-0000-4000-8000-000000000000"];
        let codes: Vec<String> = uuids.iter().map(|u| from_random(u).unwrap()).collect();
        for c in &codes {
            assert_eq!(c.len(), LEN);
            assert!(c.bytes().all(|b| ALPHABET.contains(&b)), "{c}");
            assert!(!c.contains(['0', 'O', '1', 'I', 'L']), "{c}");
            assert_eq!(normalize(&c.to_lowercase()).as_deref(), Some(c.as_str()));
            assert_eq!(normalize(&format!(" {}-{} ", &c[..4], &c[4..])).as_deref(), Some(c.as_str()));
        }
        assert_ne!(codes[0], codes[1]);
        assert_eq!(from_random("abc"), None);
        for bad in ["", "ABCDEFG", "ABCDEFGHJ", "ABCD0FGH", "ABCDOFGH", "ABCD1FGH", "ABCDÉFGH"] {
            assert_eq!(normalize(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn different_random_gives_codes_spread_over_the_alphabet() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..400u64 {
            let hex = format!("{:016x}{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i ^ 0xDEAD_BEEF);
            for c in from_random(&hex).unwrap().chars() {
                seen.insert(c);
            }
        }
        assert_eq!(seen.len(), ALPHABET.len(), "every character turns up");
    }
}
