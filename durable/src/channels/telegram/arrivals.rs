//! Which of a bot's updates reached this Worker isolate, so a message's
//! session knows whether one sent before it can still be on its way.
//!
//! Telegram numbers a bot's updates one by one (`update_id`) and delivers
//! them over parallel connections, so update 8 can arrive before update 7.
//! A session cannot tell on its own whether the update before its message
//! went to another chat (then nothing is missing) or is still in flight (then
//! it should wait): the Worker that receives every update can. Per bot it
//! keeps the recent update ids it received, when, for which chat, and
//! whether they are queued yet; for each message it says ([`Earlier`]):
//!
//! - `Arrived`: every earlier update reached this isolate and those of the
//!   same chat are queued in its session (or is later than the hold, and
//!   so merely the next turn when it comes): the session starts at once.
//!   That is the common case: a person writing after a pause, a new chat's
//!   first message, a message after an edit or a button tap.
//! - `Missing`: an earlier update has not arrived though a later one did,
//!   or the same chat's is still being queued here: the session holds it.
//! - nothing: this isolate knows nothing before it (it has just started,
//!   or the ids jumped): the session decides by what it has seen itself.
//!
//! Nothing is stored and no request is made: an isolate that receives only
//! some of a bot's updates (Cloudflare may run several) sees holes where the
//! others went and answers `Missing` for a while, which holds as before.

use crate::inbound::Earlier;
use std::cell::RefCell;

/// Updates remembered per bot; older ones are long settled.
const KEPT: usize = 256;

#[derive(Debug, Clone)]
struct Seen {
    id: i64,
    at: i64,
    /// The order stream of its message (`telegram:{chat}`); none until read,
    /// or when it is no message.
    stream: Option<String>,
    /// Queued in its session, or answered without one.
    done: bool,
}

/// One bot's recent updates, by id (ascending; a plain list: they nearly
/// always arrive in order, so each goes at the end).
#[derive(Debug, Default)]
pub struct Arrivals {
    seen: Vec<Seen>,
}

impl Arrivals {
    fn find(&mut self, id: i64) -> Option<&mut Seen> {
        let at = self.seen.binary_search_by_key(&id, |s| s.id).ok()?;
        self.seen.get_mut(at)
    }

    /// Update `id` arrived at `now` (being handled).
    pub fn arrive(&mut self, id: i64, now: i64) {
        let seen = Seen { id, at: now, stream: None, done: false };
        match self.seen.binary_search_by_key(&id, |s| s.id) {
            Ok(at) => self.seen[at] = seen,
            Err(at) => self.seen.insert(at, seen),
        }
        if self.seen.len() > KEPT {
            self.seen.remove(0);
        }
    }

    /// Update `id` is a message of `stream`.
    pub fn stream(&mut self, id: i64, stream: &str) {
        if let Some(s) = self.find(id) {
            s.stream = Some(stream.to_owned());
        }
    }

    /// Update `id` is handled: queued, or answered without a turn.
    pub fn done(&mut self, id: i64) {
        if let Some(s) = self.find(id) {
            s.done = true;
        }
    }

    /// Update `id` was not taken (answered 5xx): Telegram delivers it again,
    /// so until then it is missing.
    pub fn forget(&mut self, id: i64) {
        if let Ok(at) = self.seen.binary_search_by_key(&id, |s| s.id) {
            self.seen.remove(at);
        }
    }

    /// What this isolate knows of the updates before `id`, a message of
    /// `stream`, at `now`; `hold_ms`: how long a straggler is waited for.
    pub fn earlier(&self, id: i64, stream: &str, hold_ms: i64, now: i64) -> Option<Earlier> {
        let settled = now.saturating_sub(hold_ms);
        // Walk down from the update just before; an update that arrived a
        // hold ago settles everything below it (Telegram sent those first:
        // any still missing is later than the hold).
        let mut expect = id.checked_sub(1)?;
        let below = self.seen.partition_point(|s| s.id < id);
        for s in self.seen[..below].iter().rev() {
            let v = s.id;
            if v != expect {
                // A hole below a recent update: on its way (or at another isolate).
                return Some(Earlier::Missing);
            }
            let same_chat = s.stream.as_deref().is_none_or(|st| st == stream);
            if !s.done && same_chat {
                // Being queued here for this chat (or not read yet): the
                // session gets it in a moment, and holds until then.
                return Some(Earlier::Missing);
            }
            if s.at <= settled {
                return Some(Earlier::Arrived);
            }
            expect = v.checked_sub(1)?;
        }
        // Everything known is recent, and below it nothing is known: a new
        // isolate (whatever came before went elsewhere or is on its way).
        None
    }
}

thread_local! {
    /// Per agent (one bot each, one webhook each; an isolate serves a few).
    static ARRIVALS: RefCell<Vec<(String, Arrivals)>> = const { RefCell::new(Vec::new()) };
}

/// `f` on agent `agent`'s bot's arrivals in this isolate.
pub fn with<R>(agent: &str, f: impl FnOnce(&mut Arrivals) -> R) -> R {
    ARRIVALS.with(|a| {
        let mut all = a.borrow_mut();
        let at = match all.iter().position(|(name, _)| name == agent) {
            Some(at) => at,
            None => {
                all.push((agent.to_owned(), Arrivals::default()));
                all.len() - 1
            }
        };
        f(&mut all[at].1)
    })
}

/// An update being handled by the webhook: done when dropped, unless
/// [`Arrival::not_taken`] said Telegram will deliver it again.
pub struct Arrival<'a> {
    agent: &'a str,
    id: i64,
    taken: bool,
}

impl<'a> Arrival<'a> {
    pub fn new(agent: &'a str, id: i64, now: i64) -> Arrival<'a> {
        with(agent, |a| a.arrive(id, now));
        Arrival { agent, id, taken: true }
    }

    /// The update is a message of `stream`: what is known of the ones
    /// before it.
    pub fn earlier(&self, stream: &str, hold_ms: i64, now: i64) -> Option<Earlier> {
        with(self.agent, |a| {
            a.stream(self.id, stream);
            a.earlier(self.id, stream, hold_ms, now)
        })
    }

    /// Answered 5xx: not queued, Telegram delivers it again.
    pub fn not_taken(mut self) {
        self.taken = false;
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        let (id, taken) = (self.id, self.taken);
        with(self.agent, |a| if taken { a.done(id) } else { a.forget(id) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: i64 = 100;
    const CHAT: &str = "telegram:1";
    const OTHER: &str = "telegram:2";

    /// Updates handled one after the other, `gap` ms apart, from `first`.
    fn steady(a: &mut Arrivals, ids: std::ops::Range<i64>, stream: &str, start: i64, gap: i64) {
        for (k, id) in ids.enumerate() {
            a.arrive(id, start + k as i64 * gap);
            a.stream(id, stream);
            a.done(id);
        }
    }

    #[test]
    fn a_new_isolate_knows_nothing_before_its_first_update() {
        let mut a = Arrivals::default();
        a.arrive(50, 1_000);
        assert_eq!(a.earlier(50, CHAT, HOLD, 1_000), None);
        // Its second, sent after it, while the first is still recent: still nothing known below 50.
        a.stream(50, OTHER);
        a.done(50);
        a.arrive(51, 1_010);
        assert_eq!(a.earlier(51, CHAT, HOLD, 1_010), None);
        a.stream(51, OTHER);
        a.done(51);
        // A hold later, 51 settles everything before it.
        a.arrive(52, 1_200);
        assert_eq!(a.earlier(52, CHAT, HOLD, 1_200), Some(Earlier::Arrived));
    }

    #[test]
    fn after_a_pause_or_another_chat_nothing_is_missing() {
        let mut a = Arrivals::default();
        steady(&mut a, 1..20, OTHER, 0, 500);
        // A new chat's first message, a person writing after a pause.
        a.arrive(20, 20_000);
        assert_eq!(a.earlier(20, CHAT, HOLD, 20_000), Some(Earlier::Arrived));
        // Another chat's update just before it, handled already: nothing to wait for.
        a.stream(20, CHAT);
        a.done(20);
        a.arrive(21, 20_005);
        a.stream(21, OTHER);
        a.done(21);
        a.arrive(22, 20_010);
        assert_eq!(a.earlier(22, CHAT, HOLD, 20_010), Some(Earlier::Arrived));
    }

    #[test]
    fn an_update_overtaken_by_the_next_one_is_missing_until_it_comes() {
        let mut a = Arrivals::default();
        steady(&mut a, 1..10, CHAT, 0, 1_000);
        // 11 arrives before 10.
        a.arrive(11, 20_000);
        assert_eq!(a.earlier(11, CHAT, HOLD, 20_000), Some(Earlier::Missing));
        a.stream(11, CHAT);
        a.done(11);
        // 10 comes: nothing before it is missing.
        a.arrive(10, 20_020);
        assert_eq!(a.earlier(10, CHAT, HOLD, 20_020), Some(Earlier::Arrived));
        // A hold after 11 came, a hole before it is late: settled.
        let mut b = Arrivals::default();
        steady(&mut b, 1..10, CHAT, 0, 1_000);
        b.arrive(11, 20_000);
        b.done(11);
        b.arrive(12, 20_150);
        assert_eq!(b.earlier(12, CHAT, HOLD, 20_150), Some(Earlier::Arrived), "10 is later than the hold");
    }

    #[test]
    fn the_same_chats_update_still_being_queued_is_missing_another_chats_is_not() {
        let mut a = Arrivals::default();
        steady(&mut a, 1..10, OTHER, 0, 1_000);
        a.arrive(10, 20_000);
        a.stream(10, CHAT);
        a.arrive(11, 20_003);
        assert_eq!(a.earlier(11, CHAT, HOLD, 20_003), Some(Earlier::Missing), "10 is not queued yet");
        assert_eq!(a.earlier(11, OTHER, HOLD, 20_003), Some(Earlier::Arrived), "10 is another chat's");
        a.done(10);
        assert_eq!(a.earlier(11, CHAT, HOLD, 20_004), Some(Earlier::Arrived));
        // Not read yet (no stream): it could be this chat's.
        a.arrive(12, 20_005);
        a.arrive(13, 20_006);
        assert_eq!(a.earlier(13, OTHER, HOLD, 20_006), Some(Earlier::Missing));
    }

    #[test]
    fn an_update_answered_5xx_is_missing_again_and_the_memory_is_bounded() {
        with("t-agent", |a| steady(a, 1..10, OTHER, 0, 1_000));
        let failed = Arrival::new("t-agent", 10, 20_000);
        failed.not_taken();
        let next = Arrival::new("t-agent", 11, 20_010);
        assert_eq!(next.earlier(CHAT, HOLD, 20_010), Some(Earlier::Missing), "Telegram delivers 10 again");
        drop(next);
        with("t-agent", |a| assert!(a.find(11).unwrap().done, "done when dropped"));

        let mut big = Arrivals::default();
        steady(&mut big, 0..1_000, OTHER, 0, 10);
        assert_eq!(big.seen.len(), KEPT);
        assert_eq!(big.earlier(1_000, CHAT, HOLD, 10_000), Some(Earlier::Arrived));
        // Ids far below what is kept: known to be settled by the oldest kept.
        assert_eq!(big.earlier(i64::MIN, CHAT, HOLD, 10_000), None);
    }
}
