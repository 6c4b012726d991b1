// End to end: a streamed answer times out when the model goes quiet for
// LLM_TIMEOUT_MS, not when the whole answer takes longer than that. The
// Worker keeps one timer per quiet stretch (not one per piece), so both
// must hold: pieces that keep coming are read to the end however long the
// answer takes; a stream that stalls is given up (and tried again).
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { OWNER, startHearth, telegramTurn, tgUpdate } from "./support/hearth.mjs";

const QUIET_MS = 600;

describe("a streamed answer's idle time-out", () => {
  let h;
  before(async () => {
    h = await startHearth({ bindings: { LLM_TIMEOUT_MS: String(QUIET_MS) } });
  });
  after(() => h.close());
  beforeEach(() => h.reset());

  test("an answer whose pieces keep coming is read whole, though it takes several times the time-out", async () => {
    const words = Array.from({ length: 8 }, (_, i) => `w${i} `);
    h.llm.push({ pieces: words, pieceDelayMs: QUIET_MS / 2 });
    const t0 = performance.now();
    const requests = await telegramTurn(h, tgUpdate({ from: OWNER, text: "a long answer, please" }), OWNER);
    const took = performance.now() - t0;
    assert.ok(took > 3 * QUIET_MS, `it took ${took.toFixed(0)} ms`);
    assert.equal(requests.length, 1, "one model call: nothing timed out");
    assert.equal(h.telegram.sent().at(-1).body.text, words.join("").trim());
  });

  test("a stream that goes quiet longer than the time-out is given up and tried again", async () => {
    h.llm.push({ pieces: ["first ", "stalled"], pieceDelayMs: 4 * QUIET_MS }, { text: "the second try" });
    const requests = await telegramTurn(h, tgUpdate({ from: OWNER, text: "hello?" }), OWNER);
    assert.equal(requests.length, 2, "the stalled call, then the retry");
    assert.ok(requests[0].aborted, "the stalled stream was cut");
    assert.ok(requests[0].aborted - requests[0].start < 3 * QUIET_MS, `cut after ${requests[0].aborted - requests[0].start} ms`);
    assert.equal(h.telegram.sent().at(-1).body.text, "the second try");
  });
});
