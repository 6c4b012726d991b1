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
fn words_in_most_exchanges_weigh_little() {
    // "ana" and "you" are in most exchanges: the question's one specific word decides.
    let ix = index_of(&[FILLER, &["Ana: the dentist is on Tuesday"], FILLER]);
    let hits = search(&ix, "what did Ana say about the dentist you know", 3);
    assert_eq!(hits.first().map(|h| h.id), Some(5));
    // Only common words still find something (a search is never refused for its words).
    assert!(!search(&ix, "Ana, you?", 3).is_empty());
}

#[test]
fn an_answer_is_found_through_its_window() {
    // The answer shares no word with the query, but follows the exchange that does.
    let ix = index_of(&[
        FILLER,
        &["Bo: what dessert did you bake for the party", "Ana: a coconut ice cream with sprinkles"],
        FILLER,
    ]);
    let hits = search(&ix, "dessert for the party", 5);
    assert_eq!(hits.first().map(|h| h.id), Some(5));
    // The answer is a result too (its window holds the question), and the context of the first.
    assert!(ids(&hits).contains(&6), "{hits:?}");
    assert_eq!(hits[0].after.first(), Some(&6));
    // Without the question in the index, the answer has nothing.
    let alone = index_of(&[FILLER, &["Ana: a coconut ice cream with sprinkles"]]);
    assert!(search(&alone, "dessert for the party", 5).is_empty());
}

#[test]
fn a_hit_comes_with_two_exchanges_each_side_of_its_session() {
    let ix = index_of(&[&["Ana: one", "Ana: two", "Ana: three", "Ana: the kayak", "Ana: five", "Ana: six"], FILLER]);
    let hit = &search(&ix, "kayak", 1)[0];
    assert_eq!((hit.before.as_slice(), hit.id, hit.after.as_slice()), (&[2, 3][..], 4, &[5, 6][..]));
    // At the session's start, none before; never an exchange of the next session.
    let ix = index_of(&[&["Ana: the kayak", "Ana: two"], FILLER]);
    let hit = &search(&ix, "kayak", 1)[0];
    assert_eq!((hit.before.len(), hit.after.as_slice()), (0, &[2][..]));
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
fn a_sessions_next_result_gives_way_to_other_sessions() {
    let same: Vec<String> = (0..10).map(|i| format!("Ana: sailing trip day {i} on the boat")).collect();
    let same: Vec<&str> = same.iter().map(String::as_str).collect();
    let ix = index_of(&[
        &same,
        FILLER,
        &["Ana: the boat needs sailing paint"],
        FILLER,
        &["Ana: a sailing club for the boat"],
    ]);
    let sessions = |r: &Ranking| {
        let hits = ix.search_with(&ConversationQuery { text: "sailing boat", k: 5, ..Default::default() }, r);
        hits.iter().map(|h| h.session).collect::<std::collections::BTreeSet<u32>>().len()
    };
    let none = Ranking { next_in_session: 1.0, ..Ranking::default() };
    let strong = Ranking { next_in_session: 0.5, ..Ranking::default() };
    assert!(sessions(&strong) > sessions(&none), "{} vs {}", sessions(&strong), sessions(&none));
    assert_eq!(sessions(&strong), 3);
}

#[test]
fn several_phrasings_are_fused_by_rank() {
    let ix =
        index_of(&[FILLER, &["Ana: the plumber fixed the boiler"], FILLER, &["Ana: my sister moved to Porto"], FILLER]);
    // One phrasing finds one fact, the other the other; fused, both are among the first two.
    let more = ["where does my sister live".to_owned()];
    let q = ConversationQuery { text: "boiler plumber", more: &more, k: 2, ..Default::default() };
    let got: std::collections::BTreeSet<TurnId> = ids(&ix.search(&q)).into_iter().collect();
    assert_eq!(got, [5, 10].into_iter().collect(), "{:?}", ix.search(&q));
    // Blank extra phrasings change nothing.
    let blank = ["  ".to_owned()];
    let q = ConversationQuery { text: "boiler plumber", more: &blank, k: 3, ..Default::default() };
    assert_eq!(ix.search(&q), search(&ix, "boiler plumber", 3));
}

#[test]
fn scores_are_shares_comparable_across_stores() {
    // The same strong match scores the same in a small store and in a big one; a weak
    // match in a store of its own does not score like the best of another.
    let strong = index_of(&[FILLER, &["Ana: the gym locker code is 3301 by the sauna"]]);
    let mut big: Vec<&[&str]> = vec![FILLER; 8];
    big.push(&["Ana: the gym locker code is 3301 by the sauna"]);
    let big = index_of(&big);
    let weak = index_of(&[FILLER, &["Ana: a sauna in the hotel"]]);
    let q = "gym locker code sauna";
    let (s, b, w) = (search(&strong, q, 1)[0].score, search(&big, q, 1)[0].score, search(&weak, q, 1)[0].score);
    assert!(w < s * 0.6, "weak {w} vs strong {s}");
    assert!(w < b * 0.6, "weak {w} vs strong in a bigger store {b}");
    let max = 1.0 + Ranking::default().window + Ranking::default().session;
    for x in [s, b, w] {
        assert!(x > 0.0 && x <= max, "{x}");
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
fn a_date_range_applies_to_the_session_part_too() {
    // Session 0 talked about the garden a lot, before the range; in the range, both
    // sessions have one "garden gate" exchange. The words said before the range must
    // not lift session 0's: session 1's exchange (in a session more about gates) wins.
    let ix = index_of(&[
        &["Ana: garden roses in the garden", "Ana: garden compost for the garden", "Ana: the garden gate"],
        &["Ana: the garden gate", "Ana: a new gate latch"],
    ]);
    // Exchanges 1-3 are at 1-3 h, 4-5 at 4-5 h: the range starts with exchange 3.
    let q = ConversationQuery { text: "garden gate", k: 2, since: Some(3 * 3_600_000), ..Default::default() };
    let hits = ix.search(&q);
    assert_eq!(hits.first().map(|h| h.id), Some(4), "{hits:?}");
    // Without the range, session 0's garden talk counts.
    let all = search(&ix, "garden", 1);
    assert_eq!(all.first().map(|h| h.session), Some(0));
}

#[test]
fn recall_needs_a_question_and_a_clear_match() {
    let ix = index_of(&[
        FILLER,
        &["Ana: my gym locker code is 3301, the one by the sauna", "Ana: leg day tomorrow"],
        FILLER,
    ]);
    let r = Ranking::default();
    let hit = ix.recall("what was my gym locker code, the one by the sauna?", &r).expect("a question that matches");
    assert_eq!(hit.id, 5);
    assert!(ix.recall("what was my gym locker code, the one by the sauna", &r).is_none(), "not asked");
    assert!(ix.recall("any plans for the weekend?", &r).is_none(), "asked, but nothing matches");
    for text in ["¿dónde está el locker?", "locker 3301？"] {
        assert!(recall::asks_something(text), "{text}");
    }
}

#[test]
fn match_share_says_how_clearly_an_exchange_is_about_the_query() {
    let ix = index_of(&[FILLER, &["Ana: my passport expires in March", "Ana: the weather is nice"]]);
    let hits = search(&ix, "passport expires", 5);
    let top = hits.first().unwrap();
    assert_eq!(top.id, 5);
    assert!(top.match_share > 0.3 && top.match_share <= 1.0, "{hits:?}");
    assert!(top.window_share > 0.3 && top.window_share <= 1.0, "{hits:?}");
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
