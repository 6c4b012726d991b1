//! Request bodies written from per-message JSON fragments, so a turn encodes
//! only what is new.
//!
//! A conversation's request repeats the previous one and adds a message or
//! two. Each provider turns one history [`Message`] into a [`Fragment`]: the
//! role and the JSON of its blocks (Anthropic) or of its messages (OpenAI),
//! each serialized once. A [`WireMemo`] kept by the Session object remembers
//! the fragments of the last request; the next request reuses every fragment
//! whose message is unchanged (an equality check, much cheaper than encoding)
//! and encodes the rest. Messages with media are always encoded fresh: their
//! encoding depends on what this call hydrated.

use crate::settings::Provider;
use r2_layout::{Message, UserBlock, UserContent};
use std::rc::Rc;

/// One message, encoded: its role and the JSON of each part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    pub role: &'static str,
    /// Each a serialized JSON object (a content block, or a whole message).
    pub parts: Vec<String>,
}

/// The fragments of the last request of a session, by position.
#[derive(Debug, Default)]
pub struct WireMemo {
    provider: Option<Provider>,
    /// Each message, the history cache's stamp of it (if any), its fragment.
    entries: Vec<(Message, Option<u64>, Rc<Fragment>)>,
    /// Fragments reused and encoded since the object started (tests, bench).
    pub reused: u64,
    pub encoded: u64,
}

/// Whether a message's encoding depends on the media of the call.
fn has_media(m: &Message) -> bool {
    matches!(m, Message::User { content: UserContent::Blocks(blocks), .. }
        if blocks.iter().any(|b| !matches!(b, UserBlock::Text { .. })))
}

impl WireMemo {
    /// The fragments of `messages` for `provider`, reusing the remembered
    /// ones whose message is unchanged at the same position: the same stamp
    /// (see [`crate::llm::ChatRequest::stamps`]) says so without comparing.
    /// Remembers this request's fragments for the next.
    pub fn fragments(
        &mut self,
        provider: Provider,
        messages: &[Message],
        stamps: &[u64],
        encode: impl Fn(&Message) -> Fragment,
    ) -> Vec<Rc<Fragment>> {
        if self.provider != Some(provider) {
            self.entries.clear();
            self.provider = Some(provider);
        }
        let mut out = Vec::with_capacity(messages.len());
        for (i, m) in messages.iter().enumerate() {
            if has_media(m) {
                self.encoded += 1;
                out.push(Rc::new(encode(m)));
                continue;
            }
            let stamp = stamps.get(i).copied();
            // The same stamp is the same message; else they are compared
            // (and the entry takes the stamp when they are the same).
            let kept = self
                .entries
                .get_mut(i)
                .filter(|(seen, seen_stamp, _)| (stamp.is_some() && *seen_stamp == stamp) || seen == m);
            match kept {
                Some((_, seen_stamp, fragment)) => {
                    *seen_stamp = stamp;
                    self.reused += 1;
                    out.push(fragment.clone());
                }
                None => {
                    self.encoded += 1;
                    let fragment = Rc::new(encode(m));
                    let entry = (m.clone(), stamp, fragment.clone());
                    if i < self.entries.len() {
                        self.entries[i] = entry;
                    } else {
                        self.entries.push(entry);
                    }
                    out.push(fragment);
                }
            }
        }
        self.entries.truncate(messages.len());
        out
    }
}

/// Fragments without a memo (one-off requests: compaction, extraction).
pub fn fragments_once(messages: &[Message], encode: impl Fn(&Message) -> Fragment) -> Vec<Rc<Fragment>> {
    messages.iter().map(|m| Rc::new(encode(m))).collect()
}

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(m: &Message) -> Fragment {
        Fragment { role: "user", parts: vec![json_string(&m.text())] }
    }

    #[test]
    fn unchanged_messages_are_encoded_once() {
        let mut memo = WireMemo::default();
        let mut history = vec![Message::user_text("a", 1), Message::user_text("b", 2)];
        memo.fragments(Provider::Anthropic, &history, &[], frag);
        assert_eq!((memo.reused, memo.encoded), (0, 2));
        history.push(Message::user_text("c", 3));
        let f = memo.fragments(Provider::Anthropic, &history, &[], frag);
        assert_eq!((memo.reused, memo.encoded), (2, 3), "only the new message is encoded");
        assert_eq!(f[2].parts, ["\"c\""]);
        // A changed message (a trim cut it) is encoded again.
        history[0] = Message::user_text("a, cut", 1);
        let f = memo.fragments(Provider::Anthropic, &history, &[], frag);
        assert_eq!(f[0].parts, ["\"a, cut\""]);
        assert_eq!(memo.encoded, 4);
        // Another provider shares nothing.
        memo.fragments(Provider::OpenAi, &history, &[], frag);
        assert_eq!(memo.encoded, 7);
    }

    #[test]
    fn a_stamped_message_is_reused_without_comparing() {
        let mut memo = WireMemo::default();
        let a = [Message::user_text("a", 1)];
        memo.fragments(Provider::Anthropic, &a, &[7], frag);
        // One stamp, one message: the fragment of stamp 7 is taken as it is.
        let f = memo.fragments(Provider::Anthropic, &[Message::user_text("b", 1)], &[7], frag);
        assert_eq!((memo.reused, f[0].parts.clone()), (1, vec!["\"a\"".to_owned()]));
        // Another stamp is compared: the same message is reused, another encoded.
        memo.fragments(Provider::Anthropic, &a, &[8], frag);
        assert_eq!((memo.reused, memo.encoded), (2, 1));
        let f = memo.fragments(Provider::Anthropic, &[Message::user_text("c", 1)], &[9], frag);
        assert_eq!((memo.encoded, f[0].parts.clone()), (2, vec!["\"c\"".to_owned()]));
    }

    #[test]
    fn media_messages_are_never_remembered() {
        let mut memo = WireMemo::default();
        let img = Message::User {
            content: UserContent::Blocks(vec![UserBlock::Image { mime_type: "image/png".into(), r2_key: "k".into() }]),
            sender: None,
            channel: None,
            timestamp: 1,
        };
        memo.fragments(Provider::Anthropic, std::slice::from_ref(&img), &[], frag);
        memo.fragments(Provider::Anthropic, std::slice::from_ref(&img), &[], frag);
        assert_eq!((memo.reused, memo.encoded), (0, 2));
    }
}
