// End to end: stopping the answer being written
// (POST /api/agents/{id}/threads/{threadId}/stop) in workerd, against the
// streaming LLM stand-in: the provider's stream is aborted, what was written
// stays in the thread marked as stopped, the call is in the usage ledger;
// a failed answer stays in the thread's status as a note.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { startHearth } from "./support/hearth.mjs";
import { sseReader } from "./support/sse.mjs";

const ADMIN = "stop-admin-token-0123";
const SITE = "site-token-0123456789";

let h;
before(async () => {
  h = await startHearth({
    bindings: { ADMIN_TOKEN: ADMIN, API_TOKENS: `site:${SITE}:main`, USAGE_SETTLE_MS: "0", LLM_MAX_ATTEMPTS: "2", LLM_PRICES: JSON.stringify({ "claude-test": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } }) },
  });
});
after(() => h.close());
beforeEach(() => h.reset());

const auth = (token = ADMIN) => ({ authorization: `Bearer ${token}` });
const post = (path, body, { token = ADMIN, headers = {} } = {}) =>
  h.fetch(path, { method: "POST", headers: { "content-type": "application/json", ...auth(token), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
const ask = (text, threadId, key, token) => post("/api/agents/main/stream", { messages: [{ role: "user", content: text }], threadId }, { token, headers: { "idempotency-key": key } });
const status = async (key) => (await h.fetch(`/api/agents/main/sessions/${encodeURIComponent(key)}`, { headers: auth() })).json();
const words = (n) => Array.from({ length: n }, (_, i) => `word${i + 1} `).join("");

describe("stop", () => {
  test("a stop mid-answer aborts the provider's stream; what was written stays, marked stopped", async () => {
    h.llm.push({ text: words(60), pieceDelayMs: 40 });
    const sse = sseReader(await ask("count slowly", "slow", "k-slow-1"));
    await sse.until((e) => e.event === "delta" && sse.text().includes("word3 "));
    const stop = await post("/api/agents/main/threads/slow/stop", { idempotencyKey: "k-slow-1" });
    assert.equal(stop.status, 200);
    assert.deepEqual(await stop.json(), { stopped: true });
    const done = await sse.until((e) => e.event === "done");
    assert.equal(done.json.stopped, true);
    const written = done.json.text;
    assert.ok(written.startsWith("word1 word2 word3 "), written);
    assert.ok(!written.includes("word60"), "cut short");
    assert.equal(written, sse.text(), "the answer is what the client was shown");
    // The provider's connection was hung up before the end of its answer.
    await h.until(() => h.llm.requests[0].aborted, { what: "the LLM stream aborted" });
    assert.ok(h.llm.requests[0].written < 70, `the stand-in stopped writing (${h.llm.requests[0].written} events)`);
    // The thread keeps the partial answer, marked, and goes on from it.
    const s = await status("agent:main:api:slow");
    const last = s.messages.at(-1);
    assert.equal(last.role, "assistant");
    assert.equal(last.stopReason, "stopped");
    assert.equal(last.content[0].text, written);
    assert.equal(s.open, 0);
    h.llm.push({ text: "Going on." });
    const next = sseReader(await ask("go on", "slow", "k-slow-2"));
    assert.equal((await next.until((e) => e.event === "done")).json.text, "Going on.");
    assert.match(JSON.stringify(h.llm.requests[1].body.messages), /word1 word2 word3/, "the model reads what it had written");
    // The stopped call is priced in the usage ledger (estimated: its stream was cut).
    const usage = await h.until(async () => {
      const u = await (await h.fetch("/api/agents/main/usage?period=today", { headers: auth() })).json();
      return u.calls >= 2 && u;
    }, { what: "the ledger" });
    assert.ok(usage.totalCost > 0);
  });

  test("nothing to stop, or another message's key: nothing stops, and the reason is said", async () => {
    const idle = await post("/api/agents/main/threads/quiet/stop");
    assert.equal(idle.status, 200);
    const body = await idle.json();
    assert.equal(body.stopped, false);
    assert.match(body.reason, /no answer is being written/);
    h.llm.push({ text: words(8), pieceDelayMs: 30 });
    const sse = sseReader(await ask("hello", "busy", "k-busy-1"));
    await sse.until((e) => e.event === "delta");
    const other = await (await post("/api/agents/main/threads/busy/stop", { idempotencyKey: "k-other" })).json();
    assert.equal(other.stopped, false);
    const done = await sse.until((e) => e.event === "done");
    assert.equal(done.json.stopped, undefined);
    assert.equal(done.json.text, words(8));
  });

  test("a key stops answers in its own threads only; bad requests are refused with the reason", async () => {
    h.llm.push({ text: words(40), pieceDelayMs: 40 });
    const sse = sseReader(await ask("mine", "support", "k-site-1", SITE));
    await sse.until((e) => e.event === "delta");
    // The owner's thread "support" is another session: nothing runs there.
    assert.equal((await (await post("/api/agents/main/threads/support/stop", {})).json()).stopped, false);
    const r = await post("/api/agents/main/threads/support/stop", { idempotencyKey: "k-site-1" }, { token: SITE });
    assert.deepEqual(await r.json(), { stopped: true });
    assert.equal((await sse.until((e) => e.event === "done")).json.stopped, true);
    assert.equal((await post("/api/agents/main/threads/main/stop", {}, { token: SITE })).status, 403, "main is the owner's");
    assert.equal((await h.fetch("/api/agents/main/threads/x/stop", { headers: auth() })).status, 405);
    for (const [body, says] of [["{nope", "not JSON"], [JSON.stringify({ idempotencyKey: 5 }), "idempotencyKey"]]) {
      const bad = await h.fetch("/api/agents/main/threads/x/stop", { method: "POST", headers: auth(), body });
      assert.equal(bad.status, 400);
      assert.match((await bad.json()).error, new RegExp(says));
    }
    assert.equal((await post("/api/agents/main/threads/a%20b/stop", {})).status, 400);
    assert.equal((await post("/api/agents/nobody/threads/x/stop", {})).status, 404);
  });

  test("a model that fails leaves a note in the thread's status, after the question", async () => {
    h.llm.push({ status: 529 }, { status: 529 });
    const sse = sseReader(await ask("are you there?", "down", "k-down-1"));
    const err = await sse.until((e) => e.event === "error");
    assert.ok(err.json.message);
    const s = await status("agent:main:api:down");
    assert.equal(s.messages.at(-1).role, "user", "the question is kept");
    assert.equal(s.notes.length, 1);
    assert.equal(s.notes[0].kind, "error");
    assert.equal(s.notes[0].text, err.json.message);
    assert.ok(s.notes[0].at >= s.messages.at(-1).timestamp);
  });
});
