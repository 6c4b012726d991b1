//! The Gateway object's relays of `MESSAGE_CREATE`s to the sessions, one
//! channel at a time, in the order the Gateway sent them.
//!
//! Webhooks (Telegram, Slack, Discord interactions...) arrive over parallel
//! connections, so a message may overtake one sent just before it, and a
//! session holds a message reaching its idle queue for `ORDER_HOLD_MS`
//! (`session::sequence`). Gateway messages come over one WebSocket, in
//! order, so here Hearth itself decides when each reaches its session: a
//! frame's relay starts once the previous relay of the same channel is done
//! (accepted by the session, or given up and logged, as `enqueue_reliably`
//! does), so no relay of a channel overtakes another.
//!
//! The session is told so with the mechanism Telegram's `update_id` uses,
//! `SendOrder::after`: the dedupe key of the message relayed just before this
//! one from the same channel. Once the session took that one, nothing sent
//! earlier can still be on its way, and this one does not wait. The session
//! checks the claim instead of trusting a flag: the first message after the
//! object started (nothing relayed yet), one after a relay still in flight
//! (see [`PATIENCE_MS`]) or one whose predecessor went to another session
//! still waits the hold, which is the safe side. Nothing else changes for the
//! session, and the hold stays where overtaking is possible.
//!
//! Channels do not wait for each other; a lane is a few strings.

use futures::channel::oneshot;
use std::cell::RefCell;
use std::rc::Rc;

/// How long a relay waits for the one before it in its channel. A relay
/// that retries takes 1.4 s of pauses (`enqueue_reliably`); one still
/// running after this is stuck, and the messages after it go on (their
/// `after` names it, so their sessions hold them as for any webhook). Its
/// own retries go on too: nothing is dropped.
pub const PATIENCE_MS: u64 = 5_000;

/// Lanes kept for their last relayed key; past this, idle lanes are
/// forgotten (their next message merely waits the session's hold).
const MAX_LANES: usize = 512;

/// One lane per channel. A list, not a map: a few hundred channels at
/// most are scanned in no time, and a map of its own costs upload size.
#[derive(Default)]
pub struct Lanes {
    lanes: RefCell<Vec<(String, Rc<RefCell<Lane>>)>>,
}

#[derive(Default)]
struct Lane {
    /// Resolves when the relay that joined last is done.
    tail: Option<oneshot::Receiver<()>>,
    /// The dedupe key of the message whose relay to a session started last.
    last: Option<String>,
}

/// A message's place in its channel's lane: taken when its frame is read
/// (so in the Gateway's order), held while it is relayed; dropping it lets
/// the next relay of the channel start.
pub struct Ticket {
    lane: Rc<RefCell<Lane>>,
    before: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

impl Lanes {
    /// Takes the next place in `channel`'s lane. Call in the order the
    /// frames came, before anything awaits.
    pub fn join(&self, channel: &str) -> Ticket {
        let mut lanes = self.lanes.borrow_mut();
        let lane = match lanes.iter().find(|(c, _)| c == channel) {
            Some((_, lane)) => lane.clone(),
            None => {
                if lanes.len() >= MAX_LANES {
                    // A lane no ticket holds is idle.
                    lanes.retain(|(_, lane)| Rc::strong_count(lane) > 1);
                }
                let lane = Rc::<RefCell<Lane>>::default();
                lanes.push((channel.to_owned(), lane.clone()));
                lane
            }
        };
        let (done, tail) = oneshot::channel();
        let before = lane.borrow_mut().tail.replace(tail);
        Ticket { lane, before, _done: done }
    }

    /// How many channels have a lane (for tests).
    pub fn len(&self) -> usize {
        self.lanes.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.borrow().is_empty()
    }
}

impl Ticket {
    /// Resolves when this message's relay may start: the previous relay of
    /// its channel is done (or dropped), or `patience` (a sleep of
    /// [`PATIENCE_MS`]) ran out first.
    pub async fn wait(&mut self, patience: impl std::future::Future<Output = ()>) {
        let Some(mut before) = self.before.take() else { return };
        // Already done: no timer at all (the usual case, a lane at rest).
        if !matches!(before.try_recv(), Ok(None)) {
            return;
        }
        let patience = std::pin::pin!(patience);
        let _ = futures::future::select(before, patience).await;
    }

    /// The dedupe key of the message relayed before this one in its channel.
    pub fn previous(&self) -> Option<String> {
        self.lane.borrow().last.clone()
    }

    /// Notes that the relay of `dedupe_key` to a session starts now: the
    /// next message of the channel names it as the one before.
    pub fn relaying(&self, dedupe_key: &str) {
        self.lane.borrow_mut().last = Some(dedupe_key.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::LocalPool;
    use futures::task::LocalSpawnExt;
    use std::cell::Cell;

    /// Each relay of a lane, in the order they ran: (key, what it named as before).
    type Log = Rc<RefCell<Vec<(String, Option<String>)>>>;

    /// A relay that, once its turn came, records itself and finishes when `gate` opens.
    async fn relay(
        mut t: Ticket,
        key: &'static str,
        gate: oneshot::Receiver<()>,
        log: Log,
        patience: oneshot::Receiver<()>,
    ) {
        t.wait(async {
            let _ = patience.await;
        })
        .await;
        log.borrow_mut().push((key.to_owned(), t.previous()));
        t.relaying(key);
        let _ = gate.await;
    }

    #[test]
    fn a_relay_starts_only_when_the_previous_one_of_its_channel_is_done() {
        let mut pool = LocalPool::new();
        let lanes = Lanes::default();
        let log: Log = Rc::default();
        let mut gates = Vec::new();
        let mut patience = Vec::new();
        // Frames a1, b1, a2, a3 (channels a and b).
        for (ch, key) in [("a", "a1"), ("b", "b1"), ("a", "a2"), ("a", "a3")] {
            let (open, gate) = oneshot::channel();
            let (_never, wait) = oneshot::channel::<()>();
            gates.push(open);
            patience.push(_never);
            pool.spawner().spawn_local(relay(lanes.join(ch), key, gate, log.clone(), wait)).unwrap();
        }
        pool.run_until_stalled();
        let started = || log.borrow().iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        assert_eq!(started(), ["a1", "b1"], "a2 waits for a1; b does not wait for a");
        // a1's session is slow; b1 finishing releases nothing of a.
        let [a1, b1, a2, a3]: [_; 4] = gates.try_into().unwrap();
        b1.send(()).unwrap();
        pool.run_until_stalled();
        assert_eq!(started(), ["a1", "b1"]);
        a1.send(()).unwrap();
        pool.run_until_stalled();
        assert_eq!(started(), ["a1", "b1", "a2"]);
        a2.send(()).unwrap();
        pool.run_until_stalled();
        a3.send(()).unwrap();
        pool.run_until_stalled();
        assert_eq!(
            *log.borrow(),
            [
                ("a1".into(), None),
                ("b1".into(), None),
                ("a2".into(), Some("a1".into())),
                ("a3".into(), Some("a2".into()))
            ],
            "each names the one relayed before it in its channel"
        );
    }

    #[test]
    fn a_stuck_relay_holds_the_next_only_until_patience_runs_out_and_is_named_as_before() {
        let mut pool = LocalPool::new();
        let lanes = Lanes::default();
        let log: Log = Rc::default();
        let (_stuck, gate1) = oneshot::channel();
        let (_p1, wait1) = oneshot::channel::<()>();
        pool.spawner().spawn_local(relay(lanes.join("a"), "a1", gate1, log.clone(), wait1)).unwrap();
        let (open2, gate2) = oneshot::channel();
        let (patience2, wait2) = oneshot::channel::<()>();
        pool.spawner().spawn_local(relay(lanes.join("a"), "a2", gate2, log.clone(), wait2)).unwrap();
        pool.run_until_stalled();
        assert_eq!(log.borrow().len(), 1, "a2 waits while a1 is relayed");
        patience2.send(()).unwrap();
        pool.run_until_stalled();
        // a1 is still in flight: a2 names it, so its session holds a2 until a1 is taken.
        assert_eq!(log.borrow()[1], ("a2".into(), Some("a1".into())));
        open2.send(()).unwrap();
        pool.run_until_stalled();
    }

    #[test]
    fn a_relay_that_ends_without_relaying_lets_the_next_name_the_one_before_it() {
        // a2 not addressed to the bot: dropped without `relaying`.
        let lanes = Lanes::default();
        let t1 = lanes.join("a");
        t1.relaying("a1");
        let t2 = lanes.join("a");
        let mut t3 = lanes.join("a");
        drop(t1);
        drop(t2);
        let ran = Cell::new(false);
        futures::executor::block_on(async {
            t3.wait(async { unreachable!("no timer when the one before is done") }).await;
            ran.set(true);
        });
        assert!(ran.get());
        assert_eq!(t3.previous().as_deref(), Some("a1"));
    }

    #[test]
    fn idle_lanes_are_forgotten_past_the_cap_busy_ones_kept() {
        let lanes = Lanes::default();
        let busy = lanes.join("busy");
        for n in 0..MAX_LANES + 10 {
            lanes.join(&format!("c{n}")).relaying("k");
        }
        assert!(lanes.len() <= MAX_LANES);
        let next = lanes.join("busy");
        assert!(next.before.is_some(), "the busy lane kept its tail");
        drop(busy);
    }
}
