//! Per-turn recall from conversations: before the model answers a message that asks
//! about something, the best earlier exchange is put in the turn's reminder, so the
//! model has it without a search; small talk gets nothing.
//!
//! Two rules, neither a word list (the store is multilingual):
//!
//! 1. **The message asks something**: it has a question mark, in any of the scripts'
//!    forms ([`QUESTION_MARKS`]). "What did I tell you about the boiler?" does; "good
//!    morning, lovely day" and "I finished the screenplay!" do not.
//! 2. **Its words clearly match a part of a conversation**: the best hit's ±1 window
//!    scores at least [`super::Ranking::recall_floor`] of what the message's words the
//!    store has could score there ([`super::ConversationHit::window_share`]), and at
//!    least what one word found in a single exchange would add, once, to an exchange of
//!    average length (`idf(1, N) / (1 + k1)`): in a young store that has seen few of
//!    the message's words, sharing "the" with an exchange is not a match.
//!
//! Measured on LoCoMo by `npm run bench -- conversations`: the share of the questions
//! whose evidence is in the block, and the share of ordinary turns (what people said to
//! each other) that get a block at all.

use super::{ConversationHit, ConversationIndex, ConversationQuery, Ranking};
use crate::bm25;

/// Question marks: Latin `?`, the fullwidth `？` of Chinese and Japanese, Spanish `¿`,
/// Arabic `؟`, Greek `;` (U+037E, the Greek question mark), Armenian `՞`, Ethiopic `፧`.
pub const QUESTION_MARKS: &[char] = &['?', '？', '¿', '؟', '\u{37e}', '՞', '፧'];

/// Whether `text` asks something (rule 1).
pub fn asks_something(text: &str) -> bool {
    text.contains(QUESTION_MARKS)
}

impl ConversationIndex {
    /// The exchange per-turn recall brings for `text` (both rules), if any.
    pub fn recall(&self, text: &str, ranking: &Ranking) -> Option<ConversationHit> {
        if !asks_something(text) {
            return None;
        }
        let q = ConversationQuery { text, k: 1, ..Default::default() };
        let one_rare_word = bm25::idf(1, self.index.doc_count()) / (1.0 + bm25::DEFAULT_K1);
        self.search_with(&q, ranking)
            .into_iter()
            .next()
            .filter(|h| h.window_share >= ranking.recall_floor && h.window_score >= one_rare_word)
    }
}
