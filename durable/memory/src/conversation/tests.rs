use super::rank::PER_SESSION;
use super::*;

/// Adds sessions of exchanges; ids from 1, one session per slice, an hour apart.
fn index_of(sessions: &[&[&str]]) -> ConversationIndex {
    let mut ix = ConversationIndex::new();
    let mut id = 0;
    for (s, texts) in sessions.iter().enumerate() {
        let docs: Vec<TurnDoc<'_>> = texts
            .iter()
            .map(|text| {
                id += 1;
                TurnDoc { id, session: s as u32, at: id as i64 * 3_600_000, text }
            })
            .collect();
        ix.add(&docs).unwrap();
    }
    ix
}

fn ids(hits: &[ConversationHit]) -> Vec<TurnId> {
    hits.iter().map(|h| h.id).collect()
}

fn search(ix: &ConversationIndex, text: &str, k: usize) -> Vec<ConversationHit> {
    ix.search(&ConversationQuery { text, k, ..Default::default() })
}

const FILLER: &[&str] = &[
    "Ana: good morning, how are you",
    "Ana: did you sleep well",
    "Ana: what are you doing today",
    "Ana: talk to you later",
];

#[test]
fn an_exchange_is_found_by_its_words_and_by_their_other_endings() {
    let ix = index_of(&[FILLER, &["Ana: I painted the kitchen walls green", "Ana: ok"], FILLER]);
    assert_eq!(ids(&search(&ix, "kitchen", 1)), [5]);
    // "paintings" meets "painted" on their prefix.
    assert_eq!(ids(&search(&ix, "paintings", 1)), [5]);
    assert!(search(&ix, "bicycle", 5).is_empty());
}

#[test]
fn words_in_most_exchanges_do_not_decide() {
    // "ana" and "you" are in most exchanges: the question's one specific word decides.
    let ix = index_of(&[FILLER, &["Ana: the dentist is on Tuesday"], FILLER]);
    let hits = search(&ix, "what did Ana say about the dentist you know", 3);
    assert_eq!(hits.first().map(|h| h.id), Some(5));
    // Only common words: a search keeps them, per-turn recall finds nothing.
    assert!(!search(&ix, "Ana, you?", 3).is_empty());
    let recall = ConversationQuery { text: "Ana, you?", k: 3, specific_only: true, ..Default::default() };
    assert!(ix.search(&recall).is_empty());
}

#[test]
fn an_answer_borrows_the_question_words() {
    // The answer shares no word with the query, but follows the exchange that does.
    let ix = index_of(&[
        FILLER,
        &["Bo: what dessert did you bake for the party", "Ana: a coconut ice cream with sprinkles"],
        FILLER,
    ]);
    let hits = search(&ix, "dessert for the party", 5);
    assert_eq!(hits.first().map(|h| h.id), Some(5));
    // The answer is the neighbour of a result: shown as its context, not as a result.
    assert!(!ids(&hits).contains(&6), "{hits:?}");
    // Without the question in the index, the answer has nothing: it scores only by borrowing.
    let alone = index_of(&[FILLER, &["Ana: a coconut ice cream with sprinkles"]]);
    assert!(search(&alone, "dessert for the party", 5).is_empty());
}

#[test]
fn the_session_about_the_topic_ranks_first() {
    // Both sessions mention "garden" once; the first one is about gardening.
    let ix = index_of(&[
        &["Ana: the garden roses", "Ana: tomatoes in the garden bed", "Ana: garden soil and compost"],
        &["Ana: I walked past a garden", "Ana: then bought bread", "Ana: and milk"],
    ]);
    let hits = search(&ix, "garden compost tomatoes", 3);
    assert_eq!(hits.first().map(|h| h.session), Some(0));
}

#[test]
fn results_spread_over_sessions() {
    let same: Vec<String> = (0..10).map(|i| format!("Ana: sailing trip day {i} on the boat")).collect();
    let same: Vec<&str> = same.iter().map(String::as_str).collect();
    let ix = index_of(&[&same, &["Ana: the boat needs paint"], &["Ana: a sailing club nearby"]]);
    let hits = search(&ix, "sailing boat", 5);
    let from_first = hits.iter().filter(|h| h.session == 0).count();
    assert!(from_first <= PER_SESSION, "{hits:?}");
    let sessions: std::collections::BTreeSet<u32> = hits.iter().map(|h| h.session).collect();
    assert_eq!(sessions.len(), 3, "{hits:?}");
    // No result is the neighbour of another in its session.
    for a in &hits {
        for b in &hits {
            assert!(!(a.session == b.session && a.id.abs_diff(b.id) == 1), "{hits:?}");
        }
    }
}

#[test]
fn a_date_window_keeps_what_was_said_then() {
    let ix = index_of(&[&["Ana: flights to Lisbon"], &["Ana: Lisbon hotel booked"], &["Ana: back from Lisbon"]]);
    // Exchange n is at n hours.
    let q = ConversationQuery {
        text: "lisbon",
        k: 5,
        since: Some(2 * 3_600_000),
        until: Some(3 * 3_600_000),
        ..Default::default()
    };
    assert_eq!(ids(&ix.search(&q)), [2]);
    let q = ConversationQuery { text: "lisbon", k: 5, since: Some(10 * 3_600_000), until: None, ..Default::default() };
    assert!(ix.search(&q).is_empty());
}

#[test]
fn match_share_says_how_clearly_an_exchange_is_about_the_query() {
    let ix = index_of(&[FILLER, &["Ana: my passport expires in March", "Ana: the weather is nice"]]);
    let hits = search(&ix, "passport expires", 5);
    let top = hits.first().unwrap();
    assert_eq!(top.id, 5);
    assert!(top.match_share > 0.3 && top.match_share <= 1.0, "{hits:?}");
    for h in &hits[1..] {
        assert!(h.match_share < top.match_share, "{hits:?}");
    }
}

#[test]
fn ids_must_increase_and_a_refused_batch_adds_nothing() {
    let mut ix = index_of(&[&["Ana: one", "Ana: two"]]);
    let bad =
        [TurnDoc { id: 3, session: 1, at: 0, text: "three" }, TurnDoc { id: 2, session: 1, at: 0, text: "again" }];
    assert_eq!(ix.add(&bad), Err(ConversationError::IdNotIncreasing { id: 2, last: 3 }));
    assert_eq!((ix.len(), ix.last_id()), (2, 2));
    assert!(search(&ix, "three", 5).is_empty());
}

#[test]
fn a_checkpoint_loads_into_the_same_index() {
    let ix = index_of(&[
        FILLER,
        &["Bo: what dessert did you bake", "Ana: a coconut ice cream", "Ana: München im Mai"],
        &["Ana: 東京に行きました"],
    ]);
    let chunks = ix.checkpoint();
    let loaded = ConversationIndex::from_checkpoint(chunks.concat()).unwrap();
    for q in ["dessert", "coconut cream", "münchen", "東京", "good morning you"] {
        assert_eq!(search(&loaded, q, 5), search(&ix, q, 5), "{q}");
    }
    assert_eq!((loaded.len(), loaded.last_id(), loaded.session_count()), (ix.len(), ix.last_id(), 3));
    // More can be added after a load.
    let mut loaded = loaded;
    loaded.add(&[TurnDoc { id: 99, session: 3, at: 1, text: "Ana: tulips" }]).unwrap();
    assert_eq!(ids(&search(&loaded, "tulips", 5)), [99]);
}

#[test]
fn a_damaged_checkpoint_is_an_error_not_a_panic() {
    let ix = index_of(&[FILLER, &["Ana: coconut"]]);
    let bytes = ix.checkpoint().concat();
    for cut in [0, 3, 5, 9, bytes.len() / 2, bytes.len() - 1] {
        assert!(ConversationIndex::from_checkpoint(bytes[..cut].to_vec()).is_err(), "cut at {cut}");
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut damaged = bytes.clone();
        let at = (state % damaged.len() as u64) as usize;
        damaged[at] ^= (state >> 32) as u8 | 1;
        // Either refused, or loaded into something that searches without panicking.
        if let Ok(loaded) = ConversationIndex::from_checkpoint(damaged) {
            let _ = search(&loaded, "coconut morning", 5);
        }
    }
}
