//! Turning text into search terms.
//!
//! Two tokenizers, chosen per store:
//!
//! - [`Tokenizer::Unicode`], for real users: UAX #29 word boundaries
//!   (`unicode-segmentation`) and full Unicode lowercasing, so "Müller", "canción",
//!   "Straße" or "東京" are findable. Like Lucene's `StandardTokenizer`, a run of
//!   ideographs splits into one token per ideograph (and a query splits the same way,
//!   so "東京" matches "東京都"); Katakana runs stay whole. No stop words (the store is
//!   multilingual and BM25's idf already discounts common words) and no stemming.
//! - [`Tokenizer::Reference`], for the Cranfield parity check: the README's tokenization,
//!   lowercase ASCII `[a-z0-9]+` runs with Lucene's 33 English stop words removed.
//!
//! Query terms are always deduplicated ([`Tokenizer::query_terms`]): a word typed twice
//! does not count twice.

use unicode_segmentation::UnicodeSegmentation;

use crate::keys::KeyIndex;

/// Tokens longer than this are dropped (base64 blobs, hashes): Lucene's
/// `StandardTokenizer` caps tokens at 255 characters too.
pub const MAX_TOKEN_BYTES: usize = 255;

/// `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET` (Lucene 8), sorted for binary search.
pub const LUCENE_ENGLISH_STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Which tokenization a store uses. Persisted snapshots record it, so changing it
/// re-tokenizes once on the next load instead of silently mixing two vocabularies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tokenizer {
    /// Multilingual: Unicode word boundaries and lowercasing.
    #[default]
    Unicode,
    /// The Cranfield README's reference: lowercase ASCII alphanumerics, English stop words out.
    Reference,
    /// For conversation text ([`crate::conversation`]): each [`Tokenizer::Unicode`] word
    /// becomes its first [`PREFIX_CHARS`] characters, plus the whole word marked with
    /// [`EXACT_MARK`] when it is longer. A prefix is a crude, language-blind stem ("paint",
    /// "painting", "paintings" meet); the exact form keeps a whole-word match worth more.
    Prefixed,
}

/// Characters of a word that form its prefix term ([`Tokenizer::Prefixed`]).
pub const PREFIX_CHARS: usize = 5;
/// Marks a whole-word term ([`Tokenizer::Prefixed`]): no word starts with it, because
/// the word tokenizers never emit punctuation.
pub const EXACT_MARK: char = '=';

impl Tokenizer {
    /// Calls `emit` with every token of `text`, in order (repeats included).
    pub fn for_each_token(self, text: &str, emit: &mut dyn FnMut(&str)) {
        match self {
            Tokenizer::Unicode => unicode_tokens(text, emit),
            Tokenizer::Reference => reference_tokens(text, emit),
            Tokenizer::Prefixed => prefixed_tokens(text, emit),
        }
    }

    /// The tokens of `text`, in order (repeats included).
    pub fn tokens(self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, &mut |t| out.push(t.to_owned()));
        out
    }

    /// The distinct tokens of a query, in first-occurrence order. Linear in the
    /// query's length (a pasted document is a long query).
    pub fn query_terms(self, query: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut seen: KeyIndex<usize> = KeyIndex::default();
        self.for_each_token(query, &mut |t| {
            let hash = seen.hash(t.as_bytes());
            if seen.insert_hashed(hash, out.len(), |at| out.get(at).is_some_and(|s| s == t)).is_ok() {
                out.push(t.to_owned());
            }
        });
        out
    }

    /// The byte recorded in snapshots.
    pub(crate) fn code(self) -> u8 {
        match self {
            Tokenizer::Unicode => 1,
            Tokenizer::Reference => 2,
            Tokenizer::Prefixed => 3,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Tokenizer> {
        match code {
            1 => Some(Tokenizer::Unicode),
            2 => Some(Tokenizer::Reference),
            3 => Some(Tokenizer::Prefixed),
            _ => None,
        }
    }
}

fn unicode_tokens(text: &str, emit: &mut dyn FnMut(&str)) {
    if text.is_ascii() {
        return ascii_words(text, emit);
    }
    uax29_tokens(text, emit);
}

fn prefixed_tokens(text: &str, emit: &mut dyn FnMut(&str)) {
    let mut exact = String::new();
    unicode_tokens(text, &mut |word| match word.char_indices().nth(PREFIX_CHARS) {
        None => emit(word),
        Some((cut, _)) => {
            emit(&word[..cut]);
            exact.clear();
            exact.push(EXACT_MARK);
            exact.push_str(word);
            emit(&exact);
        }
    });
}

fn uax29_tokens(text: &str, emit: &mut dyn FnMut(&str)) {
    // `unicode_words` yields the UAX #29 segments that contain a letter or digit, which
    // drops whitespace and punctuation.
    for word in text.unicode_words() {
        if word.len() > MAX_TOKEN_BYTES {
            continue;
        }
        if word.bytes().all(|c| c.is_ascii() && !c.is_ascii_uppercase()) {
            // The common case needs no allocation.
            emit(word);
        } else {
            // `str::to_lowercase` (not per char) so a final sigma becomes 'ς'.
            emit(&word.to_lowercase());
        }
    }
}

/// UAX #29 word segmentation restricted to ASCII text, equal to `unicode_words` there
/// (tested below against it) and several times faster: most notes are plain ASCII.
/// Rules: letters, digits and `_` join (WB5, WB8-10, WB13a/b); `:` `.` `'` between two
/// letters join (WB6/7); `,` `;` `.` `'` between two digits join (WB11/12).
fn ascii_words(text: &str, emit: &mut dyn FnMut(&str)) {
    let bytes = text.as_bytes();
    let word_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut lowered = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if !word_char(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < bytes.len() {
            let c = bytes[i];
            if word_char(c) {
                i += 1;
                continue;
            }
            let (before, after) = (bytes[i - 1], bytes.get(i + 1).copied().unwrap_or(0));
            let joins_letters =
                matches!(c, b':' | b'.' | b'\'') && before.is_ascii_alphabetic() && after.is_ascii_alphabetic();
            let joins_digits =
                matches!(c, b',' | b';' | b'.' | b'\'') && before.is_ascii_digit() && after.is_ascii_digit();
            if joins_letters || joins_digits {
                i += 2;
            } else {
                break;
            }
        }
        let word = &text[start..i];
        if word.len() > MAX_TOKEN_BYTES || !word.bytes().any(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        if word.bytes().any(|c| c.is_ascii_uppercase()) {
            lowered.clear();
            lowered.extend(word.bytes().map(|c| c.to_ascii_lowercase() as char));
            emit(&lowered);
        } else {
            emit(word);
        }
    }
}

fn reference_tokens(text: &str, emit: &mut dyn FnMut(&str)) {
    let mut token = String::new();
    let flush = |token: &mut String, emit: &mut dyn FnMut(&str)| {
        if !token.is_empty() {
            if LUCENE_ENGLISH_STOP_WORDS.binary_search(&token.as_str()).is_err() {
                emit(token);
            }
            token.clear();
        }
    };
    for c in text.bytes() {
        if c.is_ascii_alphanumeric() {
            token.push(c.to_ascii_lowercase() as char);
        } else {
            flush(&mut token, emit);
        }
    }
    flush(&mut token, emit);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unicode(text: &str) -> Vec<String> {
        Tokenizer::Unicode.tokens(text)
    }

    #[test]
    fn stop_words_are_sorted_and_33() {
        let mut sorted = LUCENE_ENGLISH_STOP_WORDS;
        sorted.sort_unstable();
        assert_eq!(sorted, LUCENE_ENGLISH_STOP_WORDS);
        assert_eq!(LUCENE_ENGLISH_STOP_WORDS.len(), 33);
    }

    #[test]
    fn reference_tokenization() {
        assert_eq!(
            Tokenizer::Reference.tokens("The Boundary-Layer of a 2D wing, at Mach 3.5!"),
            vec!["boundary", "layer", "2d", "wing", "mach", "3", "5"]
        );
        assert_eq!(Tokenizer::Reference.tokens("café"), vec!["caf"], "non-ASCII separates");
        assert!(Tokenizer::Reference.tokens("").is_empty());
    }

    #[test]
    fn query_terms_are_deduplicated_in_order() {
        assert_eq!(Tokenizer::Reference.query_terms("flow wing Flow the wing"), vec!["flow", "wing"]);
        // A long query (a pasted document): every distinct word once, in order.
        let words: Vec<String> = (0..20_000).map(|i| format!("w{}", i % 7_000)).collect();
        let terms = Tokenizer::Unicode.query_terms(&words.join(" "));
        assert_eq!(terms, (0..7_000).map(|i| format!("w{i}")).collect::<Vec<_>>());
    }

    #[test]
    fn german() {
        assert_eq!(unicode("Herr Müller wohnt in der Straße"), vec!["herr", "müller", "wohnt", "in", "der", "straße"]);
        assert_eq!(unicode("MÜLLER"), vec!["müller"]);
    }

    #[test]
    fn spanish() {
        assert_eq!(unicode("¿Cuál es tu CANCIÓN favorita?"), vec!["cuál", "es", "tu", "canción", "favorita"]);
    }

    #[test]
    fn japanese_and_chinese() {
        // Ideographs split one per character, on both the index and the query side.
        assert_eq!(unicode("東京に住んでいます"), vec!["東", "京", "に", "住", "ん", "で", "い", "ま", "す"]);
        assert_eq!(unicode("東京"), vec!["東", "京"]);
        // Katakana stays one word.
        assert_eq!(unicode("コーヒーが好き"), vec!["コーヒー", "が", "好", "き"]);
    }

    #[test]
    fn greek_final_sigma_and_cyrillic() {
        assert_eq!(unicode("ΟΔΟΣ"), vec!["οδο\u{3c2}"]);
        assert_eq!(unicode("Москва"), vec!["москва"]);
    }

    #[test]
    fn punctuation_and_emoji_are_separators_numbers_stay() {
        assert_eq!(unicode("e-mail: luis@example.com 🐙 v3.14"), vec!["e", "mail", "luis", "example.com", "v3.14"]);
    }

    #[test]
    fn ascii_fast_path_equals_uax29() {
        let alphabet = b"aB3z9.:',;_ -\n\t\"!x?Zq0/@#";
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            let len = (state % 24) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize] as char
                })
                .collect();
            let mut fast = Vec::new();
            ascii_words(&text, &mut |t| fast.push(t.to_owned()));
            let mut slow = Vec::new();
            uax29_tokens(&text, &mut |t| slow.push(t.to_owned()));
            assert_eq!(fast, slow, "{text:?}");
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        }
        for text in ["don't stop", "3.14 and 1,000,000", "a:b c.d e'f", "__init__ _ x_1", "e.g. U.S.A.", "end."] {
            let mut fast = Vec::new();
            ascii_words(text, &mut |t| fast.push(t.to_owned()));
            let mut slow = Vec::new();
            uax29_tokens(text, &mut |t| slow.push(t.to_owned()));
            assert_eq!(fast, slow, "{text:?}");
        }
    }

    #[test]
    fn prefixed_words_meet_on_their_first_letters_and_keep_their_whole_form() {
        let t = Tokenizer::Prefixed;
        assert_eq!(t.tokens("I painted paintings"), vec!["i", "paint", "=painted", "paint", "=paintings"]);
        // Characters, not bytes: a prefix never cuts a letter in two.
        assert_eq!(t.tokens("Müllerin"), vec!["mülle", "=müllerin"]);
        assert_eq!(t.tokens("東京"), vec!["東", "京"]);
        assert_eq!(t.query_terms("paint painting"), vec!["paint", "=painting"]);
        assert_eq!(Tokenizer::from_code(t.code()), Some(t));
    }

    #[test]
    fn very_long_tokens_are_dropped() {
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(unicode(&format!("keep {long} this")), vec!["keep", "this"]);
    }
}
