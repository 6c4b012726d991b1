// Messages sent in a burst whose requests overtake each other, as Telegram's
// up to 40 parallel webhook connections (or Slack's one request per event)
// deliver them: the i-th sent GAP_MS × i after the first, every other one
// held back HELD_BACK_MS on its way and each a seeded random 0–JITTER_MS
// more, all in flight together. About half leave after the one sent just
// after them. Used by tests/order.test.mjs and the bench's order rows.

export const GAP_MS = 15;
export const HELD_BACK_MS = 25;
export const JITTER_MS = 15;

/** A seeded PRNG (mulberry32): the same shuffle on every run. */
export function random(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Sends `n` requests (`send(i)` sends the i-th) as described above; resolves
 * when every one was answered: `{responses, departures, overtaken}`, the
 * order they left in and how many left after one sent later.
 */
export async function burst(n, send, seed) {
  const rnd = random(seed);
  const leaves = Array.from({ length: n }, (_, i) => ({ i, at: i * GAP_MS + (i % 2 ? 0 : HELD_BACK_MS) + rnd() * JITTER_MS }));
  const departures = [];
  const responses = await Promise.all(
    leaves.map(
      ({ i, at }) =>
        new Promise((resolve, reject) =>
          setTimeout(() => {
            departures.push(i);
            send(i).then(resolve, reject);
          }, at),
        ),
    ),
  );
  const overtaken = departures.filter((v, k) => departures.slice(k + 1).some((w) => w < v)).length;
  return { responses, departures, overtaken };
}

/** How many of `got` stand where `want` has them. */
export const inPlace = (got, want) => want.filter((w, k) => got[k] === w).length;
